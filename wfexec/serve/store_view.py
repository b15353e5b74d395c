"""What the run store says, as the pages and the API show it. Read-only: every write goes through a run's own
process (`processes`) or the command line's own functions (cancel)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator

from wfexec.durable.outputs import output_text
from wfexec.durable.store import FINISHED, STATUSES, Store, StoreError, open_store
from wfexec.serve.drawing import marked, svg_of

PAGE = 50
MAX_PAGE = 500
SHOWN_STATUSES = (*STATUSES, "interrupted")


NO_GRAPH: dict[str, Any] = {"mermaid": None, "svg": None, "nodes": [], "endings": [], "ending": None, "current": None}


@contextlib.contextmanager
def reading(store_path: Path) -> Iterator[Store | None]:
    """The store opened to read, or None while no run was ever recorded there (nothing to show yet)."""
    if not store_path.exists():
        yield None
        return
    store = open_store(store_path, readonly=True)
    try:
        yield store
    finally:
        store.close()


def moved(run: dict[str, Any]) -> tuple:
    """What tells a run moved, as a page shows it: its status, node, step count and ending."""
    return run["status"], run["current_node"], run["steps"], run["ending"]


def summary(record) -> dict[str, Any]:
    """A run as lists show it: the record without its journal or state."""
    data = record.to_json()
    data["finished"] = record.status in FINISHED
    return data


def runs_page(store_path: Path, status: str | None, limit: int, before: str | None, workflow: str | None = None,
              text: str | None = None) -> dict[str, Any]:
    """A page of runs, newest first, filtered by status, workflow name and text; `next` is the `before` of the
    next page (None on the last)."""
    if status is not None and status not in SHOWN_STATUSES:
        raise StoreError(f"'{status}' is not a run status", f"one of {', '.join(SHOWN_STATUSES)}")
    limit = max(1, min(limit, MAX_PAGE))
    with reading(store_path) as store:
        if store is None:
            return {"runs": [], "next": None, "workflows": []}
        if before is not None:
            before = _page_start(store, before)
        records = store.list(status, limit + 1, before, workflow=workflow, text=text)
        names = store.workflow_names()
    more = len(records) > limit
    records = records[:limit]
    return {"runs": [summary(r) for r in records], "next": records[-1].id if more and records else None,
            "workflows": names}


def _page_start(store: Store, before: str) -> str:
    """The id of the run a page starts after (`before`, the `next` of the page before it): a run of the store."""
    try:
        return store.get(before).id
    except StoreError:
        raise StoreError(f"'before' must be the id of a run (the `next` of the page before), not '{before}'",
                         "leave it out for the newest runs") from None


def inbox(store_path: Path, recent: int = 20) -> dict[str, Any]:
    """The front page: every run waiting on a question, the runs going on (and the newest `recent` stopped or
    interrupted ones, with how many more there are), the latest others."""
    with reading(store_path) as store:
        if store is None:
            return {"waiting": [], "running": [], "recent": [], "more_stalled": 0}
        waiting = store.list("waiting", -1)
        rows = store.list("running", -1)
        live = [r for r in rows if r.shown_status != "interrupted"]
        # Stopped and interrupted runs wait for someone to resume them, but a crash can leave thousands: the
        # newest show, the rest are counted and a link lists them.
        stalled = sorted([r for r in rows if r.shown_status == "interrupted"] + store.list("stopped", -1),
                         key=lambda r: r.id, reverse=True)
        # The newest `recent` of each finished status, then the newest of those: no more rows read than shown,
        # however many runs wait, go on or stalled.
        done = sorted((r for status in FINISHED for r in store.list(status, recent)), key=lambda r: r.id,
                      reverse=True)
    return {"waiting": [summary(r) for r in waiting], "running": [summary(r) for r in live + stalled[:recent]],
            "recent": [summary(r) for r in done[:recent]], "more_stalled": max(0, len(stalled) - recent)}


def one_run(store_path: Path, run_id: str) -> dict[str, Any]:
    with _store(store_path, run_id) as store:
        return summary(store.get(run_id))


def journal(store_path: Path, run_id: str, since: int = 0) -> list[dict]:
    with _store(store_path, run_id) as store:
        return store.journal_since(store.get(run_id).id, since)


def journal_tail(store_path: Path, run_id: str, count: int) -> list[dict]:
    """The last `count` steps, without reading the rest."""
    with _store(store_path, run_id) as store:
        return store.journal_tail(store.get(run_id).id, count)


def state(store_path: Path, run_id: str) -> dict[str, Any]:
    with _store(store_path, run_id) as store:
        return store.snapshot(store.get(run_id).id)[1]


def agents(store_path: Path, run_id: str) -> list[dict[str, Any]]:
    """The agents of the run's `states` nodes, each with what it was sent and got state by state (`wfexec show
    RUN --agent NAME`), in the order they first spoke."""
    with _store(store_path, run_id) as store:
        return grouped_by_agent(store.transcript(store.get(run_id).id))


def grouped_by_agent(records: list[dict]) -> list[dict[str, Any]]:
    """Agent records (each with its `agent`) grouped by agent, in the order the agents first spoke."""
    grouped: dict[str, list[dict]] = {}
    for record in records:
        grouped.setdefault(record["agent"], []).append(record)
    return [{"agent": agent, "states": states} for agent, states in grouped.items()]


def output(store_path: Path, run_id: str, start: int) -> dict[str, Any]:
    """What the run's commands and scripts wrote from byte `start` of its output on (wfexec.durable.outputs), as
    text (`outputs.output_text`)."""
    with _store(store_path, run_id) as store:
        record_id = store.get(run_id).id
        rows = store.output_rows(record_id, start)
        size = store.output_size(record_id)
    return output_text(rows, start, size)


def graph(store_path: Path, run_id: str) -> dict[str, Any]:
    """The run's workflow as Mermaid text and an SVG picture, and its nodes in the file's order, with the ones the
    run went through and the one it stands at marked (what the run page draws)."""
    with _store(store_path, run_id) as store:
        record = store.get(run_id)
        visited = store.journal_nodes(record.id)
    return run_graph(Path(record.workflow_path), visited, record.current_node if record.status not in FINISHED
                     else None, record.ending)


def run_graph(path: Path, visited: set[str], current: str | None, ending: str | None) -> dict[str, Any]:
    """The graph of the workflow at `path` with a run's marks: the nodes it went through, the one it stands at,
    the ending it reached."""
    drawn = workflow_graph(path)
    for node in drawn["nodes"]:
        node["visited"] = node["id"] in visited
        node["current"] = node["id"] == current
    drawn["ending"] = ending
    drawn["current"] = current or ending
    if drawn["svg"]:
        drawn["svg"] = marked(drawn["svg"], visited | ({ending} if ending else set()), drawn["current"])
    return drawn


def workflow_plan(path: Path) -> dict[str, Any] | None:
    """What a run of the workflow at `path` may do outside its state (`wfexec plan`), or None when it does not
    compile."""
    from wfexec.api import check
    from wfexec.errors import WfexecError
    from wfexec.outputs.plan import plan

    try:
        workflow, _ = check(path)
    except (OSError, WfexecError):
        return None
    return plan(workflow) if workflow is not None else None


def workflow_graph(path: Path) -> dict[str, Any]:
    """Mermaid text, the SVG picture (None without Graphviz) and the node list of the workflow at `path`; `error`
    says why there is none (it no longer compiles, or is gone)."""
    from wfexec.api import check
    from wfexec.errors import WfexecError
    from wfexec.outputs.graph import mermaid_of, picture

    try:
        workflow, _ = check(path)
    except (OSError, WfexecError) as exc:
        return {**NO_GRAPH, "error": str(exc)}
    if workflow is None:
        return {**NO_GRAPH, "error": f"{path} does not compile now (wfexec validate says why)"}
    drawn = picture(workflow)
    targets: dict[str, list[str]] = {}
    for edge in drawn.edges:
        targets.setdefault(edge.source, []).append(edge.target)
    return {"mermaid": mermaid_of(drawn), "svg": svg_of(drawn, path), "error": None, "start": drawn.start,
            "current": None,
            "nodes": [{"id": node_id, "type": workflow.nodes[node_id].type, "next": targets.get(node_id, []),
                       "visited": False, "current": False} for node_id in workflow.nodes], "ending": None,
            "endings": [{"id": ending_id, "type": kind} for ending_id, kind in drawn.endings.items()]}


@contextlib.contextmanager
def _store(store_path: Path, run_id: str) -> Iterator[Store]:
    with reading(store_path) as store:
        if store is None:
            raise StoreError(f"no run '{run_id}': there is no run store at {store_path} yet",
                             "start a run first")
        yield store

