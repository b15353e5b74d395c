"""When a run's blobs are removed: the workers' sweep (`wfexec worker --blob-retention`) and `wfexec gc`.

A run's blobs are kept while the Temporal server says the run is open (running or waiting for an answer), and for
the retention time after it closed (completed, failed, cancelled, terminated, timed out): `wfexec show` of a run
that ended reads its state from them. Only the server is asked which runs are live (`describe`, which reads the
run itself, not the eventually consistent list).

A run the server does not know is either long gone (past the namespace's own retention) or starting right now: a
client stores a run's first blob before it asks the server to start the run. Its blobs are removed only when the
newest of them is older than the grace time (the store is touched each time a blob is reused). Blobs of no run (and
those of wfexec before blobs were kept by run) are removed only when no run at all is open.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from wfexec.temporal import WORKFLOW_NAME
from wfexec.temporal.blob_stores import BlobStore, StoredRun

DEFAULT_RETENTION = 7 * 24 * 3600.0  # seconds a closed run's blobs are kept by the workers' sweep
DEFAULT_GRACE = 3600.0  # seconds the blobs of a run the server does not know are kept: it may be starting


@dataclass
class Sweep:
    """What one sweep found and did."""

    removed: list[StoredRun] = field(default_factory=list)
    kept: list[tuple[StoredRun, str]] = field(default_factory=list)  # with why

    @property
    def freed(self) -> int:
        return sum(run.bytes for run in self.removed)


async def _closed_at(client: Client, run_id: str) -> float | None | bool:
    """When the run closed (seconds since the epoch); False while it is open; None when the server does not know
    it."""
    try:
        description = await client.get_workflow_handle(run_id).describe()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return None
        raise
    if description.status in (None, WorkflowExecutionStatus.RUNNING):
        return False
    return description.close_time.timestamp() if description.close_time is not None else time.time()


async def _any_run_open(client: Client) -> bool:
    async for _ in client.list_workflows(f"WorkflowType = '{WORKFLOW_NAME}' AND ExecutionStatus = 'Running'",
                                         limit=1):
        return True
    return False


async def sweep(store: BlobStore, client: Client, *, retention: float, grace: float = DEFAULT_GRACE,
                dry_run: bool = False, now: float | None = None) -> Sweep:
    """Remove the blobs of the runs closed longer than `retention` ago, and of runs the server does not know
    whose newest blob is older than `grace`."""
    now = time.time() if now is None else now
    done = Sweep()
    unattributed: list[StoredRun] = []
    for stored in await store.stored_runs():
        if stored.run_id is None:
            unattributed.append(stored)
            continue
        closed = await _closed_at(client, stored.run_id)
        if closed is False:
            done.kept.append((stored, "open"))
        elif closed is None and stored.newest + grace > now:
            done.kept.append((stored, "unknown to the server, and recent: it may be starting"))
        elif closed is not None and closed + retention > now:
            done.kept.append((stored, "closed within the retention time"))
        else:
            done.removed.append(stored)
    for stored in unattributed:
        if stored.newest + grace > now:
            done.kept.append((stored, "of no run, and recent"))
        elif await _any_run_open(client):
            done.kept.append((stored, "of no run, kept while any run is open"))
        else:
            done.removed.append(stored)
    if not dry_run:
        for stored in done.removed:
            await store.remove(stored.run_id)
    return done


def sweep_interval(retention: float) -> float:
    """How often a worker sweeps: soon enough after the retention ends, rarely enough to cost nothing."""
    return min(max(retention / 4, 2.0), 600.0)


async def sweep_forever(store: BlobStore, client: Client, retention: float, report) -> None:
    """A worker's sweep, until cancelled. A sweep that fails (the server restarting, the store unreachable) is
    told and tried again at the next one: it must never stop the worker."""
    import asyncio

    while True:
        try:
            done = await sweep(store, client, retention=retention)
            if done.removed:
                report(f"wfexec worker: removed the blobs of {len(done.removed)} ended run(s) from {store.where()} "
                       f"({done.freed:,} bytes)")
        except Exception as exc:  # noqa: BLE001 - told, and tried again
            report(f"wfexec worker: the blob sweep of {store.where()} failed ({type(exc).__name__}: {exc}); "
                   "trying again later")
        await asyncio.sleep(sweep_interval(retention))
