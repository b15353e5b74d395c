"""Server-sent events, read from the store as it is written (WAL: readers never wait for the run's process).

One run: `event: step` for each journal step, whose `id:` is the step's number, so a browser that reconnects with
`Last-Event-ID: N` (or a page that asks with `?since=N`) gets exactly the steps after N; and `event: run` with the
run's summary whenever its status, node or step count moves (its id is the last step sent). The stream ends after
a finished run's last event: nothing can happen to it any more.

All runs: `event: run` for each run that changed, whose `id:` is the time of the newest change sent, so a
reconnect gets the runs that changed since.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import AsyncIterator

import anyio
from sse_starlette import ServerSentEvent

from wfexec.durable.store import FINISHED
from wfexec.serve.store_view import reading, summary

POLL_SECONDS = 0.25
WATCHED_RUNS = 200  # the all-runs stream looks at the newest runs, and every waiting or running one


def _dumps(data) -> str:
    return json.dumps(data, default=str, ensure_ascii=False)


def _moved(record) -> tuple:
    return record.shown_status, record.current_node, record.steps, record.ending


def _read_run(store_path: Path, run_id: str, after: int):
    with reading(store_path) as store:
        if store is None:
            return None, []
        record = store.get(run_id)
        return record, store.journal_since(record.id, after)


async def run_events(store_path: Path, run_id: str, since: int) -> AsyncIterator[ServerSentEvent]:
    sent = since
    last: tuple | None = None
    while True:
        record, steps = await anyio.to_thread.run_sync(_read_run, store_path, run_id, sent)
        if record is None:
            return
        for step in steps:
            sent = step["step"]
            yield ServerSentEvent(_dumps(step), event="step", id=str(sent))
        if _moved(record) != last:
            last = _moved(record)
            yield ServerSentEvent(_dumps(summary(record)), event="run", id=str(sent))
        if record.status in FINISHED:
            return
        await anyio.sleep(POLL_SECONDS)


def _read_changed(store_path: Path, after: float):
    with reading(store_path) as store:
        if store is None:
            return []
        records = {r.id: r for r in store.list(None, WATCHED_RUNS)}
        for status in ("waiting", "running", "stopped"):
            records.update((r.id, r) for r in store.list(status, -1))
    return sorted((r for r in records.values() if r.updated_at > after), key=lambda r: r.updated_at)


async def all_events(store_path: Path, since: float) -> AsyncIterator[ServerSentEvent]:
    cursor = since
    shown: dict[str, tuple] = {}
    while True:
        for record in await anyio.to_thread.run_sync(_read_changed, store_path, cursor):
            cursor = max(cursor, record.updated_at)
            if shown.get(record.id) != _moved(record):
                shown[record.id] = _moved(record)
                yield ServerSentEvent(_dumps(summary(record)), event="run", id=repr(cursor))
        await anyio.sleep(POLL_SECONDS)
