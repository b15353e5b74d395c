"""A large run state over many effect steps on Temporal: time per effect step and the blob storage it uses, a
10 MB state against a state of a few bytes, on the same loop, server and worker (issue 28, point 3).

    pip install -e '.[temporal]' && python bench/bench_temporal_state.py [--steps 60] [--rounds 3] [--mb 10]

The loop: `--mb` state-only steps that each add 1 MB of records (10,000 records of about 100 bytes) to the state,
then `--steps` iterations of a conditional and an action that writes a small file and counts (an effect step: an
activity). The small side skips the growing. Each side also runs with no iterations, so

    time per effect step = (run with --steps iterations - run with none) / --steps

leaves out the start, the growing and the result, which are the same in both. Temporal's deadlock detector is
off in the worker (TEMPORAL_DEBUG=1; see main()). Blob storage is what the run's
large payloads added to the blob folder (WFEXEC_TEMPORAL_BLOBS, a fresh one per bench). Rounds alternate the
sides; medians. The worker runs the wfexec that PYTHONPATH names, so the same bench measures two checkouts:

    PYTHONPATH=/path/to/before python bench/bench_temporal_state.py; PYTHONPATH=. python bench/...

Figures only: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from temporal_cluster import connected, dev_server, workers
from tiny import parse_sized  # noqa: E402  (bench/ is on sys.path: the benches run as scripts)

QUEUE = "bench-state"
RECORDS_PER_MB = 10_000


def loop(mb: int, steps: int, records_per_mb: int) -> str:
    grow = "".join(f"""
  grow{part}:
    type: action
    actions:
      - type: set_state
        field: computed.part{part}
        value: "${{Array.from({{length: {records_per_mb}}}, (_, i) => ({{id: i, name: 'record ' + i, text: 'x'.repeat(60)}}))}}"
    on_success: {f"grow{part + 1}" if part + 1 < mb else "check"}
""" for part in range(mb))
    return f"""
name: bench-temporal-state
version: "1"
start_node: {"grow0" if mb else "check"}
initial_state:
  computed: {{count: 0, limit: {steps}}}
nodes:{grow}
  check:
    type: conditional
    condition: {{type: evaluate_expression, expression: "computed.count < computed.limit"}}
    branches: {{on_true: work, on_false: done}}
  work:
    type: action
    actions:
      - {{type: write_file, path: tick.txt, content: "${{computed.count}}"}}
      - {{type: set_state, field: computed.count, value: "${{computed.count + 1}}"}}
    on_success: check
endings:
  done: {{type: success, message: "${{computed.count}}"}}
"""


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


async def timed_run(client, path: Path, steps: int, blobs: Path) -> tuple[float, int]:
    """(seconds from start to result, bytes the run added to the blob folder)."""
    from wfexec.api import load
    from wfexec.temporal.client import run_request, start

    workflow = load(path)
    request = run_request(workflow, inputs={}, overrides={}, answers={}, max_steps=10 * steps + 100)
    before = folder_bytes(blobs)
    started = time.perf_counter()
    outcome = await (await start(client, workflow, request, QUEUE)).result()
    elapsed = time.perf_counter() - started
    assert outcome["result"]["message"] == str(steps), outcome
    return elapsed, folder_bytes(blobs) - before


async def bench(args, folder: Path, address: str) -> None:
    paths = {}
    for side, mb in (("small", 0), ("large", args.mb)):
        for steps in (0, args.steps):
            path = paths[(side, steps)] = folder / f"{side}-{steps}.yaml"
            path.write_text(loop(mb, steps, args.records_per_mb))
    blobs = Path(os.environ["WFEXEC_TEMPORAL_BLOBS"])
    client = await connected(address)
    times: dict[tuple[str, int], list[float]] = {}
    stored: dict[tuple[str, int], list[int]] = {}
    async with workers(address, QUEUE, folder / "worker.log"):
        for key, path in paths.items():  # unmeasured: imports, compiling, the server's caches
            if key[1] == 0:
                await timed_run(client, path, 0, blobs)
        for _ in range(args.rounds):
            for key, path in paths.items():  # alternated, so a busy moment hits every side
                seconds, size = await timed_run(client, path, key[1], blobs)
                times.setdefault(key, []).append(seconds)
                stored.setdefault(key, []).append(size)
    per_step = {side: (statistics.median(times[(side, args.steps)]) - statistics.median(times[(side, 0)]))
                / args.steps for side in ("small", "large")}
    import wfexec

    print(f"wfexec from {Path(wfexec.__file__).parent.parent}; {args.steps} effect steps per run, medians of "
          f"{args.rounds} alternating rounds (one dev server, one worker, this machine)")
    print(f"  state                 per effect step   blob bytes, run of {args.steps} steps   of 0 steps")
    for side, label in (("small", "a few bytes"), ("large", f"{args.mb} MB")):
        with_steps, without = (int(statistics.median(stored[(side, steps)])) for steps in (args.steps, 0))
        print(f"  {label:<20} {per_step[side] * 1000:10.1f} ms   {with_steps:>22,}   {without:>11,}")
    if per_step["small"] > 0:
        print(f"  {args.mb} MB vs small: {per_step['large'] / per_step['small']:.1f}x per effect step (target: <= 2x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=60, help="effect steps per run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mb", type=int, default=10, help="megabytes of state on the large side")
    parser.add_argument("--records-per-mb", type=int, default=RECORDS_PER_MB)
    args = parse_sized(parser, steps=2, rounds=1, mb=1, records_per_mb=3000)
    with tempfile.TemporaryDirectory(prefix="bench-temporal-state-") as scratch:
        folder = Path(scratch)
        os.environ["WFEXEC_TEMPORAL_BLOBS"] = str(folder / "blobs")  # this client's and the worker's
        os.environ["WFEXEC_BLOB_RETENTION"] = "off"  # the bench measures what runs store, not what is swept
        # Temporal's deadlock detector fails a workflow task that holds its thread over 2 s; encoding a 10 MB state
        # there (as every effect step did before state went by change) takes longer on a loaded machine, and each
        # failed task replays the run from its start, so the run never ends. Off on both sides, to measure the cost.
        os.environ["TEMPORAL_DEBUG"] = "1"
        os.chdir(folder)  # the runs' tick.txt
        with dev_server() as address:
            asyncio.run(bench(args, folder, address))


if __name__ == "__main__":
    main()
