"""A run: its state, and what its steps call — preconditions, consequences, questions, judgement, sub-workflows,
the ending. The step loop that moves it from node to node is `wfexec.running.steploop`, one for every driver.

The engine knows node types only through what each compiled node carries
(`node.kind`, a `NodeType`) and registry types only through their specs; a node
type sees the run only through its `NodeContext` (`run.node_context`).
Everything it runs was compiled at load; a step renders templates and
calls handlers, nothing more.
"""

from __future__ import annotations

import os
import time
from wfexec.records import dataclass, field
from pathlib import Path

from wfexec.errors import Refused, WfexecError
from wfexec.running.context import CallContext, parse_cached
from wfexec.language.expressions import (RUNTIME, TOP_LEVEL_FIRST, Expression, ExpressionError, Scope,
                                         render_value, to_text)
from wfexec.language.model import NO_DIRECT, Call, Ending, Node, Where, Workflow
from wfexec.running.node_context import StepContext
from wfexec.running.prompts import Answer, AnswerRefused, Answers, NeedsAnswer, match_answer
from wfexec.errors import ActionFailed
from wfexec.language.paths import PathError, absolute_path, format_path, get_path, set_path
from wfexec.running.state import new_state
from wfexec.running.request import DEFAULT_MAX_STEPS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping, NoReturn
    from wfexec.running.dry_run import DryRun
    from wfexec.running.io import Io


def _copied(value: Any) -> Any:
    """A deep copy: state never shares structure with the workflow or with itself. `copy` (with weakref, ~1 ms of
    CPU) is imported by the first run that writes a list or mapping that holds something, not at every start (a
    `states` node writes its forks' results, most often none)."""
    if not value and type(value) in (list, dict):
        return type(value)()
    from copy import deepcopy

    return deepcopy(value)


class RunError(WfexecError):
    """The run cannot go on: a problem in the workflow or its data at run time (exit 1)."""

    outcome = "failed"


class RunStopped(RunError):
    """The run was stopped before an ending: step budget, a loop guard, no backend (exit 4).

    `repeatable`: the step it stopped in did nothing that running it again could repeat (no LLM backend: the
    prompt was never sent, and no call before it in the step touched the world), so resume runs that step
    again without asking whether it is safe to."""

    outcome = "stopped"
    repeatable = False


class InternalError(RunError):
    """A bug in wfexec or a plugin surfaced while a node ran; the original exception is `__cause__`."""


class EntryGateFailed(RunError):
    """An entry precondition failed; no ending is reached (exit 1)."""


@dataclass
class Options:
    max_steps: int = DEFAULT_MAX_STEPS
    interactive: bool = False
    answers: Answers = field(default_factory=Answers)
    dry_run: bool = False
    backend: Any = None
    cwd: Path | None = None
    # An embedder's own way to answer questions: ask(question) -> option id, label or free text
    # (None: no answer, the run parks). Asked after the given answers, before the terminal.
    ask: Callable[[Any], Any] | None = None
    # A durable run commits every step that changes state, state-only ones too, as LangGraph's durability
    # "sync" does (slower; by default state-only steps are committed in batches, see wfexec.durable.journal).
    commit_every_step: bool = False
    # The run store of a durable run (the driver sets it): no file consequence may write, move or delete it
    # (wfexec.system.run_store; the default store and .wfexec/ are protected with or without one).
    store: Path | None = None
    # Folders outside the working directory that a computed path may name (--allow-write): the person's choice,
    # never the workflow's (wfexec.system.files.guarded_path).
    allowed_folders: tuple[Path, ...] = ()


@dataclass
class Result:
    """How a run ended."""

    ending: str
    type: str
    message: str
    details: str | None
    summary: dict
    recovery: Any
    output: Any
    state: dict
    steps: int
    run_id: str | None = None  # the durable run's id (wfexec.run with a store); not part of to_json
    silent: bool = False  # v8 `behavior: silent`: the command prints no message; not part of to_json
    delegate: dict | None = None  # v8 `behavior: delegate`: {skill, args, context}, rendered
    code: str | int | None = None  # blueprint-lib v3: the ending's `code`

    def to_json(self) -> dict:
        out = {"ending": self.ending, "type": self.type, "message": self.message, "details": self.details,
               "summary": self.summary, "recovery": self.recovery, "output": self.output, "state": self.state,
               "steps": self.steps}
        if self.delegate is not None:
            out["delegate"] = self.delegate
        if self.code is not None:
            out["code"] = self.code
        return out

    @classmethod
    def from_json(cls, data: dict, run_id: str | None = None) -> "Result":
        """An ending from its JSON form (`to_json`), plus `silent`, which a Temporal activity's ending adds (a
        workflow's `finish` result carries it to the command that prints the ending)."""
        return cls(ending=data["ending"], type=data["type"], message=data["message"], details=data.get("details"),
                   summary=data.get("summary") or {}, recovery=data.get("recovery"), output=data.get("output"),
                   state=data.get("state") or {}, steps=int(data.get("steps") or 0), run_id=run_id,
                   silent=bool(data.get("silent")), delegate=data.get("delegate"), code=data.get("code"))


MAX_REPLY = 4 * 1024 * 1024  # characters of one LLM reply: replies are kept in state, and state in the store

def wall_ms() -> int:
    """This process's clock, in milliseconds: what a local run's steps read (a Temporal run reads its own)."""
    return time.time_ns() // 1_000_000


def _write_failed(exc: ExpressionError | PathError) -> ActionFailed:
    """A direct write's failure as its handler would have raised it: the call failed, not the run."""
    if isinstance(exc, ExpressionError):
        return ActionFailed(exc.message, exc.hint)
    return ActionFailed(str(exc))


class Journal:
    """How a run persists its steps, told about each by the step loop: the SQLite store's journal
    (wfexec.durable.journal), a Temporal run's step log (wfexec.temporal.steps.StepLog); none for --ephemeral."""

    def before_step(self, run: "Run", node: Node) -> None:
        pass

    def after_step(self, run: "Run", node: Node, entry: dict) -> None:
        pass

    def save_node_state(self, node_id: str, data: dict | None) -> None:
        pass

    def change_node_state(self, node_id: str, change: dict, whole: Callable[[], dict]) -> None:
        pass

    def node_state(self, node_id: str) -> dict | None:
        return None

    def record_transcript(self, node_id: str, agent: str, record: dict) -> None:
        pass

    # Whether `record_output` keeps anything: the programs' readers skip making its lines otherwise.
    keeps_output = False

    def record_output(self, node_id: str, text: str) -> None:
        pass


class _OutputOnly(Journal):
    """A sub-workflow's journal: its steps are its caller's one step, whose output its programs' output joins."""

    keeps_output = True

    def __init__(self, caller: Journal, node_id: str):
        self.caller, self.node_id = caller, node_id

    def record_output(self, node_id: str, text: str) -> None:
        self.caller.record_output(self.node_id, text)


class Run:
    """One execution of a compiled workflow."""

    def __init__(self, workflow: Workflow, *, io: Io, options: Options | None = None,
                 inputs: dict | None = None, state: dict | None = None, journal: Journal | None = None,
                 budget: list | None = None, clock: Callable[[], int] = wall_ms):
        self.workflow = workflow
        self.clock = clock  # milliseconds: the step's clock and history's timestamps read it
        self.io = io
        self.options = options or Options()
        self.cwd = Path(self.options.cwd or Path.cwd())
        self.inputs = dict(inputs or {})
        self.state = state if state is not None else self.initial_state(self.inputs)
        # `${PWD}` is the run's working directory (as in its shell steps), not what the environment last said.
        # `current_node` is the node being run; while an ending is rendered it is the node that led there, so
        # `Unexpected failure at ${current_node}` (a v8 default_error idiom) names where the run failed.
        computed = self.state.get("computed") or {}
        self.runtime: dict[str, Any] = {"workflow_name": workflow.name, "workflow_version": workflow.version,
                                        "current_node": None, "previous_node": None,
                                        "error": {"message": computed.get("last_error"),
                                                  "hint": computed.get("last_error_hint"), "node": None}}
        self.extras: dict[str, Any] = {"imports": workflow.imports, "input": self.inputs, "env": os.environ,
                                       "PWD": str(self.cwd), RUNTIME: self.runtime}
        if workflow.plugin_root:  # the documents module, for its one constant, only for a plugin's workflow
            from wfexec.language.documents import PLUGIN_ROOT_ENV

            if PLUGIN_ROOT_ENV not in os.environ:
                self.extras[PLUGIN_ROOT_ENV] = workflow.plugin_root
        if workflow.top_level_first:
            self.extras[TOP_LEVEL_FIRST] = True
        # The time expressions read (`Date.now()`), in milliseconds: read from the clock the first time a step
        # asks (most steps never do), then the same for the rest of the step. A resumed run sets
        # `resumed_step_ms` to the recorded start of the step it runs again.
        self.step_ms: int | None = None
        self.resumed_step_ms: int | None = None
        self.clock_served = False  # an expression of this step has read the clock (recorded, or replayed)
        # A call of this step that is not safe to repeat has run (RunStopped.repeatable).
        self.repeat_unsafe = False
        # This step was in flight when an earlier process died, and runs again: what its first run did outside
        # may be there already (a clone_repo finds its own clone).
        self.rerun_in_flight = False
        self.scope = Scope(self.state, self.extras, clock=self.step_clock)
        self.journal = journal
        # State paths (first two segments) written since the journal last looked, and how many items were
        # appended in place to the list at each path: the durable store records these as the step's changes
        # instead of diffing state (wfexec.durable.changes).
        self.changed: dict[tuple, None] = {}  # an ordered set: the journal lists them as written
        self.appended: dict[tuple, int] = {}
        self.current: Node | None = None
        self.visits: dict[str, int] = {}
        # Sub-workflows share one step budget with their caller: [steps used].
        self.budget = budget if budget is not None else [0]
        self.steps = 0
        self.dry: DryRun | None = None
        if self.options.dry_run:
            from wfexec.running.dry_run import DryRun

            self.dry = DryRun()
        # What its nodes' types see of it (`NodeType.execute(node, ctx)`): one for the run, not one per step.
        self.node_context = StepContext(self)

    # -- state --------------------------------------------------------------
    def initial_state(self, inputs: dict) -> dict:
        state = new_state(self.workflow.initial_state)
        for key, value in inputs.items():
            state[key] = _copied(value)
        return state

    def write(self, path: tuple, value: Any) -> None:
        """Set a state path (raises PathError), noting it for the journal. State never shares structure
        with the workflow or with itself, so lists and mappings are copied."""
        if isinstance(value, (dict, list)):
            value = _copied(value)
        if len(path) == 1 and path[0].__class__ is str:  # most writes: a top-level name, set without set_path
            self.state[path[0]] = value
            self.changed[path] = None
            return
        key = path if len(path) <= 2 else path[:2]
        if key[-1].__class__ is int and key[-1] < 0:
            key = absolute_path(self.state, key)
        set_path(self.state, path, value)
        self.changed[key] = None

    def append(self, path: tuple, value: Any) -> None:
        """Append to the list at a path in place (raises PathError when it holds something else; a missing or
        null one becomes a new list): the journal records the item, not the whole list again."""
        target = get_path(self.state, path)
        if target is None:
            self.write(path, [value])
            return
        if not isinstance(target, list):
            raise PathError(f"`{format_path(path)}` holds {type(target).__name__}, not a list; cannot append")
        target.append(_copied(value) if isinstance(value, (dict, list)) else value)
        path = absolute_path(self.state, path)
        self.appended[path] = self.appended.get(path, 0) + 1

    def set(self, path: tuple, value: Any) -> None:
        try:
            self.write(path, value)
        except PathError as exc:
            self.fail(self.current, str(exc))

    def render_text(self, value: Any) -> str:
        try:
            return to_text(self.render(value))
        except ExpressionError as exc:
            self.fail(self.current, exc.message, exc.hint)

    def render(self, value: Any, scope: Scope | None = None) -> Any:
        """A compiled value rendered (a bare expression evaluated; ExpressionError); in a dry run, each `${...}`
        that reads a placeholder stands as one."""
        scope = scope or self.scope
        if self.dry is not None:
            return self.dry.render(value, scope)
        if value.__class__ is Expression:
            return value.evaluate(scope)
        return render_value(value, scope)

    def deciding(self, what: str, value: Any = None, path: tuple | None = None) -> None:
        """In a dry run, stop the run (exit 4) when `value`, or the state at `path` or above it, holds a
        placeholder: `what` cannot be decided without the real value."""
        if self.dry is not None:
            self.dry.deciding(self, what, value, path)

    def stand_in(self, path: tuple, what: str) -> None:
        """In a dry run, the placeholder `<dry-run: PATH>` at `path`, for what a step that did not run (`what`)
        would have stored there, as a skipped action leaves one; nothing in a real run."""
        if self.dry is not None:
            self.dry.put(self, path, what)

    # -- calls --------------------------------------------------------------
    def check(self, call: Call, scope: Scope | None = None) -> bool:
        scope = scope or self.scope
        if self.dry is not None:
            self.dry.check_allowed(self, call, scope)
        test = call.direct
        if test is None:
            test = call.direct_form()
        try:
            if test is not NO_DIRECT and not self.io.tracing:  # a trace shows the call as the handler gets it
                return test(self, scope)
            params = call.render(scope)
            result = bool(self._handled(call, params, scope))
        except ExpressionError as exc:
            raise RunError(exc.message, exc.hint, call.where, self.current.id if self.current else None) from None
        except ActionFailed as exc:
            raise RunError(f"{call.type}: {exc.message}", exc.hint, call.where,
                           self.current.id if self.current else None) from None
        if self.io.tracing:
            self.io.trace(f"Condition: {call.describe()} = {'true' if result else 'false'}")
        return result

    def apply(self, call: Call, scope: Scope | None = None) -> None:
        scope = scope or self.scope
        if self.dry is not None and self.dry.skip(self, call, scope):
            return
        write = call.direct
        if write is None:
            write = call.direct_form()
        if write is not NO_DIRECT and not self.io.tracing:  # a trace shows the call as the handler gets it
            try:
                write(self, scope)
            except (ExpressionError, PathError) as exc:
                raise _write_failed(exc) from None
            return
        try:
            params = call.render(scope)
        except ExpressionError as exc:
            raise ActionFailed(exc.message, exc.hint) from None
        if self.io.tracing:
            self.io.trace(f"Action: {call.describe()}")
        try:
            self._handled(call, params, scope)
        except Refused as exc:  # a rule no workflow may break: a run error at the call, whatever on_failure says
            raise RunError(f"{call.type}: {exc.message}", exc.hint, call.where,
                           self.current.id if self.current else None) from None

    def apply_each(self, calls: tuple[Call, ...]) -> tuple[int, ActionFailed] | None:
        """Run consequences in order up to the first that fails: (its index, its failure), or None when all ran.
        An action node's calls, most of them direct writes, made here: a call less each than `apply`."""
        direct = self.dry is None and not self.io.tracing
        scope = self.scope
        for index, call in enumerate(calls):
            write = call.direct
            try:
                if write is None or write is NO_DIRECT or not direct:
                    self.apply(call, scope)
                    continue
                try:
                    write(self, scope)
                except (ExpressionError, PathError) as exc:
                    raise _write_failed(exc) from None
            except ActionFailed as failure:
                return index, failure
        return None

    def _handled(self, call: Call, params: Mapping[str, Any], scope: Scope) -> Any:
        """The call's handler run; a call not safe to repeat marks the step so, unless it stopped the run before
        doing its work (an LLM call with no backend)."""
        stopped_first = False
        try:
            return call.spec.handler(params, CallContext(self, call, scope))
        except RunStopped:
            stopped_first = True
            raise
        finally:
            if not stopped_first and not call.spec.idempotent:
                self.repeat_unsafe = True

    def keep_error(self, message: str, hint: str = "") -> None:
        """Put a failure where endings and later nodes read it: `computed.last_error` (and
        `computed.last_error_hint`, removed when this failure has none, so no stale hint remains)."""
        self.set(("computed", "last_error"), message)
        if hint:
            self.set(("computed", "last_error_hint"), hint)
        elif "last_error_hint" in self.state["computed"]:
            del self.state["computed"]["last_error_hint"]
            self.changed[("computed", "last_error_hint")] = None
        self.runtime["error"] = {"message": message, "hint": hint or None, "node": self.runtime["current_node"]}
        self.io.trace(f"  failed: {message}" + (f" — {hint}" if hint else ""))

    def record_error(self, node: Node, call: Call, failure: ActionFailed) -> str:
        """Keep a failed action's message (and how to fix it)."""
        message = f"{call.type} failed: {failure.message}"
        self.keep_error(message, failure.hint)
        return message

    def save_node_state(self, node_id: str, data: dict | None) -> None:
        """Keep what a long-running node needs to continue after a crash (None: the node is done)."""
        if self.journal is not None:
            self.journal.save_node_state(node_id, data)

    def change_node_state(self, node_id: str, change: dict, whole: Callable[[], dict]) -> None:
        """Keep what changed of a long-running node's state since it was last kept (merged into it, key by key:
        wfexec.durable.store.merge_change); `whole()` gives all of it, for a store that would rather keep that."""
        if self.journal is not None:
            self.journal.change_node_state(node_id, change, whole)

    def node_state(self, node_id: str) -> dict | None:
        return self.journal.node_state(node_id) if self.journal is not None else None

    def record_transcript(self, node_id: str, agent: str, record: dict) -> None:
        """Keep what one agent state of a node sent and got (a prompt and its reply, a script's output), for
        `wfexec show RUN --agent NAME`."""
        if self.journal is not None:
            self.journal.record_transcript(node_id, agent, record)

    @property
    def keeps_output(self) -> bool:
        return self.journal is not None and self.journal.keeps_output

    def record_output(self, text: str) -> None:
        """Keep a line of what the step's programs write (and of which program, and how it ended), when the run's
        journal keeps them (a durable run: `wfexec serve` shows them)."""
        if self.journal is not None and self.current is not None:
            self.journal.record_output(self.current.id, text)

    # -- questions and judgement -------------------------------------------
    def ask(self, question) -> Answer:
        """An answer: given up front, else from the embedder's `ask`, else from the person at the
        terminal; with none of them the run parks (NeedsAnswer)."""
        options = self.options
        given = options.answers.take(question.key)
        source = "given"
        if given is None and options.ask is not None:
            given, source = options.ask(question), "ask"
        if given is None:
            if not options.interactive:
                raise NeedsAnswer(question)
            given, source = self.io.ask(question), "terminal"
        try:
            answer = given if isinstance(given, Answer) else match_answer(question, given)
        except AnswerRefused as refused:
            # Not used, and nothing changed: the run waits on the question as if it had no answer, and the door
            # that gave it says why.
            raise NeedsAnswer(question, refused=refused) from None
        if source != "terminal":
            shown = answer.choice.id if answer.choice else repr(answer.text)
            self.io.trace(f"Answer: {question.key} = {shown} ({source})")
        record = getattr(self.options.backend, "record_answer", None)
        if record is not None:  # --record keeps the person's answers beside the LLM's replies
            record(question.key, answer.choice.id if answer.choice else answer.text)
        return answer

    def judge(self, prompt: str, purpose: str) -> str:
        backend = self.options.backend
        if self.options.dry_run:
            self.io.print(f"--- prompt for {purpose} (dry run: not sent) ---\n{prompt}\n--- end of prompt ---")
            return ""
        if backend is None:
            self.stop(self.current, f"{purpose} needs an LLM backend, and none is configured",
                      "resume it with --backend, or run with --dry-run to see the prompt it would send",
                      repeatable=not self.repeat_unsafe)
        try:
            reply = backend.complete(prompt)
        except RunError:
            raise
        except Exception as exc:  # a backend is a program or a service: it can fail in many ways
            self.stop(self.current, f"{purpose}: the LLM backend failed: {exc}",
                      "check the backend's configuration, or run with --dry-run")
        if isinstance(reply, str) and len(reply) > MAX_REPLY:  # a reply may be kept in state, whole
            self.fail(self.current, f"{purpose}: the LLM's reply is {len(reply):,} characters, over the "
                      f"{MAX_REPLY:,} a step keeps", "ask for less in the prompt, or have the model write a file")
        return reply

    def judge_prose(self, prose, scope: Scope, call: Call) -> Any:
        """A field written as prose: its text and the state it names go to the LLM; the reply is a JSON value."""
        from wfexec.running.prose import named_values, parse_reply, prose_prompt, value_and_state

        purpose = f"the prose {call.type} step at {call.where.yaml_path}"
        wanted = self.workflow.reply_paths.get(self.current.id, ()) if self.current is not None else ()
        reply_paths = tuple(path for path in wanted if path in prose.names)
        reply = self.judge(prose_prompt(prose, named_values(prose, scope), reply_paths), purpose)
        if self.options.dry_run:
            if self.dry is not None and reply_paths:
                self.dry.stand_in(self, reply_paths, f"the reply to {purpose}")
            return None
        value, given = value_and_state(parse_reply(reply, purpose), reply_paths)
        for path, written in given.items():
            self.set(parse_cached(path), written)
        return value

    def judge_effect(self, node: Node, prose, reply_paths: tuple[str, ...]) -> None:
        """A node's work written as prose: the model does it, and the values it gives for `reply_paths` are set
        (ActionFailed: it gave none)."""
        from wfexec.running.prose import effect_prompt, named_values

        purpose = f"the prose effect of action node '{node.id}'"
        reply = self.judge(effect_prompt(prose, named_values(prose, self.scope), reply_paths), purpose)
        if self.dry is not None:
            self.dry.stand_in(self, reply_paths, f"the reply to {purpose}")
        elif reply_paths:
            self._set_reply_values(reply, reply_paths, purpose)

    def _set_reply_values(self, reply: str, reply_paths: tuple[str, ...], purpose: str) -> None:
        """A judgement step's reply read as the state values it was asked for, each set at its path."""
        from wfexec.running.prose import state_updates

        for path, value in state_updates(reply, reply_paths, purpose).items():
            self.set(parse_cached(path), value)

    def judge_document(self, node: Node, doc: Path, section: str | None, context: dict,
                       reply_paths: tuple[str, ...] = ()) -> Any:
        """The reply as text; given `reply_paths`, the state values it gives for them are set instead, and None
        returned (ActionFailed: it gave none)."""
        from wfexec.language.documents import document_prompt
        from wfexec.running.prose import reply_request

        purpose = f"reference node '{node.id}' ({doc.name})"
        prompt = document_prompt(doc, section, context)
        if not reply_paths:
            reply = self.judge(prompt, purpose)
            return reply if self.dry is None else self.dry.stand_in(self, (), f"the reply to {purpose}")
        reply = self.judge(prompt + "\n" + reply_request(reply_paths) + "\n", purpose)
        if self.dry is not None:
            self.dry.stand_in(self, reply_paths, f"the reply to {purpose}")
            return None
        self._set_reply_values(reply, reply_paths, purpose)
        return None

    def run_subworkflow(self, node: Node, workflow: Workflow, inputs: dict) -> Result:
        child = Run(workflow, io=self.io, options=self.options, inputs=inputs, budget=self.budget, clock=self.clock)
        child.extras["env"] = self.extras["env"]  # what the caller's `env.` reads (on Temporal, what came with it)
        if self.journal is not None and self.journal.keeps_output:  # its programs' output is the caller's step's
            child.journal = _OutputOnly(self.journal, self.current.id if self.current is not None else "")
        self.io.trace(f"Sub-workflow: {workflow.name} ({workflow.path.name})")
        return child.execute()

    # -- ending the run early ------------------------------------------------
    def fail(self, node: Node | None, message: str, hint: str = "", where: Where | None = None) -> NoReturn:
        raise RunError(message, hint, where or (node.where if node else None), node.id if node else None)

    def stop(self, node: Node | None, message: str, hint: str = "", repeatable: bool = False) -> NoReturn:
        stopped = RunStopped(message, hint, node.where if node else None, node.id if node else None)
        stopped.repeatable = repeatable
        raise stopped

    # -- the loop -----------------------------------------------------------
    def check_entry(self) -> None:
        for call in self.workflow.entry_preconditions:
            if not self.check(call):
                message = call.params.get("error_message")
                text = self.render_text(message) if message else f"{call.describe()} is false"
                raise EntryGateFailed(f"Entry gate failed: {text}", "", call.where)

    def execute(self, start: str | None = None) -> Result:
        """Run in this process from `start` (the start node) to an ending (wfexec.running.steploop)."""
        from wfexec.running.steploop import run_to_end

        return run_to_end(self, start)

    def step_clock(self) -> int:
        """The time this step's expressions read. `--record` keeps it and `--replay` serves it again, for the
        steps whose expressions read the clock (a step that never reads it records nothing)."""
        if not self.clock_served:
            self.clock_served = True
            node = self.current.id if self.current is not None else ""
            replayed = getattr(self.options.backend, "recorded_clock", None)
            ms = replayed(node) if replayed is not None else None
            if ms is not None:
                self.step_ms = ms
            record = getattr(self.options.backend, "record_clock", None)
            if record is not None:
                record(node, self.started_ms())
        return self.started_ms()

    def started_ms(self) -> int:
        """When this step started, as its expressions see it: read once, the first time anything asks."""
        if self.step_ms is None:
            self.step_ms = self.clock()
        return self.step_ms

    def finish(self, ending: Ending) -> Result:
        history = self.state.get("history") or []
        self.runtime["current_node"] = history[-1].get("node") if history else None
        self.runtime["previous_node"] = history[-2].get("node") if len(history) > 1 else None
        for call in ending.consequences:  # v8: best effort, the run ends at this ending whatever they do
            try:
                self.apply(call)
            except (ActionFailed, RunError) as exc:
                self.io.error(f"warning: ending '{ending.id}': {call.type} failed: {exc.message}")
        scope = self.scope
        try:
            render = self.render
            message = to_text(render(ending.message, scope))
            details = to_text(render(ending.details, scope)) if ending.details is not None else None
            summary = {k: render(v, scope) for k, v in ending.summary.items()}
            output = render(ending.output, scope)
            recovery = render(ending.recovery, scope)
            delegate = render(ending.delegate, scope) if ending.delegate is not None else None
        except ExpressionError as exc:
            raise RunError(f"ending '{ending.id}': {exc.message}", exc.hint, ending.where) from None
        return Result(ending=ending.reported_as or ending.id, type=ending.type, message=message, details=details,
                      summary=summary,
                      recovery=recovery, output=output, state=self.state, steps=self.steps, silent=ending.silent,
                      delegate=delegate, code=ending.code)


def run_workflow(workflow: Workflow, *, io: Io, options: Options | None = None,
                 inputs: dict | None = None, overrides: dict | None = None) -> Result:
    """An ephemeral run: initialise state, check the entry gate, run to an ending."""
    from wfexec.running.steploop import run_to_end, start

    run = start(workflow, io=io, options=options, inputs=inputs, overrides=overrides)
    try:
        return run_to_end(run, check_entry=True)
    except NeedsAnswer as waiting:
        if waiting.refused is not None:  # no store keeps the run waiting: the refusal is all there is to say
            raise waiting.refused from None
        waiting.state = run.state  # type: ignore[attr-defined]  # where it stopped, for --state-out
        raise
    except RunError as stopped:
        stopped.state = run.state  # type: ignore[attr-defined]
        raise
