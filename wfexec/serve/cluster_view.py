"""`wfexec serve --temporal HOST:PORT`: the same pages over a Temporal cluster. Runs are listed, shown, answered
and cancelled through the client code of `wfexec runs/show/resume/cancel --temporal` (wfexec.temporal.client);
a launch is a `wfexec run --temporal` process, as at a terminal. Each run is given in the shape of the store's
records (`store_view.summary`), so the same templates show it.

A run's steps, with what each changed, are its journal (a query); its inputs, its programs' output and its agents'
transcripts are read from its history (`cluster_history`), each step's duration from its journal's times. The
event streams look at the cluster every second; the all-runs stream tells the changes it sees after it opens
(its ids are this server's clock, so a reconnect is no replay).
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable, Callable, TypeVar

import anyio
from sse_starlette import ServerSentEvent

from wfexec.durable.store import FINISHED, STATUSES
from wfexec.serve.cluster_history import (History, HistoryCache, durations, numbered, output_rows, read_history,
                                          transcripts)
from wfexec.durable.outputs import output_text
from wfexec.serve.store_view import MAX_PAGE, grouped_by_agent, run_graph

LISTED = 200  # the newest runs of the cluster a list looks at
POLL_SECONDS = 1.0
Found = TypeVar("Found")


def _time(moment) -> float | None:
    return moment.timestamp() if moment is not None else None


def _pending(question: dict | None) -> dict | None:
    """A cluster run's question in the store's `pending_question` shape: its one JSON form (a workflow's
    `question` query adds `refused` and `in_flight_hint`, which the store does not keep)."""
    from wfexec.nodes.base import Question

    return Question.from_json(question).to_json() if question else None


def _record(shown: dict, started: float | None, closed: float | None) -> dict[str, Any]:
    """A run as `describe` gives it, in the store's record shape."""
    status = shown.get("status") or "running"
    status = status if status in STATUSES else "running"  # `finished`: its result is being written
    result = shown.get("result") or {}
    error = shown.get("error") or {}
    return {"id": shown["id"], "workflow_name": shown.get("workflow") or "", "workflow_path": shown.get("path") or "",
            "status": status, "current_node": None if status in FINISHED else shown.get("current_node"),
            "in_flight": None, "pending_question": _pending(shown.get("question")) if status == "waiting" else None,
            "last_error": error.get("text"), "ending": result.get("ending"), "ending_type": result.get("type"),
            "result": {"message": result.get("message")} if result else None, "inputs": {},
            "steps": shown.get("steps") or 0, "created_at": started, "updated_at": closed or started,
            "finished_at": closed, "lease": None, "finished": status in FINISHED}


def _row_record(row: dict, started: float | None) -> dict[str, Any]:
    """A run as `list_runs` gives it (no question, no ending), in the store's record shape."""
    return _record({"id": row["id"], "workflow": row["workflow"], "status": row["status"],
                    "current_node": row["current_node"]}, started, None)


@dataclass
class _Shown:
    """A cluster run as one look at it gives it: its record, state and journal (its steps, each with what it
    changed and how long it took), and how long its history is (which grows whenever something happened)."""

    record: dict[str, Any]
    state: dict | None
    steps: list[dict]
    history_length: int


def _steps(shown: dict, started: float | None) -> list[dict]:
    """The run's steps, from its journal (with what each changed), else from its state's history, numbered as a
    SQLite run's journal numbers them, each with its duration (cluster_history.durations)."""
    journal = shown.get("journal")
    if journal is None:
        journal = [{"step": number, **entry, "changes": {}}
                   for number, entry in enumerate((shown.get("state") or {}).get("history") or (), 1)]
    steps = [{"step": row.get("step"), "node": row.get("node"), "type": row.get("type"),
              "outcome": row.get("outcome"), "target": row.get("target"), "at": row.get("at"),
              "changes": row.get("changes") or {}, **{k: row[k] for k in ("appended", "removed") if row.get(k)}}
             for row in journal]
    for step, took in zip(steps, durations(journal, started)):
        step["duration_ms"] = took
    return steps


def _dumps(data) -> str:
    return json.dumps(data, default=str, ensure_ascii=False)


class ClusterView:
    backend = "temporal"

    def __init__(self, address: str):
        self.address = address
        self.closed = False
        self.histories = HistoryCache()

    def described(self) -> str:
        return f"Temporal {self.address}"

    @property
    def where_runs(self) -> list[str]:
        return ["--temporal", self.address]

    def with_inputs(self, record: dict[str, Any]) -> dict[str, Any]:
        """The record with the inputs its run was started with (read from its history: not in every record)."""
        return {**record, "inputs": self.inputs(record["id"])}

    def close(self) -> None:
        self.closed = True

    def _call(self, work: Callable[[Any], Awaitable[Found]]) -> Found:
        """`work(client)` on a fresh connection (each call runs on a worker thread's own event loop); the
        cluster's refusals as the pages' refusals."""
        from wfexec.serve.actions import ActionRefused
        from wfexec.temporal import TemporalUnavailable, require_temporalio

        require_temporalio()
        from temporalio.service import RPCError

        from wfexec.temporal.client import RunNotFound, connect, unavailable

        async def body() -> Found:
            return await work(await connect(self.address))

        try:
            return asyncio.run(body())
        except TemporalUnavailable as exc:
            raise ActionRefused(503, exc.message, exc.hint) from None
        except RunNotFound as exc:
            raise ActionRefused(404, exc.message, exc.hint) from None
        except RPCError as exc:
            failed = unavailable(self.address, exc)
            raise ActionRefused(503, failed.message, failed.hint) from None

    # -- reading -----------------------------------------------------------------
    def _shown(self, run_id: str) -> _Shown:
        from wfexec.temporal.client import describe, find

        async def work(client):
            handle = await find(client, run_id)
            shown = await describe(client, handle)
            description = await handle.describe()
            started = _time(description.start_time)
            return _Shown(_record(shown, started, _time(description.close_time)), shown.get("state"),
                          _steps(shown, started), description.raw_description.workflow_execution_info.history_length)

        return self._call(work)

    def _history(self, run_id: str, shown: _Shown | None = None) -> tuple[_Shown, History]:
        """The run as it is, and what its history holds beyond that (read again only once it has grown)."""
        shown = shown or self._shown(run_id)
        run = shown.record["id"]
        read = self.histories.get(run)
        if read is None or read.length != shown.history_length:
            before = read

            async def work(client):
                return await read_history(client, client.get_workflow_handle(run), shown.history_length, before)

            read = self._call(work)
            self.histories.put(run, read)
        return shown, read

    def _rows(self) -> list[dict[str, Any]]:
        """The newest runs, newest first; a waiting one with its question."""
        from wfexec.temporal.client import describe, list_runs

        async def work(client):
            records = []
            for row in await list_runs(client, LISTED):
                started = _time(_parsed(row.get("started")))
                if row["status"] == "waiting":
                    handle = client.get_workflow_handle(row["id"])
                    records.append(_record(await describe(client, handle), started, None))
                else:
                    records.append(_row_record(row, started))
            return sorted(records, key=lambda r: r["id"], reverse=True)

        return self._call(work)

    def inbox(self) -> dict[str, Any]:
        rows = self._rows()
        return {"waiting": [r for r in rows if r["status"] == "waiting"],
                "running": [r for r in rows if r["status"] in ("running", "stopped")],
                "recent": [r for r in rows if r["finished"]][:20], "more_stalled": 0}

    def runs_page(self, status: str | None = None, limit: int = 50, before: str | None = None,
                  workflow: str | None = None, text: str | None = None) -> dict[str, Any]:
        rows = self._rows()
        if before is not None and not any(r["id"] == before for r in rows):
            from wfexec.serve.actions import ActionRefused

            raise ActionRefused(400, f"'before' must be the id of a run (the `next` of the page before), not "
                                     f"'{before}'", hint="leave it out for the newest runs")
        names = sorted({r["workflow_name"] for r in rows})
        wanted = (text or "").lower()
        rows = [r for r in rows if (status is None or r["status"] == status)
                and (workflow is None or r["workflow_name"] == workflow)
                and (before is None or r["id"] < before)
                and (not wanted or any(wanted in str(r[k] or "").lower()
                                       for k in ("id", "workflow_name", "current_node", "pending_question")))]
        limit = max(1, min(limit, MAX_PAGE))
        return {"runs": rows[:limit], "next": rows[limit - 1]["id"] if len(rows) > limit else None,
                "workflows": names}

    def one_run(self, run_id: str) -> dict[str, Any]:
        return self._shown(run_id).record

    def inputs(self, run_id: str) -> dict[str, Any]:
        """The inputs the run was started with (its history's first event)."""
        return self._history(run_id)[1].inputs

    def journal(self, run_id: str, since: int = 0) -> list[dict]:
        return [s for s in self._shown(run_id).steps if s["step"] > since]

    def journal_tail(self, run_id: str, count: int) -> list[dict]:
        return self._shown(run_id).steps[-count:]

    def state(self, run_id: str) -> dict[str, Any]:
        return {k: v for k, v in (self._shown(run_id).state or {}).items() if k != "history"}

    def graph(self, run_id: str) -> dict[str, Any]:
        shown = self._shown(run_id)
        record = shown.record
        visited = {s["node"] for s in shown.steps}
        return run_graph(Path(record["workflow_path"]), visited, record["current_node"], record["ending"])

    def agents(self, run_id: str) -> list[dict[str, Any]]:
        """Its states agents' transcripts, as each agent state's activity returned them."""
        return grouped_by_agent(transcripts(self._history(run_id)[1].kept))

    def output(self, run_id: str, start: int, shown: _Shown | None = None) -> dict[str, Any]:
        """The output of its steps' programs, as each step's activity returned it once it ended."""
        shown, read = self._history(run_id, shown)
        rows = output_rows(numbered(read.kept, shown.steps))
        size = rows[-1][2] + rows[-1][3] if rows else 0
        return output_text([r for r in rows if r[2] + r[3] > start], start, size)

    # -- changing ----------------------------------------------------------------
    def answer(self, run_id: str, key: str, value: str):
        """The answer sent as `wfexec resume --temporal --answer` sends it (the run's `answer` update, which
        checks it again and refuses what does not fit)."""
        from wfexec.running.prompts import AnswerRefused
        from wfexec.serve.actions import ActionRefused
        from wfexec.serve.processes import Started
        from wfexec.temporal.client import find, send_answer

        async def work(client):
            await send_answer(await find(client, run_id), key, value)

        try:
            self._call(work)
        except AnswerRefused as refused:
            raise ActionRefused(422, refused.message) from None
        return Started(run_id)

    def cancel(self, run_id: str) -> dict[str, Any]:
        """As `wfexec cancel --temporal` does."""
        from wfexec.serve.actions import ActionRefused

        record = self.one_run(run_id)
        if record["finished"]:
            raise ActionRefused(409, f"run {record['id']} has already finished ({record['status']})")
        from wfexec.temporal.client import find

        async def work(client):
            await (await find(client, run_id)).cancel()

        self._call(work)
        for _ in range(50):  # the cancellation is a request: the run's page shows it once the cluster has it
            record = self.one_run(run_id)
            if record["finished"]:
                break
            time.sleep(0.1)
        return record

    # -- events --------------------------------------------------------------------
    async def run_events(self, run_id: str, since: int) -> AsyncIterator[ServerSentEvent]:
        from wfexec.serve.store_view import moved

        sent, last, told = since, None, 0
        while not self.closed:
            shown = await anyio.to_thread.run_sync(self._shown, run_id)
            record = shown.record
            size = (await anyio.to_thread.run_sync(self.output, run_id, 1 << 62, shown))["size"]
            if size != told:
                told = size
                yield ServerSentEvent(_dumps({"size": size}), event="output")
            for step in [s for s in shown.steps if s["step"] > sent]:
                sent = step["step"]
                yield ServerSentEvent(_dumps(step), event="step", id=str(sent))
            if moved(record) != last:
                last = moved(record)
                yield ServerSentEvent(_dumps(record), event="run", id=str(sent))
            if record["finished"]:
                return
            await anyio.sleep(POLL_SECONDS)

    async def all_events(self, since: float | None) -> AsyncIterator[ServerSentEvent]:
        from wfexec.serve.store_view import moved

        shown: dict[str, tuple] = {}
        first = True
        while not self.closed:
            for record in await anyio.to_thread.run_sync(self._rows):
                if shown.get(record["id"]) != moved(record):
                    shown[record["id"]] = moved(record)
                    if not first:  # the first look only learns how runs stand: the page was drawn with them
                        yield ServerSentEvent(_dumps(record), event="run", id=repr(time.time()))
            first = False
            await anyio.sleep(POLL_SECONDS)


def _parsed(text: str | None):
    from datetime import datetime

    return datetime.fromisoformat(text) if text else None
