"""Durable commits against the size of the state, and appends to one list.

    pip install -e '.[bench]' && python bench/bench_state_size.py [--steps 300] [--repeat 7]

1. A durable step with an outside effect (a file write, so it is committed on its own: in-flight mark, then
   its journal row) in a run whose state holds 1 MB (10,000 small records), against the same step with
   a state of a few bytes. Measured alternately; medians. Bar: <= 1.5x.
2. `append_state` N times to one list (N = 1,000 … 8,000) in a durable run: CPU time and store size per
   append. Linear means the figures per append stay flat as N grows.
"""

from __future__ import annotations

import argparse
import io
import statistics
import tempfile
import time
from pathlib import Path

from tiny import parse_sized  # noqa: E402  (bench/ is on sys.path: the benches run as scripts)

def loop(name: str, initial_state: str, action: str) -> str:
    """A workflow doing `action` `input.limit` times, then ending with the count."""
    return f"""
name: {name}
version: 1
start_node: check
initial_state: {initial_state}
input_schema:
  limit: {{type: integer, required: true}}
nodes:
  check:
    type: conditional
    condition: {{type: evaluate_expression, expression: "count < input.limit"}}
    branches: {{true: step, false: done}}
  step:
    type: action
    actions:
      - {action}
      - {{type: compute, expression: "count + 1", store_as: count}}
    on_success: check
endings:
  done: {{type: success, message: "${{count}}"}}
"""


EFFECT_LOOP = loop("state-size", "{count: 0}", '{type: write_file, path: tick.txt, content: "${count}"}')
APPEND_LOOP = loop("appends", "{count: 0, items: []}",
                   '{type: append_state, field: items, value: {n: "${count}", '
                   'text: "an item of the list, about sixty bytes"}}')

LARGE_STATE = {"computed.records": [{"id": i, "name": f"record {i}", "tags": ["alpha", "beta"],
                                     "text": "x" * 40} for i in range(10_000)]}


def load(folder: Path, text: str):
    import wfexec

    path = folder / "workflow.yaml"
    path.write_text(text)
    return wfexec.load(path)


def durable_run(workflow, folder: Path, limit: int, overrides: dict) -> tuple[float, int]:
    """(CPU seconds of the run, bytes of its store)."""
    import os

    from wfexec.durable.journal import start_run
    from wfexec.durable.store import Store
    from wfexec.running.console import Console
    from wfexec.running.engine import Options

    store_path = folder / f"runs-{time.perf_counter_ns()}.db"
    store = Store(store_path)
    quiet = Console(out=io.StringIO(), err=io.StringIO())
    here = os.getcwd()
    os.chdir(folder)
    try:
        start = time.process_time()
        driven = start_run(store, workflow, inputs={"limit": limit}, overrides=overrides, io=quiet,
                           options=Options(max_steps=3 * limit + 10))
        elapsed = time.process_time() - start
    finally:
        os.chdir(here)
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    assert driven.result.message == str(limit), driven
    size = sum(p.stat().st_size for p in folder.glob(store_path.name + "*"))
    for p in folder.glob(store_path.name + "*"):
        p.unlink()
    return elapsed, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=300, help="effect steps per run, in part 1")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--appends", default="1000,2000,4000,8000", help="list sizes of part 2, comma-separated")
    args = parse_sized(parser, steps=10, repeat=1, appends="10,20")
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        effects = load(folder, EFFECT_LOOP)
        durable_run(effects, folder, 20, {}), durable_run(effects, folder, 20, LARGE_STATE)  # warm up
        small, large = [], []
        for _ in range(args.repeat):  # alternated, so a busy moment hits both sides
            small.append(durable_run(effects, folder, args.steps, {})[0] / args.steps)
            large.append(durable_run(effects, folder, args.steps, LARGE_STATE)[0] / args.steps)
        s, g = statistics.median(small), statistics.median(large)
        print(f"1. a durable step with a file write, medians of {args.repeat} runs of {args.steps} steps (CPU)")
        print(f"   state of a few bytes : {s * 1e6:8.1f} us/step")
        print(f"   state of 1 MB        : {g * 1e6:8.1f} us/step")
        print(f"   1 MB vs small        : {g / s:8.2f}x  (bar: <= 1.5x)")

        appends = load(folder, APPEND_LOOP)
        print("2. append_state to one list in a durable run (CPU, store size with its WAL, after a checkpoint)")
        print("       N   seconds   us/append   store bytes   bytes/append")
        per_append = {}
        sizes = [int(n) for n in args.appends.split(",")]
        for n in sizes:
            seconds = statistics.median(durable_run(appends, folder, n, {})[0] for _ in range(3))
            size = durable_run(appends, folder, n, {})[1]
            per_append[n] = seconds / n
            print(f"   {n:5,}   {seconds:7.3f}   {seconds / n * 1e6:9.1f}   {size:11,}   {size / n:12.0f}")
        print(f"   time per append, {sizes[-1]:,} vs {sizes[0]:,}: {per_append[sizes[-1]] / per_append[sizes[0]]:.2f}x  "
              "(linear: about 1)")


if __name__ == "__main__":
    main()
