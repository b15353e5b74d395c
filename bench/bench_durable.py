"""Durable steps: wfexec with its SQLite store against LangGraph with SqliteSaver (durability "sync") on the same
loop, and against wfexec's own in-memory speed; then the cost of one step committed on its own against SQLite's
own floor, at each durability. Every comparison is like with like, and the output says how.

    pip install -e '.[bench]' && python bench/bench_durable.py [--iterations 5000] [--full-iterations 300] [--tiny]
                                                               [--against OTHER_CHECKOUT]

Part 1, iterations per second of bench_engine's loop (test `count < limit`, then `count = count + 1` and
`label = "step <count>"`), committing every step (as LangGraph's durability "sync" does; bar >= 20x it) and with
state-only steps committed in batches (wfexec's default; bar >= 0.5x wfexec in memory). One commit per loop
iteration on both sides: LangGraph checkpoints its one node, whose conditional edge is part of it; wfexec commits
the action step, and its conditional step, which changes nothing, goes with that commit (wfexec.durable.journal).
Both sides' connections use `synchronous=NORMAL` (wfexec's default; SqliteSaver's own default is SQLite's FULL, an
fsync per commit, which part 2 compares at `full`).

Part 2, one step per commit, at each durability (`--durability normal`: synchronous=NORMAL, a commit survives a
kill; `full`: synchronous=FULL, an fsync per commit, it survives a power cut). The loop is one state-only action
step that counts and routes itself (`on_success: ${count < input.limit ? 'tick' : 'done'}`), committed on its
own at every step; LangGraph runs bench_engine's one-node graph, one checkpoint per step, its connection at the
same `synchronous`. The floor is SQLite itself committing one small row per transaction, WAL mode, same setting,
through the same Python sqlite3 module. Figures are CPU and wall time per commit; the bar (issue 27): wfexec's
CPU per committed step <= 2.5x the floor's at `normal`. `commit alone` is wfexec's CPU per step less the same
step's in memory: what committing it adds; `row alone` is the store journaling a prepared row of that step, no
step run (SQLite with wfexec's schema and the row's encoding): the part of the commit that is not the journal's
Python.

With `--against OTHER_CHECKOUT` (another clone of wfexec, main say), part 3 measures part 2's step at `normal` for
this checkout and that one, each round in a new process per checkout (its `wfexec` imported from that checkout's
folder), the two alternating: before and after a change, on the same machine in one run.
"""

from __future__ import annotations

import argparse
import inspect
import io
import json
import os
import subprocess
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tiny import parse_sized  # noqa: E402  (bench/ is on sys.path: the benches run as scripts)

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import counter_graph, counter_workflow, loaded, run_wfexec  # noqa: E402


class Clock:
    """Wall and CPU seconds since it was made."""

    def __init__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def read(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


TICK = """
name: tick
version: 1
start_node: tick
initial_state: {count: 0, label: ""}
input_schema:
  limit: {type: integer, required: true}
nodes:
  tick:
    type: action
    actions:
      - {type: compute, expression: "count + 1", store_as: count}
      - {type: set_state, field: label, value: "step ${count}"}
    on_success: "${count < input.limit ? 'tick' : 'done'}"
endings:
  done: {type: success, message: "${count}"}
"""


def tick_workflow():
    """The one-step loop of part 2."""
    return loaded(TICK)


def wfexec_memory(iterations: int, workflow) -> tuple[float, float]:
    """(wall, CPU) seconds of a loop run in memory."""
    import wfexec
    from wfexec.running.console import Console

    quiet = Console(out=io.StringIO(), err=io.StringIO())
    # A checkout from before `ephemeral` (part 3's before side) kept no store for such a run, only its history.
    bounded = {"ephemeral": True} if "ephemeral" in inspect.signature(wfexec.run).parameters else {}
    clock = Clock()
    result = wfexec.run(workflow, inputs={"limit": iterations}, io=quiet, max_steps=3 * iterations + 10, **bounded)
    elapsed = clock.read()
    assert result.message == str(iterations), result.message
    return elapsed


def opened_store(path: Path, durability: str):
    """wfexec's store at this durability. `normal` is asked for by leaving the store its default, as a checkout from
    before `--durability` existed (part 3's before side) only takes that."""
    from wfexec.durable.store import Store

    return Store(path) if durability == "normal" else Store(path, durability=durability)


def wfexec_durable(iterations: int, every_step: bool = False, durability: str = "normal",
                   workflow=None) -> tuple[float, float]:
    """(wall, CPU) seconds of a loop (bench_engine's counting loop, unless another is given) in a durable run."""
    from wfexec.running.console import Console
    from wfexec.durable.journal import start_run
    from wfexec.running.engine import Options

    workflow = workflow or counter_workflow()
    with tempfile.TemporaryDirectory() as folder:
        store = opened_store(Path(folder) / "runs.db", durability)
        quiet = Console(out=io.StringIO(), err=io.StringIO())
        clock = Clock()
        driven = start_run(store, workflow, inputs={"limit": iterations}, overrides={}, io=quiet,
                           options=Options(max_steps=3 * iterations + 10, commit_every_step=every_step))
        elapsed = clock.read()
        store.close()
    assert driven.result.message == str(iterations), driven
    return elapsed


def run_wfexec_durable(iterations: int, every_step: bool = False) -> float:
    return wfexec_durable(iterations, every_step)[0]


def langgraph_sqlite(iterations: int, synchronous: str | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of the loop on LangGraph with SqliteSaver, its connection at `synchronous` (None: as
    SqliteSaver leaves it, SQLite's default FULL)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    graph = counter_graph(iterations)
    with tempfile.TemporaryDirectory() as folder:
        connection = sqlite3.connect(str(Path(folder) / "lg.db"), check_same_thread=False)
        if synchronous:
            connection.execute(f"PRAGMA synchronous={synchronous}")
        app = graph.compile(checkpointer=SqliteSaver(connection))
        config = {"configurable": {"thread_id": "bench"}, "recursion_limit": iterations + 10}
        clock = Clock()
        final = app.invoke({"count": 0, "label": ""}, config, durability="sync")
        elapsed = clock.read()
        connection.close()
    assert final["count"] == iterations
    return elapsed


def run_langgraph_sqlite(iterations: int) -> float:
    return langgraph_sqlite(iterations, "NORMAL")[0]


def sqlite_floor(commits: int, synchronous: str) -> tuple[float, float]:
    """(wall, CPU) seconds of SQLite alone committing `commits` small rows one transaction each, WAL mode."""
    with tempfile.TemporaryDirectory() as folder:
        db = sqlite3.connect(str(Path(folder) / "floor.db"), isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={synchronous}")
        db.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, data TEXT NOT NULL)")
        row = '[[1,"tick","action",{"success":true},"tick","2026-11-27T00:00:00.000Z",{"count":1,"label":"step 1"},12]]'
        cursor = db.cursor()  # one for every commit, as the store's writes have: no cursor made per row
        clock = Clock()
        for index in range(commits):
            cursor.execute("INSERT INTO rows VALUES (?, ?)", (index, row))
        elapsed = clock.read()
        db.close()
    return elapsed


def journal_rows_alone(commits: int, durability: str) -> tuple[float, float]:
    """(wall, CPU) seconds of the store journaling `commits` prepared step rows, one commit each, with no step run:
    the part of a durable step that is SQLite with wfexec's schema (its key, its columns) and the row's encoding."""
    with tempfile.TemporaryDirectory() as folder:
        store = opened_store(Path(folder) / "runs.db", durability)
        run_id = store.create_run(workflow_path="tick.yaml", workflow_name="tick", workflow_hash="", node_hashes={},
                                  inputs={}, state={}, start_node="tick")
        rows = [[[step, "tick", "action", {"success": True}, "tick", "2026-11-27T00:00:00.000Z",
                  {"count": step, "label": f"step {step}"}, 12]] for step in range(1, commits + 1)]
        clock = Clock()
        for row in rows:
            store.append_steps(run_id, row, "tick")
        elapsed = clock.read()
        store.close()
    return elapsed


def per_commit(durability: str, iterations: int, langgraph_iterations: int, repeat: int) -> dict[str, tuple]:
    """Median (wall, CPU) µs per commit of the floor, wfexec and LangGraph at one durability, one step per commit,
    and of wfexec's same step in memory; alternated."""
    synchronous = durability.upper()
    workflow = tick_workflow()
    samples: dict[str, list] = {"floor": [], "wfexec": [], "langgraph": [], "memory": [], "rows": []}
    for _ in range(repeat):
        samples["memory"].append([t / iterations * 1e6 for t in wfexec_memory(iterations, workflow)])
        samples["floor"].append([t / iterations * 1e6 for t in sqlite_floor(iterations, synchronous)])
        samples["rows"].append([t / iterations * 1e6 for t in journal_rows_alone(iterations, durability)])
        samples["wfexec"].append([t / iterations * 1e6
                                  for t in wfexec_durable(iterations, True, durability, workflow)])
        samples["langgraph"].append([t / langgraph_iterations * 1e6
                                     for t in langgraph_sqlite(langgraph_iterations, synchronous)])
    return {name: tuple(statistics.median(s[i] for s in values) for i in (0, 1)) for name, values in samples.items()}


SIDES_OF_A_STEP = ("floor", "memory", "rows", "wfexec")  # part 2's sides without LangGraph, for part 3


def one_round(iterations: int) -> dict:
    """CPU µs per commit of each of part 2's wfexec sides and the floor, at `normal`, once (part 3's child)."""
    workflow = tick_workflow()
    wfexec_durable(iterations, True, "normal", workflow)  # warm up
    from wfexec.durable.store import Store

    measured = {"floor": sqlite_floor(iterations, "NORMAL"), "memory": wfexec_memory(iterations, workflow),
                # a checkout from before the store journaled prepared rows (`append_steps`) has no such side
                "rows": journal_rows_alone(iterations, "normal") if hasattr(Store, "append_steps") else None,
                "wfexec": wfexec_durable(iterations, True, "normal", workflow)}
    import wfexec

    return {"wfexec from": wfexec.__file__,
            **{side: None if measured[side] is None else measured[side][1] / iterations * 1e6
               for side in SIDES_OF_A_STEP}}


def against(checkouts: list[Path], iterations: int, repeat: int) -> None:
    """Part 3: `one_round` in a process of each checkout's wfexec, alternating; medians."""
    samples: dict[Path, dict[str, list[float]]] = {c: {side: [] for side in SIDES_OF_A_STEP} for c in checkouts}
    for _ in range(repeat):
        for checkout in checkouts:
            child = subprocess.run([sys.executable, __file__, "--one-round", str(iterations)], check=True,
                                   capture_output=True, text=True,
                                   env={**os.environ, "PYTHONPATH": str(checkout)})
            figures = json.loads(child.stdout)
            imported = Path(figures.pop("wfexec from")).resolve()
            if not imported.is_relative_to(checkout):  # else both sides would measure the same code
                sys.exit(f"the round for {checkout} imported wfexec from {imported}")
            for side, value in figures.items():
                if value is not None:
                    samples[checkout][side].append(value)
    print()
    print(f"part 3: a state-only step committed on its own, at normal, CPU µs; medians of {repeat} rounds, each "
          "checkout in its own process, alternating")
    print(f"{'checkout':<40}{'floor':>8}{'step':>8}{'x floor':>9}{'row alone':>11}{'in memory':>11}")
    for checkout in checkouts:
        median = {side: statistics.median(values) if values else None for side, values in samples[checkout].items()}
        rows = "-" if median["rows"] is None else f"{median['rows']:.1f}"
        print(f"{str(checkout):<40}{median['floor']:8.1f}{median['wfexec']:8.1f}{median['wfexec'] / median['floor']:8.2f}x"
              f"{rows:>11}{median['memory']:11.1f}")


def main() -> None:
    if sys.argv[1:2] == ["--one-round"]:  # part 3's child, in the checkout it measures
        print(json.dumps(one_round(int(sys.argv[2]))))
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=5_000)
    parser.add_argument("--langgraph-iterations", type=int, default=500,
                        help="LangGraph with a checkpointer is slow; its rate is measured on fewer iterations")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--full-iterations", type=int, default=300,
                        help="commits per run at --durability full (each waits for the disk)")
    parser.add_argument("--against", type=Path, default=None,
                        help="another checkout of wfexec: part 3 compares its durable step with this one's")
    args = parse_sized(parser, iterations=50, langgraph_iterations=20, repeat=1, full_iterations=10)
    n, m = args.iterations, args.langgraph_iterations
    run_langgraph_sqlite(50)
    for _ in range(2):  # warm up until CPython's specialising interpreter has settled
        run_wfexec(n), run_wfexec_durable(n), run_wfexec_durable(n, every_step=True)
        wfexec_durable(n, True, workflow=tick_workflow()), wfexec_memory(n, tick_workflow())
    samples: dict[str, list[float]] = {"memory": [], "batched": [], "every step": [], "langgraph": []}
    for _ in range(args.repeat):  # alternated, so a busy moment hits every side
        samples["langgraph"].append(m / run_langgraph_sqlite(m))
        samples["memory"].append(n / run_wfexec(n))
        samples["batched"].append(n / run_wfexec_durable(n))
        samples["every step"].append(n / run_wfexec_durable(n, every_step=True))
    rate = {name: statistics.median(values) for name, values in samples.items()}
    print(f"loop iterations: wfexec {n}, LangGraph {m}; medians of {args.repeat}; one commit per iteration on both "
          "sides, both at synchronous=NORMAL")
    print(f"LangGraph + SqliteSaver (sync)     : {rate['langgraph']:10,.0f} iterations/s")
    print(f"wfexec durable, every step         : {rate['every step']:10,.0f} iterations/s")
    print(f"wfexec durable, state-only batched : {rate['batched']:10,.0f} iterations/s")
    print(f"wfexec in memory                   : {rate['memory']:10,.0f} iterations/s")
    print(f"every step vs LangGraph sync       : {rate['every step'] / rate['langgraph']:10.1f}x  (bar: >= 20x)")
    print(f"batched vs LangGraph sync          : {rate['batched'] / rate['langgraph']:10.1f}x")
    print(f"batched vs in memory               : {rate['batched'] / rate['memory']:10.2f}x  (bar: >= 0.5x)")
    print()
    print(f"per commit, µs (wall / CPU), medians of {args.repeat} alternating rounds; one step per commit on every "
          "side (wfexec: a state-only step committed on its own; LangGraph: one node, one checkpoint; the floor: one "
          "row), every side at the same synchronous setting")
    print("(`row alone`: the store journaling a prepared row, no step run; `in memory`: the same step, no store)")
    print(f"{'durability':<11}{'SQLite WAL floor':>20}{'wfexec step':>18}{'x floor CPU':>13}{'commit alone CPU':>18}"
          f"{'row alone CPU':>16}{'in memory CPU':>16}{'LangGraph Sqlite':>20}{'LG / wfexec':>13}")
    for durability, commits in (("normal", n), ("full", args.full_iterations)):
        lg_commits = min(m, commits)
        figures = per_commit(durability, commits, lg_commits, args.repeat)
        (floor_wall, floor_cpu), (ours_wall, ours_cpu), (lg_wall, lg_cpu), (_, memory_cpu), (_, row_cpu) = (
            figures[name] for name in ("floor", "wfexec", "langgraph", "memory", "rows"))
        commit = ours_cpu - memory_cpu
        bar = "  (bar: <= 2.5x)" if durability == "normal" else ""
        print(f"{durability:<11}{floor_wall:10.1f} /{floor_cpu:7.1f}{ours_wall:10.1f} /{ours_cpu:6.1f}"
              f"{ours_cpu / floor_cpu:12.2f}x{commit:9.1f} ={commit / floor_cpu:5.2f}x"
              f"{row_cpu:8.1f} ={row_cpu / floor_cpu:5.2f}x{memory_cpu:8.1f} ={memory_cpu / floor_cpu:5.2f}x"
              f"{lg_wall:11.1f} /{lg_cpu:7.1f}{lg_wall / ours_wall:12.1f}x{bar}")
    if args.against is not None:
        against([Path(__file__).resolve().parent.parent, args.against.resolve()], n, args.repeat)


if __name__ == "__main__":
    main()
