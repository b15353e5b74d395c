"""An effect step as a Temporal activity: one node run on whichever worker picks it up, heartbeating while it
runs so that a dead worker's step is noticed within the heartbeat timeout (and retried elsewhere, or asked
about)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from temporalio import activity

from wfexec.errors import WfexecError
from wfexec.running.engine import EntryGateFailed, Run, RunError
from wfexec.running.prompts import NeedsAnswer
from wfexec.temporal.steps import RecordingIo, compiled, error_json, make_run, question_json, resolve_target

HEARTBEAT_EVERY = 1.0  # seconds; the timeout the workflow sets is several times this
# The threads steps run in. Not asyncio's default executor, which `asyncio.run` waits for when it ends: a worker
# told to stop must not wait for a long command of a step it gave up (Temporal runs that step again elsewhere).
STEP_THREADS = ThreadPoolExecutor(max_workers=100, thread_name_prefix="wfexec-step")


class StepRun(Run):
    """A Run for one node in an activity. What the node keeps to continue later (a `states` node's agents, when
    one asks a person) travels with the step's result to the workflow, which gives it back to the next attempt:
    the answer continues the agents, it does not run their states again."""

    def __init__(self, *args, node_state: dict | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.kept = node_state

    def save_node_state(self, node_id: str, data: dict | None) -> None:
        self.kept = data

    def node_state(self, node_id: str) -> dict | None:
        return self.kept


def _run_node(request: dict, node_id: str, state: dict, answers: dict, step_ms: int,
              node_state: dict | None = None, running: list | None = None) -> dict:
    workflow = compiled(request["path"], request["source_hash"])
    node = workflow.nodes[node_id]
    io = RecordingIo()
    run = make_run(StepRun, workflow, request, io, state=state, answers=answers)
    assert isinstance(run, StepRun)
    run.kept = node_state
    if running is not None:
        running.append(run)  # its heartbeats carry what it keeps (see effect_step)
    run.options.backend = _backend(request.get("backend"))
    run.current = node
    run.step_ms = step_ms  # the step's clock: the workflow's, as a state-only step would read it
    try:
        try:
            outcome = node.kind.execute(node, run)
        except (RunError, NeedsAnswer):
            raise
        except Exception as exc:  # the step's error boundary, as in Run.execute
            raise run._as_run_error(node, exc) from exc
        target = resolve_target(run, node, outcome)
    except NeedsAnswer as waiting:
        return {"question": question_json(waiting.question), "node_state": run.kept, "events": io.events}
    except RunError as exc:
        return {"error": error_json(exc), "events": io.events}
    except WfexecError as exc:
        return {"error": error_json(RunError(exc.message, exc.hint, exc.where or node.where, node.id)),
                "events": io.events}
    state = run.state
    state.pop("history", None)  # the workflow keeps its own
    return {"state": state, "target": target, "outcome": outcome.outcome, "events": io.events}


def _backend(spec: str | None):
    """The LLM backend the run was started with (`--backend`), made in this worker for this step: a judgement
    step, a markdown reference or a states node's `.md` states reach it here, never in the workflow code."""
    if not spec:
        return None
    from wfexec.backends import create_backend

    return create_backend(spec)


def _run_edge(request: dict, what: str, ending_id: str | None, state: dict) -> dict:
    """The entry gate, or an ending (its v8 consequences and its rendered result), for the runs where they touch
    the world."""
    workflow = compiled(request["path"], request["source_hash"])
    io = RecordingIo()
    run = make_run(Run, workflow, request, io, state=state)
    try:
        if what == "entry":
            run.check_entry()
            return {"events": io.events}
        result = run.finish(workflow.endings[str(ending_id)])
    except RunError as exc:
        return {"error": error_json(exc), "entry_gate": isinstance(exc, EntryGateFailed), "events": io.events}
    state = run.state
    state.pop("history", None)
    return {"result": {**result.to_json(), "silent": result.silent, "state": None}, "state": state,
            "events": io.events}


@activity.defn(name="wfexec_run_edge")
async def run_edge(request: dict, what: str, ending_id: str | None, state: dict) -> dict:
    return await _heartbeating(what, _in_step_thread(_run_edge, request, what, ending_id, state))


def _in_step_thread(function, *args) -> asyncio.Future:
    return asyncio.get_running_loop().run_in_executor(STEP_THREADS, function, *args)


async def _heartbeating(label: str, work: asyncio.Future, kept=lambda: None) -> dict:
    """Wait for the step, telling Temporal every second that this worker is alive and still at it, with what the
    step keeps to continue from (`kept()`: a states node's agents as they last stood)."""
    while True:
        done, _ = await asyncio.wait({work}, timeout=HEARTBEAT_EVERY)
        if done:
            return work.result()
        details = kept()
        if details is None:
            activity.heartbeat(label)
        else:
            activity.heartbeat(label, details)


@activity.defn(name="wfexec_effect_step")
async def effect_step(request: dict, node_id: str, state: dict, answers: dict, step_ms: int,
                      node_state: dict | None = None) -> dict:
    """Run one node with outside effects; return the state after it, where it goes, and what it printed (or the
    run error it met, or the question it asks with what the node keeps until the answer: values, not failures, so
    Temporal never retries them)."""
    # A retried attempt (an idempotent node whose worker died) continues from the last heartbeat's agents.
    previous = activity.info().heartbeat_details
    if node_state is None and len(previous) > 1:
        node_state = previous[1]
    running: list = []
    return await _heartbeating(node_id, _in_step_thread(_run_node, request, node_id, state, answers, step_ms,
                                                        node_state, running),
                               lambda: running[0].kept if running else None)
