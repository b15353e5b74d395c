"""`states`: a folder (directory, zip, Raymond `.yaml`, or inline `states:` mapping) of
`.md`/`.sh` states run in the md/sh protocol (DESIGN §4).

```yaml
implement:
  type: states
  folder: states/implement     # or `states: {START.sh: "...", REVIEW.md: "..."}`
  start: START                 # default: 1_START, then START
  input: "${computed.plan}"    # {{input}} / RAYMOND_INPUT of the first state
  budget_usd: 2.0              # checked before every LLM call
  timeout: 300                 # seconds without output before a script (or LLM call) is stopped; 0: never
  spread: true                 # on Temporal: forked agents' states go to any free worker, not the run's own
  store_as: computed.implementation   # the main agent's final <result>; forks at computed.implementation_forks
  on_result: {APPROVED: deploy}       # routing on the (trimmed) result
  on_success: review
  on_failure: report_error
```

This module compiles the node and maps the protocol's outcome onto the
workflow; running the protocol is `wfexec.protocol`'s job. The scope is checked
at load (it exists, is well formed, has its entry point) and opened again when
the node runs, so edits to a directory apply to the next run.
"""

from __future__ import annotations

from wfexec.records import dataclass
from pathlib import Path

from wfexec.nodes.base import TARGET, NodeType, Outcome, Question
from wfexec.nodes.context import NodeContext
from wfexec.nodes.parts import Checks, Docs, Drawing, Skill
from wfexec.system.patterns import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TYPE = "states"
# A forked agent's id (wfexec.protocol.agents.MAIN, then `_` and a name per fork), compiled only when an answer
# is checked against it: every run and resume asks for the keys, few are given one.
_FORKED_AGENT = lazy(r"main(_\w+)+")
SCHEMA = {
    "properties": {
        "folder": {"type": "string"},
        # file name → content (`START.sh: "echo ..."`), or state name → a Raymond-style state object
        "states": {"type": "object", "additionalProperties": {"type": ["string", "object"]}, "minProperties": 1},
        "start": {"type": "string"},
        "input": {},
        "budget_usd": {"type": "number", "minimum": 0},
        "timeout": {"type": "number", "minimum": 0},
        "timeout_source": {"type": "string"},
        "on_ask": {"enum": ["pause", "reject"]},
        "no_wait": {"type": "boolean"},
        "continue_session": {"type": "boolean"},
        "workflow_id": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,255}$"},
        "debug_files": {"type": "boolean"},
        "lint": {"enum": ["refuse", "warn"]},
        "spread": {"type": "boolean"},
        "backend": {"type": "string"},
        "model": {"type": "string"},
        "effort": {"type": "string"},
        "cwd": {"type": "string"},
        "store_as": {"type": "string"},
        "on_result": {"type": "object", "additionalProperties": TARGET},
        "on_success": TARGET,
        "on_failure": TARGET,
    },
    "oneOf": [{"required": ["folder"]}, {"required": ["states"]}],
    "required": ["on_success"],
}


@dataclass(frozen=True, slots=True)
class States:
    folder: Any              # Path or None
    inline: dict | None
    start: str | None
    input: Any
    budget_usd: float | None
    timeout: float | None
    backend: str | None
    model: str | None
    effort: str | None
    cwd: Any
    store_as: tuple | None
    on_result: dict
    on_success: Any
    on_failure: Any
    base_dir: Any = None     # the workflow's folder, where inline states are read from
    label: str = ""          # how messages name the scope
    timeout_source: str | None = None   # how a timeout error names where `timeout` was set
    on_ask: str = "pause"               # reject: a workflow whose states may ask is refused, an <ask> pauses
    no_wait: bool = False               # a usage limit stops the run instead of waiting for its reset
    continue_session: bool = False      # the first LLM turn branches the latest session of the folder it runs in
    workflow_id: str | None = None      # {{workflow_id}} / RAYMOND_WORKFLOW_ID (default: made from the time)
    debug_files: bool = False           # Raymond's debug files under .raymond/debug/<workflow id>/
    lint: str = "refuse"                # warn: `ray lint`'s errors do not stop a run (`wfexec states`, as `ray`)
    # On Temporal, forked agents' states go to any free worker (their files land there), not to the run's worker.
    spread: bool = False


def compile(node_id, raw, c):
    folder = raw.get("folder")
    inline = dict(raw["states"]) if isinstance(raw.get("states"), dict) else None
    spec = States(
        folder=c.file(folder, ("folder",), "states folder", allow_dir=True) if folder else None,
        inline=inline,
        start=raw.get("start"),
        input=c.value(raw.get("input"), ("input",)),
        budget_usd=raw.get("budget_usd"),
        timeout=raw.get("timeout"),
        backend=raw.get("backend"),
        model=raw.get("model"),
        effort=raw.get("effort"),
        cwd=c.value(raw.get("cwd"), ("cwd",)),
        store_as=c.path(raw["store_as"], ("store_as",)) if raw.get("store_as") else None,
        on_result={str(k): c.target(v, ("on_result", k)) for k, v in (raw.get("on_result") or {}).items()},
        on_success=c.target(raw.get("on_success"), ("on_success",)),
        on_failure=c.target(raw.get("on_failure"), ("on_failure",)),
        base_dir=c.base_dir,
        label=folder if folder else f"the inline states of node '{node_id}'",
        timeout_source=raw.get("timeout_source"),
        on_ask=raw.get("on_ask") or "pause",
        no_wait=bool(raw.get("no_wait")),
        continue_session=bool(raw.get("continue_session")),
        workflow_id=raw.get("workflow_id"),
        debug_files=bool(raw.get("debug_files")),
        lint=raw.get("lint") or "refuse",
        spread=bool(raw.get("spread")),
    )
    _check_scope(spec, c)
    if spec.backend:
        _check_backend(spec.backend, c)
    return spec


def judgement(spec, raw) -> str | None:
    """What goes to the LLM (for `validate`'s summary): `.md` states do; a folder of scripts runs as code."""
    from wfexec.protocol.errors import ProtocolError
    from wfexec.protocol.scopes import MARKDOWN, extension

    if spec is None or (spec.folder is None and spec.inline is None):
        return "states node"
    try:
        names = open_scope(spec).names()
    except (ProtocolError, OSError):
        return "states node"
    return "states node (.md states)" if any(extension(n) == MARKDOWN for n in names) else None


def asks_person(spec) -> bool:
    """Whether a state may put an `<ask>` to a person (for `validate`'s summary): one of its states holds the tag,
    written in a script or in a prompt the model may follow."""
    from wfexec.protocol.errors import ProtocolError

    if spec.folder is None and spec.inline is None:
        return False
    try:
        scope = open_scope(spec)
        return any("<ask" in scope.read_text(name) for name in scope.names())
    except (ProtocolError, OSError, UnicodeDecodeError):
        return False


def _check_scope(spec: States, c) -> None:
    """Open the scope once at load, so a malformed folder is a validation error, not a run-time surprise."""
    from wfexec.protocol.errors import ProtocolError
    from wfexec.protocol.scopes import entry_point, resolve_state

    if spec.folder is None and spec.inline is None:
        return
    where = ("folder",) if spec.folder is not None else ("states",)
    try:
        scope = open_scope(spec)
    except ProtocolError as exc:
        c.error(where, "states-scope", exc.message, exc.hint)
        return
    try:
        if spec.start:
            resolve_state(scope, spec.start)
        else:
            entry_point(scope)
    except ProtocolError as exc:
        c.error(("start",) if spec.start else where, "states-start", exc.message, exc.hint)


def _check_backend(text: str, c) -> None:
    name = text.partition(":")[0].strip()
    if name not in ("claude", "pi", "command", "replay"):
        c.error(("backend",), "states-backend", f"unknown LLM backend '{text}'",
                "use claude, claude:model=opus, pi, command:PROGRAM [ARGS], or replay:CASSETTE.yaml")


def open_scope(spec: States):
    if spec.inline is not None:
        from wfexec.protocol.yamlscope import inline_scope

        return inline_scope(spec.inline, spec.label, Path(spec.base_dir or "."))
    from wfexec.protocol.scopes import open_scope as open_folder

    return open_folder(spec.folder, spec.label)


def _shown(path: Path) -> str:
    """A path as messages show it: relative to the working directory when it is inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except (OSError, ValueError):
        return str(path)


def lint(node) -> list:
    """Raymond's lint findings for the node's states, at the state file's line and column for a folder or a zip,
    at the node for states in a YAML file or inline."""
    from wfexec.protocol.errors import ProtocolError
    from wfexec.protocol.folders import state_diagnostic
    from wfexec.protocol.lint_cache import lint_findings

    spec = node.spec
    if spec.folder is None and spec.inline is None:
        return []
    try:
        scope = open_scope(spec)
    except ProtocolError:
        return []  # the workflow's own check has said so
    shown = _shown(spec.folder) if spec.folder is not None else ""
    found = [state_diagnostic(finding, scope, shown, node.where, f"states node '{node.id}': ")
             for finding in lint_findings(scope, start=spec.start)]
    if spec.lint == "warn":
        from wfexec.protocol.folders import run_anyway

        return run_anyway(found)
    return found


def targets(spec):
    edges = [(f"result {k}", v) for k, v in spec.on_result.items()]
    return edges + [("on_success", spec.on_success), ("on_failure", spec.on_failure)]


def calls(spec):
    return []


# -- running ----------------------------------------------------------------------------

def execute(node, ctx: NodeContext) -> Outcome:
    from wfexec.protocol.errors import ProtocolError, StopRun

    spec = node.spec
    begun = AGENT_STEPS.begin(node, ctx)
    first_input, cwd = begun["input"], Path(begun["cwd"])
    if ctx.dry_run:
        return _dry_run(node, ctx, first_input)
    orchestrator = None
    try:
        scope = open_scope(spec)
        orchestrator = _orchestrator(node, ctx, scope, cwd=cwd, on_step=_step_counter(ctx),
                                     on_checkpoint=ctx.change_node_state, **_keeping(ctx))
        saved = ctx.node_state()
        if saved is None and spec.on_ask == "reject":
            _refuse_asking(scope)
        if saved is not None:
            from wfexec.protocol.agents import AgentsState

            ctx.io.trace(f"states: continuing {scope.describe()} with the agents saved before the run stopped")
            state = AgentsState.from_dict(saved)
            if isinstance(saved.get("agents"), list):  # saved by an older wfexec: again as changes now merge in
                ctx.save_node_state(state.to_dict())
            outcome = orchestrator.run(state=state)
        else:
            ctx.io.trace(f"states: running {scope.describe()} in {cwd}")
            outcome = orchestrator.run(start=spec.start, input=first_input)
        while outcome.asking:
            outcome = orchestrator.run(state=_answer(node, ctx, outcome))
        if outcome.paused:
            _stop_paused(ctx, outcome)
        ctx.save_node_state(None)
    except StopRun as exc:
        if not exc.routable:
            ctx.stop(exc.message, exc.hint)
        return _failed(node, ctx, exc, orchestrator, stop=True)
    except ProtocolError as exc:
        return _failed(node, ctx, exc, orchestrator, stop=False)
    return _succeeded(node, ctx, outcome)


def _keeping(ctx: NodeContext) -> dict[str, Any]:
    """What the run keeps of its agents, for `wfexec show` and `wfexec serve`: each state's record (`show --agent`),
    and the lines their scripts write, when its store keeps output."""
    return {"on_record": ctx.record_transcript, "on_output": ctx.record_output if ctx.keeps_output else None}


def _orchestrator(node, ctx: NodeContext, scope, **given):
    """The orchestrator of this node's agents, as the node's fields configure it."""
    from wfexec.protocol.orchestrator import Orchestrator

    spec = node.spec
    options: dict[str, Any] = dict(
        backend=_backend(node, ctx), io=ctx.io, budget_usd=spec.budget_usd, timeout=spec.timeout,
        timeout_source=spec.timeout_source or f"node '{node.id}' `timeout`", model=spec.model, effort=spec.effort,
        workflow_id=spec.workflow_id, on_ask=spec.on_ask, no_wait=spec.no_wait,
        continue_session=spec.continue_session, debug_files=spec.debug_files)
    options.update(given)
    return Orchestrator(scope, **options)


def _refuse_asking(scope) -> None:
    """With `on_ask: reject`, a workflow whose states may `<ask>` is refused before any state runs (`ray`'s
    launch check)."""
    from wfexec.protocol.asks import asking_states
    from wfexec.protocol.errors import ProtocolError

    asking = asking_states(scope)
    if asking:
        raise ProtocolError(f"{scope.describe()} may ask a person ({asking}), and on_ask is reject (--on-ask=reject)",
                            "run with --on-ask=pause (an <ask> then parks the run until it is answered), or take "
                            "the ask out of the states' allowed_transitions")


def _question(node, agent) -> Question:
    """What an agent's `<ask>` asks a person (the answer key is the agent's id: --answer main=TEXT)."""
    return Question(node=node.id, text=agent.ask_prompt or "", header=f"{node.id}: {agent.id}", choices=(),
                    allow_other=True, dynamic=False, asker=agent.id)


def answer_keys(node) -> tuple:
    """An `<ask>` is answered by its agent's id: `main`, or a forked agent's, made from its parent's as it forks
    (`main_worker1`, wfexec.protocol.agents.worker_id)."""
    from wfexec.protocol.agents import MAIN

    return (MAIN, _FORKED_AGENT)


def _answer(node, ctx: NodeContext, outcome):
    """The agents once the first asking one has its answer (`ctx.ask`: given with --answer AGENT=TEXT, asked at
    the terminal, or the run parks there with the agents saved, exit 3)."""
    from wfexec.protocol.agents import answered

    agent = outcome.asking[0]
    answer = ctx.ask(_question(node, agent))
    state = outcome.state
    state.put(answered(agent, answer.choice.id if answer.choice is not None else answer.text or ""))
    ctx.save_node_state(state.to_dict())
    return state


def _stop_paused(ctx: NodeContext, outcome) -> None:
    """Agents paused by failures or a usage limit: the run stops (exit 4), its agents kept for resume."""
    reasons = "; ".join(f"{agent.id} at {agent.state}: {agent.error}" for agent in outcome.paused)
    count = len(outcome.paused)
    ctx.stop(f"{count} agent{'s' if count > 1 else ''} paused ({reasons})",
             "fix the cause (or wait for the usage limit to reset), then `wfexec resume RUN`: paused agents run "
             "their state again")


def _working_directory(text: Any, ctx: NodeContext) -> Path:
    if text in (None, ""):
        return ctx.cwd
    path = Path(str(text)).expanduser()
    return path if path.is_absolute() else ctx.cwd / path


def _backend(node, ctx: NodeContext):
    if ctx.backend is not None or not node.spec.backend:
        return ctx.backend
    from wfexec.backends import create_backend

    try:
        return create_backend(node.spec.backend)
    except ValueError as exc:
        ctx.fail(str(exc))


def _step_counter(ctx: NodeContext):
    """Every protocol state counts against the run's step budget, so a states loop cannot spin forever."""
    from wfexec.protocol.errors import StepLimit

    def count(agent) -> None:
        if not ctx.count_step():
            raise StepLimit(f"{agent.id}: the run took more than {ctx.max_steps} steps (the last at {agent.state}); "
                            "the states loop does not end", "fix the loop's exit, or raise --max-steps")

    return count


def _succeeded(node, ctx: NodeContext, outcome) -> Outcome:
    spec = node.spec
    result = outcome.result if outcome.result is not None else ""
    if spec.store_as:
        ctx.set(spec.store_as, result)
        forks_path = _forks_path(spec.store_as)
        if forks_path is not None:
            ctx.set(forks_path, outcome.forks)
    details = {"success": True, "result": result, "forks": len(outcome.forks), "cost_usd": round(outcome.cost_usd, 6),
               "states": outcome.steps, "workflow_id": outcome.workflow_id}
    routed = spec.on_result.get(result.strip())
    if routed is not None:
        return Outcome(routed, details, f"result {result.strip()}")
    return Outcome(spec.on_success, details, "on_success")


def _forks_path(store_as: tuple) -> tuple | None:
    """Fork results sit beside the main result: `computed.x` → `computed.x_forks`."""
    last = store_as[-1]
    if not isinstance(last, str):
        return None
    return store_as[:-1] + (f"{last}_forks",)


def _failed(node, ctx: NodeContext, error, orchestrator, stop: bool) -> Outcome:
    spec = node.spec
    ctx.save_node_state(None)
    ctx.keep_error(error.message, error.hint)
    if spec.on_failure is None:
        hint = error.hint or "add `on_failure: <node or ending>` to handle it"
        if stop:
            ctx.stop(error.message, hint)
        ctx.fail(error.message, hint)
    spent = orchestrator.budget.spent if orchestrator is not None else 0.0
    return Outcome(spec.on_failure, {"success": False, "error": error.message, "cost_usd": round(spent, 6)},
                   "on_failure")


class StatesAgentSteps:
    """A states node's work one agent state at a time (`wfexec.nodes.context.AgentSteps`), for a runner that keeps
    the agents itself and may run each state on another machine (the Temporal workflow code)."""

    def begin(self, node, ctx: NodeContext) -> dict:
        from wfexec.language.expressions import ExpressionError, to_text

        spec = node.spec
        try:
            value = ctx.render(spec.input)
            cwd_text = ctx.render(spec.cwd)
        except ExpressionError as exc:
            ctx.fail(exc.message, exc.hint)
        return {"input": None if value is None else to_text(value), "cwd": str(_working_directory(cwd_text, ctx)),
                "budget_usd": spec.budget_usd, "on_ask": spec.on_ask, "no_wait": spec.no_wait}

    def step(self, node, ctx: NodeContext, meta: dict, agent: dict | None) -> dict:
        from wfexec.protocol.agents import Agent

        scope = open_scope(node.spec)
        orchestrator = _orchestrator(node, ctx, scope, cwd=meta["cwd"], spent_usd=meta.get("spent") or 0.0,
                                     workflow_id=meta["workflow_id"], keep_records=False, **_keeping(ctx))
        if agent is None:
            if node.spec.on_ask == "reject":
                _refuse_asking(scope)
            for warning in scope.warnings:
                orchestrator.warn(warning)
            return {"agent": orchestrator.first_agent(node.spec.start, meta.get("input")).to_dict()}
        return orchestrator.step_one(Agent.from_dict(agent))

    def count(self, node, ctx: NodeContext):
        return _step_counter(ctx)

    def question(self, node, agent) -> Question:
        return _question(node, agent)

    def end(self, node, ctx: NodeContext, outcome) -> Outcome:
        if outcome.paused:
            _stop_paused(ctx, outcome)
        return _succeeded(node, ctx, outcome)

    def failed(self, node, ctx: NodeContext, error, stop: bool, routable: bool) -> Outcome:
        if stop and not routable:
            ctx.stop(error.message, error.hint)
        return _failed(node, ctx, error, None, stop=stop)


AGENT_STEPS = StatesAgentSteps()


def _dry_run(node, ctx: NodeContext, first_input) -> Outcome:
    spec = node.spec
    try:
        scope = open_scope(spec)
        names = ", ".join(scope.names())
    except Exception as exc:  # a dry run reports, it does not fail
        names = f"(cannot open: {exc})"
    shown = f", input {first_input!r}" if first_input is not None else ""
    ctx.io.print(f"--- states node '{node.id}' (dry run: not run) ---\n{spec.label}: {names}{shown}\n"
                 "--- end of states ---")
    if spec.store_as:  # what a real run stores there (the main result, the forks' beside it) is not known
        what = f"the result of states node '{node.id}' (not run in a dry run)"
        ctx.stand_in(spec.store_as, what)
        forks_path = _forks_path(spec.store_as)
        if forks_path is not None:
            ctx.stand_in(forks_path, what)
    return Outcome(spec.on_success, {"success": True, "dry_run": True}, "on_success")


def effects(spec):
    return ("process", "llm")  # scripts and LLM agents


NODE_TYPE = NodeType(
    name=TYPE, schema=SCHEMA, compile=compile, execute=execute, targets=targets, calls=calls,
    agents=AGENT_STEPS, answer_keys=answer_keys,
    # Resuming continues from its agents as last saved: running it again is safe (the default).
    effects=effects, skip_edge="on_success",
    checks=Checks(judgement=judgement, lint=lint, asks_person_in=asks_person),
    skill=Skill(tools=frozenset({"Bash", "Task"})),
    drawing=Drawing(shape_name="cylinder", mermaid_shape=("[(", ")]"), dot_shape="shape=cylinder"),
    docs=Docs(doc=__doc__, order=60, field_notes={
        "folder": "a directory, `.zip` or Raymond `.yaml` of `.md`/`.sh` states",
        "states": "inline states: file name → content, or state name → Raymond state object",
        "start": "the first state (default `1_START`, then `START`)",
        "input": "`{{input}}` / `RAYMOND_INPUT` of the first state",
        "budget_usd": "the most the node may spend on LLM calls, checked before each call",
        "timeout": "seconds without output before a script or LLM call is stopped",
        "backend": "the LLM backend: `claude`, `pi`, `command:PROGRAM`, `replay:CASSETTE.yaml`",
        "store_as": "the state path for the main agent's final `<result>` (forks at `<path>_forks`)",
        "on_result": "result text → target",
        "on_success": "where to go when the states ended with a result no `on_result` names",
        "on_failure": "where to go on a protocol error, a failed script or an exhausted budget",
        "model": "the model the LLM backend uses",
        "effort": "the reasoning effort the LLM backend uses",
        "cwd": "the folder the states run in (default: the run's working directory)",
        "timeout_source": "how a timeout error names where `timeout` was set (default: the node's `timeout`)",
        "on_ask": "`pause` (default: an `<ask>` parks the run) or `reject` (states that may ask are refused "
                  "before any runs; an `<ask>` pauses its agent)",
        "no_wait": "a usage limit stops the run (exit 4) instead of waiting for its reset time",
        "continue_session": "the first LLM turn branches the latest session of the folder it runs in "
                            "(claude `-c --fork-session`)",
        "workflow_id": "`{{workflow_id}}` / `RAYMOND_WORKFLOW_ID` (default: `workflow_<date>_<time>`)",
        "debug_files": "write Raymond's debug files under `.raymond/debug/<workflow id>/`",
        "lint": "`refuse` (default: a run does not start on what Raymond's lint calls an error) or `warn` (they are "
                "warnings, and the run starts, as `ray` runs a folder; `wfexec states` writes this)",
        "spread": "on a Temporal cluster, forked agents' states go to any free worker (the files they write land "
                  "there), not to the run's own worker",
    }, rules="""\
1. Open the scope: `folder` (a directory, a `.zip`, or a Raymond `.yaml`) or the inline `states` mapping.
2. Run its states in the md/sh protocol from `start` (default `1_START`, then `START`), with `input` rendered as
   `{{input}}` / `RAYMOND_INPUT` of the first state: a `.md` state is a prompt for an LLM agent, a `.sh`
   state a script; each ends with one transition tag (`<goto>`, `<reset>`, `<call>`, `<function>`, `<fork>`,
   `<result>`). Forked agents run concurrently; the node ends when every agent has ended.
3. Store the main agent's final `<result>` at `store_as` (fork results at `<store_as>_forks`). Go to
   `on_result.<result text, trimmed>` when there is one, else to `on_success`.
4. A protocol error, a failed script or an exhausted `budget_usd` sets `computed.last_error` and goes to
   `on_failure` (none: run error).
"""),
)
