"""What an effect step costs on a Temporal cluster, against what Temporal itself costs on the same server and
against the SQLite store; and how many runs a second one server serves with 1, 2 and 4 workers.

    pip install -e '.[temporal]' && python bench/bench_temporal.py [--steps 40] [--rounds 5] [--workers 1,2,4]

**Effect steps.** The loop runs `--steps` times: a conditional tests the count, then an action reads a small file
(a step with an outside effect, on files only, and idempotent: the SQLite journal commits it before and after; on
Temporal it is a short effect step) and counts. Reading rather than writing keeps the step's own work (a write's
fsync: 8-13 ms on this machine, and as noisy) from hiding what the step costs around it. The same loop with the
read replaced by a state-only step is the baseline, so

    effect-step cost = (loop with effects - state-only loop) / steps

is what making a step an effect step costs (the read itself included), without the run's own start and end.
On Temporal it is measured two ways: as it runs now (a short step: a local activity, wfexec.temporal.local_steps)
and with local steps turned off (`local_steps: false`, every effect step a regular activity: what it cost before).
The step's own work (the node run as the activity runs it, in this process, without Temporal) is measured too, so
that what a short step costs beyond it compares with the floors: SDK-only workflows on the same server
(bench/temporal_floor.py, a worker process of their own) running `--steps` local activities doing nothing, or
regular ones, minus the same workflow running none. Every kind runs once per round, in turn, in
this process; medians of `--rounds` are printed.

**Throughput.** `--batch` runs of a short loop (`--throughput-steps` effect steps each) are started at once and
waited for, on task queues served by 1, 2 and 4 `wfexec worker` processes (all started first, so the batches
alternate); medians of `--throughput-rounds`. The CPU each process used during the batches says where the limit
is. The dev server is given a CPU share of its own, so that it is not starved by the rest of the machine: a cgroup
(v1 `cpu.shares`, or v2 `cpu.weight`) when /sys/fs/cgroup can be written, else a higher priority (nice -10) when
allowed; the bench says which.

All processes (server, workers, this client) share this machine. Figures only: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from temporal_cluster import answering, dev_server_process, temporal_cli
from tiny import parse_sized  # noqa: E402  (bench/ is on sys.path: the benches run as scripts)

ROOT = Path(__file__).resolve().parents[1]
FLOOR = Path(__file__).resolve().with_name("temporal_floor.py")

LOOP = """
name: bench-temporal-{kind}
version: "1.0.0"
start_node: check
initial_state:
  computed:
    count: 0
    limit: {steps}
    source: in.txt
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
EFFECT = """      - type: read_file
        path: "${computed.source}"
        store_as: computed.last
"""
STATE_ONLY = """      - type: set_state
        field: computed.last
        value: "step ${computed.count}"
"""
KINDS = {"effects": EFFECT, "state-only": STATE_ONLY}  # the loop's kinds: the work node's first action


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


def write_workflows(folder: Path, steps: int, prefix: str = "") -> dict[str, Path]:
    paths = {}
    for kind, body in KINDS.items():
        path = folder / f"{prefix}{kind}.yaml"
        path.write_text(LOOP.format(kind=kind, steps=steps, body=body))
        paths[kind] = path
    (folder / "in.txt").write_text("a small file\n")
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
                           options=Options(max_steps=10 * (steps or 1000), cwd=store_folder))
        elapsed = time.perf_counter() - start
    finally:
        store.close()
    assert driven.result is not None and (steps is None or driven.result.message == str(steps)), driven
    return elapsed


def temporal_request(path: Path, steps: int | None, local_steps: bool = True) -> tuple:
    from wfexec.api import load
    from wfexec.records import replace
    from wfexec.temporal.client import run_request

    workflow = load(path)
    request = run_request(workflow, inputs={}, overrides={}, answers={}, max_steps=10 * (steps or 1000))
    # cwd: where the loop writes its file
    return workflow, replace(request, local_steps=local_steps, cwd=str(path.parent))


async def run_temporal(client, path: Path, steps: int | None, local_steps: bool = True,
                       queue: str = "bench") -> float:
    from wfexec.temporal.client import start

    workflow, request = temporal_request(path, steps, local_steps)
    started = time.perf_counter()
    handle = await start(client, workflow, request, queue)
    outcome = await handle.result()
    elapsed = time.perf_counter() - started
    assert steps is None or outcome["result"]["message"] == str(steps), outcome
    return elapsed


async def run_floor(client, kind: str, count: int) -> float:
    from temporal_floor import FLOOR_WORKFLOW

    started = time.perf_counter()
    done = await client.execute_workflow(FLOOR_WORKFLOW, args=[kind, count], id=f"floor-{time.monotonic_ns()}",
                                         task_queue="floor")
    elapsed = time.perf_counter() - started
    assert done == count
    return elapsed


class ServerShare:
    """A CPU share of its own for the dev server (see the module's docstring), and what was done, to print."""

    def __init__(self, shares: int):
        self.shares, self.cgroup, self.nice = shares, None, False
        for root, name, value in (("/sys/fs/cgroup/cpu", "cpu.shares", shares),  # v1
                                  ("/sys/fs/cgroup", "cpu.weight", max(1, min(10000, shares * 100 // 1024)))):  # v2
            if not (Path(root) / name).exists() and not (Path(root) / "cgroup.controllers").exists():
                continue  # not a cgroup file system of that kind (v1 mounts a tmpfs at /sys/fs/cgroup)
            group = Path(root) / f"wfexec-bench-{os.getpid()}"
            try:
                group.mkdir()
                (group / name).write_text(str(value))
            except OSError:
                if group.is_dir():
                    group.rmdir()
                continue
            self.cgroup, self.setting = group, f"{name}={value}"
            return
        self.nice = os.geteuid() == 0  # no cgroup: a higher priority, which only root may give

    def enter(self) -> None:
        """Run in the server's process before it starts (preexec_fn)."""
        if self.cgroup is not None:
            (self.cgroup / "cgroup.procs").write_text(str(os.getpid()))
        elif self.nice:
            os.setpriority(os.PRIO_PROCESS, 0, -10)

    def describe(self) -> str:
        if self.cgroup is not None:
            return f"in its own cgroup ({self.cgroup}, {self.setting}; each other process weighs 1024)"
        if self.nice:
            return "at nice -10 (no writable cgroup)"
        return "sharing the CPU with everything (no writable cgroup, no right to raise its priority)"

    def remove(self) -> None:
        if self.cgroup is None:
            return
        for _ in range(50):
            try:
                self.cgroup.rmdir()
                return
            except OSError:  # its last process is still being reaped
                time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--agent-rounds", type=int, default=3)
    parser.add_argument("--workers", default="1,2,4", help="worker counts for the throughput batches")
    parser.add_argument("--batch", type=int, default=100, help="runs started at once per throughput batch")
    parser.add_argument("--throughput-steps", type=int, default=3, help="effect steps per run of a batch")
    parser.add_argument("--throughput-rounds", type=int, default=3)
    parser.add_argument("--server-shares", type=int, default=8192,
                        help="the dev server's cpu.shares (a process outside it weighs 1024)")
    args = parse_sized(parser, steps=3, rounds=1, agents=3, agent_rounds=1, workers="1", batch=4, throughput_steps=1,
                       throughput_rounds=1)
    temporal_cli()  # missing: says how to install it, before anything starts
    share = ServerShare(args.server_shares)
    with tempfile.TemporaryDirectory(prefix="bench-temporal-") as scratch:
        folder = Path(scratch)
        environment = {**os.environ, "PYTHONPATH": str(ROOT)}
        try:
            with dev_server_process(preexec_fn=share.enter) as (address, server):
                asyncio.run(bench(args, folder, address, environment, server.pid, share))
        finally:
            share.remove()


class Processes:
    """Worker processes started by the bench, each writing to its own log, all stopped at the end."""

    def __init__(self, folder: Path, environment: dict):
        self.folder, self.environment, self.started = folder, environment, []

    def start(self, command: list[str]) -> subprocess.Popen:
        log = self.folder / f"process-{len(self.started)}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(command, env=self.environment, stdout=out, stderr=subprocess.STDOUT)
        process.log = log  # type: ignore[attr-defined]
        self.started.append(process)
        return process

    def worker(self, address: str, queue: str) -> subprocess.Popen:
        return self.start([sys.executable, "-m", "wfexec.cli", "worker", "--temporal", address, "--task-queue", queue])

    async def serving(self, processes: list) -> None:
        for process in processes:
            while b"serving" not in process.log.read_bytes():
                if process.poll() is not None:
                    raise RuntimeError(process.log.read_text())
                await asyncio.sleep(0.1)

    def stop(self) -> None:
        for process in self.started:
            process.terminate()
        for process in self.started:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()


async def connected(address: str):
    from temporalio.client import Client

    return await answering(lambda: Client.connect(address))


async def bench(args, folder: Path, address: str, environment: dict, server_pid: int, share: ServerShare) -> None:
    client = await connected(address)
    processes = Processes(folder, environment)
    try:
        first = [processes.worker(address, "bench"),
                 processes.start([sys.executable, str(FLOOR), address, "floor"])]
        await processes.serving(first)
        steps = await effect_steps(args, client, folder)
        agents = await forked_agents(args, client, folder, processes, address)
        rates = await throughput(args, client, folder, processes, address, server_pid)
    finally:
        processes.stop()
    print_effect_steps(args, steps)
    print_agents(args, agents)
    print_throughput(args, rates, share)


# (what is measured, its twin without the measured part, or None): the cost per step is their difference over the
# steps
MEASURES = {
    "SDK local activity doing nothing (floor)": (("sdk", "local"), ("sdk", "none")),
    "SDK regular activity doing nothing (floor)": (("sdk", "regular"), ("sdk", "none")),
    "wfexec short effect step: a local activity": (("temporal", "effects"), ("temporal", "state-only")),
    "  its own work (the node run here, no Temporal)": (("work", "effects"), None),
    "wfexec effect step as a regular activity (before)": (("temporal", "effects-regular"),
                                                          ("temporal", "state-only")),
    "wfexec effect step on SQLite (for scale)": (("sqlite", "effects"), ("sqlite", "state-only")),
}
BEYOND_ITS_WORK = "  beyond its own work"


def step_work(path: Path, steps: int) -> float:
    """The loop's effect step run `steps` times as a worker's activity runs it (`_run_node`), in this process."""
    from wfexec.api import load
    from wfexec.temporal.activities import _run_node
    from wfexec.temporal.messages import EffectStepInput
    from wfexec.temporal.steps import RecordingIo, make_run, use_loader

    use_loader(load)
    workflow, request = temporal_request(path, steps)
    state = make_run(workflow, request, RecordingIo()).state
    started = time.perf_counter()
    whole = {"whole": {k: v for k, v in state.items() if k != "history"}, "history": []}
    for step in range(steps):
        done = _run_node(EffectStepInput(request, "work", whole, {}, 0), "bench/run", f"{step}/1")
        assert "changes" in done, done
    return time.perf_counter() - started


async def effect_steps(args, client, folder: Path) -> dict:
    paths = write_workflows(folder, args.steps)
    sides = {("sdk", kind): (lambda kind=kind: run_floor(client, kind, args.steps))
             for kind in ("local", "regular", "none")}
    for kind in ("effects", "state-only"):
        sides[("temporal", kind)] = lambda kind=kind: run_temporal(client, paths[kind], args.steps)
    sides[("temporal", "effects-regular")] = lambda: run_temporal(client, paths["effects"], args.steps, False)

    async def here(measure, *arguments) -> float:
        return measure(*arguments)

    for kind in ("effects", "state-only"):
        sides[("sqlite", kind)] = lambda kind=kind: here(run_sqlite, paths[kind], args.steps, folder)
    sides[("work", "effects")] = lambda: here(step_work, paths["effects"], args.steps)
    for measure in sides.values():  # a first run of each, unmeasured: imports, compiling, the server's caches
        await measure()
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for side, measure in sides.items():
            times.setdefault(side, []).append(await measure())
    return {side: statistics.median(values) for side, values in times.items()}


def print_effect_steps(args, medians: dict) -> None:
    print(f"Effect steps on one dev server: {args.steps} steps a run, median of {args.rounds} alternating rounds; "
          "each run minus its twin without the step (the run's own start and end), over the steps:")
    per_step = {what: (medians[measured] - (medians[twin] if twin else 0.0)) / args.steps
                for what, (measured, twin) in MEASURES.items()}
    local, work = (per_step[what] for what in ("wfexec short effect step: a local activity",
                                                  "  its own work (the node run here, no Temporal)"))
    rows = list(per_step.items())
    rows.insert(4, (BEYOND_ITS_WORK, local - work))
    floor = per_step["SDK local activity doing nothing (floor)"]
    print(f"  {'':52} {'ms/step':>8}  {'x local-activity floor':>22}")
    for what, cost in rows:
        ratio = f"{cost / floor:8.1f}x" if floor > 0 else "       -"
        print(f"  {what:52} {cost * 1000:8.2f}  {ratio:>22}")


async def forked_agents(args, client, folder: Path, processes: Processes, address: str) -> dict:
    """Forked agents: each agent state a regular activity, so a second worker takes half of them."""
    agents = write_agents(folder, args.agents)
    await processes.serving([processes.worker(address, "bench")])
    times: dict[str, list[float]] = {}
    for _ in range(args.agent_rounds):
        times.setdefault("sqlite", []).append(run_sqlite(agents, None, folder))
        times.setdefault("temporal", []).append(await run_temporal(client, agents, None))
    return {side: statistics.median(values) for side, values in times.items()}


def print_agents(args, medians: dict) -> None:
    print(f"{args.agents} forked agents of one second each, wall time, median of {args.agent_rounds} alternating runs:")
    print(f"  sqlite (one process)       {medians['sqlite']:6.2f} s")
    print(f"  temporal (two workers)     {medians['temporal']:6.2f} s")


def cpu_seconds(pid: int | None = None) -> float:
    """CPU time (user + system) a process has used so far; this one's when no pid is given."""
    if pid is None:
        times = os.times()
        return times.user + times.system
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU time every core of the machine spent not idle, so far."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle, iowait
    return (sum(values[:8]) - idle) / os.sysconf("SC_CLK_TCK")


async def throughput(args, client, folder: Path, processes: Processes, address: str, server_pid: int) -> dict:
    counts = [int(n) for n in str(args.workers).split(",")]
    pools = {n: [processes.worker(address, f"throughput-{n}") for _ in range(n)] for n in counts}
    await processes.serving([worker for pool in pools.values() for worker in pool])
    path = write_workflows(folder, args.throughput_steps, prefix="short-")["effects"]
    workflow, request = temporal_request(path, args.throughput_steps)

    from wfexec.records import replace
    from wfexec.temporal.client import start

    async def batch(n: int, local_steps: bool) -> dict:
        pids = {"server": [server_pid], "workers": [w.pid for w in pools[n]]}
        before = {who: [cpu_seconds(pid) for pid in group] for who, group in pids.items()}
        client_before, machine_before, started = cpu_seconds(), machine_busy_seconds(), time.perf_counter()
        handles = await asyncio.gather(*(start(client, workflow, replace(request, local_steps=local_steps),
                                               f"throughput-{n}") for _ in range(args.batch)))
        outcomes = await asyncio.gather(*(handle.result() for handle in handles))
        wall = time.perf_counter() - started
        assert all(o["result"]["message"] == str(args.throughput_steps) for o in outcomes), outcomes[:1]
        used = {who: [cpu_seconds(pid) - was for pid, was in zip(pids[who], before[who])] for who in pids}
        return {"wall": wall, "server": sum(used["server"]) / wall, "workers": sum(used["workers"]) / wall,
                "busiest worker": max(used["workers"]) / wall, "client": (cpu_seconds() - client_before) / wall,
                "machine": (machine_busy_seconds() - machine_before) / wall}

    sides = [(n, local_steps) for n in counts for local_steps in (True, False)]
    for side in sides:  # unmeasured: each worker's first runs compile the workflow
        await batch(*side)
    results: dict[tuple[int, bool], list[dict]] = {}
    for _ in range(args.throughput_rounds):
        for side in sides:
            results.setdefault(side, []).append(await batch(*side))
    return {side: {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
            for side, rounds in results.items()}


def print_throughput(args, rates: dict, share: ServerShare) -> None:
    cores = os.cpu_count() or 1
    print(f"Throughput: {args.batch} runs of {args.throughput_steps} short effect steps started at once, median of "
          f"{args.throughput_rounds} alternating batches; the dev server {share.describe()}; {cores} cores.")
    print("  CPU used during the batch, in cores busy: server, all workers (the busiest), this client, everything "
          "else on the machine")
    for (n, local_steps), r in rates.items():
        others = max(0.0, r["machine"] - r["server"] - r["workers"] - r["client"])
        steps = "local" if local_steps else "regular"
        server_per_run = r["server"] * r["wall"] / args.batch * 1000
        print(f"  {n} worker{'s' if n > 1 else ' '}, {steps:7} {args.batch / r['wall']:6.1f} runs/s "
              f"({r['wall']:5.2f} s)   server {r['server']:4.2f} ({server_per_run:3.0f} ms a run)  "
              f"workers {r['workers']:4.2f} ({r['busiest worker']:4.2f})  client {r['client']:4.2f}  "
              f"others {others:4.2f}  -> limit: {limit(r, cores)}")


def limit(r: dict, cores: int) -> str:
    """Which resource a batch ran out of, from the CPU each side used."""
    if r["machine"] >= 0.9 * cores:
        return f"the machine's {cores} cores (busy {r['machine']:.2f})"
    single = {"the busiest worker (one Python process)": r["busiest worker"], "the client (one Python process)":
              r["client"], "the server": r["server"]}
    who, used = max(single.items(), key=lambda item: item[1])
    if used >= 0.85:
        return f"{who}, at {used:.2f} of a core"
    return "none of CPU: the runs wait on round trips"


if __name__ == "__main__":
    main()
