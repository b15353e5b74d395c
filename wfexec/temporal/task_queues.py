"""Where a run's steps go: by default all to one worker, so the files one step writes are there for the next.

Temporal's worker-specific task queue pattern: every worker also serves a queue of its own (`own_queue`). A run's
first activity is a claim (`wfexec_claim`), a local activity of the worker running the run's workflow task (which
Temporal keeps sending the run's workflow tasks to, so its short steps, local activities too, run there as well:
wfexec.temporal.local_steps); that worker makes sure it can run the run (the bundle unpacked, the plugins there)
and answers with its own queue, where the run's effect steps,
its entry gate and endings, and its `states` nodes' agent states go from then on. A `states` node with
`spread: true` sends its forked agents' states to the shared queue instead, to any free worker.

A worker that is gone leaves its queue unserved: an activity sent there is given up after `worker_gone_seconds`
without being started (Temporal's schedule-to-start timeout, which Temporal does not retry), or after the
heartbeat timeout when the worker died during the step. The run then claims a worker again and, as after a crash
on SQLite, runs an idempotent step again there and asks "rerun or skip?" for any other (the files earlier steps
wrote stayed with the worker that is gone).
"""

from __future__ import annotations

import os
import socket
import uuid
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

from wfexec.running.engine import RunError
from wfexec.temporal.bundle import BundleError
from wfexec.temporal.delivery import here, localized
from wfexec.temporal.messages import ClusterRequest

CLAIM_ACTIVITY = "wfexec_claim"
WORKER_GONE_VARIABLE = "WFEXEC_TEMPORAL_WORKER_GONE"  # seconds an activity may wait for its worker to take it
WORKER_GONE_HEARTBEATS = 3  # the default, in heartbeat timeouts


def own_queue(task_queue: str) -> str:
    """A queue only this worker process serves: its host, its process and a random part (a restarted worker is
    another worker: the runs of the one before it are asked about, not silently continued)."""
    return f"{task_queue}@{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def worker_gone_seconds(heartbeat_seconds: float) -> float:
    given = os.environ.get(WORKER_GONE_VARIABLE)
    return float(given) if given else WORKER_GONE_HEARTBEATS * heartbeat_seconds


@activity.defn(name=CLAIM_ACTIVITY)
async def claim(request: dict) -> dict:
    """Taken from the shared queue by a free worker, which becomes the run's: its own queue, or why it refuses.
    Sent the run's request (`ClusterRequest`'s JSON form: its one argument before there was that class too)."""
    try:
        await localized(ClusterRequest.from_json(request), activity.info().workflow_id or "")
    except BundleError as exc:
        return {"refused": {"message": exc.message, "hint": exc.hint}}
    return {"queue": here.queue, "worker": here.name}


class Placement:
    """The workflow code's side: which queue each activity of the run goes to."""

    def __init__(self) -> None:
        self.home: str | None = None  # the run's worker's own queue, once one claimed the run
        self.gone_after = timedelta(seconds=WORKER_GONE_HEARTBEATS * 10)

    def configure(self, request: ClusterRequest) -> None:
        heartbeat = float(request.heartbeat_seconds or 10)
        self.gone_after = timedelta(seconds=float(request.worker_gone_seconds or WORKER_GONE_HEARTBEATS * heartbeat))

    async def home_queue(self, request: ClusterRequest) -> str:
        """The run's worker's own queue, claiming the worker running this workflow task when the run has none."""
        if self.home is None:
            claimed = await workflow.execute_local_activity(
                CLAIM_ACTIVITY, args=[request.to_json()], start_to_close_timeout=timedelta(minutes=5),
                retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30)),
                result_type=dict)
            if "refused" in claimed:
                raise RunError(claimed["refused"]["message"], claimed["refused"]["hint"])
            self.home = claimed["queue"]
        return self.home

    async def execute(self, name: str, request: ClusterRequest, sent: dict, *, spread: bool = False,
                      again_when_gone: bool = True, **options: Any) -> dict:
        """Run the activity on the run's worker (any free worker with `spread`), sent its input message's JSON
        form. When that worker is gone: claim another and run it there (`again_when_gone`), else raise the
        ActivityError for the caller to ask."""
        while True:
            placed: dict = {} if spread else {"task_queue": await self.home_queue(request),
                                              "schedule_to_start_timeout": self.gone_after}
            try:
                return await workflow.execute_activity(name, args=[sent], result_type=dict, **placed, **options)
            except ActivityError:
                if spread:
                    raise
                self.home = None  # its worker is gone, or its attempt was lost: the next activity claims one
                if not again_when_gone:
                    raise
