"""The embedding surface: load, validate, run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

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
    """Compile the workflow at `path` (or its already loaded `document`), with every diagnostic."""
    from wfexec.language.compiler import compile_document
    from wfexec.language.loader import load_file

    workflow, diagnostics = compile_document(document or load_file(resolve_workflow_path(path)))
    # In reading order, so a person can go down the file fixing them.
    return workflow, sorted(diagnostics, key=lambda d: (d.file, d.line, d.column))


def check_with_summary(path: str | os.PathLike):
    """`Checked`: the workflow (None when invalid), every diagnostic in reading order, and the summary of how
    many nodes run as code, ask a person, or go to the LLM (None when the file is not a workflow)."""
    from dataclasses import replace

    from wfexec.language.compiler import check_document
    from wfexec.language.loader import load_file

    checked = check_document(load_file(resolve_workflow_path(path)))
    return replace(checked, diagnostics=sorted(checked.diagnostics, key=lambda d: (d.file, d.line, d.column)))


def validate(path: str | os.PathLike) -> list[Diagnostic]:
    """Every diagnostic for one workflow (errors and warnings)."""
    return check(path)[1]


def load(path: str | os.PathLike) -> Workflow:
    """The compiled workflow; raises WorkflowError carrying the diagnostics when it has errors."""
    workflow, diagnostics = check(path)
    if workflow is None or has_errors(diagnostics):
        raise WorkflowError([d for d in diagnostics if d.severity == "error"])
    return workflow


def run(workflow: Workflow | str | os.PathLike, *, inputs: dict | None = None, answers: dict | None = None,
        overrides: dict | None = None, interactive: bool = False, max_steps: int | None = None, io=None,
        backend: Any = None, cwd: str | os.PathLike | None = None):
    """Run a workflow to its ending and return the `Result`.

    Raises `NeedsAnswer` when a question has no answer, `EntryGateFailed`,
    `RunError` or `RunStopped` when the run cannot reach an ending.
    """
    from wfexec.running.engine import DEFAULT_MAX_STEPS, Options, run_workflow
    from wfexec.language.inputs import check_inputs
    from wfexec.running.prompts import Answers

    if not isinstance(workflow, Workflow):
        workflow = load(workflow)
    options = Options(max_steps=max_steps or DEFAULT_MAX_STEPS, interactive=interactive, answers=Answers(answers),
                      backend=backend, cwd=Path(cwd) if cwd else None)
    return run_workflow(workflow, io=io, options=options, inputs=check_inputs(inputs or {}, workflow.input_schema),
                        overrides=overrides)
