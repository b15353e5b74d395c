"""`wfexec worker`: one process that runs wfexec runs' workflow code and effect steps from a task queue. Start as
many as there are machines; each needs the workflow files at the same paths as the person starting runs."""

from __future__ import annotations

import asyncio
import signal
import sys
from datetime import timedelta

from wfexec.temporal import DEFAULT_TASK_QUEUE
from wfexec.temporal.steps import Loader, use_loader


async def serve(address: str, task_queue: str = DEFAULT_TASK_QUEUE, *, load: Loader,
                max_concurrent_steps: int = 100) -> None:
    """Poll the queue until SIGINT (Ctrl-C), SIGTERM or SIGHUP."""
    from temporalio.worker import UnsandboxedWorkflowRunner, Worker

    from wfexec.temporal.activities import agent_state, effect_step, local_effect_step, run_edge
    from wfexec.temporal.client import connect
    from wfexec.temporal.workflow_code import WfexecRun

    use_loader(load)
    _import_what_compiling_imports()
    client = await connect(address)
    # Unsandboxed: the engine evaluates expressions in QuickJS (a C extension) and compiles workflows, which
    # Temporal's import sandbox refuses; the loop is kept deterministic by construction instead
    # (wfexec.temporal.workflow_code's docstring).
    worker = Worker(client, task_queue=task_queue, workflows=[WfexecRun],
                    activities=[effect_step, local_effect_step, run_edge, agent_state],
                    workflow_runner=UnsandboxedWorkflowRunner(), max_concurrent_activities=max_concurrent_steps,
                    # A run's workflow tasks go to the worker that has it cached; when that worker dies, another
                    # takes the run over after this long (the SDK's default is 10 s).
                    sticky_queue_schedule_to_start_timeout=timedelta(seconds=3))
    print(f"wfexec worker: serving task queue '{task_queue}' on {address} (Ctrl-C stops it)", file=sys.stderr,
          flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # The loop's own handlers, not wfexec's (which raise KeyboardInterrupt wherever the main thread is, and the
    # SDK's tasks may swallow it): the worker then leaves its `async with`, which shuts it down.
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            loop.add_signal_handler(getattr(signal, name), stop.set)
    async with worker:
        await stop.wait()


def _import_what_compiling_imports() -> None:
    """Import the node types and the registries' modules now, not in a run's first workflow task: a cold import
    there can outlast the 2 s the SDK allows a workflow task before it calls it a deadlock, and the SDK's
    interruption can leave that module's import lock held, so the step threads that import it next wait forever
    (seen with 100 runs started at once on a loaded machine: their local activities never ended)."""
    from wfexec.nodes.base import node_types
    from wfexec.types.registry import consequences, preconditions

    node_types()
    preconditions()
    consequences()
