"""`wfexec serve --temporal HOST:PORT`: the same pages over a Temporal cluster. Runs are listed, shown, answered
and cancelled through the client code of `wfexec runs/show/resume/cancel --temporal` (wfexec.temporal.client);
a launch is a `wfexec run --temporal` process, as at a terminal. Each run is given in the shape of the store's
records (`store_view.summary`), so the same templates show it.

What the cluster keeps nowhere a client reads is not shown: a run's inputs (so no "run again"), its agents'
transcripts, each step's duration and changed paths (a step here is an entry of its state's `history`). The
event streams look at the cluster every second; the all-runs stream tells the changes it sees after it opens
(its ids are this server's clock, so a reconnect is no replay).
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, TypeVar

import anyio
from sse_starlette import ServerSentEvent

from wfexec.durable.store import FINISHED, STATUSES
from wfexec.serve.store_view import MAX_PAGE, run_graph

LISTED = 200  # the newest runs of the cluster a list looks at
POLL_SECONDS = 1.0
Found = TypeVar("Found")


def _time(moment) -> float | None:
    return moment.timestamp() if moment is not None else None


def _pending(question: dict | None) -> dict | None:
    """A cluster run's question in the store's `pending_question` shape."""
    if not question:
        return None
    return {"node": question["node"], "key": question.get("key") or question["node"], "question": question["text"],
            "header": question.get("header") or "", "allow_other": bool(question.get("allow_other")),
            "options": [{"id": c["id"], "label": c.get("label") or "", "description": c.get("description") or ""}
                        for c in question.get("choices") or ()]}


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


def _steps(state: dict | None) -> list[dict]:
    """The run's steps as its state's history has them, numbered as journal steps are."""
    return [{"step": number, "node": entry.get("node"), "type": entry.get("type"), "outcome": entry.get("outcome"),
             "target": entry.get("target"), "at": entry.get("at"), "changes": {}, "duration_ms": 0.0}
            for number, entry in enumerate((state or {}).get("history") or (), 1)]


def _dumps(data) -> str:
    return json.dumps(data, default=str, ensure_ascii=False)


class ClusterView:
    backend = "temporal"

    def __init__(self, address: str):
        self.address = address
        self.closed = False

    def described(self) -> str:
        return f"Temporal {self.address}"

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
    def _shown(self, run_id: str) -> tuple[dict[str, Any], dict | None]:
        """The run's record, and its state."""
        from wfexec.temporal.client import describe, find

        async def work(client):
            handle = await find(client, run_id)
            shown = await describe(client, handle)
            description = await handle.describe()
            return _record(shown, _time(description.start_time), _time(description.close_time)), shown.get("state")

        return self._call(work)

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
        return self._shown(run_id)[0]

    def journal(self, run_id: str, since: int = 0) -> list[dict]:
        return [s for s in _steps(self._shown(run_id)[1]) if s["step"] > since]

    def journal_tail(self, run_id: str, count: int) -> list[dict]:
        return _steps(self._shown(run_id)[1])[-count:]

    def state(self, run_id: str) -> dict[str, Any]:
        return {k: v for k, v in (self._shown(run_id)[1] or {}).items() if k != "history"}

    def graph(self, run_id: str) -> dict[str, Any]:
        record, state = self._shown(run_id)
        visited = {s["node"] for s in _steps(state)}
        return run_graph(Path(record["workflow_path"]), visited, record["current_node"], record["ending"])

    def agents(self, run_id: str) -> list[dict[str, Any]]:
        return []  # a cluster run's transcripts stay with its workers

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
    async def run_events(self, run_id: str, since: int,
                         output: Callable[[str], Path | None]) -> AsyncIterator[ServerSentEvent]:
        from wfexec.serve.events import output_size
        from wfexec.serve.store_view import moved

        sent, last, told = since, None, 0
        while not self.closed:
            record, state = await anyio.to_thread.run_sync(self._shown, run_id)
            size = output_size(output(record["id"]))
            if size != told:
                told = size
                yield ServerSentEvent(_dumps({"size": size}), event="output")
            for step in _steps(state)[sent:]:
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
