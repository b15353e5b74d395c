"""One reader of the store for every open event stream.

Each stream used to read the store on its own every quarter second; with many runs marked running (interrupted
runs stay so) ten streams read tens of thousands of rows a second, each in a worker thread of its own, and the
server grew by about 100 MiB and took 25 s to stop. Now one task per server looks at the store while a stream
is open: it asks SQLite whether anything was committed since it last looked (`data_version`, no row read), and
only then which runs changed. Streams wait for its ticks and read only what concerns them, through its one
connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable, Iterator

import anyio

from wfexec.durable.store import RunRecord, Store, StoreError, open_store

POLL_SECONDS = 0.25
# A change's time is taken just before it is committed: one committed a little later than a newer one is still
# seen, by looking this far back and leaving out what was already told.
SLACK_SECONDS = 2.0
KEPT_TICKS = 64  # a stream further behind than this many ticks asks the store itself what it missed


class Feed:
    def __init__(self, store_path: Path):
        self.store_path = store_path
        self.tick = 0
        self.commits = 0  # moves whenever anything was committed to the store (a run's output too), run moved or not
        self.cursor = time.time()  # the newest change told
        self.closed = False
        self.moved: dict[str, int] = {}  # run id → the tick that last saw it change
        self._batches: deque[tuple[int, list[RunRecord]]] = deque(maxlen=KEPT_TICKS)
        self._told: dict[str, float] = {}  # run id → the time of its change last told
        self._store: Store | None = None
        self._version: int | None = None
        self._lock = threading.Lock()  # one query at a time on the one connection
        self._watchers = 0
        self._task: asyncio.Task | None = None
        self._ticked: anyio.Event | None = None

    # -- for the streams ---------------------------------------------------
    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        """While a stream is open: the feed looks at the store."""
        self._watchers += 1
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._look())
        try:
            yield
        finally:
            self._watchers -= 1

    async def query(self, read: Callable[..., Any], *args: Any) -> Any:
        """`read(store, *args)` in a worker thread on the feed's connection; None while there is no store."""
        return await anyio.to_thread.run_sync(self._query, read, args)

    async def next_tick(self, seen: int, longest: float | None = None) -> int:
        """Wait until something changed after tick `seen`, the server stops, or `longest` seconds have passed;
        the tick now."""
        until = None if longest is None else time.monotonic() + longest
        while self.tick == seen and not self.closed and (until is None or time.monotonic() < until):
            if self._ticked is None:
                self._ticked = anyio.Event()
            # The server stopping sets no event: look again now and then.
            with anyio.move_on_after(min(POLL_SECONDS * 4, longest or POLL_SECONDS * 4)):
                await self._ticked.wait()
        return self.tick

    def changed_after(self, seen: int) -> list[RunRecord] | None:
        """The runs that changed in the ticks after `seen`, or None when those ticks are no longer kept."""
        if seen < self.tick - len(self._batches):
            return None
        return [record for tick, batch in self._batches if tick > seen for record in batch]

    def close(self) -> None:
        """The server is stopping: every stream ends at its next look."""
        self.closed = True

    # -- the one reader -------------------------------------------------------
    def _query(self, read: Callable[..., Any], args: tuple) -> Any:
        with self._lock:
            store = self._opened()
            return None if store is None else read(store, *args)

    def _opened(self) -> Store | None:
        if self._store is None and self.store_path.exists():
            try:
                self._store = open_store(self.store_path, readonly=True)
            except StoreError:  # the first run of a new store is creating its tables right now
                return None
        return self._store

    async def _look(self) -> None:
        try:
            while self._watchers > 0 and not self.closed:
                changed = await anyio.to_thread.run_sync(self._changed)
                if changed:
                    self.tick += 1
                    for record in changed:
                        self.moved[record.id] = self.tick
                    self._batches.append((self.tick, changed))
                    if self._ticked is not None:
                        self._ticked.set()
                        self._ticked = None
                await anyio.sleep(POLL_SECONDS)
        finally:
            self._close_store()

    def _changed(self) -> list[RunRecord]:
        with self._lock:
            store = self._opened()
            if store is None:
                return []
            version = store.data_version()
            if version == self._version:
                return []
            self._version = version
            self.commits += 1
            records = store.changed_since(self.cursor - SLACK_SECONDS)
        fresh = [r for r in records if self._told.get(r.id) != r.updated_at]
        for record in fresh:
            self._told[record.id] = record.updated_at
            self.cursor = max(self.cursor, record.updated_at)
        self._told = {k: v for k, v in self._told.items() if v > self.cursor - SLACK_SECONDS}
        return fresh

    def _close_store(self) -> None:
        with self._lock:
            if self._store is not None and self._watchers == 0:
                self._store.close()
                self._store, self._version = None, None
