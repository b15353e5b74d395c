"""In-memory steps per second: wfexec against an equivalent LangGraph StateGraph loop.

    pip install -e '.[bench]' && python bench/bench_engine.py [--iterations 20000]

Both run the same loop: test `count < limit`; if true, `count = count + 1` and
`label = "step <count>"`, then test again. wfexec does it with a conditional
node and an action node (compute + set_state with a ${...} template);
LangGraph with one node and a conditional edge. One iteration = one test plus
one update in both. Prints iterations per second for each and the ratio
(the quality bar is 20x).
"""

from __future__ import annotations

import argparse
import functools
import io
import tempfile
import time
from pathlib import Path

from tiny import parse_sized  # noqa: E402  (bench/ is on sys.path: the benches run as scripts)
from typing import TypedDict

WORKFLOW = """
name: counter
version: 1
start_node: check
initial_state: {count: 0, label: ""}
input_schema:
  limit: {type: integer, required: true}
nodes:
  check:
    type: conditional
    condition: {type: evaluate_expression, expression: "count < input.limit"}
    branches: {true: step, false: done}
  step:
    type: action
    actions:
      - {type: compute, expression: "count + 1", store_as: count}
      - {type: set_state, field: label, value: "step ${count}"}
    on_success: check
endings:
  done: {type: success, message: "${count}"}
"""


@functools.lru_cache(maxsize=None)
def loaded(text: str):
    """The workflow `text`, loaded once, like LangGraph's graph is compiled once: runs reuse its compiled
    expressions."""
    import wfexec

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "workflow.yaml"
        path.write_text(text)
        return wfexec.load(path)


def counter_workflow():
    return loaded(WORKFLOW)


def run_wfexec(iterations: int) -> float:
    import wfexec
    from wfexec.running.console import Console

    workflow = counter_workflow()
    quiet = Console(out=io.StringIO(), err=io.StringIO())
    start = time.perf_counter()
    result = wfexec.run(workflow, inputs={"limit": iterations}, io=quiet, max_steps=3 * iterations + 10,
                        ephemeral=True)
    elapsed = time.perf_counter() - start
    assert result.message == str(iterations), result.message
    return elapsed


class CounterState(TypedDict):
    count: int
    label: str


def counter_graph(iterations: int):
    """The loop as a LangGraph StateGraph: one node, and a conditional edge that tests the count."""
    from langgraph.graph import END, START, StateGraph

    def step(state: CounterState) -> dict:
        count = state["count"] + 1
        return {"count": count, "label": f"step {count}"}

    def route(state: CounterState) -> str:
        return "step" if state["count"] < iterations else END

    graph = StateGraph(CounterState)
    graph.add_node("step", step)
    graph.add_conditional_edges(START, route)
    graph.add_conditional_edges("step", route)
    return graph


def run_langgraph(iterations: int) -> float:
    app = counter_graph(iterations).compile()
    start = time.perf_counter()
    final = app.invoke({"count": 0, "label": ""}, {"recursion_limit": iterations + 10})
    elapsed = time.perf_counter() - start
    assert final["count"] == iterations
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parse_sized(parser, iterations=100, repeat=1)
    n = args.iterations
    # Warm up until CPython's specialising interpreter has settled, then alternate
    # the two so both see the same machine; keep each one's best.
    for _ in range(2):
        run_wfexec(n), run_langgraph(n)
    ours, theirs = float("inf"), float("inf")
    for _ in range(args.repeat):
        ours = min(ours, run_wfexec(n))
        theirs = min(theirs, run_langgraph(n))
    print(f"loop iterations: {n} (wfexec: 2 nodes each; LangGraph: 1 node + 1 conditional edge)")
    print(f"LangGraph StateGraph : {n / theirs:10,.0f} iterations/s")
    print(f"wfexec in memory     : {n / ours:10,.0f} iterations/s  ({2 * n / ours:,.0f} node steps/s)")
    print(f"ratio                : {theirs / ours:10.1f}x  (bar: >= 20x)")


if __name__ == "__main__":
    main()
