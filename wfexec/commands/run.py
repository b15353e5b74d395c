"""`wfexec run` and `wfexec resume` from the command line: inputs in, a printed
ending and an exit code out. Runs are durable (wfexec.durable.journal) unless
`--ephemeral`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from wfexec.exit_codes import exit_code_for


class RunRequest:
    """What `run`, `resume` and `states` were asked to do. A plain class, not a dataclass: building a dataclass
    of this many fields costs a few milliseconds of every command's start-up."""

    path: Path | None = None
    inputs: list[str]
    input_file: Path | None = None
    overrides: list[str]
    answers: list[str]
    answer_files: list[Path]
    interactive: bool = False
    max_steps: int = 10_000
    trace: bool = False
    dry_run: bool = False
    state_out: Path | None = None
    json_output: bool = False
    debug: bool = False
    store: Path | None = None
    ephemeral: bool = False
    backend: str | None = None
    record: Path | None = None
    replay: Path | None = None
    # `--record-case FILE`: write the run as a test case (wfexec.commands.record_case), with the state at these paths
    record_case: Path | None = None
    record_state: list[str]
    case: dict | None = None  # set by execute_run: the CaseRecorder, and the inputs and values the run was given
    # resume only
    run_id: str | None = None
    accept_changes: bool = False
    rerun: bool = False
    skip: bool = False
    # A Temporal cluster (HOST:PORT) to run on instead of the SQLite store, and its task queue
    temporal: str | None = None
    task_queue: str = "wfexec"
    durability: str | None = None  # of the store's commits (normal, full: wfexec.durable.store.DURABILITY)

    def __init__(self, **given: Any):
        for name in ("inputs", "overrides", "answers", "answer_files", "record_state"):
            setattr(self, name, [])
        for name, value in given.items():
            if name not in RunRequest.__annotations__:
                raise TypeError(f"RunRequest has no field {name!r}")
            setattr(self, name, value)


def _error(text: str) -> None:
    sys.stderr.write(text.rstrip("\n") + "\n")


def report_error(error: BaseException, debug: bool = False) -> int:
    """Print why a command could not finish, in one line (a traceback only for a bug, with --debug);
    return its exit code."""
    import traceback

    from wfexec.errors import WfexecError
    from wfexec.running.engine import EntryGateFailed, InternalError

    if isinstance(error, EntryGateFailed):
        _error(error.message)  # the workflow's own words
    elif isinstance(error, InternalError):
        if debug:
            _error("".join(traceback.format_exception(error.__cause__ or error)).rstrip())
        _error(error.format())
    elif isinstance(error, WfexecError):
        _error(error.format())
    elif isinstance(error, KeyboardInterrupt):
        _error(f"interrupted ({error})" if str(error) else "interrupted")
        run_id = getattr(error, "run_id", None)
        if run_id:
            _error(f"run {run_id} stopped; continue it with: wfexec resume {run_id}")
    else:
        if debug:
            _error("".join(traceback.format_exception(error)).rstrip())
        _error(f"internal error in wfexec: {type(error).__name__}: {error} — a bug; please report it with "
               "the output of --debug")
    return exit_code_for(error)


def _print_json(data) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def _gather_inputs(request: RunRequest, workflow) -> dict:
    from wfexec.language.inputs import check_inputs, split_pairs
    from wfexec.language.loader import load_file

    given: dict[str, Any] = {}
    if request.input_file:
        doc = load_file(request.input_file)
        if doc.diagnostics:
            raise ValueError(doc.diagnostics[0].format())
        if not isinstance(doc.data, dict):
            raise ValueError(f"{request.input_file}: an input file must map input names to values")
        given.update(doc.data)
    from_text = set()
    for key, value in split_pairs(request.inputs, "--input"):
        given[key] = value
        from_text.add(key)
    return check_inputs(given, workflow.input_schema, from_text=from_text)


def _load_or_report(path, document=None) -> Any:
    """The compiled workflow, or None after printing its errors: what `wfexec validate` reports as one, the lint
    of the states a `states` node runs included (at the state file's line)."""
    from wfexec.api import check_to_run, resolve_workflow_path
    from wfexec.language.diagnostics import ERROR
    from wfexec.types.registry import BrokenPlugins

    try:
        workflow, diagnostics = check_to_run(path, document)
    except BrokenPlugins as exc:
        _error(exc.format())
        return None
    errors = [d for d in diagnostics if d.severity == ERROR]
    if workflow is None or errors:
        for d in errors:
            _error(d.format())
        _error(f"{resolve_workflow_path(path)}: not run, the workflow has "
               f"{len(errors)} error{'s' if len(errors) != 1 else ''} (wfexec validate shows them all)")
        return None
    return workflow


def _backend(spec, record, replay):
    """The LLM backend the flags ask for (or None); ValueError says what is wrong with them."""
    if not (spec and spec.strip()) and record is None and replay is None:
        return None  # and the backends (asyncio among them) are never imported
    from wfexec.backends import create_backend

    return create_backend(spec, record=record, replay=replay)


def _options(request: RunRequest, answers, backend):
    from wfexec.running.engine import Options

    replayed = getattr(backend, "answers", None)
    if callable(replayed):  # a cassette also holds the person's answers; given ones win
        answers = answers.with_defaults(replayed())
    return Options(max_steps=request.max_steps, interactive=request.interactive, answers=answers,
                   dry_run=request.dry_run, backend=backend)


def _console(request: RunRequest):
    from wfexec.running.console import Console

    # With --format json, stdout carries only the result document.
    return Console(out=sys.stderr if request.json_output else sys.stdout, trace=request.trace)


def workflow_document(path):
    """The loaded workflow file `wfexec run` was given (or its path, when it is in the compiled-workflow cache),
    or None when the path is a states scope instead: a folder with no workflow.yaml, a .zip, or a Raymond .yaml
    (`states:` and no `nodes:`)."""
    from wfexec.api import resolve_workflow_path
    from wfexec.language import workflow_cache
    from wfexec.language.loader import load_file

    p = Path(path)
    if (p.is_dir() and not (p / "workflow.yaml").exists()) or p.suffix.lower() == ".zip":
        return None
    file = resolve_workflow_path(p)
    if workflow_cache.load(file) is not None:
        return file  # compiled before, so a workflow: `check` takes it from the cache again
    document = load_file(file)
    data = document.data
    if isinstance(data, dict) and "states" in data and "nodes" not in data:
        return None
    if p.is_dir() and isinstance(data, dict) and "nodes" not in data and "start_node" not in data:
        from wfexec.commands.states import raymond_manifest

        if raymond_manifest(p) is not None:  # Raymond's workflow.yaml, describing the states beside it
            return None
    return document


def execute_run(request: RunRequest) -> int:
    from wfexec.language.inputs import InputError, parse_scalar, split_pairs
    from wfexec.running.prompts import AnswerError, Answers

    document = workflow_document(request.path)
    if document is None and request.record_case is not None:
        _error("error: --record-case records a workflow's run; a states folder has no `wfexec test` cases — run a "
               "workflow whose `states` node runs the folder")
        return exit_code_for("invalid")
    if document is None:
        return execute_states(request.path, input=" ".join(request.inputs) or None, start=None, budget_usd=None,
                              timeout=None, model=None, max_steps=request.max_steps, trace=request.trace,
                              json_output=request.json_output, backend=request.backend, record=request.record,
                              replay=request.replay, answers=request.answers, interactive=request.interactive,
                              store=request.store, ephemeral=request.ephemeral, debug=request.debug,
                              temporal=request.temporal, task_queue=request.task_queue)
    workflow = _load_or_report(request.path, None if isinstance(document, Path) else document)
    if workflow is None:
        return exit_code_for("invalid")
    refused = _refused_state_out(request)
    if refused:
        return refused
    try:
        inputs = _gather_inputs(request, workflow)
        overrides = {k: parse_scalar(v) for k, v in split_pairs(request.overrides, "--set")}
        answers = Answers.parse(request.answers, request.answer_files)
        backend = _backend(request.backend, request.record, request.replay)
    except (InputError, AnswerError, ValueError) as exc:
        _error(f"error: {exc}")
        return exit_code_for("invalid")
    if request.record_case is not None:
        if request.temporal or request.dry_run:
            _error(f"error: --record-case cannot be used with {'--temporal' if request.temporal else '--dry-run'}: "
                   "the case is what a run in this process did")
            return exit_code_for("invalid")
        from wfexec.commands.record_case import CaseRecorder
        from wfexec.language.paths import PathError, parse_path

        for path in request.record_state:
            try:
                parse_path(path)
            except PathError as exc:
                _error(f"error: --record-state {path}: {exc.message} — write a dotted state path such as computed.x")
                return exit_code_for("invalid")
        backend = CaseRecorder(backend)
        request.case = {"recorder": backend, "inputs": inputs, "overrides": overrides}
    io = _console(request)
    if request.temporal:
        refused = _refused_on_cluster(request, backend)
        if refused:
            return refused
        from wfexec.commands.temporal_runs import run_on_cluster

        return run_on_cluster(request, workflow, inputs, overrides, answers, io)
    options = _options(request, answers, backend)
    if request.ephemeral or request.dry_run:  # a dry run changes nothing, the run store included
        return _guarded(request, lambda: _run_ephemeral(request, workflow, inputs, overrides, io, options))
    return _guarded(request, lambda: _run_durable(request, workflow, inputs, overrides, io, options))


def execute_resume(request: RunRequest) -> int:
    from wfexec.running.prompts import AnswerError, Answers

    try:
        answers = Answers.parse(request.answers, request.answer_files)
        backend = _backend(request.backend, request.record, request.replay)
    except (AnswerError, ValueError) as exc:
        _error(f"error: {exc}")
        return exit_code_for("invalid")
    refused = _refused_state_out(request)
    if refused:
        return refused
    io = _console(request)
    if request.temporal:
        refused = _refused_on_cluster(request, backend)
        if refused:
            return refused
        from wfexec.commands.temporal_runs import resume_on_cluster

        return resume_on_cluster(request, io)
    options = _options(request, answers, backend)
    return _guarded(request, lambda: _resume(request, io, options))


def _refused_on_cluster(request: RunRequest, backend) -> int:
    """0, or exit 2 after saying which option a run on a Temporal cluster does not take (yet)."""
    # A cassette is read or written in order by one process; a run's LLM steps go to whichever worker is free.
    taken = [flag for flag, given in (("--ephemeral", request.ephemeral), ("--dry-run", request.dry_run),
                                      ("--record", request.record is not None), ("--replay", request.replay is not None),
                                      ("--accept-changes", request.accept_changes)) if given]
    if not taken:
        return 0
    _error(f"error: {taken[0]} cannot be used with --temporal: a run on the cluster is recorded there and runs its "
           "steps on the workers, one after another on any of them — run without --temporal for that")
    return exit_code_for("invalid")


def _refused_state_out(request: RunRequest) -> int:
    """0, or exit 2 after saying that --state-out names the run store (the same rule as for a workflow's files)."""
    if request.state_out is None:
        return 0
    import os

    from wfexec.system.run_store import STORE_FOLDER, store_conflict

    why = store_conflict(os.path.realpath(request.state_out), Path.cwd(), request.store)
    if why is None:
        return 0
    _error(f"error: --state-out {request.state_out} {why}; the final state may not be written over the run store "
           f"or anything in {STORE_FOLDER}/ — write it to another file")
    return exit_code_for("invalid")


def _guarded(request: RunRequest, body) -> int:
    """Map what can go wrong around a run (the store, --set paths, a bug) to one line and an exit code."""
    try:
        return body()
    except (Exception, KeyboardInterrupt) as exc:
        return report_error(exc, request.debug)


def _run_ephemeral(request, workflow, inputs, overrides, io, options) -> int:
    from wfexec.running.engine import RunError, run_workflow
    from wfexec.running.prompts import NeedsAnswer

    try:
        with io.status_line():
            result = run_workflow(workflow, io=io, options=options, inputs=inputs, overrides=overrides)
    except NeedsAnswer as waiting:
        _write_state_out(request, getattr(waiting, "state", None))
        _write_case(request, "waiting", None, None, getattr(waiting, "state", None))
        return _report_waiting(request, waiting.question, None)
    except RunError as exc:
        _write_state_out(request, getattr(exc, "state", None))
        _write_case(request, "stopped" if exc.outcome == "stopped" else "failed", None, None,
                    getattr(exc, "state", None))
        return report_error(exc, request.debug)
    return _report_result(request, result, io, None)


def _run_durable(request, workflow, inputs, overrides, io, options) -> int:
    from wfexec.durable.journal import start_run
    from wfexec.durable.store import open_store

    store = open_store(request.store, durability=request.durability)
    try:
        with io.status_line():
            driven = start_run(store, workflow, inputs=inputs, overrides=overrides, io=io, options=options)
    finally:
        store.close()
    return _report_driven(request, driven, io)


def _resume(request, io, options) -> int:
    from wfexec.durable.journal import ResumeChoices, ResumeRefused, resume_run
    from wfexec.durable.store import StoreError, open_store

    def load(path):
        workflow = _load_or_report(path)
        if workflow is None:
            raise StoreError(f"the workflow of run {request.run_id} ({path}) no longer validates",
                             "fix it, then resume again")
        return workflow

    store = open_store(request.store, durability=request.durability)
    try:
        with io.status_line():
            driven = resume_run(store, request.run_id, load, io=io, options=options,
                                choices=ResumeChoices(request.accept_changes, request.rerun, request.skip))
    except ResumeRefused as refused:
        for note in refused.notes:
            _error(f"note: {note}")
        raise
    finally:
        store.close()
    for note in driven.notes:
        _error(f"note: {note}")
    return _report_driven(request, driven, io)


def question_json(question, run_id) -> dict:
    return {"status": "waiting", "run_id": run_id, "node": question.node, "answer_key": question.key,
            "question": question.text, "header": question.header,
            "options": [{"id": c.id, "label": c.label, "description": c.description} for c in question.choices],
            "allow_other": question.allow_other}


def driven_json(driven) -> dict:
    """How a run's process ended, as `--format json` and the MCP tools give it: the ending, the question it
    waits on, or the error."""
    from wfexec.durable.store import ending_status

    if driven.status == "waiting":
        return question_json(driven.question, driven.run_id)
    if driven.result is not None:
        return {"status": ending_status(driven.result.type), "run_id": driven.run_id, **driven.result.to_json()}
    error = driven.error
    return {"status": driven.status, "run_id": driven.run_id, "error": error.message,
            **{key: value for key, value in error.to_json().items() if key not in ("message", "error")}}


def _write_state_out(request, state) -> None:
    """`--state-out`: the state where the run ended, parked or failed (whatever this process last held)."""
    if request.state_out and state is not None:
        from wfexec.system.files import write_atomic

        write_atomic(request.state_out, json.dumps(state, indent=2, ensure_ascii=False, default=str) + "\n")


def _report_driven(request, driven, io) -> int:
    if driven.refused is not None:
        if request.json_output:
            _print_json({**question_json(driven.question, driven.run_id), "error": driven.refused.message})
        return report_error(driven.refused, request.debug)
    if driven.status == "waiting":
        _write_state_out(request, driven.state)
        _write_case(request, "waiting", None, None, driven.state)
        return _report_waiting(request, driven.question, driven.run_id)
    if driven.result is not None:
        return _report_result(request, driven.result, io, driven.run_id)
    _write_state_out(request, driven.state)
    _write_case(request, "stopped" if driven.status == "stopped" else "failed", None, None, driven.state)
    error = driven.error
    code = report_error(error, request.debug)
    if driven.status == "stopped":
        _error(f"run {driven.run_id} stopped; continue it with: wfexec resume {driven.run_id}")
    if request.json_output:
        _print_json(driven_json(driven))
    return code


def _report_waiting(request, question, run_id) -> int:
    ids = ", ".join(c.id for c in question.choices)
    other = " (or free text)" if question.allow_other else ""
    key = question.key
    if request.json_output:
        _print_json(question_json(question, run_id))
    value = "<option id>" if question.choices else "<text>"
    how = (f"wfexec resume {run_id} --answer {key}={value}" if run_id else
           f"wfexec run {request.path} --answer {key}={value}")
    who = f"agent '{key}' of node '{question.node}'" if question.asker else f"node '{question.node}'"
    _error(f"waiting: {who} asks: {question.text}\n"
           + (f"  options: {ids}{other}\n" if question.choices else "")
           + f"  answer with: {how}")
    return exit_code_for("waiting")


def _write_case(request, status: str, ending: str | None, output, state) -> None:
    """`--record-case`: the run as a test case; a file that cannot take it is said, the run's exit code kept."""
    case = request.case
    if case is None:
        return
    from wfexec.commands.record_case import case_from, write_case

    made = case_from(case["recorder"], inputs=case["inputs"], overrides=case["overrides"], status=status,
                     ending=ending, output=output, state=state, state_paths=request.record_state)
    try:
        _error(write_case(request.record_case, made))
    except (OSError, ValueError) as exc:
        _error(f"error: the test case was not written: {exc}")


def _report_result(request, result, io, run_id) -> int:
    _write_state_out(request, result.state)
    if request.json_output:
        from wfexec.durable.store import ending_status

        _print_json({"status": ending_status(result.type), "run_id": run_id, **result.to_json()})
    else:
        print_ending(result, io)
    _write_case(request, result.type, result.ending, result.output, result.state)
    return exit_code_for(result.type)


def print_ending(result, io) -> None:
    from wfexec.language.expressions import to_text

    if result.silent:
        return
    if result.type == "success":
        io.print(result.message)
        for key, value in result.summary.items():
            io.print(f"  {key}: {to_text(value)}")
        _print_delegate(result, io)
        return
    io.print(f"Error: {result.message}" if result.type == "error" else f"{result.type.capitalize()}: {result.message}")
    if result.details:
        io.print(result.details)
    for key, value in result.summary.items():
        io.print(f"  {key}: {to_text(value)}")
    recovery = result.recovery
    if isinstance(recovery, dict):
        if recovery.get("suggestion"):
            io.print(f"Suggestion: {recovery['suggestion']}")
        if recovery.get("related_skill"):
            io.print(f"Try running: /{recovery['related_skill']}")
    elif recovery:
        io.print(f"Try running: /{recovery}" if " " not in str(recovery).strip() else f"Suggestion: {recovery}")
    _print_delegate(result, io)


def _print_delegate(result, io) -> None:
    """A v8 delegate ending hands the work to another skill: say which, with what (JSON has it as `delegate`)."""
    from wfexec.language.expressions import to_text

    delegate = result.delegate
    if isinstance(delegate, dict) and delegate.get("skill"):
        args = to_text(delegate.get("args") or "")
        io.print(f"Next: /{to_text(delegate['skill'])}" + (f" {args}" if args else ""))


def _refused_states(path) -> int:
    """0, or exit 2 after printing the errors `wfexec validate` reports for this states folder (Raymond's lint, at
    each state file's line), so that a run never starts on them."""
    from wfexec.commands.states import lint_diagnostics, states_line
    from wfexec.language.diagnostics import ERROR

    errors = [d for d in lint_diagnostics(path) or () if d.severity == ERROR]
    if not errors:
        return 0
    for d in errors:
        _error(states_line(d))
    _error(f"{path}: not run, the states have {len(errors)} error{'s' if len(errors) != 1 else ''} "
           "(wfexec validate shows them all)")
    return exit_code_for("invalid")


def _refused_launch(path, on_ask: str, workflow_id: str | None) -> int:
    """0, or exit 2 after saying why: `--on-ask=reject` and states that may ask (`ray`'s launch check, before
    any LLM call), or a `--workflow-id` that is malformed or was used already in this folder."""
    import re

    from wfexec.commands.states import split_path
    from wfexec.protocol.asks import asking_states
    from wfexec.protocol.errors import ScopeError
    from wfexec.protocol.scopes import open_scope

    if workflow_id is not None:
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,255}", workflow_id):
            _error(f"error: --workflow-id {workflow_id!r}: use letters, digits, '-' and '_' (at most 255)")
            return exit_code_for("invalid")
        used = Path(".wfexec", "tasks", workflow_id)
        if used.exists():
            _error(f"error: --workflow-id {workflow_id} was used already (its task folders are in {used}) — choose "
                   "another id, or `wfexec resume RUN` to go on with that run")
            return exit_code_for("invalid")
    if on_ask != "reject":
        return 0
    scope_path, _ = split_path(path)
    try:
        asking = asking_states(open_scope(scope_path, str(scope_path)))
    except ScopeError:
        return 0  # the run reports it
    if asking:
        _error(f"error: {path} may ask a person ({asking}), and --on-ask=reject refuses such a workflow — run "
               "with --on-ask=pause (an <ask> then waits for `wfexec resume RUN --answer AGENT=TEXT`)")
        return exit_code_for("invalid")
    return 0


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


def execute_states(path, *, input, start, budget_usd, timeout, model, max_steps, trace, json_output, backend,
                   record, replay, answers=(), interactive=False, store=None, ephemeral=False, debug=False,
                   temporal: str | None = None, task_queue: str = "wfexec", durability: str | None = None,
                   effort: str | None = None, on_ask: str = "pause", no_wait: bool = False,
                   workflow_id: str | None = None, continue_session: bool = False, no_debug: bool = False,
                   skip_permissions: bool | None = None) -> int:
    """`wfexec states PATH`: the states folder as a one-node workflow (`states_workflow`), run like any other,
    so it is recorded in the store: an `<ask>` parks it (exit 3), paused agents stop it (exit 4), and `runs`,
    `show`, `resume` and `cancel` work on it. `.raymond/config.toml` fills in what the flags do not say."""
    import os

    from wfexec.commands.raymond_config import ConfigError, load_config, merge
    from wfexec.commands.states import states_workflow
    from wfexec.protocol.remote import as_url, fetch_zip
    from wfexec.durable.store import store_location
    from wfexec.protocol.errors import ScopeError

    for name, value in (("a budget", budget_usd), ("a timeout", timeout)):
        if value is not None and value < 0:
            _error(f"error: {name} cannot be negative" + (" (0: no timeout)" if name == "a timeout" else ""))
            return exit_code_for("invalid")
    try:
        config = load_config()
    except ConfigError as exc:
        _error(exc.format())
        return exit_code_for(exc)
    for warning in config.warnings:
        _error(f"warning: {warning}")
    launch = merge(config, budget_usd=budget_usd, model=model, effort=effort, timeout=timeout, no_wait=no_wait,
                   no_debug=no_debug, skip_permissions=skip_permissions)
    url = as_url(os.fspath(path))
    if url is not None:  # fetched once into .raymond/registry/, then run as the local zip
        try:
            path = fetch_zip(url)
        except ScopeError as exc:
            _error(exc.format())
            return exit_code_for(exc)
    refused = _refused_launch(path, on_ask, workflow_id)
    if refused:
        return refused
    backend = _with_permissions(backend, launch.skip_permissions)
    if ephemeral:
        import tempfile

        scratch: Any = tempfile.TemporaryDirectory(prefix="wfexec-states-")
    else:
        scratch = None
    # On a cluster the written workflow names the folder from where it is written: the run's bundle holds both.
    into = Path(scratch.name) if scratch else Path(".wfexec", "states") if temporal else \
        store_location(store).parent / "states"
    refused = _refused_states(path)
    if refused:
        return refused
    try:
        try:
            workflow = states_workflow(
                path, into, start=start, with_input=input is not None, budget_usd=launch.budget_usd,
                timeout=launch.timeout, model=launch.model, warn=_error, effort=launch.effort,
                timeout_source=launch.timeout_source, on_ask=on_ask if on_ask != "pause" else None,
                no_wait=launch.no_wait, workflow_id=workflow_id, continue_session=continue_session,
                debug_files=launch.debug, relative_folder=bool(temporal))
        except ScopeError as exc:
            _error(exc.format())
            return exit_code_for("invalid")
        request = RunRequest(path=workflow, inputs=[f"input={input}"] if input is not None else [],
                             answers=list(answers), interactive=interactive, max_steps=max_steps, trace=trace,
                             json_output=json_output, debug=debug, store=store, ephemeral=ephemeral,
                             backend=backend, record=record, replay=replay, temporal=temporal,
                             task_queue=task_queue, durability=durability)
        return execute_run(request)
    finally:
        if scratch is not None:
            scratch.cleanup()
