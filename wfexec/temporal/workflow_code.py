"""The Temporal driver of the one step loop (`wfexec.running.steploop`), as workflow code.

The loop is the same as a local run's; this driver hands each step with outside effects to an activity (and a
states node's agent states, each to its own), and waits for an answer as an update. It must be deterministic,
since Temporal replays it after a worker dies: the clock is `workflow.now()`, expressions read only the `env.`
values sent with the run, and everything from outside (effect steps' results, answers) comes through Temporal's
history.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TemporalError

from wfexec.durable.journal import not_safe_to_rerun
from wfexec.durable.store import ending_status
from wfexec.language.model import Ending, Node, Workflow
from wfexec.nodes.base import Choice, Outcome, Question
from wfexec.running.engine import EntryGateFailed, InternalError, Result, Run, RunError, RunStopped
from wfexec.running.prompts import AnswerRefused, Answers, NeedsAnswer, check_answer_keys, match_answer
from wfexec.running.state import BadOverride
from wfexec.running.steploop import Driver, drive, resolve_target, start
from wfexec.temporal import WORKFLOW_NAME
from wfexec.records import replace
from wfexec.temporal.delivery import BundleParts
from wfexec.temporal.local_steps import elsewhere, local_steps, run_local_step, use_local_steps
from wfexec.temporal.messages import (AgentStateInput, AgentStateResult, ClusterRequest, EdgeInput, EdgeResult,
                                      EffectStepInput, EffectStepResult)
from wfexec.temporal.state_changes import ShippedState, apply_changes
from wfexec.temporal.task_queues import Placement
from wfexec.temporal.steps import (DEFAULT_HEARTBEAT_SECONDS, RERUN_OR_SKIP, RecordingIo, compiled, effect_nodes,
                                   StepLog, error_json, mark_written, run_options, touches_the_world,
                                   with_request_env)

RERUN, SKIP = "rerun", "skip"


def _workflow_ms() -> int:
    """Temporal's clock: the same on every replay."""
    return int(workflow.now().timestamp() * 1000)


@workflow.defn(name=WORKFLOW_NAME)
class WfexecRun(Driver, BundleParts):
    def __init__(self) -> None:
        self.status = "running"           # running | waiting | finished
        self.question: dict | None = None  # what the run waits for, in its JSON form (Question.to_json)
        self.events: list = []             # what the run printed, for the command following it
        self.arrived: dict[str, Any] = {}  # answers the `answer` update brought, by question key
        self.run_: Run | None = None
        self.workflow: Workflow | None = None
        self.request: ClusterRequest | None = None  # as the activities are sent it (ClusterRequest.for_steps)
        self.heartbeat = timedelta(seconds=DEFAULT_HEARTBEAT_SECONDS)
        self.effects: dict[str, bool] = {}  # node id → idempotent, for the nodes whose steps are activities
        self.local: frozenset[str] = frozenset()  # the effect steps that are local activities (local_steps)
        self.handed_over: dict[str, Any] = {}
        self.shipped = ShippedState()  # what the workers hold of the state: effect steps are sent its changes
        self.log = StepLog(on_changes=self.shipped.note)
        self.placement = Placement()  # which worker's queue each activity goes to (wfexec.temporal.task_queues)

    @workflow.run
    async def run(self, request: dict) -> dict:
        """`request`: the run's ClusterRequest, in its JSON form (the client's `run_request`)."""
        try:
            result = await self._execute(ClusterRequest.from_json(request))
        except EntryGateFailed as exc:
            outcome = {"status": "failed", "error": {**error_json(exc), "text": exc.message}}
        except RunStopped as exc:
            outcome = {"status": "stopped", "error": error_json(exc)}
        except RunError as exc:
            outcome = {"status": "failed", "error": error_json(exc)}
        except TemporalError:
            raise  # Temporal's own (nondeterminism, a lost activity not handled): for Temporal to act on
        except Exception as exc:
            # A bug outside any node (the loop, a handler's contract): the run fails saying so. Left to Temporal,
            # the workflow task would be retried forever and the run would hang as `running`.
            error = InternalError(f"internal error: {type(exc).__name__}: {exc}",
                                  "a bug in wfexec; please report it with the worker's output", None,
                                  self._current())
            workflow.logger.exception("wfexec run failed with an internal error")
            outcome = {"status": "failed", "error": error_json(error)}
        else:
            outcome = {"status": ending_status(result.type),
                       "result": {**result.to_json(), "silent": result.silent}}
        self.status, self.question = "finished", None
        await workflow.wait_condition(workflow.all_handlers_finished)
        return {**outcome, "events": self.events, "steps": self._steps_done()}

    def _steps_done(self) -> int:
        """Steps the run completed (the one it is in, if any, is not yet), as a SQLite run's journal counts them."""
        run = self.run_
        if run is None:
            return 0
        return run.steps - (1 if run.current is not None else 0)

    def _current(self) -> str | None:
        """The node the run is at: the one it runs, else the ending (or node) its last step went to."""
        run = self.run_
        if run is None:
            return None
        if run.current is not None:
            return run.current.id
        history = run.state.get("history") or []
        return history[-1]["target"] if history else None

    @workflow.query
    def progress(self) -> dict:
        return {"status": self.status, "current_node": self._current(),
                "steps": self._steps_done(),
                "question": self.question, "events": len(self.events)}

    @workflow.query
    def journal(self) -> list:
        return self.log.rows

    @workflow.query
    def snapshot(self) -> dict:
        return self.run_.state if self.run_ is not None else {}

    @workflow.query
    def printed(self, since: int) -> list:
        return self.events[since:]

    @workflow.update
    async def answer(self, given: dict) -> str:
        self.arrived[given["key"]] = given["value"]
        self.status, self.question = "running", None
        return "accepted"

    @answer.validator
    def _check_answer(self, given: dict) -> None:
        """Refuse (before anything is recorded) an answer to a question the run does not ask, or one that fits
        none of its options."""
        question = self.question
        if question is None:
            raise ValueError("the run is not waiting for an answer")
        if given.get("key") != question["key"]:
            raise ValueError(f"the run waits for an answer to '{question['key']}', not '{given.get('key')}'")
        refused = self._refusal({given["key"]: given.get("value")})
        if refused is not None:
            raise ValueError(refused.message)

    @workflow.query
    def refusal(self, answers: dict) -> str:
        """Why answers given to `resume` would be refused, before any is sent ('' when none would be)."""
        refused = self._refusal(answers)
        return refused.message if refused is not None else ""

    def _refusal(self, answers: dict) -> AnswerRefused | None:
        """The checks a SQLite run's resume makes (wfexec.durable.journal): keys that name no question, and the
        answer to the question the run waits on, against its options as they were asked."""
        from wfexec.nodes.base import Question

        given = Answers(answers)
        question = self.question
        try:
            if self.workflow is not None:
                check_answer_keys(self.workflow, given, [question["key"]] if question is not None else [])
            if question is not None and question["key"] in given:
                match_answer(Question.from_json(question), given.peek(question["key"]))
        except AnswerRefused as refused:
            return refused
        return None

    # -- the driver ---------------------------------------------------------
    async def _execute(self, request: ClusterRequest) -> Result:
        wf = self.workflow = compiled(await self.bundled_path(request), request.source_hash)
        try:
            run = start(wf, io=RecordingIo(self.events), options=run_options(request), inputs=request.inputs,
                        overrides=request.overrides, clock=_workflow_ms)
        except BadOverride as exc:  # the client checked them; a run error here ends the run, not the worker
            raise RunError(exc.message, exc.hint) from None
        self.run_ = with_request_env(run, request)
        run.journal = self.log
        self.request = request.for_steps()
        self.placement.configure(request)
        self.heartbeat = timedelta(seconds=float(request.heartbeat_seconds or DEFAULT_HEARTBEAT_SECONDS))
        self.effects = effect_nodes(wf)
        self.local = local_steps(wf) if use_local_steps(request) else frozenset()
        self.handed_over = {**self.effects, **{node_id: None for node_id, node in wf.nodes.items()
                                              if node.kind.agents is not None}}
        return await drive(run, self)

    def _shipped_request(self) -> ClusterRequest:
        assert self.request is not None  # set before the first step
        return self.request

    async def run_step(self, run: Run, node: Node) -> Outcome:
        request = self._shipped_request()
        if node.kind.agents is not None:
            outcome, target = await self._agents_step(run, node, request, self.heartbeat)
        else:
            outcome, target = await self._effect_step(run, node, request, self.effects[node.id], self.heartbeat)
        return Outcome(target, outcome)

    async def wait_for_answer(self, waiting: NeedsAnswer) -> Any:
        return await self._wait_for_answer(waiting.question, waiting.refused)

    async def check_entry(self, run: Run) -> None:
        if touches_the_world(run.workflow.entry_preconditions):
            await self._edge(run, "entry", None, self.heartbeat)
        else:
            run.check_entry()

    async def finish(self, run: Run, ending: Ending) -> Result:
        if touches_the_world(ending.consequences):
            data = await self._edge(run, "ending", ending.id, self.heartbeat)
            return Result.from_json({**data, "state": run.state, "steps": run.steps})
        return run.finish(ending)

    async def _edge(self, run: Run, what: str, ending_id: str | None, heartbeat: timedelta) -> dict:
        """The entry gate or an ending whose calls touch the world, run as an activity (retried: they are checks,
        or an ending's best-effort consequences). Returns the ending's rendered result."""
        edge = EdgeInput(self._shipped_request(), what, ending_id,
                         {k: v for k, v in run.state.items() if k != "history"})
        done = EdgeResult.from_json(await self.placement.execute(
            "wfexec_run_edge", edge.request, edge.to_json(), start_to_close_timeout=timedelta(days=1),
            heartbeat_timeout=heartbeat, retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1),
                                                                  maximum_interval=timedelta(seconds=30))))
        self.events.extend(done.events)
        if done.error is not None:
            error = _rebuilt_error(done.error)
            raise EntryGateFailed(error.message, error.hint, error.where) if done.entry_gate else error
        if done.state is not None:
            history = run.state["history"]
            run.state.clear()
            run.state.update(done.state)
            run.state["history"] = history
        return done.result or {}

    async def _wait_for_answer(self, question, refused: AnswerRefused | str | None = None,
                               in_flight_hint: str | None = None) -> Any:
        """The answer the `answer` update brings. `refused`: why the answer given with the run was not used,
        shown by the command following the run. `in_flight_hint`: the question is about a lost step, which that
        command reports as a SQLite run's resume does (the question's text, this hint)."""
        key = question.key
        self.arrived.pop(key, None)
        self.question, self.status = question.to_json(), "waiting"
        if refused is not None:
            self.question["refused"] = refused if isinstance(refused, str) else refused.message
        if in_flight_hint is not None:
            self.question["in_flight_hint"] = in_flight_hint
        await workflow.wait_condition(lambda: key in self.arrived)
        return self.arrived.pop(key)

    async def _effect_step(self, run: Run, node: Node, request: ClusterRequest, idempotent: bool,
                           heartbeat: timedelta) -> tuple[dict, str]:
        step_ms = run.started_ms()
        while True:
            step = EffectStepInput(request, node.id, self.shipped.argument(run.state), run.options.answers.to_dict(),
                                   step_ms)
            try:
                sent = await self._effect_activity(node, step, idempotent, heartbeat)
            except ActivityError as lost:
                self.shipped.forget()  # the lost attempt's worker may hold a state the run never took
                decision = await self._rerun_or_skip(node, lost)
                if decision == RERUN:
                    continue
                # Only offered when the node has a static edge to skip to (_rerun_or_skip).
                return {"skipped": True}, str(getattr(node.spec, str(node.kind.skip_edge)))
            done = EffectStepResult.from_json(sent)
            if done.missing_state:  # that worker does not hold the state the changes apply to: send it whole
                self.shipped.forget()
                continue
            self.events.extend(done.events)
            if done.answers is not None:  # what the step took of them is used up here too
                run.options.answers = Answers(done.answers)
            if done.question is not None:
                run.options.answers.give(done.question.key,
                                         await self._wait_for_answer(done.question, done.refused))
                continue
            if done.error is not None:
                raise _rebuilt_error(done.error)
            apply_changes(run.state, done.changes)
            self.shipped.applied(str(done.state_token))
            mark_written(run, done)
            return done.outcome or {}, str(done.target)

    async def _effect_activity(self, node: Node, step: EffectStepInput, idempotent: bool,
                               heartbeat: timedelta) -> dict:
        """One attempt at an effect step, on the run's worker (wfexec.temporal.task_queues): a local activity when
        it is short and idempotent (wfexec.temporal.local_steps) and this workflow task runs there, else an activity
        on that worker's own queue."""
        # An idempotent step may run again anywhere; any other gets one attempt, then a question.
        retry_policy = RetryPolicy(maximum_attempts=0 if idempotent else 1, initial_interval=timedelta(seconds=1),
                                   maximum_interval=timedelta(seconds=30))
        if node.id in self.local:
            try:
                return await run_local_step(replace(step, home=await self.placement.home_queue(step.request)),
                                            retry_policy)
            except (ActivityError, ApplicationError) as lost:
                if not elsewhere(lost):
                    raise
                # The run's workflow task moved to another worker than the run's (its cache let it go, or the
                # run's worker is gone): the step goes to the run's worker's queue, which says which.
        return await self.placement.execute("wfexec_effect_step", step.request, step.to_json(),
                                            start_to_close_timeout=timedelta(days=1), heartbeat_timeout=heartbeat,
                                            again_when_gone=idempotent, retry_policy=retry_policy)

    async def _agents_step(self, run: Run, node: Node, request: ClusterRequest,
                           heartbeat: timedelta) -> tuple[dict, str]:
        """A states node: its agents kept here, each of their states an activity on whichever worker is free (so
        forked agents run on many machines at once), moved on by the one agents loop (wfexec.protocol.agents_loop)."""
        from wfexec.protocol.agents import Agent, AgentsState
        from wfexec.protocol.agents_loop import AgentFailed, AgentsRunner, fatal_of, run_agents
        from wfexec.protocol.errors import ProtocolError

        steps_of, ctx = node.kind.agents, run.node_context
        assert steps_of is not None  # handed over here because it has agents
        meta = steps_of.begin(node, ctx)
        meta["workflow_id"] = "workflow_" + workflow.now().strftime("%Y-%m-%d_%H-%M-%S-%f")
        runner = AgentsRunner(
            run_state=lambda agent, spent: self._agent_step(request, node, {**meta, "spent": spent},
                                                            agent.to_dict(), heartbeat),
            answer=lambda agent: self._asked(run, steps_of.question(node, agent)),
            # Where a local run stops with exit 4 until `wfexec resume`, this one waits for it to say so.
            rerun=lambda paused: self._rerun_paused(node, paused),
            sleep=lambda seconds: workflow.sleep(timedelta(seconds=seconds)),
            say=lambda text: self.events.append(["error", text]))
        try:
            first = await self._agent_activity(request, node, meta, None, heartbeat)
            if first.fatal is not None:
                raise AgentFailed(first.fatal)
            state = AgentsState(meta["workflow_id"], [Agent.from_dict(first.step["agent"])],
                                budget_usd=meta["budget_usd"])
            outcome = await run_agents(runner, state, count=steps_of.count(node, ctx), on_ask=meta["on_ask"],
                                       no_wait=meta["no_wait"], base_cwd=meta["cwd"])
        except AgentFailed as failed:
            return self._agents_failed(run, node, failed.fatal)
        except ProtocolError as exc:  # the step budget, or a move a state's transitions cannot make
            return self._agents_failed(run, node, fatal_of(exc))
        ended = steps_of.end(node, ctx, outcome)
        return ended.outcome, resolve_target(run, node, ended)

    async def _rerun_paused(self, node: Node, paused: list) -> None:
        """Agents paused by failures, none of them by a usage limit: ask before running their states again
        (answered by `wfexec resume RUN --rerun`, once the cause is fixed)."""
        reasons = "; ".join(f"{agent.id} at {agent.state}: {agent.error}" for agent in paused)
        question = Question(node=node.id, header=RERUN_OR_SKIP,
                            text=f"{len(paused)} agent{'s' if len(paused) > 1 else ''} paused ({reasons}). Fix the "
                                 "cause, then run their states again?",
                            choices=(Choice(RERUN, "Run their states again"),), allow_other=False, dynamic=False)
        await self._wait_for_answer(question)

    async def _agent_activity(self, request: ClusterRequest, node: Node, meta: dict, agent: dict | None,
                              heartbeat: timedelta) -> AgentStateResult:
        from wfexec.protocol.agents import MAIN

        done = AgentStateResult.from_json(await self.placement.execute(
            "wfexec_agent_state", request, AgentStateInput(request, node.id, meta, agent).to_json(),
            start_to_close_timeout=timedelta(days=1),
            heartbeat_timeout=heartbeat,
            # forked agents go to any free worker where the node says `spread: true`; else to the run's worker
            spread=bool(getattr(node.spec, "spread", False)) and agent is not None and agent.get("id") != MAIN,
            # A state runs again on another worker when its worker dies, as it does when a stopped run resumes.
            retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30))))
        self.events.extend(done.events)
        if done.error is not None:
            raise _rebuilt_error(done.error)
        return done

    async def _agent_step(self, request: ClusterRequest, node: Node, meta: dict, agent: dict | None,
                          heartbeat: timedelta) -> dict:
        """An agent's state as the agents loop reads its result: the step's keys, or `fatal`."""
        done = await self._agent_activity(request, node, meta, agent, heartbeat)
        return {**done.step, "fatal": done.fatal} if done.fatal is not None else done.step

    def _agents_failed(self, run: Run, node: Node, fatal: dict) -> tuple[dict, str]:
        from wfexec.protocol.errors import ProtocolError, StopRun

        error = (StopRun if fatal.get("stop") else ProtocolError)(fatal["message"], fatal.get("hint") or "")
        steps_of = node.kind.agents
        assert steps_of is not None  # handed over here because it has agents
        ended = steps_of.failed(node, run.node_context, error, bool(fatal.get("stop")), bool(fatal.get("routable")))
        return ended.outcome, resolve_target(run, node, ended)

    async def _asked(self, run: Run, question) -> str:
        """An agent's `<ask>` answered: given with the run or resume, else waited for (the run parks)."""
        while True:
            try:
                answer = run.ask(question)
                return answer.choice.id if answer.choice is not None else answer.text or ""
            except NeedsAnswer as waiting:
                run.options.answers.give(waiting.question.key, await self._wait_for_answer(waiting.question,
                                                                                            waiting.refused))

    async def _rerun_or_skip(self, node: Node, lost: ActivityError) -> str:
        """The step's one attempt was lost (its worker died or it timed out): it may or may not have had its
        effects. Ask, in the words `wfexec resume` uses on SQLite for a step in flight (`in_flight_hint` makes the
        commands following the run say it as resume does there)."""
        edge = node.kind.skip_edge
        can_skip = edge is not None and isinstance(getattr(node.spec, edge, None), str)
        choices = (Choice(RERUN, "Run it again"),) + ((Choice(SKIP, "Skip it, as if it succeeded"),) if can_skip else ())
        assert self.workflow is not None  # compiled before the first step
        refusal = not_safe_to_rerun(self.workflow, node, workflow.info().workflow_id)
        # Why it was lost (a heartbeat timeout: its worker died) is for the workers' operators, not in the words.
        workflow.logger.warning("wfexec: the attempt at '%s' was lost (%s)", node.id, lost.cause or lost)
        question = Question(node=node.id, header=RERUN_OR_SKIP, text=refusal.message, choices=choices,
                            allow_other=False, dynamic=False)
        answer = await self._wait_for_answer(question, in_flight_hint=refusal.hint)
        choice = match_answer(question, answer).choice
        assert choice is not None  # allow_other=False, and the update's validator checked it
        return choice.id


def _rebuilt_error(data: dict) -> RunError:
    """An effect step's run error, as the activity sent it: reported as if it happened here."""
    from wfexec.errors import Position

    cls = RunStopped if data.get("outcome") == "stopped" else RunError
    error = cls(data.get("message") or "", data.get("hint") or "", None, data.get("node"))
    if data.get("file"):
        error.where = Position(data.get("file"), data.get("line"), data.get("column"))
    return error
