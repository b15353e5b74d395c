"""The person's side of a run on the cluster: start it, follow it until it ends or waits, answer it, list, show and
cancel runs. Returns plain dicts; `wfexec.commands.temporal_runs` prints them as the SQLite commands do."""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta
from typing import Any, Callable

from temporalio.api.enums.v1 import EventType, PendingWorkflowTaskState
from temporalio.client import Client, WorkflowExecutionDescription, WorkflowExecutionStatus, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from wfexec.durable.store import AMBIGUOUS_SHOWN, MIN_PREFIX, StoreError, new_run_id, refuse_empty_run_id
from wfexec.errors import WfexecError
from wfexec.running.prompts import AnswerRefused, Answers, check_answer_keys
from wfexec.language.model import Workflow
from wfexec.temporal import DEFAULT_TASK_QUEUE, WORKFLOW_NAME, TemporalUnavailable
from wfexec.temporal.blobs import MissingBlob, data_converter
from wfexec.temporal.messages import ClusterRequest
from wfexec.temporal.steps import DEFAULT_HEARTBEAT_SECONDS, env_names
from wfexec.temporal.task_queues import worker_gone_seconds

NAMESPACE = "default"
POLL_SECONDS = 0.1
QUERY_TIMEOUT = timedelta(seconds=2)
HISTORY_PAGE = 20  # events read at a time when looking for a worker's first workflow task; an untaken run has few
JOURNAL_QUERY_TIMEOUT = timedelta(seconds=10)  # a finished run's journal is rebuilt by a worker replaying it
NO_WORKER_NOTE_AFTER = 5.0  # seconds a run may go unanswered before the server is asked if a worker took it
HEARTBEAT_VARIABLE = "WFEXEC_TEMPORAL_HEARTBEAT"  # seconds; how soon a dead worker's effect step is given up
# "0": every effect step is a regular activity, short ones included (wfexec.temporal.local_steps)
LOCAL_STEPS_VARIABLE = "WFEXEC_TEMPORAL_LOCAL_STEPS"


class RunNotFound(WfexecError):
    outcome = "invalid"


async def connect(address: str) -> Client:
    try:
        return await Client.connect(address, namespace=NAMESPACE, data_converter=data_converter())
    except Exception as exc:  # the SDK reports an unreachable server as a RuntimeError from its core
        detail = str(exc)
        why = "connection refused" if "refused" in detail.lower() else detail[:200]
        raise TemporalUnavailable(f"cannot reach the Temporal server at {address} ({why})",
                                  "start one (`temporal server start-dev`), or check --temporal / WFEXEC_TEMPORAL") \
            from None


def unavailable(address: str, exc: RPCError) -> TemporalUnavailable:
    return TemporalUnavailable(f"the Temporal server at {address} failed: {exc.message}",
                               "check that it is running, then run the command again")


def run_request(workflow: Workflow, *, inputs: dict, overrides: dict, answers: dict, max_steps: int,
                backend: str | None = None) -> ClusterRequest:
    """What the workflow code is started with: everything it needs from this process, and nothing more."""
    heartbeat = float(os.environ.get(HEARTBEAT_VARIABLE) or DEFAULT_HEARTBEAT_SECONDS)
    return ClusterRequest(path=str(workflow.path.resolve()), source_hash=workflow.source_hash, cwd=os.getcwd(),
                          inputs=inputs, overrides=overrides, answers=answers, max_steps=max_steps,
                          env={name: os.environ[name] for name in env_names(workflow) if name in os.environ},
                          heartbeat_seconds=heartbeat, worker_gone_seconds=worker_gone_seconds(heartbeat),
                          backend=backend, local_steps=os.environ.get(LOCAL_STEPS_VARIABLE, "1").strip() != "0")


async def start(client: Client, workflow: Workflow, request: ClusterRequest, task_queue: str) -> WorkflowHandle:
    """Start the run with its workflow bundle (what it reads as its definition, `wfexec.temporal.bundle`): the
    first part in its input, the others as signals (`wfexec.temporal.delivery`)."""
    from wfexec.temporal.bundle import make_bundle
    from wfexec.temporal.delivery import parts_of, send_rest, with_bundle

    check_answer_keys(workflow, Answers(request.answers))  # raises AnswerRefused: nothing is started
    bundle = make_bundle(workflow)
    parts = parts_of(bundle)
    handle = await client.start_workflow(WORKFLOW_NAME, with_bundle(request, bundle, parts).to_json(),
                                         id=new_run_id(), task_queue=task_queue,
                                         memo={"workflow": workflow.name, "path": request.path,
                                               "bundle": bundle.digest})
    await send_rest(handle, parts)
    return handle


async def find(client: Client, run_id: str) -> WorkflowHandle:
    """The run with this id, or the one whose id starts with it (at least MIN_PREFIX characters): the rule of
    the SQLite store's lookup (`Store.get`)."""
    try:
        refuse_empty_run_id(run_id)
    except StoreError as exc:
        raise RunNotFound(exc.message, exc.hint) from None
    handle = client.get_workflow_handle(run_id)
    try:
        await handle.describe()
        return handle
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise
    if len(run_id) < MIN_PREFIX:
        raise RunNotFound(f"no run '{run_id}' on the cluster", f"give the run's whole id, or at least {MIN_PREFIX} "
                          "of its first characters (`wfexec runs --temporal ...` lists them)")
    matches = sorted({wf.id async for wf in client.list_workflows(f'WorkflowType="{WORKFLOW_NAME}"', limit=1000)
                      if wf.id.startswith(run_id)}, reverse=True)
    if len(matches) == 1:
        return client.get_workflow_handle(matches[0])
    if not matches:
        raise RunNotFound(f"no run '{run_id}' on the cluster", "`wfexec runs --temporal ...` lists them")
    more = ", …" if len(matches) > AMBIGUOUS_SHOWN else ""
    raise RunNotFound(f"'{run_id}' is the start of several runs' ids: {', '.join(matches[:AMBIGUOUS_SHOWN])}{more}",
                      "give more characters of the id")


async def progress(handle: WorkflowHandle) -> dict | None:
    """The run's own account (status running/waiting/finished, current node, question), or None when no worker
    answers yet."""
    try:
        return await handle.query("progress", rpc_timeout=QUERY_TIMEOUT, result_type=dict)
    except Exception:  # no worker yet, the first workflow task not done, a worker restarting: ask again later
        return None


async def taken_by_a_worker(handle: WorkflowHandle, description: WorkflowExecutionDescription) -> bool:
    """Whether a worker has ever taken this run, from the server's own record rather than from a worker's answer
    (a busy or loaded worker may not answer a query in time): a workflow task started now, or one started in the
    run's history. A worker that took the run's first workflow task has taken it."""
    pending = description.raw_description.pending_workflow_task
    if pending.state == PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_STARTED:
        return True
    async for event in handle.fetch_history_events(page_size=HISTORY_PAGE):
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            return True
    return False


async def follow(handle: WorkflowHandle, printed: int, show: Callable[[list], None], note: Callable[[str], None],
                 task_queue: str, address: str) -> dict:
    """Wait until the run ends or waits for an answer, showing what it prints as it goes. Returns the workflow's
    result for an ended run, `{"status": "waiting", "question": ...}` for a waiting one."""
    loop = asyncio.get_running_loop()
    since = loop.time()
    noted = taken = False
    while True:
        description = await handle.describe()
        if description.status != WorkflowExecutionStatus.RUNNING:
            break
        seen = await progress(handle)
        if seen is None:
            if not (noted or taken) and loop.time() - since > NO_WORKER_NOTE_AFTER:
                taken = await taken_by_a_worker(handle, description)
                if not taken:
                    note(f"no worker has taken run {handle.id} yet; start one with: wfexec worker --temporal "
                         f"{address}" + (f" --task-queue {task_queue}" if task_queue != DEFAULT_TASK_QUEUE else ""))
                    noted = True
        else:
            taken = True
            if seen["events"] > printed:
                events = await handle.query("printed", printed, rpc_timeout=QUERY_TIMEOUT, result_type=list)
                show(events)
                printed += len(events)
            if seen["status"] == "waiting":
                return {"status": "waiting", "question": seen["question"], "printed": printed}
        await asyncio.sleep(POLL_SECONDS)
    status = description.status
    if status == WorkflowExecutionStatus.COMPLETED:
        outcome: dict = await handle.result()
        show(outcome.get("events", [])[printed:])
        return outcome
    if status == WorkflowExecutionStatus.CANCELED:
        return {"status": "cancelled", "error": {"text": f"run {handle.id} was cancelled", "outcome": "failed"}}
    ended = status.name.lower() if status is not None else "unknown"
    return {"status": "failed", "error": {"text": f"run {handle.id} ended on the cluster as {ended}",
                                          "outcome": "failed"}}


async def send_answer(handle: WorkflowHandle, key: str, value: Any) -> None:
    """Answer the question the run waits on; the run's `answer` update refuses, with why, what it would not use
    (AnswerRefused: the run keeps waiting)."""
    from temporalio.client import WorkflowUpdateFailedError

    try:
        await handle.execute_update("answer", {"key": key, "value": value})
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        raise AnswerRefused(getattr(cause, "message", None) or str(cause or exc), key=key,
                            run_id=handle.id) from None


async def check_answers(handle: WorkflowHandle, answers: Answers) -> None:
    """Raise AnswerRefused when the run would refuse any of these answers (its workflow code checks them as a
    SQLite run's resume does), before one is sent; a run no worker answers for yet is not checked here."""
    try:
        why = await handle.query("refusal", answers.to_dict(), rpc_timeout=QUERY_TIMEOUT, result_type=str)
    except Exception:  # no worker yet: each answer is still checked by the update that brings it
        return
    if why:
        raise AnswerRefused(why, key="", run_id=handle.id)


# A workflow execution's status on the cluster, in the words `wfexec runs` uses for SQLite runs.
_CLUSTER_STATUS = {
    WorkflowExecutionStatus.RUNNING: "running", WorkflowExecutionStatus.COMPLETED: "completed",
    WorkflowExecutionStatus.CANCELED: "cancelled", WorkflowExecutionStatus.FAILED: "failed",
    WorkflowExecutionStatus.TERMINATED: "cancelled", WorkflowExecutionStatus.TIMED_OUT: "failed",
    WorkflowExecutionStatus.CONTINUED_AS_NEW: "running",
}


async def list_runs(client: Client, limit: int) -> list[dict]:
    rows = []
    async for wf in client.list_workflows(f'WorkflowType="{WORKFLOW_NAME}"', limit=limit or None):
        memo = await wf.memo()
        status = _CLUSTER_STATUS.get(wf.status, "unknown") if wf.status is not None else "unknown"
        row = {"id": wf.id, "workflow": memo.get("workflow", ""), "status": status, "current_node": None,
               "started": wf.start_time.isoformat(timespec="seconds") if wf.start_time else None}
        try:
            if wf.status == WorkflowExecutionStatus.COMPLETED:  # completed on the cluster; its ending says how
                outcome = await client.get_workflow_handle(wf.id).result()
                row["status"] = outcome.get("status", "completed")
            elif wf.status == WorkflowExecutionStatus.RUNNING:
                seen = await progress(client.get_workflow_handle(wf.id))
                if seen is not None:
                    row["status"] = seen["status"] if seen["status"] != "finished" else "running"
                    row["current_node"] = seen["current_node"]
        except MissingBlob as missing:  # one run's lost state must not hide every other run
            row["problem"] = missing.message
        rows.append(row)
    return rows


async def describe(client: Client, handle: WorkflowHandle) -> dict:
    description = await handle.describe()
    memo = await description.memo()
    out: dict = {"id": handle.id, "workflow": memo.get("workflow", ""), "path": memo.get("path", ""),
                 "cluster_status": description.status.name.lower() if description.status else "unknown"}
    if description.status == WorkflowExecutionStatus.RUNNING:
        seen = await progress(handle)
        out.update(seen or {"status": "running"})
        if seen is not None:
            out["state"] = await handle.query("snapshot", rpc_timeout=QUERY_TIMEOUT, result_type=dict)
    elif description.status == WorkflowExecutionStatus.COMPLETED:
        outcome = await handle.result()
        out.update(outcome)
        out["state"] = (outcome.get("result") or {}).get("state")
    else:
        out["status"] = _CLUSTER_STATUS.get(description.status, "unknown") if description.status else "unknown"
    journal = await _journal(handle)
    if journal is not None:
        out["journal"] = journal
    return out


async def _journal(handle: WorkflowHandle) -> list | None:
    """The run's latest steps with what each changed (a finished run's, from a worker replaying it), or None when
    no worker answers."""
    try:
        return await handle.query("journal", rpc_timeout=JOURNAL_QUERY_TIMEOUT, result_type=list)
    except Exception:  # no worker, or one that predates the query: `show` gives the rest all the same
        return None
