"""The embedding surface: load, validate, run, resume."""

from __future__ import annotations

import os
from pathlib import Path

from wfexec.language.diagnostics import Diagnostic, WorkflowError, has_errors
from wfexec.language.model import Workflow

from wfexec.protocol.folders import WORKFLOW_FILE, resolve_workflow_path  # noqa: F401  (named here for embedders)
from wfexec.records import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable



def check(path: str | os.PathLike, document=None) -> tuple[Workflow | None, list[Diagnostic]]:
    """Compile the workflow at `path` (or its already loaded `document`), with every diagnostic.
    Raises `BrokenPlugins` when an installed plugin cannot be used."""
    checked = check_with_summary(path, document)
    return checked.workflow, checked.diagnostics


def check_with_summary(path: str | os.PathLike, document=None):
    """`Checked`: the workflow (None when invalid), every diagnostic in reading order, and the summary of how
    many nodes run as code, ask a person, or go to the LLM (None when the file is not a workflow).

    An unchanged workflow that had no errors comes from the compiled-workflow cache
    (`wfexec.language.workflow_cache`). Raises `BrokenPlugins` when an installed plugin cannot be used."""
    from wfexec.records import replace

    from wfexec.language import workflow_cache

    file = resolve_workflow_path(path)
    cached = workflow_cache.load(file)
    if cached is not None:
        # Kept only when every plugin registered, and keyed by the installed plugins: still true, so the
        # registries need not be loaded (a cached workflow imports just the types it calls).
        return cached
    from wfexec.types.registry import check_plugins

    check_plugins()  # raises BrokenPlugins: a workflow cannot be checked against types that failed to register
    from wfexec.language.compiler import check_document, recording_lookups
    from wfexec.language.loader import load_file

    content = workflow_cache.workflow_bytes(file)
    with recording_lookups() as looked:
        checked = check_document(document or load_file(file))
    # In reading order, so a person can go down the file fixing them.
    checked = replace(checked, diagnostics=sorted(checked.diagnostics, key=lambda d: (d.file, d.line, d.column)))
    if content is not None and checked.workflow is not None and not has_errors(checked.diagnostics):
        workflow_cache.keep(file, content, checked, looked)
    return checked


def lint_nodes(workflow: Workflow) -> list[Diagnostic]:
    """What each node reads besides the workflow file, checked by its type's `lint` (a `states` node: Raymond's
    lint of its states, at the state file's line). Read anew each time: those files change on their own."""
    found: list[Diagnostic] = []
    for node in workflow.nodes.values():
        lint = node.kind.checks.lint
        if lint is not None:
            found.extend(lint(node))
    return found


def check_to_run(path: str | os.PathLike, document=None) -> tuple[Workflow | None, list[Diagnostic]]:
    """`check`, plus `lint_nodes`: everything `wfexec validate` reports, which a run refuses to start on (run,
    resume, the API, MCP alike)."""
    workflow, diagnostics = check(path, document)
    if workflow is not None and not has_errors(diagnostics):
        diagnostics = [*diagnostics, *lint_nodes(workflow)]
    return workflow, diagnostics


@dataclass(frozen=True)
class Validation:
    """What `wfexec validate PATH` reports of one path, whichever door asks."""

    diagnostics: list          # every diagnostic, errors and warnings, in reading order
    file: Path                 # the workflow file (or states folder) as messages name it
    summary: Any = None        # a workflow's `Summary` (nodes as code, asking a person, going to the LLM)
    states: bool = False       # a states folder: Raymond's lint is its check

    @property
    def valid(self) -> bool:
        return not has_errors(self.diagnostics)


def validation(path: str | os.PathLike, check: Callable[[Any], Any] | None = None) -> Validation:
    """Everything `wfexec validate PATH` reports, for every door (the command line, `validate`, MCP): a states
    folder's lint (a folder of .md/.sh states, a .zip, a Raymond .yaml), else the workflow's diagnostics and
    those of what its nodes read besides it (`lint_nodes`: the states a `states` node runs). `check` is how the
    door compiles a workflow (`check_with_summary`, else a door's own, keeping what it compiled). Raises
    `BrokenPlugins` when an installed plugin cannot be used."""
    from wfexec.protocol.folders import lint_diagnostics, unreadable_diagnostic

    closed = unreadable_diagnostic(path)
    if closed is not None:  # examined below by is_file/stat, which raise PermissionError
        return Validation([closed], Path(path))
    linted = lint_diagnostics(path)
    if linted is not None:
        return Validation(linted, Path(path), states=True)
    checked = (check or check_with_summary)(path)
    diagnostics = checked.diagnostics
    if checked.workflow is not None:
        diagnostics = [*diagnostics, *lint_nodes(checked.workflow)]
    return Validation(diagnostics, resolve_workflow_path(path), summary=checked.summary)


def validate(path: str | os.PathLike) -> list[Diagnostic]:
    """Every diagnostic `wfexec validate PATH` reports for one workflow, skill folder or states folder (errors and
    warnings): the states its `states` nodes run included."""
    return validation(path).diagnostics


def validate_text(text: str, path: str | os.PathLike = "<string>") -> list[Diagnostic]:
    """Every diagnostic `check` gives for a workflow's text (an editor's unsaved buffer, a language server), in
    reading order. `path` names it in the diagnostics and places it (relative imports and documents resolve
    from its folder); the file there is not read, and the compiled-workflow cache is neither read nor written.
    Raises `BrokenPlugins` when an installed plugin cannot be used."""
    from wfexec.language.compiler import check_document
    from wfexec.language.loader import display_path, load_text
    from wfexec.types.registry import check_plugins

    check_plugins()
    checked = check_document(load_text(text, display_path(path)))
    return sorted(checked.diagnostics, key=lambda d: (d.file, d.line, d.column))


def load(path: str | os.PathLike) -> Workflow:
    """The compiled workflow; raises WorkflowError carrying the diagnostics when it has errors (those of the
    states its `states` nodes run included)."""
    return _loaded(path)


def _loaded(path: str | os.PathLike, document=None) -> Workflow:
    workflow, diagnostics = check_to_run(path, document)
    if workflow is None or has_errors(diagnostics):
        raise WorkflowError([d for d in diagnostics if d.severity == "error"])
    return workflow


def run(workflow: Workflow | str | os.PathLike, **options: Any):
    """Run a workflow to its ending and return the `Result`. The keyword arguments are the run options of
    `wfexec.running.request.RunRequest` that the API takes (this function's signature lists them, with their
    defaults), plus `io`, `cwd` and `ask`; each is checked against its declaration first (`OptionError`).

    A states folder (a folder of .md/.sh states, a .zip, a Raymond .yaml) runs as `wfexec run FOLDER` runs it
    (`states_run`): as a one-node workflow whose input `input` (`inputs={"input": TEXT}`) is its first state's
    {{input}}; its result is the main agent's final `<result>`.

    The run is recorded in the run store (`store`, else $WFEXEC_STORE, else .wfexec/runs.db), as at the command
    line: `result.run_id` names it, and a run that waits or stops can be continued with `resume`, from any process.
    `ephemeral=True` records nothing (no resume). `durability` (`normal`, the default: a commit survives a kill;
    `full`: a power cut too, with an fsync per commit; else $WFEXEC_DURABILITY) says how its commits reach the
    disk. `backend` is a Backend object or a spec (`claude:model=opus`, `replay:FILE`).

    `answers` maps node ids to answers given up front; `ask(question)` is asked for any other question
    (`question.text`, `question.node`, `question.choices` with `id` and `label`) and returns an option id,
    a label or free text, or None to leave it unanswered.

    Raises `NeedsAnswer` when a question has no answer (its `run_id` says which run to resume), `AnswerRefused`
    when a given answer fits no option of its question (a recorded run waits on it: `run_id`) or names no question
    of the workflow (nothing ran), `EntryGateFailed`, `RunError` or `RunStopped` when the run cannot reach an
    ending; every error is a `wfexec.errors.WfexecError` with `message`, `hint` and `position`.

    Each answer in `answers` is used once; a list answers the same question again, in turn, and a key ending
    in `*` (`{"retry*": "no"}`) answers it every time.
    """
    from wfexec.running.request import RunRequest

    io, cwd, ask = (options.pop(name, None) for name in ("io", "cwd", "ask"))
    _refuse_other_doors(options, "run")
    # The options are checked (OptionError) before the workflow is read, as at the other doors.
    request = RunRequest(path=workflow.path if isinstance(workflow, Workflow) else workflow, **options)
    io = io or _console()
    if not isinstance(workflow, Workflow):
        from wfexec.protocol.folders import workflow_document

        document = workflow_document(workflow)
        if document is None:  # a states folder: what `wfexec run FOLDER` runs, its input `input`
            with states_run(request, warn=io.error) as routed:
                return _run(routed, _loaded(routed.path), io, cwd, ask)
        workflow = _loaded(workflow, None if isinstance(document, Path) else document)
        request = request.replace(path=workflow.path)
    return _run(request, workflow, io, cwd, ask)


def _run(request, workflow: Workflow, io, cwd, ask):
    from wfexec.language.inputs import check_inputs
    from wfexec.running.engine import run_workflow

    engine = engine_options(request, _given_answers(request), cwd=cwd, ask=ask)
    inputs = check_inputs(dict(request.inputs), workflow.input_schema,
                          passing=lambda name: f"inputs={{{name!r}: VALUE}}")
    if request.ephemeral or request.dry_run:  # a dry run changes nothing, the run store included
        return run_workflow(workflow, io=io, options=engine, inputs=inputs, overrides=dict(request.overrides))
    return _result_of(start_recorded(request, workflow, inputs, io, engine))


def resume(run_id: str, **options: Any):
    """Continue a recorded run that waits for an answer, was stopped, or was killed, from `store` (default
    $WFEXEC_STORE, else .wfexec/runs.db), with commits as durable as `durability` says (as for `run`). Returns the
    `Result` and raises like `run`; `rerun`/`skip` decide about a step that was in flight when the process died.
    An answer refused (`AnswerRefused`) leaves the waiting run as it was. The keyword arguments are listed by this
    function's signature (the run options the API takes), plus `io`, `cwd` and `ask`."""
    from wfexec.running.request import RunRequest

    io, cwd, ask = (options.pop(name, None) for name in ("io", "cwd", "ask"))
    _refuse_other_doors(options, "resume")
    request = RunRequest(run_id=run_id, **options)
    engine = engine_options(request, _given_answers(request), cwd=cwd, ask=ask)
    return _result_of(resume_recorded(request, load, io or _console(), engine))


class StatesRun:
    """A states folder's run request made into the request of the one-node workflow that runs it (`states_run`):
    `request` names that workflow. Used as a context manager: on leaving, the workflow written for an ephemeral
    run (in a scratch folder) is removed."""

    def __init__(self, request, scratch=None):
        self.request = request
        self._scratch = scratch

    def __enter__(self):
        return self.request

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None


def states_run(request, warn: Callable[[str], None] | None = None) -> StatesRun:
    """What `wfexec run FOLDER` and `wfexec states FOLDER` run for a states folder (a folder of .md/.sh states, a
    .zip, a Raymond .yaml, `FLOW.yaml/STATE`, one state file, or a URL of a zip), whichever door asks: a workflow
    of one `states` node running it (`wfexec.protocol.folders.states_workflow`), written beside the store (in a
    scratch folder for an ephemeral run), so the run is recorded and resumed like any other. `.raymond/config.toml`
    fills in what the request does not say; the folder's input (its first state's {{input}}) is the request's
    `agent_input`, else its one input `input`, and becomes the workflow's input `input`.

    Every check is made before anything is written: raises ConfigError, ScopeError, StoreError, InputError,
    WorkflowError (the lint errors `wfexec validate` reports for the folder), or WfexecError for the launch
    options only `wfexec states` offers (`--on-ask=reject` and states that may ask, a `--workflow-id` malformed or
    used already). `warn` gets each warning line (the config file's keys that do nothing here, a manifest's
    backend)."""
    import os

    from wfexec.language.diagnostics import ERROR
    from wfexec.protocol.folders import lint_diagnostics, run_anyway, states_line, states_workflow
    from wfexec.protocol.raymond_config import load_config, merge
    from wfexec.system.run_store import states_workflows_folder

    say = warn or (lambda text: None)
    given = request.agent_input
    if given is None and request.inputs:
        from wfexec.language.inputs import InputError

        others = sorted(set(request.inputs) - {"input"})
        if others:
            raise InputError(f"unknown input '{others[0]}' (a states folder takes one input, `input`: the text its "
                             "first state reads as {{input}})")
        given = request.inputs["input"]
    config = load_config()
    for warning in config.warnings:
        say(f"warning: {warning}")
    launch = merge(config, budget_usd=request.budget_usd, model=request.model, effort=request.effort,
                   timeout=request.timeout, no_wait=request.no_wait, no_debug=request.no_debug,
                   skip_permissions=request.dangerously_skip_permissions)
    path: Any = request.path
    if ":/" in os.fspath(path):  # perhaps a URL; a local path (nearly always) needs nothing that reads URLs
        from wfexec.protocol.remote import as_url, fetch_zip

        url = as_url(os.fspath(path))
        if url is not None:  # fetched once into .raymond/registry/, then run as the local zip
            path = fetch_zip(url)
    _refuse_launch(path, request.on_ask, request.workflow_id)
    backend = request.backend if not isinstance(request.backend, str) and request.backend is not None else \
        _with_permissions(request.backend, launch.skip_permissions)
    if not request.ephemeral and not request.temporal:
        from wfexec.durable.store import refuse_a_folder, store_location

        refuse_a_folder(store_location(request.store))  # before the workflow is written beside it
    # As `ray` runs a folder, without waiting on its lint: what `wfexec validate` calls an error is said first, and
    # the run starts, unless it has no first state to start at.
    linted = lint_diagnostics(path) or []
    as_run = run_anyway(linted)
    for was, now in zip(linted, as_run):
        if was.severity != now.severity:  # its warnings stay `wfexec validate`'s to say
            say(states_line(now))
    errors = [d for d in as_run if d.severity == ERROR]
    if errors:
        raise WorkflowError(errors)
    scratch: Any = None
    if request.ephemeral:
        import tempfile

        scratch = tempfile.TemporaryDirectory(prefix="wfexec-states-")
    # On a cluster the written workflow names the folder from where it is written: the run's bundle holds both.
    into = Path(scratch.name) if scratch else Path(".wfexec", "states") if request.temporal else \
        states_workflows_folder(request.store)
    try:
        workflow = states_workflow(
            path, into, start=request.start, with_input=given is not None, budget_usd=launch.budget_usd,
            timeout=launch.timeout, model=launch.model, warn=say, effort=launch.effort,
            timeout_source=launch.timeout_source, on_ask=request.on_ask if request.on_ask != "pause" else None,
            no_wait=launch.no_wait, workflow_id=request.workflow_id, continue_session=request.continue_session,
            debug_files=launch.debug, relative_folder=bool(request.temporal))
    except BaseException:
        if scratch is not None:
            scratch.cleanup()
        raise
    return StatesRun(request.replace(path=workflow, agent_input=None, backend=backend, text_inputs=[],
                                     inputs={"input": given} if given is not None else {}), scratch)


def _refuse_launch(path, on_ask: str, workflow_id: str | None) -> None:
    """WfexecError saying why a states folder is not launched: `--on-ask=reject` and states that may ask (`ray`'s
    launch check, before any LLM call), or a `--workflow-id` that is malformed or was used already in this folder.
    (Only `wfexec states` offers these options: its words name its flags.)"""
    import re

    from wfexec.errors import WfexecError

    if workflow_id is not None:
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,255}", workflow_id):
            raise WfexecError(f"--workflow-id {workflow_id!r}: use letters, digits, '-' and '_' (at most 255)")
        used = Path(".wfexec", "tasks", workflow_id)
        if used.exists():
            raise WfexecError(f"--workflow-id {workflow_id} was used already (its task folders are in {used})",
                              "choose another id, or `wfexec resume RUN` to go on with that run")
    if on_ask != "reject":
        return
    from wfexec.protocol.asks import asking_states
    from wfexec.protocol.errors import ScopeError
    from wfexec.protocol.folders import split_path
    from wfexec.protocol.scopes import open_scope

    scope_path, _ = split_path(path)
    try:
        asking = asking_states(open_scope(scope_path, str(scope_path)))
    except ScopeError:
        return  # the run reports it
    if asking:
        raise WfexecError(f"{path} may ask a person ({asking}), and --on-ask=reject refuses such a workflow",
                          "run with --on-ask=pause (an <ask> then waits for `wfexec resume RUN --answer AGENT=TEXT`)")


def _with_permissions(backend: str | None, skip_permissions: bool) -> str | None:
    """The backend spec asking for permission prompts when `--no-dangerously-skip-permissions` (or the config
    file's `dangerously_skip_permissions = false`) says so and the spec says nothing of it itself: Claude Code's
    `permission_mode=acceptEdits`, pi's `skip_permissions=false` (its conservative tools)."""
    name = (backend or "").partition(":")[0].strip()
    if skip_permissions or name not in ("claude", "pi") or "permission" in (backend or ""):
        return backend
    head, sep, options = (backend or "").partition(":")
    added = "permission_mode=acceptEdits" if name == "claude" else "skip_permissions=false"
    return f"{head}:{options + ',' if options.strip() else ''}{added}"


def _refuse_other_doors(given: dict, function: str) -> None:
    """TypeError for a keyword the API function does not take, as Python says it for any function. None for an
    option whose default is something else (`inputs=None`, `max_steps=None`) is its default, as it always was."""
    from wfexec.running.request import options_of

    taken = {spec.name: spec for spec in options_of("api", function)}
    for name in list(given):
        if name not in taken:
            raise TypeError(f"{function}() got an unexpected keyword argument {name!r}")
        if given[name] is None and taken[name].default is not None:
            del given[name]


def _given_answers(request):
    from wfexec.running.prompts import Answers

    return Answers.given(request.answers, request.answer_files)


def backend_of(request) -> Any:
    """The LLM backend the request asks for (None: no LLM steps can run): its Backend object as the API gave
    it, or the one its spec, `record` and `replay` make (ValueError says what is wrong with them)."""
    spec, record, replay = request.backend, request.record, request.replay
    if spec is not None and not isinstance(spec, str):
        if record is not None or replay is not None:
            raise ValueError("record and replay make a backend from a spec; with a Backend object, leave them out")
        return spec
    if not (spec and spec.strip()) and record is None and replay is None:
        return None  # and the backends (asyncio among them) are never imported
    from wfexec.backends import create_backend

    return create_backend(spec, record=record, replay=replay)


def engine_options(request, answers, backend: Any = None, cwd: str | os.PathLike | None = None,
                   ask: Callable[[Any], Any] | None = None):
    """The engine's `Options` for a request: its limits, who answers (`answers`, then `ask`, then the terminal
    when `interactive`) and its LLM backend (`backend`, else the one the request asks for)."""
    from wfexec.running.engine import Options

    backend = backend if backend is not None else backend_of(request)
    replayed = getattr(backend, "answers", None)
    if callable(replayed):  # a cassette also holds the person's answers; given ones win
        answers = answers.with_defaults(replayed())
    return Options(max_steps=request.max_steps, interactive=request.interactive, answers=answers,
                   dry_run=request.dry_run, backend=backend, cwd=Path(cwd) if cwd else None, ask=ask,
                   allowed_folders=tuple(Path(folder) for folder in request.allow_write))


def start_recorded(request, workflow: Workflow, inputs: dict, io, options):
    """Start a run recorded in the request's store; how its process left it (`Driven`)."""
    from wfexec.durable.journal import start_run
    from wfexec.durable.store import open_store

    store = open_store(request.store, durability=request.durability)
    return _in_store(store, lambda store: start_run(store, workflow, inputs=inputs,
                                                    overrides=dict(request.overrides), io=io, options=options))


def resume_recorded(request, load_workflow: Callable[[Any], Workflow], io, options):
    """Continue the recorded run `request.run_id`; how its process left it (`Driven`)."""
    from wfexec.durable.journal import ResumeChoices, resume_run
    from wfexec.durable.store import store_of_run

    choices = ResumeChoices(request.accept_changes, request.rerun, request.skip, request.take_over)
    store = store_of_run(request.store, request.run_id, readonly=False, durability=request.durability)
    return _in_store(store, lambda store: resume_run(store, request.run_id, load_workflow, io=io, options=options,
                                                     choices=choices))


def _in_store(store, drive):
    """What `drive` does with `store`, which is closed after."""
    try:
        return drive(store)
    finally:
        store.close()


def _console():
    from wfexec.running.console import Console

    return Console()


def _result_of(driven):
    """The Result of a recorded run's process, or the reason it did not end, raised."""
    from wfexec.running.prompts import NeedsAnswer

    if driven.result is not None:
        driven.result.run_id = driven.run_id
        return driven.result
    if driven.refused is not None:
        raise driven.refused
    if driven.status == "waiting":
        raise NeedsAnswer(driven.question, driven.run_id)
    driven.error.run_id = driven.run_id
    raise driven.error


def _signed(name: str) -> Callable:
    """`run` or `resume`, showing the run options it takes (wfexec.running.request), declared once for every door.
    Made when first asked for (see `__getattr__`): building a signature imports `inspect`, which the command
    line, importing this module for its other functions, does not need (issue 27)."""
    from wfexec.running.request import api_signature

    own = [("io", None, "Any"), ("cwd", None, "str | os.PathLike | None"), ("ask", None, "Callable[[Any], Any] | None")]
    leading = [("workflow", "Workflow | str | os.PathLike")] if name == "run" else [("run_id", "str")]
    function = _UNSIGNED.pop(name)
    function.__signature__ = api_signature(name, leading, own)  # type: ignore[attr-defined]
    globals()[name] = function
    return function


_UNSIGNED: dict[str, Callable] = {"run": run, "resume": resume}
if not TYPE_CHECKING:  # until first asked for, through __getattr__
    del run, resume


def __getattr__(name: str) -> Any:
    if name in _UNSIGNED:
        return _signed(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
