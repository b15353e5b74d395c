"""The output of a durable run's commands and scripts, kept in its store so that whoever watches the run (`wfexec
serve`) sees it, whichever door started the run.

Bounded: each step keeps the last KEEP_BYTES it wrote (cut at a line's start), with the count of all it wrote, so a
chatty command cannot grow the store past that per step. Live: what arrives is written at most every WRITE_SECONDS
(so a command writing a line a second shows each line within that time, and one writing thousands a second costs a
few writes a second), and all of it before the step's journal row is committed (`DurableJournal.flush`): a kill
loses at most the last WRITE_SECONDS of the step in flight, whose outcome the journal loses too.

Offsets: the run's output is one byte stream, step after step; a step's row says where its part starts and how
long it is, so a reader that saw up to byte N asks for the rows that go on past N (`Store.output_rows`).
"""

from __future__ import annotations

import _thread  # a lock, without importing threading on the path of a step whose output is written at once
import time
from collections import deque

from wfexec.durable.store import SQLiteError, Store, StoreError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import threading
    from typing import Any

KEEP_BYTES = 64 * 1024
WRITE_SECONDS = 0.2
OUTPUT_CHUNK = 256 * 1024  # what one read of a run's output gives at most (whole steps)


class StepOutput:
    """What one step wrote: where its part of the run's output starts, how many bytes it wrote, the last kept."""

    def __init__(self, step: int, node: str, start: int, written: int = 0, kept: bytes = b""):
        self.step, self.node, self.start, self.written = step, node, start, written
        # Pieces, joined only when cut: appending to one bytes buffer cut at its front costs a copy of it per line.
        self.pieces: list[bytes] = [kept] if kept else []
        self.size = len(kept)

    def add(self, data: bytes) -> None:
        self.written += len(data)
        self.pieces.append(data)
        self.size += len(data)
        if self.size > 2 * KEEP_BYTES:  # cut now and then, not at every line
            self.cut()

    def cut(self) -> bytes:
        """The last KEEP_BYTES, from a line's start (unless one line fills them all)."""
        kept = b"".join(self.pieces)
        if len(kept) > KEEP_BYTES:
            kept = kept[len(kept) - KEEP_BYTES:]
            start = kept.find(b"\n")
            if 0 <= start < len(kept) - 1:
                kept = kept[start + 1:]
        self.pieces, self.size = [kept], len(kept)
        return kept


class OutputKeeper:
    """Keeps the output of a run's steps in its store; called from the threads that read programs' pipes.

    A line is only queued where it arrives (a chatty program writes thousands a second): the write that is due
    while anything waits (now, or when its timer fires, or at `flush`) takes the queue, in order, into the rows."""

    def __init__(self, store: Store, run_id: str):
        self.store = store
        self.run_id = run_id
        self._queue: deque[tuple[int, str, str]] = deque()  # (step, node, line), appended from any thread
        self._due = False  # a write will take what is queued: no need to arrange one
        self._lock = _thread.allocate_lock()
        self._step: StepOutput | None = None
        self._written_at = 0.0
        self._timer: threading.Timer | None = None

    def add(self, step: int, node: str, line: str) -> None:
        self._queue.append((step, node, line))
        if not self._due:
            self._arrange()

    def flush(self) -> None:
        """Write what is not written yet (before the step's journal row is committed)."""
        with self._lock:
            self._write()

    def _arrange(self) -> None:
        with self._lock:
            if self._due:
                return
            self._due = True
            wait = self._written_at + WRITE_SECONDS - time.monotonic()
            if wait <= 0:
                self._write()
            else:
                import threading

                self._timer = threading.Timer(wait, self._on_time)
                self._timer.daemon = True
                self._timer.start()

    def _on_time(self) -> None:
        with self._lock:
            try:
                self._write()
            except (SQLiteError, StoreError):  # the store closed, or the disk is full: the step's commit says so
                pass

    def _opened(self, step: int, node: str) -> StepOutput:
        """The step's output so far: a step run again after a stop goes on after what its first attempt wrote."""
        rows = self.store.output_rows(self.run_id, step=step)
        if rows:
            _, _, start, written, text = rows[0]
            return StepOutput(step, node, start, written, text)
        return StepOutput(step, node, self.store.output_size(self.run_id))

    def _write(self) -> None:
        """Take the queue into the steps' rows and write them (called holding the lock)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        # Not due any more before the queue is taken: a line queued from now on arranges the next write itself.
        self._due = False
        queue = self._queue
        lines: list[str] = []
        step = node = None
        while queue:
            item = queue.popleft()
            if item[0] != step and lines:
                self._keep(step, node, lines)
                lines = []
            step, node = item[0], item[1]
            lines.append(item[2])
        if lines:
            self._keep(step, node, lines)

    def _keep(self, step, node, lines: list[str]) -> None:
        """Lines of one step joined to its row, written; encoded at once, not line by line."""
        current = self._step
        if current is None or current.step != step:
            current = self._step = self._opened(step, node)
        lines.append("")
        current.add("\n".join(lines).encode("utf-8", "replace"))
        self._written_at = time.monotonic()
        self.store.keep_output(self.run_id, current.step, current.node, current.start, current.written,
                               current.cut())


def output_text(rows, start: int, size: int, limit: int | None = OUTPUT_CHUNK) -> dict[str, Any]:
    """What a run's programs wrote from byte `start` of its output on, as text, from the store's rows (step, node,
    start, written, kept bytes): each step's part under a line naming the step, what a step did not keep said in
    its place. At most about `limit` bytes (None: all), whole steps; `next` is where to ask from next, `size` how much
    there is in all."""
    parts: list[str] = []
    at, taken = start, 0
    for step, node, begin, written, kept in rows:
        if limit is not None and taken >= limit:
            break
        end = begin + written
        kept_from = end - len(kept)
        if at <= begin:
            parts.append(f"── step {step} · {node} ──\n")
        if at < kept_from:
            lost = kept_from - max(at, begin)
            parts.append(f"… {lost:,} earlier bytes of this step were not kept (the store keeps the last "
                         f"{len(kept):,}) …\n")
            at = kept_from
        piece = bytes(kept[at - kept_from:])
        parts.append(piece.decode("utf-8", errors="replace"))
        taken += len(piece)
        at = end
    return {"text": "".join(parts), "from": start, "next": max(at, start), "size": size}
