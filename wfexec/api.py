"""The embedding surface: load, validate, run, resume."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from wfexec.language.diagnostics import Diagnostic, WorkflowError, has_errors
from wfexec.language.model import Workflow

WORKFLOW_FILE = "workflow.yaml"


def resolve_workflow_path(path: str | os.PathLike) -> Path:
    """A workflow file, or a skill folder holding workflow.yaml."""
    p = Path(path)
    if p.is_dir():
        return p / WORKFLOW_FILE
    return p


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
    from wfexec.types.registry import check_plugins

    file = resolve_workflow_path(path)
    cached = workflow_cache.load(file)
    if cached is not None:
        # Kept only when every plugin registered, and keyed by the installed plugins: still true, so the
        # registries need not be loaded (a cached workflow imports just the types it calls).
        return cached
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
        if node.kind.lint is not None:
            found.extend(node.kind.lint(node))
    return found


def check_to_run(path: str | os.PathLike, document=None) -> tuple[Workflow | None, list[Diagnostic]]:
    """`check`, plus `lint_nodes`: everything `wfexec validate` reports, which a run refuses to start on (run,
    resume, the API, MCP alike)."""
    workflow, diagnostics = check(path, document)
    if workflow is not None and not has_errors(diagnostics):
        diagnostics = [*diagnostics, *lint_nodes(workflow)]
    return workflow, diagnostics


def validate(path: str | os.PathLike) -> list[Diagnostic]:
    """Every diagnostic for one workflow (errors and warnings)."""
    return check(path)[1]


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
    workflow, diagnostics = check_to_run(path)
    if workflow is None or has_errors(diagnostics):
        raise WorkflowError([d for d in diagnostics if d.severity == "error"])
    return workflow


def run(workflow: Workflow | str | os.PathLike, *, inputs: dict | None = None, answers: dict | None = None,
        overrides: dict | None = None, interactive: bool = False, max_steps: int | None = None, io=None,
        backend: Any = None, cwd: str | os.PathLike | None = None, ask: Callable[[Any], Any] | None = None,
        store: str | os.PathLike | None = None, durability: str | None = None):
    """Run a workflow to its ending and return the `Result`.

    `answers` maps node ids to answers given up front; `ask(question)` is asked for any other question
    (`question.text`, `question.node`, `question.choices` with `id` and `label`) and returns an option id,
    a label or free text, or None to leave it unanswered. With `store` (a SQLite file) the run is durable:
    `result.run_id` names it, and a run that waits or stops can be continued with `resume`; `durability`
    (`normal`, the default: a commit survives a kill; `full`: a power cut too, with an fsync per commit; else
    $WFEXEC_DURABILITY) says how its commits reach the disk.

    Raises `NeedsAnswer` when a question has no answer (its `run_id` says which run to resume, with a
    store), `AnswerRefused` when a given answer fits no option of its question (with a store, the run waits
    on it: `run_id`) or names no question of the workflow (nothing ran), `EntryGateFailed`, `RunError` or
    `RunStopped` when the run cannot reach an ending; every error is a `wfexec.errors.WfexecError` with
    `message`, `hint` and `position`.

    Each answer in `answers` is used once; a list answers the same question again, in turn, and a key ending
    in `*` (`{"retry*": "no"}`) answers it every time.
    """
    from wfexec.running.engine import run_workflow
    from wfexec.language.inputs import check_inputs

    if not isinstance(workflow, Workflow):
        workflow = load(workflow)
    options = _options(answers, interactive, max_steps, backend, cwd, ask)
    inputs = check_inputs(inputs or {}, workflow.input_schema)
    io = io or _console()
    if store is None:
        return run_workflow(workflow, io=io, options=options, inputs=inputs, overrides=overrides)
    from wfexec.durable.journal import start_run

    return _durably(store, durability, lambda opened: start_run(opened, workflow, inputs=inputs,
                                                                overrides=overrides or {}, io=io, options=options))


def resume(run_id: str, *, answers: dict | None = None, store: str | os.PathLike | None = None,
           ask: Callable[[Any], Any] | None = None, interactive: bool = False, max_steps: int | None = None,
           io=None, backend: Any = None, cwd: str | os.PathLike | None = None, rerun: bool = False,
           skip: bool = False, accept_changes: bool = False, durability: str | None = None):
    """Continue a durable run that waits for an answer, was stopped, or was killed, from `store` (default
    $WFEXEC_STORE, else .wfexec/runs.db), with commits as durable as `durability` says (as for `run`). Returns the
    `Result` and raises like `run`; `rerun`/`skip` decide about a step that was in flight when the process died. An answer refused (`AnswerRefused`) leaves
    the waiting run as it was."""
    from wfexec.durable.journal import ResumeChoices, resume_run

    options = _options(answers, interactive, max_steps, backend, cwd, ask)
    return _durably(store, durability, lambda opened: resume_run(opened, run_id, load, io=io or _console(),
                                                                 options=options,
                                                                 choices=ResumeChoices(accept_changes, rerun, skip)))


def _options(answers, interactive, max_steps, backend, cwd, ask):
    from wfexec.running.engine import DEFAULT_MAX_STEPS, Options
    from wfexec.running.prompts import Answers

    return Options(max_steps=max_steps or DEFAULT_MAX_STEPS, interactive=interactive, answers=Answers(answers),
                   backend=backend, cwd=Path(cwd) if cwd else None, ask=ask)


def _console():
    from wfexec.running.console import Console

    return Console()


def _durably(store, durability, drive):
    """Drive a run in the store at `store`; the Result, or the reason it did not end raised."""
    from wfexec.durable.store import open_store
    from wfexec.running.prompts import NeedsAnswer

    opened = open_store(store, durability=durability)
    try:
        driven = drive(opened)
    finally:
        opened.close()
    if driven.result is not None:
        driven.result.run_id = driven.run_id
        return driven.result
    if driven.refused is not None:
        raise driven.refused
    if driven.status == "waiting":
        raise NeedsAnswer(driven.question, driven.run_id)
    driven.error.run_id = driven.run_id
    raise driven.error
