"""Short effect steps as local activities: run by the worker that runs the run's workflow code, in the same
workflow task, with no round trip through the server (a few ms instead of a regular activity's tens).

Which steps are short: those whose effects are only on files (`SHORT_EFFECTS`: writing, reading, copying files,
run logs), as their node type and calls declare them. Those end in milliseconds. A step that runs a program,
reaches the network, git, an MCP server or an LLM may run for minutes: it stays a regular activity, which
heartbeats (a dead worker is noticed within the heartbeat timeout) and which any worker may take. A `states`
node's agent states stay regular activities too, so that forked agents spread over the workers.

What a crash does to a local activity, and why a step that is not safe to run twice needs more: a local
activity's result enters the run's history only when the workflow task that ran it completes (as a marker). If
the worker dies before that, another worker replays the run and, finding no marker, runs the activity again,
silently. That is harmless for an idempotent step, so such a step is one local activity. Any other step first
*claims* its attempt: a regular activity that echoes the id of the worker process running the workflow code
(`WORKER_PROCESS`), so that the id is in the history before the step starts. The step then runs only in the
process that claimed it. If that worker died during the step, the worker that replays the run gets the dead
process's id back from the history (a replayed activity's result is the recorded one, whatever it was sent), and
the step, finding itself in another process, returns `lost` without running: the run asks "rerun or skip?", as
it does when a regular activity's one attempt is lost. (A worker that dies after the claim but before the step
makes the run ask too, as SQLite does for a step journalled as started.) The claim costs a regular activity
doing nothing; a shorter way to end a workflow task, a 1 ms timer, takes about a second on the dev server.

With worker-specific task queues (all steps of a run on one worker), a local activity is already on the run's
worker; the claim is what notices that the run moved to another worker since.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

from wfexec.durable.journal import has_outside_effects
from wfexec.language.model import Node, Workflow

SHORT_EFFECTS = frozenset({"files", "display"})
# The id of this worker process: a claimed step runs only where it was claimed.
WORKER_PROCESS = uuid.uuid4().hex
# The version marker of runs whose short steps are local activities: a run started before (its history has their
# steps as regular activities) replays as it ran.
PATCH = "wfexec-local-effect-steps"
CLAIM_ACTIVITY = "wfexec_claim_step"
LOCAL_STEP_ACTIVITY = "wfexec_local_effect_step"


def effects_of(workflow: Workflow, node: Node) -> set[str]:
    """Everything a node touches: its node type's own work and every call it makes."""
    own = set(node.kind.effects(node.spec))
    return own.union(*(call.spec.effects for call in workflow.node_calls(node)))


def short_steps(workflow: Workflow) -> frozenset[str]:
    """The ids of the effect steps that run as local activities (see the module's docstring)."""
    return frozenset(node_id for node_id, node in workflow.nodes.items()
                     if node.kind.agents is None and has_outside_effects(workflow, node)
                     and effects_of(workflow, node) <= SHORT_EFFECTS)


def use_local_steps(request: dict) -> bool:
    """Whether this run's short steps are local activities: unless turned off for the run, and only for runs
    started by workflow code that does it (`PATCH`). Deterministic: call it from the workflow code only."""
    return request.get("local_steps", True) is not False and workflow.patched(PATCH)


async def run_short_step(args: list, idempotent: bool, retry_policy: RetryPolicy) -> dict:
    """An effect step as a local activity (claimed first when it is not idempotent). Raises ActivityError as
    `workflow.execute_activity` does when its attempts fail."""
    claimed_by = None
    if not idempotent:
        # WORKER_PROCESS differs on a replay in another process; the result, from the history, does not.
        claimed_by = await workflow.execute_activity(CLAIM_ACTIVITY, WORKER_PROCESS,
                                                     start_to_close_timeout=timedelta(minutes=1), result_type=str)
    return await workflow.execute_local_activity(LOCAL_STEP_ACTIVITY, args=[*args, claimed_by],
                                                 start_to_close_timeout=timedelta(days=1), retry_policy=retry_policy,
                                                 result_type=dict)
