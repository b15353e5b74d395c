"""`wfexec worker`: one process that runs wfexec runs' workflow code and effect steps from a task queue. Start as
many as there are machines; each needs wfexec and the same plugins, not the workflow files: a run brings its own
(`wfexec.temporal.bundle`). Each worker serves the shared queue and a queue of its own, where the steps of the runs
it claimed go (`wfexec.temporal.task_queues`)."""

from __future__ import annotations

import asyncio
import signal
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable

from wfexec.temporal import DEFAULT_TASK_QUEUE
from wfexec.temporal.steps import Loader, use_loader


async def serve(address: str, task_queue: str = DEFAULT_TASK_QUEUE, *, load: Loader,
                max_concurrent_steps: int = 100, workdir: Path | None = None,
                blob_retention: float | None = None) -> None:
    """Poll the queues until SIGINT (Ctrl-C), SIGTERM or SIGHUP. `workdir`: where runs' relative paths resolve
    and their bundles are unpacked (None: each run's own folder, as the person starting it saw it).
    `blob_retention`: seconds a closed run's blobs are kept before this worker's sweep removes them (None: no
    sweep)."""
    from temporalio.worker import UnsandboxedWorkflowRunner, Worker

    from wfexec.temporal.activities import agent_state, effect_step, local_effect_step, run_edge
    from wfexec.temporal.client import connect
    from wfexec.temporal.delivery import here
    from wfexec.temporal.task_queues import claim, own_queue
    from wfexec.temporal.workflow_code import WfexecRun

    use_loader(load)
    client = await connect(address)
    here.client, here.workdir, here.queue = client, workdir, own_queue(task_queue)
    here.name = here.queue.partition("@")[2]
    steps: list[Callable[..., Any]] = [effect_step, run_edge, agent_state]
    # Unsandboxed: the engine evaluates expressions in QuickJS (a C extension) and compiles workflows, which
    # Temporal's import sandbox refuses; the loop is kept deterministic by construction instead
    # (wfexec.temporal.workflow_code's docstring).
    worker = Worker(client, task_queue=task_queue, workflows=[WfexecRun],
                    activities=[claim, local_effect_step, *steps],
                    workflow_runner=UnsandboxedWorkflowRunner(), max_concurrent_activities=max_concurrent_steps,
                    # A run's workflow tasks go to the worker that has it cached; when that worker dies, another
                    # takes the run over after this long (the SDK's default is 10 s).
                    sticky_queue_schedule_to_start_timeout=timedelta(seconds=3))
    # The steps of the runs this worker claimed: a queue no other worker serves.
    own = Worker(client, task_queue=here.queue, activities=steps, max_concurrent_activities=max_concurrent_steps)
    where = f", runs' files in {workdir}" if workdir is not None else ""
    print(f"wfexec worker: serving task queue '{task_queue}' on {address}{where} (Ctrl-C stops it)",
          file=sys.stderr, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # The loop's own handlers, not wfexec's (which raise KeyboardInterrupt wherever the main thread is, and the
    # SDK's tasks may swallow it): the worker then leaves its `async with`, which shuts it down.
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            loop.add_signal_handler(getattr(signal, name), stop.set)
    async with worker, own:
        sweeping = _start_sweep(client, blob_retention)
        try:
            await stop.wait()
        finally:
            if sweeping is not None:
                sweeping.cancel()


def _start_sweep(client, retention: float | None) -> asyncio.Task | None:
    if retention is None:
        return None
    from wfexec.temporal.blob_lifecycle import sweep_forever
    from wfexec.temporal.blob_stores import configured_store

    return asyncio.ensure_future(sweep_forever(configured_store(), client, retention,
                                               lambda text: print(text, file=sys.stderr, flush=True)))
