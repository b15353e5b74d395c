"""Running every agent of a states folder to its end, in this process.

The one agents loop (`wfexec.protocol.agents_loop`) with every agent state run here as a task, so forked agents
run at the same time (a 1-second script in 50 workers takes about a second). While one agent runs scripts alone,
its states run in this thread without the loop (importing asyncio costs more CPU than a short script); the loop
takes over at the first fork or prompt state. Results are applied in the order they finish: the session first,
then the transition, then the new workers are launched. The first fatal error cancels every other agent (their
scripts are killed with their process groups) and is raised. An asking or paused agent is handed back to the
node, which asks through the run or stops it for `wfexec resume`. The run ends when no agent is active; the main
agent's final `<result>` is the outcome, and the results of forked agents are listed beside it in the order they
ended.
"""

from __future__ import annotations

import os
from wfexec.records import replace
from pathlib import Path

from wfexec.protocol.agents import MAIN, Agent, AgentsState, reactivated
from wfexec.protocol.agents_loop import (AgentsRunner, StatesOutcome, advance, failed_attempt, limit_wait_of, pause,
                                         run_agents, settle_ask)
from wfexec.protocol.budget import CostBudget
from wfexec.protocol.errors import PausesAgent, ProtocolError, Retryable, ScopeError, UsageLimit
from wfexec.protocol.executors import StepResult, base_environment, run_script_state, run_script_state_blocking
from wfexec.protocol.scopes import (ResolveError, ScriptFiles, StateScope, entry_point, open_scope, resolve_state,
                                    state_kind)
from wfexec.protocol.tags import WORKFLOW_TAGS
from wfexec.system.clock import local_now

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable
    from wfexec.interfaces import Output as Io

KEEP_OUTPUT = 64 * 1024
KEEP_RECORDS = 1000  # a long polling loop keeps its latest states, not all of them


def new_workflow_id() -> str:
    return "workflow_" + local_now("%Y-%m-%d_%H-%M-%S-%f")


class Orchestrator:
    def __init__(self, scope: StateScope, *, backend: Any = None, io: Io,
                 cwd: str | os.PathLike | None = None, budget_usd: float | None = None, spent_usd: float = 0.0,
                 timeout: float | None = None, timeout_source: str = "the node's `timeout`",
                 model: str | None = None, effort: str | None = None, workflow_id: str | None = None,
                 on_step: Callable[[Agent], None] | None = None,
                 on_checkpoint: Callable[[dict, Callable[[], dict]], None] | None = None,
                 keep_records: bool = True,
                 on_record: Callable[[str, dict], None] | None = None,
                 on_output: Callable[[str], None] | None = None,
                 sleep: Callable[[float], Any] | None = None, on_ask: str = "pause", no_wait: bool = False,
                 continue_session: bool = False, debug_files: bool = False):
        self.scope = scope
        self.backend = backend
        self.io = io
        self.base_cwd = str(Path(cwd or os.getcwd()).resolve())
        self.budget = CostBudget(budget_usd, spent_usd)
        self.timeout = timeout
        self.timeout_source = timeout_source
        self.model = model
        self.effort = effort
        self.workflow_id = workflow_id or new_workflow_id()
        self.on_step = on_step
        # After every agent state: (the change since the last checkpoint, a function giving the whole state), as
        # AgentsState.take_change and to_dict make them.
        self.on_checkpoint = on_checkpoint
        self.keep_records = keep_records
        self.on_record = on_record  # (agent id, record): a durable run keeps every one (`show --agent`)
        self.on_output = on_output  # each line a script writes, as it comes: a durable run keeps them (`wfexec serve`)
        self.sleep = sleep  # how a usage-limit wait waits (default asyncio.sleep)
        self.on_ask = on_ask  # reject: an <ask> pauses its agent instead of parking the run
        self.no_wait = no_wait  # a usage limit stops the run instead of waiting for its reset
        self.continue_session = continue_session  # main's first LLM turn branches the folder's latest session
        self.debug = None
        if debug_files:
            from wfexec.protocol.debug_files import DebugFiles

            self.debug = DebugFiles(self.base_cwd, lambda: self.workflow_id, self.warn)
        self.quiescing = False  # an agent asks: no agent starts another state until the answer comes
        self.files = ScriptFiles()
        self._scopes: dict[str, StateScope] = {}
        self._backends: dict[str, Any] = {}  # per scope: a nested workflow may run on its own backend
        self.base_env = base_environment()
        # Found once: a script state never depends on a PATH lookup (nor on a PATH the scripts change).
        self.bash = _which("bash")
        self.records: list[dict] = []
        self.steps = 0
        self._warned: set[str] = set()
        self.state: AgentsState | None = None
        self._running = 0  # agent states running as tasks of the event loop

    # -- what executors use -------------------------------------------------------------
    def agent_cwd(self, agent: Agent) -> str:
        return agent.cwd or self.base_cwd

    def scope_for(self, agent: Agent) -> StateScope:
        """The states folder the agent runs in: the node's, or the one a cross-workflow tag took it to (each
        opened once per run)."""
        if not agent.scope:
            return self.scope
        scope = self._scopes.get(agent.scope)
        if scope is None:
            scope = self._scopes[agent.scope] = open_scope(agent.scope, agent.scope)
        return scope

    def backend_for(self, agent: Agent, scope: str | None = None) -> Any:
        """The backend of the agent's scope (or of `scope`, a caller's): its manifest's (`backend: pi`), else the
        run's."""
        key = (agent.scope if scope is None else scope) or ""
        if key not in self._backends:
            from wfexec.protocol.scope_backends import scope_backend

            self._backends[key] = scope_backend(self.scope_for(replace(agent, scope=key)), self.backend)
        return self._backends[key]

    def task_folder(self, agent: Agent) -> str:
        """The agent's task folder, made before its state runs: `.wfexec/tasks/<workflow id>/<task>` under the
        node's working directory."""
        folder = Path(self.base_cwd, ".wfexec", "tasks", self.workflow_id, agent.task_name)
        folder.mkdir(parents=True, exist_ok=True)
        return str(folder)

    def concurrent(self) -> bool:
        """More than one agent is running: starting programs from threads lets their starts overlap."""
        return self._running > 1

    def trace(self, text: str) -> None:
        if self.io.tracing:
            self.io.trace(f"states: {text}")

    def warn(self, text: str) -> None:
        if text not in self._warned:
            self._warned.add(text)
            self.io.error(f"warning: {text}")

    def printer(self, agent: Agent) -> Callable[[list], None]:
        """Shows `<print>` blocks as they arrive; a forked agent's lines carry its id."""
        prefix = "" if agent.id == MAIN else f"[{agent.id}] "

        def show(texts: list) -> None:
            for text in texts:
                self.io.print(prefix + text.strip("\n"))

        return show

    def line_tracer(self, agent: Agent, stream: str) -> Callable[[str], None] | None:
        """Traces each complete line of a script's output as it arrives (a partial line waits for its end), and
        gives it to `on_output`; None when neither wants it."""
        tracing, keeping = self.io.tracing, self.on_output
        if not tracing and keeping is None:
            return None
        pending = [""]
        label = f"{agent.id}: {agent.state} {stream}|"

        def feed(text: str) -> None:
            *lines, pending[0] = (pending[0] + text).split("\n")
            for line in lines:
                if tracing:
                    self.io.trace(f"states: {label} {line}")
                if keeping is not None:
                    keeping(f"{label} {line}")

        return feed

    def keep_record(self, agent: Agent, kind: str, **details) -> dict:
        record = {"agent": agent.id, "state": agent.state, "kind": kind, **details}
        if self.debug is not None and kind == "script":
            self.debug.script(agent, details.get("env"), details.get("stdout") or "", details.get("stderr") or "",
                              details.get("exit_code"), details.get("seconds"))
        record.pop("env", None)  # for the debug files only
        for key in ("stdout", "stderr", "reply", "prompt"):
            value = record.get(key)
            if isinstance(value, str) and len(value) > KEEP_OUTPUT:
                record[key] = value[:KEEP_OUTPUT] + "\n…(cut)"
        if self.on_record is not None:
            self.on_record(agent.id, {k: v for k, v in record.items() if k != "agent"})
        if self.keep_records:
            self.records.append(record)
            if len(self.records) > KEEP_RECORDS:
                del self.records[: KEEP_RECORDS // 2]
        if self.io.tracing:
            # A script's output was traced line by line as it came (line_tracer).
            for stream in ("reply",) if kind == "script" else ("stdout", "stderr", "reply"):
                text = (record.get(stream) or "").rstrip("\n")
                if text:
                    self.io.trace(f"states: {agent.id}: {agent.state} {stream}:\n" +
                                  "\n".join("    " + line for line in text.splitlines()))
        return record

    # -- running -----------------------------------------------------------------------
    def first_agent(self, start: str | None, input: str | None) -> Agent:
        if start:
            try:
                first = resolve_state(self.scope, start)
            except ResolveError as exc:
                raise ScopeError(f"start state: {exc.message}", exc.hint) from None
        else:
            first = entry_point(self.scope)
        from wfexec.protocol.agents import CONTINUE_LATEST

        return Agent(id=MAIN, state=first, input=input, branch_from=CONTINUE_LATEST if self.continue_session else None)

    def step_one(self, agent: Agent) -> dict:
        """One state of `agent`, run here, as data for a runner that keeps the agents elsewhere (the Temporal
        workflow code, `advance`s them with it): the resolved transitions (a cross-workflow tag's input
        rendered), or the failure that tries the state again or pauses the agent. Fatal errors raise."""
        from wfexec.records import asdict

        self.state = AgentsState(self.workflow_id, [agent])
        self.steps += 1
        try:
            if self._kind(agent) == "script":
                step = run_script_state_blocking(self, agent)
            else:
                from wfexec.backends.base import run_sync
                from wfexec.protocol.prompt_states import run_markdown_state

                step = run_sync(run_markdown_state(self, agent))
        except Retryable as exc:
            return {"retry": exc.message, "hint": exc.hint, "cost_usd": exc.cost_usd}
        except (UsageLimit, PausesAgent) as exc:
            return {"pause": exc.message, "cost_usd": exc.cost_usd}
        finally:
            self.files.cleanup()
        done = self._as_data(agent, step)
        return {**done, "transitions": [asdict(t) for t in done["transitions"]]}

    def run(self, start: str | None = None, input: str | None = None, state: AgentsState | None = None) -> StatesOutcome:
        state = self._begin(start, input, state)
        try:
            self._run_alone_inline(state)
            if state.active() or self._limit_wait(state) is not None:
                from wfexec.backends.base import run_sync

                run_sync(self._run_all(state))
        finally:
            self.files.cleanup()
        return self._outcome(state)

    async def run_async(self, start: str | None = None, input: str | None = None,
                        state: AgentsState | None = None) -> StatesOutcome:
        state = self._begin(start, input, state)
        try:
            await self._run_all(state)
        finally:
            self.files.cleanup()
        return self._outcome(state)

    def _begin(self, start: str | None, input: str | None, state: AgentsState | None) -> AgentsState:
        for warning in self.scope.warnings:
            self.warn(warning)
        if state is None:
            state = AgentsState(self.workflow_id, [self.first_agent(start, input)], budget_usd=self.budget.limit)
        else:
            self.workflow_id = state.workflow_id
            self.budget.spent = state.total_cost_usd
            # Resumed: the states that ran before the stop count too, as they do for the cost.
            self.steps = sum(agent.steps for agent in state.agents)
            for agent in state.agents:  # resuming is what a paused agent waits for
                state.put(reactivated(agent))
        self.state = state
        self.quiescing = False
        return state

    def _outcome(self, state: AgentsState) -> StatesOutcome:
        main = next((a for a in state.agents if a.id == MAIN), None)
        forks = [{"agent": a, "result": state.agent(a).result} for a in state.ended if a != MAIN]
        return StatesOutcome(result=main.result if main else None, forks=forks, cost_usd=self.budget.spent,
                             steps=self.steps, workflow_id=self.workflow_id, state=state, records=self.records)

    def _limit_wait(self, state: AgentsState) -> float | None:
        return limit_wait_of(state, self.quiescing, self.no_wait)

    async def _run_all(self, state: AgentsState) -> None:
        import asyncio

        runner = AgentsRunner(run_state=self._state_task, sleep=self.sleep or asyncio.sleep, say=self.io.error,
                              settled=self._settled, wait_note=" (Ctrl-C stops; `wfexec resume` goes on later)")
        await run_agents(runner, state, count=self._start_step, on_ask=self.on_ask, no_wait=self.no_wait,
                         base_cwd=self.base_cwd)

    def _state_task(self, agent: Agent, spent: float):
        """One state of `agent` as a task of the loop, counted as it is launched (see `concurrent`)."""
        self._running += 1
        return self._state_as_data(agent)

    async def _state_as_data(self, agent: Agent) -> dict:
        try:
            step = await self._step(agent)
        except Retryable as exc:
            return {"retry": exc.message, "hint": exc.hint, "cost_usd": exc.cost_usd}
        except (UsageLimit, PausesAgent) as exc:
            return {"pause": exc.message, "cost_usd": exc.cost_usd}
        finally:
            self._running -= 1
        return self._as_data(agent, step)

    def _as_data(self, agent: Agent, step: StepResult) -> dict:
        """A state's result as the agents loop takes it (a cross-workflow tag's input rendered)."""
        transitions = [self._render_input(agent, t) if t.tag in WORKFLOW_TAGS else t for t in step.transitions]
        return {"kind": step.kind, "session_id": step.session_id, "cost_usd": step.cost_usd,
                "transitions": transitions, "step": step}

    def _settled(self, agent: Agent, done: dict, moved: Agent | None, workers: list[Agent]) -> None:
        """After the loop applied a state: its debug files and trace, and the agents' checkpoint."""
        if moved is not None:
            if self.debug is not None:
                self.debug.transition(agent, moved, workers, done["transitions"], done["kind"])
            if self.io.tracing:
                self.trace(_describe_move(agent, moved, workers, done["step"]))
        self._checkpoint()

    def _run_alone_inline(self, state: AgentsState) -> None:
        """The states of an agent running alone, while they are scripts: here, without an event loop."""
        while not self.quiescing:
            active = state.active()
            if len(active) != 1 or self._kind(active[0]) != "script":
                return
            agent = active[0]
            # A failure that allows another try counts, one that pauses the agent pauses it; either way the
            # agents' state is checkpointed after the state.
            try:
                self._start_step(agent)
                self._advance(agent, run_script_state_blocking(self, agent))
            except Retryable as exc:
                self._failed_attempt(agent, exc)
            except (UsageLimit, PausesAgent) as exc:
                self._pause(agent, exc.message)
            self._checkpoint()

    def _checkpoint(self) -> None:
        state = self.state
        assert state is not None  # run() sets it before any agent starts
        state.total_cost_usd = self.budget.spent
        if self.on_checkpoint is not None:
            # What this state changed (the agent, the workers it forked), not every agent: with many agents a
            # copy of them all at every state would make the run quadratic.
            self.on_checkpoint(state.take_change(), state.to_dict)

    def _render_input(self, agent: Agent, t):
        """A cross-workflow tag's `input` gets the emitting state's `{{…}}` values (Raymond renders it there only)."""
        text = t.attributes.get("input")
        if not text:
            return t
        from wfexec.protocol.templates import render, template_values  # a cross-workflow tag's input only

        values = template_values(workflow_id=self.workflow_id, agent_id=agent.id, task_folder=self.task_folder(agent),
                                 input=agent.input, fork_attributes=agent.fork_attributes)
        return replace(t, attributes={**t.attributes, "input": render(text, values)})

    def _failed_attempt(self, agent: Agent, error: Retryable) -> None:
        assert self.state is not None
        self.io.error(failed_attempt(self.state, agent, error)[1])

    def _pause(self, agent: Agent, why: str) -> None:
        assert self.state is not None
        self.io.error(pause(self.state, agent, why)[1])

    async def _step(self, agent: Agent) -> StepResult:
        if self._kind(agent) == "script":
            return await run_script_state(self, agent)
        from wfexec.protocol.prompt_states import run_markdown_state

        return await run_markdown_state(self, agent)

    def _start_step(self, agent: Agent) -> None:
        self.steps += 1
        if self.on_step is not None:
            self.on_step(agent)

    @staticmethod
    def _kind(agent: Agent) -> str:
        try:
            return state_kind(agent.state)
        except ResolveError as exc:
            raise ProtocolError(f"{agent.id}: {exc.message}", exc.hint) from None

    def _advance(self, agent: Agent, step: StepResult) -> None:
        """A lone agent's script state, run inline: applied as the loop applies one (its workers, if it forked,
        start when the loop takes over)."""
        state = self.state
        assert state is not None  # run() sets it before any agent starts
        rendered = [self._render_input(agent, t) if t.tag in WORKFLOW_TAGS else t for t in step.transitions]
        moved, workers = advance(state, agent, step.kind, step.session_id, rendered, self.base_cwd)
        if self.debug is not None:
            self.debug.transition(agent, moved, workers, rendered, step.kind)
        asks, told = settle_ask(state, moved, self.on_ask)
        if told:
            self.io.error(told)
        self.quiescing = self.quiescing or asks  # the others finish the state they are in, then wait with it
        if self.io.tracing:
            self.trace(_describe_move(agent, moved, workers, step))


def _which(program: str) -> str:
    """shutil.which for a plain name, without importing shutil (a lone script's run has no other use for it)."""
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", program)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return program


def _describe_move(before: Agent, after: Agent, workers: list, step: StepResult) -> str:
    tags = "+".join(t.tag for t in step.transitions)
    cost = f", ${step.cost_usd:.4f}" if step.cost_usd else ""
    if after.status == "asking":
        return f"{before.id}: {before.state} asks a person (the answer goes to {after.ask_next})"
    if after.status == "ended":
        payload = after.result if len(after.result or "") <= 60 else (after.result or "")[:57] + "..."
        return f"{before.id}: {before.state} → ended with <result>{payload}</result>{cost}"
    text = f"{before.id}: {before.state} → {after.state} ({tags}{cost})"
    if workers:
        text += "; forked " + ", ".join(f"{w.id} ({w.state})" for w in workers)
    return text
