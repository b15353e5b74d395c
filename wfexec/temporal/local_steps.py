"""Short effect steps as local activities: run by the worker that runs the run's workflow code, in the same
workflow task, with no round trip through the server.

Which steps: the short ones that are safe to run twice. Short: their effects are only on files (`SHORT_EFFECTS`:
writing, reading, copying files, run logs), as their node type and calls declare them; those end in milliseconds.
A step that runs a program, reaches the network, git, an MCP server or an LLM may run for minutes: it stays a
regular activity, which heartbeats (a dead worker is noticed within the heartbeat timeout) and which any worker may
take. A `states` node's agent states stay regular activities too, so that forked agents spread over the workers.

Why only idempotent ones: a local activity's result enters the run's history only when the workflow task that ran
it completes (as a marker). If the worker dies before that, the worker that takes the run over replays it and,
finding no marker, runs the step again, silently: harmless for an idempotent step, not for another, which must be
asked about ("rerun or skip?"). Asking needs a record, in the history, that the step started before it starts;
and the only way to write one is to end the workflow task first: a regular activity (a claim echoing the worker
process's id, checked by the step) or a timer. Both were tried: the claim made such a step cost as much as a
regular activity (52 ms against 51 ms, bench/bench_temporal.py), and a 1 ms timer takes about a second on the
dev server. So a step that is not idempotent stays a regular activity, whose one lost attempt makes the run ask.

Where: on the run's own worker (wfexec.temporal.task_queues), whose disk holds what earlier steps wrote. The run's
worker is the one that claimed it, a claim that is itself a local activity, so it is the worker running the run's
workflow tasks (Temporal keeps sending them to the worker that has the run cached). When a workflow task runs on
another worker (the cache let the run go, or the run's worker is gone), the short step refuses to run there
(`not_home`) and goes to the run's worker's queue as a regular activity, where a gone worker is noticed and asked
about like any other.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from wfexec.durable.journal import has_outside_effects, is_idempotent
from wfexec.language.model import Node, Workflow
from wfexec.temporal.messages import ClusterRequest, EffectStepInput

SHORT_EFFECTS = frozenset({"files", "display"})
# The version marker of runs whose short steps are local activities: a run started before (its history has their
# steps as regular activities) replays as it ran.
PATCH = "wfexec-local-effect-steps"
LOCAL_STEP_ACTIVITY = "wfexec_local_effect_step"
NOT_HOME = "WfexecNotTheRunsWorker"  # the failure type of a short step refused on another worker than the run's


def effects_of(workflow: Workflow, node: Node) -> set[str]:
    """Everything a node touches: its node type's own work and every call it makes."""
    own = set(node.kind.effects(node.spec))
    return own.union(*(call.spec.effects for call in workflow.node_calls(node)))


def local_steps(workflow: Workflow) -> frozenset[str]:
    """The ids of the effect steps that run as local activities (see the module's docstring)."""
    return frozenset(node_id for node_id, node in workflow.nodes.items()
                     if node.kind.agents is None and has_outside_effects(workflow, node)
                     and effects_of(workflow, node) <= SHORT_EFFECTS and is_idempotent(workflow, node))


def use_local_steps(request: ClusterRequest) -> bool:
    """Whether this run's short steps are local activities: unless turned off for the run, and only for runs
    started by workflow code that does it (`PATCH`). Deterministic: call it from the workflow code only."""
    return request.local_steps and workflow.patched(PATCH)


async def run_local_step(step: EffectStepInput, retry_policy: RetryPolicy) -> dict:
    """An effect step as a local activity. Raises ActivityError as `workflow.execute_activity` does."""
    return await workflow.execute_local_activity(LOCAL_STEP_ACTIVITY, args=[step.to_json()],
                                                 start_to_close_timeout=timedelta(days=1), retry_policy=retry_policy,
                                                 result_type=dict)


def not_home(home: str) -> ApplicationError:
    """What a short step raises on a worker that is not the run's: not retried here, sent to `home` instead."""
    return ApplicationError(f"this worker is not the run's ({home})", type=NOT_HOME, non_retryable=True)


# The version marker of runs that send a short step refused by a worker that is not the run's to the run's worker.
# Before it, the refusal failed the run (see `elsewhere`): a run that failed so replays failing.
ELSEWHERE_PATCH = "wfexec-short-step-elsewhere"


def elsewhere(lost: ActivityError | ApplicationError) -> bool:
    """Whether a short step failed only because its workflow task ran on another worker than the run's. A local
    activity's own failure reaches the workflow code as it was raised, an ApplicationError, not wrapped in an
    ActivityError as a regular activity's is (temporalio 1.35: tests/temporal/test_activity_inputs.py); workflow
    code that looked for it in an ActivityError only failed the run instead. Deterministic: call it from the
    workflow code only."""
    if isinstance(lost, ActivityError):
        cause = lost.cause
        return isinstance(cause, ApplicationError) and cause.type == NOT_HOME
    return lost.type == NOT_HOME and workflow.patched(ELSEWHERE_PATCH)
