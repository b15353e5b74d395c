"""An effect step as a Temporal activity: one node run on whichever worker picks it up, heartbeating while it
runs so that a dead worker's step is noticed within the heartbeat timeout (and retried elsewhere, or asked
about)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from temporalio import activity

from wfexec.errors import WfexecError
from wfexec.records import as_plain, replace
from wfexec.running.engine import EntryGateFailed, RunError
from wfexec.running.prompts import NeedsAnswer
from wfexec.running.steploop import execute, resolve_target
from wfexec.temporal.bundle import BundleError
from wfexec.temporal.delivery import here, localized, rebased
from wfexec.temporal.local_steps import LOCAL_STEP_ACTIVITY, not_home
from wfexec.temporal.messages import (ActivityInput, AgentStateInput, AgentStateResult, EdgeInput, EdgeResult,
                                      EffectStepInput, EffectStepResult, received)
from wfexec.temporal.state_changes import WorkerStates, step_changes
from wfexec.temporal.kept import KeptByStep
from wfexec.temporal.steps import RecordingIo, compiled, error_json, make_run, written

HEARTBEAT_EVERY = 1.0  # seconds; the timeout the workflow sets is several times this
# The threads steps run in. Not asyncio's default executor, which `asyncio.run` waits for when it ends: a worker
# told to stop must not wait for a long command of a step it gave up (Temporal runs that step again elsewhere).
STEP_THREADS = ThreadPoolExecutor(max_workers=100, thread_name_prefix="wfexec-step")
WORKER_STATES = WorkerStates()  # the state of the runs this worker stepped last, sent by change after that


def _run_node(step: EffectStepInput, run_key: str, token: str) -> dict:
    request = step.request
    workflow = compiled(request.path, request.source_hash)
    node = workflow.nodes[step.node_id]
    state = WORKER_STATES.take(run_key, step.shipped)
    if state is None:  # before running anything: the workflow code sends the whole state instead
        return EffectStepResult(missing_state=True).to_json()
    io = RecordingIo()
    run = make_run(workflow, request, io, state=state, answers=step.answers)
    run.options.backend = _backend(request.backend)
    run.current = node
    kept = run.journal = KeptByStep(node.id)
    run.step_ms = step.step_ms  # the step's clock: the workflow's, as a state-only step would read it
    try:
        outcome = execute(run, node)
        target = resolve_target(run, node, outcome)
    except NeedsAnswer as waiting:
        return EffectStepResult(question=waiting.question, events=io.events, answers=run.options.answers.to_dict(),
                                refused=waiting.refused.message if waiting.refused is not None else None).to_json()
    except RunError as exc:
        return EffectStepResult(error=error_json(exc), events=io.events, kept=kept.kept()).to_json()
    except WfexecError as exc:
        return EffectStepResult(error=error_json(RunError(exc.message, exc.hint, exc.where or node.where, node.id)),
                                events=io.events, kept=kept.kept()).to_json()
    changes = step_changes(run)
    WORKER_STATES.keep(run_key, token, run.state)
    return EffectStepResult(changes=changes, state_token=token, target=target, outcome=outcome.outcome,
                            events=io.events, answers=run.options.answers.to_dict(), **written(run),
                            kept=kept.kept()).to_json()


def _backend(spec: str | None):
    """The LLM backend the run was started with (`--backend`), made in this worker for this step: a judgement
    step, a markdown reference or a states node's `.md` states reach it here, never in the workflow code."""
    if not spec:
        return None
    from wfexec.backends import create_backend

    return create_backend(spec)


def _run_edge(edge: EdgeInput) -> dict:
    """The entry gate, or an ending (its v8 consequences and its rendered result), for the runs where they touch
    the world."""
    workflow = compiled(edge.request.path, edge.request.source_hash)
    io = RecordingIo()
    run = make_run(workflow, edge.request, io, state=edge.state)
    try:
        if edge.what == "entry":
            run.check_entry()
            return EdgeResult(events=io.events).to_json()
        result = run.finish(workflow.endings[str(edge.ending_id)])
    except RunError as exc:
        return EdgeResult(error=error_json(exc), entry_gate=isinstance(exc, EntryGateFailed),
                          events=io.events).to_json()
    state = run.state
    state.pop("history", None)
    return EdgeResult(result={**result.to_json(), "silent": result.silent, "state": None}, state=state,
                      events=io.events).to_json()


def _run_agent_state(sent: AgentStateInput) -> dict:
    """One state of one agent of a states node (or, with no agent, its first agent), on this worker."""
    from wfexec.protocol.agents_loop import fatal_of
    from wfexec.protocol.errors import ProtocolError

    request = sent.request
    workflow = compiled(request.path, request.source_hash)
    node = workflow.nodes[sent.node_id]
    io = RecordingIo()
    run = make_run(workflow, request, io)
    run.options.backend = _backend(request.backend)
    run.current = node  # the node its context speaks for
    steps_of = node.kind.agents
    assert steps_of is not None  # only a node with agents has its agent states sent here
    # the workflow code made the folder from the client's
    meta = {**sent.meta, "cwd": rebased(sent.meta["cwd"], request)}
    kept = run.journal = KeptByStep(node.id)
    try:
        done = steps_of.step(node, run.node_context, meta, sent.agent)
    except ProtocolError as exc:  # fatal for the node: the workflow code routes it, or stops or fails the run
        return AgentStateResult(fatal=fatal_of(exc), events=io.events).to_json()
    except RunError as exc:
        return AgentStateResult(error=error_json(exc), events=io.events).to_json()
    # Plain data, as Temporal's converter once made of the protocol's dataclasses: its classes are records now
    # (wfexec.records), which the converter does not know.
    return AgentStateResult(step=as_plain(done), events=io.events, kept=kept.kept()).to_json()


# Each activity takes `*sent`: its input message's JSON form, or the positional arguments that workflow code sent
# before there was one (`messages.received`). Not typed parameters: Temporal decodes the arguments by the
# parameters' annotations only when their number matches, which one signature cannot for both shapes.

@activity.defn(name="wfexec_agent_state")
async def agent_state(*sent: Any) -> dict:
    """One agent state of a states node (`AgentStateInput`): the workflow code keeps the agents and sends each of
    their states to whichever worker is free, so forked agents run on many machines at once."""
    state, refused = await _here(received(AgentStateInput, sent))
    label = f"{state.node_id}: {state.agent['id'] if state.agent else 'start'}"
    return refused or await _heartbeating(label, _in_step_thread(_run_agent_state, state))


@activity.defn(name="wfexec_run_edge")
async def run_edge(*sent: Any) -> dict:
    """The entry gate or an ending whose calls touch the world (`EdgeInput`)."""
    edge, refused = await _here(received(EdgeInput, sent))
    return refused or await _heartbeating(edge.what, _in_step_thread(_run_edge, edge))


async def _here(sent: ActivityInput) -> tuple[ActivityInput, dict | None]:
    """What an activity was sent, with the request as this worker runs it (its copy of the run's bundle, its
    --workdir); or the run error that refuses it: a bundle whose plugins this worker lacks."""
    try:
        return replace(sent, request=await localized(sent.request, activity.info().workflow_id or "")), None
    except BundleError as exc:
        # Each activity's result class reads a run error in this form (`EffectStepResult` & co.)
        return sent, EffectStepResult(error=error_json(RunError(exc.message, exc.hint))).to_json()


def _in_step_thread(function, *args) -> asyncio.Future:
    return asyncio.get_running_loop().run_in_executor(STEP_THREADS, function, *args)


async def _heartbeating(label: str, work: asyncio.Future) -> dict:
    """Wait for the step, telling Temporal every second that this worker is alive and still at it."""
    while True:
        done, _ = await asyncio.wait({work}, timeout=HEARTBEAT_EVERY)
        if done:
            return work.result()
        activity.heartbeat(label)


@activity.defn(name="wfexec_effect_step")
async def effect_step(*sent: Any) -> dict:
    """Run one node with outside effects (`EffectStepInput`); return what it changed in the state
    (`state_changes`), where it goes, and what it printed (or the run error it met, or the question it asks:
    values, not failures, so Temporal never retries them)."""
    step, refused = await _here(received(EffectStepInput, sent))
    return refused or await _heartbeating(step.node_id, _in_step_thread(_run_node, step, *_step_keys()))


@activity.defn(name=LOCAL_STEP_ACTIVITY)
async def local_effect_step(*sent: Any) -> dict:
    """A short effect step, as a local activity of the worker running the run's workflow task
    (wfexec.temporal.local_steps): what `effect_step` returns, without heartbeats (a local activity has none: its
    workflow task stands for it). Refused when that worker is not the run's (`home`), whose disk the step needs."""
    step = received(EffectStepInput, sent)
    if step.home is not None and step.home != here.queue:
        raise not_home(step.home)
    step, refused = await _here(step)
    return refused or await _in_step_thread(_run_node, step, *_step_keys())


def _step_keys() -> tuple[str, str]:
    """The run this worker keeps a state for, and this attempt's token for the state it leaves (state_changes)."""
    info = activity.info()
    return f"{info.workflow_id}/{info.workflow_run_id}", f"{info.activity_id}/{info.attempt}"
