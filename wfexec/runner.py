"""`wfexec run` from the command line: inputs in, a printed ending and an exit code out."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_ENDING_FAILED, EXIT_INVALID, EXIT_WAITING, EXIT_STOPPED = 0, 1, 2, 3, 4


@dataclass
class RunRequest:
    path: Path
    inputs: list[str] = field(default_factory=list)
    input_file: Path | None = None
    overrides: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    answer_files: list[Path] = field(default_factory=list)
    interactive: bool = False
    max_steps: int = 10_000
    trace: bool = False
    dry_run: bool = False
    state_out: Path | None = None
    json_output: bool = False
    debug: bool = False


def _error(text: str) -> None:
    sys.stderr.write(text.rstrip("\n") + "\n")


def _gather_inputs(request: RunRequest, workflow) -> dict:
    from .inputs import check_inputs, split_pairs
    from .loader import load_file

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


def execute_run(request: RunRequest) -> int:
    from .api import check, resolve_workflow_path
    from .console import Console
    from .diagnostics import ERROR
    from .engine import EntryGateFailed, Options, RunError, run_workflow
    from .inputs import InputError, parse_scalar, split_pairs
    from .prompts import AnswerError, Answers, NeedsAnswer

    workflow, diagnostics = check(request.path)
    errors = [d for d in diagnostics if d.severity == ERROR]
    if workflow is None or errors:
        for d in errors:
            _error(d.format())
        _error(f"{resolve_workflow_path(request.path)}: not run, the workflow has "
               f"{len(errors)} error{'s' if len(errors) != 1 else ''} (wfexec validate shows them all)")
        return EXIT_INVALID
    try:
        inputs = _gather_inputs(request, workflow)
        overrides = {k: parse_scalar(v) for k, v in split_pairs(request.overrides, "--set")}
        answers = Answers.parse(request.answers, request.answer_files)
    except (InputError, AnswerError, ValueError) as exc:
        _error(f"error: {exc}")
        return EXIT_INVALID

    # With --format json, stdout carries only the result document.
    io = Console(out=sys.stderr if request.json_output else sys.stdout, trace=request.trace)
    options = Options(max_steps=request.max_steps, interactive=request.interactive, answers=answers,
                      dry_run=request.dry_run)
    try:
        result = run_workflow(workflow, io=io, options=options, inputs=inputs, overrides=overrides)
    except NeedsAnswer as waiting:
        question = waiting.question
        ids = ", ".join(c.id for c in question.choices)
        other = " (or free text)" if question.allow_other else ""
        if request.json_output:
            _print_json({"status": "waiting", "node": question.node, "question": question.text,
                         "options": [{"id": c.id, "label": c.label, "description": c.description}
                                     for c in question.choices], "allow_other": question.allow_other})
        _error(f"waiting: node '{question.node}' asks: {question.text}\n"
               f"  options: {ids}{other}\n"
               f"  answer with: wfexec run {request.path} --answer {question.node}=<option id>")
        return EXIT_WAITING
    except EntryGateFailed as exc:
        _error(exc.message)
        return EXIT_ENDING_FAILED
    except RunError as exc:
        _error(exc.format())
        return exc.exit_code
    except KeyboardInterrupt:
        _error("interrupted")
        return EXIT_STOPPED
    except Exception:
        if request.debug:
            raise
        import traceback

        _error("internal error in wfexec (a bug; please report it with --debug output):\n"
               + traceback.format_exc().strip().splitlines()[-1])
        return EXIT_STOPPED

    if request.state_out:
        from .files import write_atomic

        write_atomic(request.state_out, json.dumps(result.state, indent=2, ensure_ascii=False, default=str) + "\n")
    if request.json_output:
        _print_json({"status": "completed", **result.to_json()})
    else:
        print_ending(result, io)
    return EXIT_OK if result.type == "success" else EXIT_ENDING_FAILED


def print_ending(result, io) -> None:
    from .expressions import to_text

    if result.type == "success":
        io.print(result.message)
        for key, value in result.summary.items():
            io.print(f"  {key}: {to_text(value)}")
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


def _print_json(data) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
