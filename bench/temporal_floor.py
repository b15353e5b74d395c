"""The floor for bench_temporal.py: a worker of SDK-only workflows that run `count` activities doing nothing, one
after the other, as local activities, as regular activities, or none (the run's own start and end). Started by the
bench as its own process, as a `wfexec worker` is, with the same workflow runner (unsandboxed).

    python bench/temporal_floor.py ADDRESS TASK_QUEUE
"""

from __future__ import annotations

import asyncio
import signal
import sys
from datetime import timedelta

from temporalio import activity, workflow

FLOOR_WORKFLOW = "BenchFloorLoop"
KINDS = ("local", "regular", "none")


@activity.defn(name="bench_floor_nothing")
async def nothing() -> None:
    return None


@workflow.defn(name=FLOOR_WORKFLOW)
class FloorLoop:
    @workflow.run
    async def run(self, kind: str, count: int) -> int:
        timeout = timedelta(seconds=60)
        for _ in range(count if kind != "none" else 0):
            if kind == "local":
                await workflow.execute_local_activity("bench_floor_nothing", start_to_close_timeout=timeout)
            else:
                await workflow.execute_activity("bench_floor_nothing", start_to_close_timeout=timeout)
        return count


async def serve(address: str, task_queue: str) -> None:
    from temporalio.client import Client
    from temporalio.worker import UnsandboxedWorkflowRunner, Worker

    client = await Client.connect(address)
    worker = Worker(client, task_queue=task_queue, workflows=[FloorLoop], activities=[nothing],
                    workflow_runner=UnsandboxedWorkflowRunner())
    stop = asyncio.Event()
    for name in ("SIGINT", "SIGTERM"):
        asyncio.get_running_loop().add_signal_handler(getattr(signal, name), stop.set)
    async with worker:
        print(f"floor worker: serving task queue '{task_queue}'", flush=True)
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1], sys.argv[2]))
