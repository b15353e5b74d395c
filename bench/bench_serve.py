"""`wfexec serve` at scale: a run of 10,000 journal steps, a store of 10,000 runs, 10 open event streams.

    pip install -e '.[serve,bench]' && python bench/bench_serve.py [--steps 10000] [--runs 10000] [--repeat 9]

Goals (issue #25): the page of a run with 10,000 journal steps opens in under 1 s; `/api/runs` over 10,000 runs
answers in under 200 ms; the server's memory with 10 event streams open is reported against the idle server's,
and how long it takes to stop (SIGTERM) with those streams open. Then what keeping a run's output in the store
costs a run whose command writes 100,000 lines (kept against not kept, alternating, in one process). The store's 10,000 runs are marked running
with no process behind them (interrupted runs, as a crash leaves them): the case that made each stream read
every one of them four times a second before the streams shared one reader (wfexec/serve/feed.py).

Each request goes through the whole app (Starlette's TestClient: routing, the token and Host checks, the store
read, the JSON or the template) and is set against the floor, the same rows read straight from the store in the
same process; the two alternate and the medians are printed. The memory figures come from a real `wfexec serve`
process on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from tiny import parse_sized  # noqa: E402  (bench/ is on sys.path: the benches run as scripts)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_cli import fill_store  # noqa: E402  (the same store of runs the CLI bench lists)
from bench_engine import WORKFLOW  # noqa: E402  (the engine bench's counting loop: two journal steps a count)


def long_run(store: Path, steps: int, work: Path) -> str:
    workflow = work / "counter.yaml"
    workflow.write_text(WORKFLOW)
    done = subprocess.run([sys.executable, "-m", "wfexec.cli", "run", str(workflow), "--store", str(store),
                           "--input", f"limit={steps // 2}", "--max-steps", str(steps + 10), "--format", "json"],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)["run_id"]


def timed(call, repeat: int, floor) -> tuple[float, float]:
    """Medians in ms of `call` and of `floor`, run alternately."""
    ours, base = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        ours.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        floor()
        base.append((time.perf_counter() - started) * 1000)
    return statistics.median(ours), statistics.median(base)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def streams_memory(store: Path, run_id: str, streams: int) -> tuple[int, int, float]:
    """(idle RSS, RSS with `streams` event streams open) of a real server, in KiB, and the seconds it took to
    exit after SIGTERM with them open."""
    import httpx

    server = subprocess.Popen([sys.executable, "-m", "wfexec.cli", "serve", "--port", "0", "--store", str(store)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        address = None
        assert server.stdout is not None
        for line in server.stdout:
            found = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)", line)
            if found:
                address = found.groups()
                break
        if address is None:
            raise SystemExit("wfexec serve printed no address")
        base, token = address
        headers = {"Authorization": f"Bearer {token}"}
        httpx.get(f"{base}/api/runs", headers=headers, timeout=30).raise_for_status()
        time.sleep(0.5)
        idle = rss_kib(server.pid)
        opened = threading.Barrier(streams + 1)
        stop = threading.Event()

        def follow(path: str) -> None:
            try:
                with httpx.stream("GET", f"{base}{path}", headers=headers, timeout=None) as answer:
                    opened.wait()
                    for _ in answer.iter_lines():
                        if stop.is_set():
                            break
            except httpx.HTTPError:  # the server is stopped under the open stream at the end
                pass

        paths = [f"/api/runs/{run_id}/events?since=0"] + ["/api/events"] * (streams - 1)
        threads = [threading.Thread(target=follow, args=(p,), daemon=True) for p in paths]
        for thread in threads:
            thread.start()
        opened.wait(timeout=60)
        time.sleep(2)
        busy = rss_kib(server.pid)
        stopping = time.perf_counter()
        server.terminate()
        server.wait(timeout=120)
        return idle, busy, time.perf_counter() - stopping
    finally:
        stop.set()
        if server.poll() is None:
            server.kill()
            server.wait()


CHATTY = """\
name: chatty
version: "1.0.0"
start_node: talk
nodes:
  talk:
    type: action
    actions:
      - {type: run_command, command: [seq, "1", "LINES"]}
    on_success: done
    on_failure: failed
endings:
  done: {type: success, message: said}
  failed: {type: failure, message: failed}
"""


def output_cost(lines: int, repeat: int, work: Path) -> tuple[float, float]:
    """Medians in ms of a durable run of a command writing `lines` lines, its output kept in the store as every
    run's is (wfexec.durable.outputs), and the same with keeping turned off; alternating, in this process."""
    from wfexec.api import load
    from wfexec.durable.journal import DurableJournal, start_run
    from wfexec.durable.store import Store
    from wfexec.running.console import Console
    from wfexec.running.engine import Options

    path = work / "chatty.yaml"
    path.write_text(CHATTY.replace("LINES", str(lines)))
    workflow = load(path)
    store = Store(work / "chatty.db")

    def once(keep: bool) -> float:
        DurableJournal.keeps_output = keep
        started = time.perf_counter()
        driven = start_run(store, workflow, inputs={}, overrides={}, io=Console(), options=Options(cwd=work))
        assert driven.status == "completed", driven.error
        return (time.perf_counter() - started) * 1000

    kept, unkept = [], []
    try:
        once(True)
        for _ in range(repeat):
            kept.append(once(True))
            unkept.append(once(False))
    finally:
        DurableJournal.keeps_output = True
        store.close()
    return statistics.median(kept), statistics.median(unkept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--streams", type=int, default=10)
    parser.add_argument("--lines", type=int, default=100_000, help="lines the chatty command writes")
    args = parse_sized(parser, steps=100, runs=100, repeat=1, streams=2, lines=100)
    work = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    try:
        measure(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # its store of --runs runs: no bench keeps anything


def measure(args, work: Path) -> None:
    from starlette.testclient import TestClient

    from wfexec.durable.store import Store
    from wfexec.serve.app import create_app
    from wfexec.serve.config import ServeConfig

    store_path = work / "runs.db"
    run_id = long_run(store_path, args.steps, work)
    fill_store(sys.executable, store_path, args.runs, dict(os.environ))  # this checkout's wfexec
    config = ServeConfig(host="127.0.0.1", port=8765, store=store_path)
    client = TestClient(create_app(config), base_url="http://127.0.0.1:8765",
                        headers={"Authorization": f"Bearer {config.token}"})
    store = Store(store_path)
    steps = len(store.journal(run_id))

    def page() -> None:
        answer = client.get(f"/runs/{run_id}")
        assert answer.status_code == 200, answer.status_code

    def api_runs() -> None:
        answer = client.get("/api/runs")
        assert answer.status_code == 200, answer.status_code

    def read_run() -> None:
        store.get(run_id)
        store.journal(run_id)

    def read_runs() -> None:
        store.list(None, 50)

    page()  # templates compiled, caches warm: what every later visit sees
    print(f"store: {args.runs:,} runs + one run of {steps:,} journal steps ({store_path.stat().st_size:,} bytes)")
    for name, call, floor, goal in ((f"run page, {steps:,} steps", page, read_run, 1000.0),
                                    (f"/api/runs over {args.runs:,} runs", api_runs, read_runs, 200.0)):
        ours, base = timed(call, args.repeat, floor)
        verdict = "ok" if ours < goal else "OVER"
        print(f"{name:<28} {ours:8.1f} ms   store alone {base:7.1f} ms   {ours / base:5.1f}x   "
              f"goal < {goal:.0f} ms  {verdict}")
    store.close()
    kept, unkept = output_cost(args.lines, args.repeat, work)
    print(f"a command writing {args.lines:,} lines, durable run: output kept {kept:8.1f} ms   not kept {unkept:8.1f} ms"
          f"   {kept / unkept:5.2f}x")
    idle, busy, stopping = streams_memory(store_path, run_id, args.streams)
    print(f"server memory: idle {idle / 1024:.1f} MiB, with {args.streams} event streams open {busy / 1024:.1f} MiB "
          f"(+{(busy - idle) / 1024:.1f} MiB); SIGTERM to exit with them open: {stopping:.2f} s")


if __name__ == "__main__":
    os.environ.setdefault("NO_COLOR", "1")
    main()
