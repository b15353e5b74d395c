"""`wfexec run`, `wfexec resume` and `wfexec states` from the command line: a run request in (built by
`wfexec.commands.entrypoints`), a printed ending and an exit code out. Runs are recorded in the run store
(wfexec.durable.journal) unless `--ephemeral`, or go to a Temporal cluster (`wfexec.commands.temporal_runs`)."""

from __future__ import annotations

import sys
from pathlib import Path

from wfexec.commands.reporting import (driven_json, error_line as _error, print_json, question_json, report_error,
                                       report_result, report_waiting, write_case, write_state_out)
from wfexec.exit_codes import exit_code_for
from wfexec.running.request import RunRequest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["RunRequest", "execute_resume", "execute_run", "execute_states", "report_error"]


def _gather_inputs(request: RunRequest, workflow) -> dict:
    if not (request.input_file or request.text_inputs or workflow.input_schema):
        return dict(request.inputs)  # nothing to read, parse or check (`wfexec states`, mostly)
    from wfexec.language.inputs import check_inputs, split_pairs

    given: dict[str, Any] = {}
    if request.input_file:
        from wfexec.language.loader import load_file
        from wfexec.system.files import not_a_readable_file

        why = not_a_readable_file(request.input_file)
        if why is not None:
            raise ValueError(f"the input file {request.input_file} {why} — give --input-file the YAML or JSON file "
                             "that maps input names to values")
        doc = load_file(request.input_file)
        if doc.diagnostics:
            raise ValueError(doc.diagnostics[0].format())
        if not isinstance(doc.data, dict):
            raise ValueError(f"{request.input_file}: an input file must map input names to values")
        given.update(doc.data)
    given.update(request.inputs)
    from_text = set()
    for key, value in split_pairs(request.text_inputs, "--input"):
        given[key] = value
        from_text.add(key)
    return check_inputs(given, workflow.input_schema, from_text=from_text)


def _load_or_report(path, document=None) -> Any:
    """The compiled workflow, or None after printing its errors: what `wfexec validate` reports as one, the lint
    of the states a `states` node runs included (at the state file's line)."""
    from wfexec.api import check_to_run, resolve_workflow_path
    from wfexec.language.diagnostics import ERROR
    from wfexec.errors import BrokenPlugins

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


def _console(request: RunRequest):
    from wfexec.running.console import Console

    # With --format json, stdout carries only the result document.
    return Console(out=sys.stderr if request.json_output else sys.stdout, trace=request.trace)


def execute_run(request: RunRequest) -> int:
    from wfexec.api import backend_of
    from wfexec.protocol.folders import workflow_document  # a states folder, or a workflow?
    from wfexec.running.prompts import Answers

    refused = _unreadable(request.path)
    if refused:
        return refused
    document = workflow_document(request.path)
    if document is None and request.record_case is not None:
        _error("error: --record-case records a workflow's run; a states folder has no `wfexec test` cases — run a "
               "workflow whose `states` node runs the folder")
        return exit_code_for("invalid")
    if document is None:
        return _states_run(request.replace(agent_input=" ".join(request.text_inputs) or None, text_inputs=[]))
    workflow = _load_or_report(request.path, None if isinstance(document, Path) else document)
    if workflow is None:
        return exit_code_for("invalid")
    refused = _refused_state_out(request)
    if refused:
        return refused
    try:
        inputs = _gather_inputs(request, workflow)
        answers = Answers.given(request.answers, request.answer_files)
        backend = backend_of(request)
    except ValueError as exc:  # an InputError or AnswerError (both ValueErrors), or what reading a file found
        _error(f"error: {exc}")
        return exit_code_for("invalid")
    if request.record_case is not None:
        if request.temporal or request.dry_run:
            _error(f"error: --record-case cannot be used with {'--temporal' if request.temporal else '--dry-run'}: "
                   "the case is what a run in this process did")
            return exit_code_for("invalid")
        from wfexec.commands.record_case import CaseRecorder, case_file_problem
        from wfexec.language.paths import PathError, parse_path

        problem = case_file_problem(request.record_case)
        if problem:  # found before the run, not after it: the run's work would be done and its case lost
            _error(f"error: --record-case {problem}")
            return exit_code_for("invalid")

        for path in request.record_state:
            try:
                parse_path(path)
            except PathError as exc:
                _error(f"error: --record-state {path}: {exc.message} — write a dotted state path such as computed.x")
                return exit_code_for("invalid")
        backend = CaseRecorder(backend)
        request = request.replace(case={"recorder": backend, "inputs": inputs, "overrides": dict(request.overrides)})
    io = _console(request)
    if request.temporal:
        refused = _refused_on_cluster(request, backend)
        if refused:
            return refused
        from wfexec.commands.temporal_runs import run_on_cluster

        return run_on_cluster(request, workflow, inputs, answers, io)
    options = engine_options(request, answers, backend)
    if request.ephemeral or request.dry_run:  # a dry run changes nothing, the run store included
        return _guarded(request, lambda: _run_ephemeral(request, workflow, inputs, io, options))
    return _guarded(request, lambda: _run_durable(request, workflow, inputs, io, options))


def execute_resume(request: RunRequest) -> int:
    from wfexec.api import backend_of
    from wfexec.running.prompts import AnswerError, Answers

    try:
        answers = Answers.given(request.answers, request.answer_files)
        backend = backend_of(request)
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
    options = engine_options(request, answers, backend)
    return _guarded(request, lambda: _resume(request, io, options))


def _unreadable(path) -> int:
    """0, or exit 2 after saying that this user cannot examine the path `run`/`states` was given."""
    from wfexec.protocol.folders import unreadable_diagnostic

    closed = unreadable_diagnostic(path)
    if closed is None:
        return 0
    _error(f"error: {closed.message} — {closed.hint}")
    return exit_code_for("invalid")


def _refused_on_cluster(request: RunRequest, backend) -> int:
    """0, or exit 2 after saying which option a run on a Temporal cluster does not take (yet)."""
    # A cassette is read or written in order by one process; a run's LLM steps go to whichever worker is free.
    taken = [flag for flag, given in (("--ephemeral", request.ephemeral), ("--dry-run", request.dry_run),
                                      ("--record", request.record is not None), ("--replay", request.replay is not None),
                                      ("--accept-changes", request.accept_changes),
                                      ("--allow-write", bool(request.allow_write))) if given]
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
        from wfexec.system.files import unwritable

        why = unwritable(request.state_out)
        if why is None:
            return 0
        # Found before the run, not after it: the run's work would be done and its final state lost.
        _error(f"error: --state-out {request.state_out} {why} — name a file in a folder you can write")
        return exit_code_for("invalid")
    _error(f"error: --state-out {request.state_out} {why}; the final state may not be written over the run store "
           f"or anything in {STORE_FOLDER}/ — write it to another file")
    return exit_code_for("invalid")


def _guarded(request: RunRequest, body) -> int:
    """Map what can go wrong around a run (the store, --set paths, a bug) to one line and an exit code."""
    try:
        return body()
    except (Exception, KeyboardInterrupt) as exc:
        return report_error(exc, request.debug)


def engine_options(request: RunRequest, answers, backend):
    from wfexec.api import engine_options as options_of_request

    return options_of_request(request, answers, backend)


def _run_ephemeral(request, workflow, inputs, io, options) -> int:
    from wfexec.running.engine import RunError, run_workflow
    from wfexec.running.prompts import NeedsAnswer

    try:
        with io.status_line():
            result = run_workflow(workflow, io=io, options=options, inputs=inputs, overrides=dict(request.overrides))
    except NeedsAnswer as waiting:
        write_state_out(request, getattr(waiting, "state", None))
        write_case(request, "waiting", None, None, getattr(waiting, "state", None))
        return report_waiting(request, waiting.question, None)
    except RunError as exc:
        write_state_out(request, getattr(exc, "state", None))
        write_case(request, "stopped" if exc.outcome == "stopped" else "failed", None, None,
                    getattr(exc, "state", None))
        return report_error(exc, request.debug)
    return report_result(request, result, io, None)


def _run_durable(request, workflow, inputs, io, options) -> int:
    from wfexec.api import start_recorded

    with io.status_line():
        driven = start_recorded(request, workflow, inputs, io, options)
    return _report_driven(request, driven, io)


def _resume(request, io, options) -> int:
    from wfexec.api import resume_recorded
    from wfexec.durable.journal import ResumeRefused
    from wfexec.durable.store import StoreError

    def load(path):
        workflow = _load_or_report(path)
        if workflow is None:
            raise StoreError(f"the workflow of run {request.run_id} ({path}) no longer validates",
                             "fix it, then resume again")
        return workflow

    try:
        with io.status_line():
            driven = resume_recorded(request, load, io, options)
    except ResumeRefused as refused:
        for note in refused.notes:
            _error(f"note: {note}")
        raise
    for note in driven.notes:
        _error(f"note: {note}")
    return _report_driven(request, driven, io)


def _report_driven(request, driven, io) -> int:
    if driven.refused is not None:
        if request.json_output:
            print_json({**question_json(driven.question, driven.run_id), "error": driven.refused.message})
        return report_error(driven.refused, request.debug)
    if driven.status == "waiting":
        write_state_out(request, driven.state)
        write_case(request, "waiting", None, None, driven.state)
        return report_waiting(request, driven.question, driven.run_id)
    if driven.result is not None:
        return report_result(request, driven.result, io, driven.run_id)
    write_state_out(request, driven.state)
    write_case(request, "stopped" if driven.status == "stopped" else "failed", None, None, driven.state)
    error = driven.error
    code = report_error(error, request.debug)
    if driven.status == "stopped":
        _error(f"run {driven.run_id} stopped; continue it with: wfexec resume {driven.run_id}")
    if request.json_output:
        print_json(driven_json(driven))
    return code


def execute_states(request: RunRequest) -> int:
    """`wfexec states PATH` (and `wfexec run` on a states folder): the folder as the one-node workflow every door
    runs for it (`wfexec.api.states_run`), run like any other, so it is recorded in the store: an `<ask>` parks
    it (exit 3), paused agents stop it (exit 4), and `runs`, `show`, `resume` and `cancel` work on it.
    `.raymond/config.toml` fills in what the flags do not say."""
    return _unreadable(request.path) or _states_run(request)


def _states_run(request: RunRequest) -> int:
    """`execute_states` of a path known to be readable (`execute_run` checked it before it saw a states folder)."""
    from wfexec.api import states_run
    from wfexec.errors import WfexecError
    from wfexec.language.diagnostics import WorkflowError
    from wfexec.protocol.folders import states_line

    try:
        written = states_run(request, warn=_error)
    except WorkflowError as exc:  # the errors `wfexec validate` reports for the folder, at each state's line
        for d in exc.diagnostics:
            _error(states_line(d))
        count = len(exc.diagnostics)
        _error(f"{request.path}: not run, the states have {count} error{'s' if count != 1 else ''} "
               "(wfexec validate shows them all)")
        return exit_code_for(exc)
    except WfexecError as exc:
        _error(exc.format())
        return exit_code_for(exc)
    with written as routed:
        return execute_run(routed)
