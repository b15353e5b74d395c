"""Server-sent events, read from the store as it is written (WAL: readers never wait for the run's process),
through the server's one `Feed`.

One run: `event: step` for each journal step, whose `id:` is the step's number, so a browser that reconnects with
`Last-Event-ID: N` (or a page that asks with `?since=N`) gets exactly the steps after N; `event: run` with the
run's summary whenever its status, node or step count moves (its id is the last step sent); and `event: output`
(no id) when the output of its commands and scripts grew (its process keeps it in the store, whichever door
started it), saying its size. The stream ends after a finished run's last event: nothing can happen to it any
more.

All runs: `event: run` for each run that changed, whose `id:` is the time of the newest change sent, as the
store keeps it; a reconnect with that id, to this server or to the next one on the same store, gets every run
whose last change came after it.
"""

from __future__ import annotations

import json
from typing import AsyncIterator

from sse_starlette import ServerSentEvent

from wfexec.durable.store import FINISHED, Store
from wfexec.serve.feed import POLL_SECONDS, Feed
from wfexec.serve.store_view import summary


def _dumps(data) -> str:
    return json.dumps(data, default=str, ensure_ascii=False)


def _moved(record) -> tuple:
    return record.shown_status, record.current_node, record.steps, record.ending


def _read_run(store: Store, run_id: str, after: int):
    record = store.get(run_id)
    return record, store.journal_since(record.id, after), store.output_size(record.id)


async def run_events(feed: Feed, run_id: str, since: int) -> AsyncIterator[ServerSentEvent]:
    sent = since
    last: tuple | None = None
    told_size = 0
    with feed.watching():
        seen, commits = feed.tick, feed.commits
        while True:
            found = await feed.query(_read_run, run_id, sent)
            if found is None:
                return
            record, steps, size = found
            if size != told_size:
                told_size = size
                yield ServerSentEvent(_dumps({"size": size}), event="output")
            for step in steps:
                sent = step["step"]
                yield ServerSentEvent(_dumps(step), event="step", id=str(sent))
            if _moved(record) != last:
                last = _moved(record)
                yield ServerSentEvent(_dumps(summary(record)), event="run", id=str(sent))
            if record.status in FINISHED or feed.closed:
                return
            # The output of a step in flight grows without moving the run: looked at after any commit.
            while not feed.closed:
                tick = await feed.next_tick(seen, POLL_SECONDS)
                moved = feed.moved.get(record.id, 0) > seen
                seen = tick
                if moved:
                    break
                if feed.commits != commits:
                    commits = feed.commits
                    if await feed.query(Store.output_size, record.id) != told_size:
                        break


async def all_events(feed: Feed, since: float | None) -> AsyncIterator[ServerSentEvent]:
    shown: dict[str, tuple] = {}
    with feed.watching():
        seen = feed.tick
        cursor = feed.cursor if since is None else since
        missed = await feed.query(Store.changed_since, cursor) if since is not None else []
        while True:
            for record in missed or ():
                if shown.get(record.id) != _moved(record):
                    shown[record.id] = _moved(record)
                    cursor = max(cursor, record.updated_at)
                    yield ServerSentEvent(_dumps(summary(record)), event="run", id=repr(cursor))
            if feed.closed:
                return
            tick = await feed.next_tick(seen)
            missed = feed.changed_after(seen)
            if missed is None:  # too far behind: ask the store
                missed = await feed.query(Store.changed_since, cursor)
            seen = tick
