"""Durable steps per second: wfexec with its SQLite store, against LangGraph with SqliteSaver
(durability "sync") on the same loop, and against wfexec's own in-memory speed.

    pip install -e '.[bench]' && python bench/bench_durable.py [--iterations 5000]

The loop is bench_engine's: test `count < limit`, then `count = count + 1` and
`label = "step <count>"`. Reported both ways: committing every
step (as LangGraph's durability "sync" does; bar >= 20x it) and with state-only steps committed in batches (the
default; bar >= 0.5x wfexec in memory).

Committing every step, each iteration is one commit on both sides: LangGraph checkpoints its one node, whose
conditional edge is part of it; wfexec commits the action step, and its conditional step, which changes nothing,
goes with that commit (wfexec.durable.journal). Both journal every change of state before the next step starts.
"""

from __future__ import annotations

import argparse
import io
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tiny import parse_sized  # noqa: E402  (bench/ is on sys.path: the benches run as scripts)

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import counter_graph, counter_workflow, run_wfexec  # noqa: E402


def run_wfexec_durable(iterations: int, every_step: bool = False) -> float:
    from wfexec.running.console import Console
    from wfexec.durable.journal import start_run
    from wfexec.running.engine import Options
    from wfexec.durable.store import Store

    workflow = counter_workflow()
    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "runs.db")
        quiet = Console(out=io.StringIO(), err=io.StringIO())
        start = time.perf_counter()
        driven = start_run(store, workflow, inputs={"limit": iterations}, overrides={}, io=quiet,
                           options=Options(max_steps=3 * iterations + 10, commit_every_step=every_step))
        elapsed = time.perf_counter() - start
        store.close()
    assert driven.result.message == str(iterations), driven
    return elapsed


def run_langgraph_sqlite(iterations: int) -> float:
    from langgraph.checkpoint.sqlite import SqliteSaver

    graph = counter_graph(iterations)
    with tempfile.TemporaryDirectory() as folder:
        connection = sqlite3.connect(str(Path(folder) / "lg.db"), check_same_thread=False)
        app = graph.compile(checkpointer=SqliteSaver(connection))
        config = {"configurable": {"thread_id": "bench"}, "recursion_limit": iterations + 10}
        start = time.perf_counter()
        final = app.invoke({"count": 0, "label": ""}, config, durability="sync")
        elapsed = time.perf_counter() - start
        connection.close()
    assert final["count"] == iterations
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=5_000)
    parser.add_argument("--langgraph-iterations", type=int, default=500,
                        help="LangGraph with a checkpointer is slow; its rate is measured on fewer iterations")
    parser.add_argument("--repeat", type=int, default=5)
    args = parse_sized(parser, iterations=50, langgraph_iterations=20, repeat=1)
    n, m = args.iterations, args.langgraph_iterations
    run_langgraph_sqlite(50)
    for _ in range(2):  # warm up until CPython's specialising interpreter has settled
        run_wfexec(n), run_wfexec_durable(n), run_wfexec_durable(n, every_step=True)
    samples: dict[str, list[float]] = {"memory": [], "batched": [], "every step": [], "langgraph": []}
    for _ in range(args.repeat):  # alternated, so a busy moment hits every side
        samples["langgraph"].append(m / run_langgraph_sqlite(m))
        samples["memory"].append(n / run_wfexec(n))
        samples["batched"].append(n / run_wfexec_durable(n))
        samples["every step"].append(n / run_wfexec_durable(n, every_step=True))
    rate = {name: statistics.median(values) for name, values in samples.items()}
    print(f"loop iterations: wfexec {n}, LangGraph {m}; medians of {args.repeat}")
    print(f"LangGraph + SqliteSaver (sync)     : {rate['langgraph']:10,.0f} iterations/s")
    print(f"wfexec durable, every step         : {rate['every step']:10,.0f} iterations/s")
    print(f"wfexec durable, state-only batched : {rate['batched']:10,.0f} iterations/s")
    print(f"wfexec in memory                   : {rate['memory']:10,.0f} iterations/s")
    print(f"every step vs LangGraph sync       : {rate['every step'] / rate['langgraph']:10.1f}x  (bar: >= 20x)")
    print(f"batched vs LangGraph sync          : {rate['batched'] / rate['langgraph']:10.1f}x")
    print(f"batched vs in memory               : {rate['batched'] / rate['memory']:10.2f}x  (bar: >= 0.5x)")


if __name__ == "__main__":
    main()
