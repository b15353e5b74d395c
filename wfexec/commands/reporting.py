"""How a run's command reports what became of the run: its ending, the question it waits on, or the error, as
text on the terminal or as the `--format json` document, and the files `--state-out` and `--record-case` write.
Shared by the drivers of `wfexec run`/`resume` on the run store (`wfexec.commands.run`) and on a Temporal cluster
(`wfexec.commands.temporal_runs`), which import this module and not each other."""

from __future__ import annotations

import json
import sys

from wfexec.exit_codes import exit_code_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def state_as_yaml(state: Any) -> str:
    """`show --state`'s text of a run's state, whichever driver ran it: `state:` and the state as YAML under it."""
    import io

    from ruamel.yaml import YAML

    yaml = YAML()
    yaml.default_flow_style = False
    yaml.indent(mapping=2, sequence=4, offset=2)
    buffer = io.StringIO()
    yaml.dump(json.loads(json.dumps(state, default=str)), buffer)  # plain JSON values: no YAML tags
    return "state:\n" + "".join("  " + line + "\n" for line in buffer.getvalue().splitlines())


def error_line(text: str) -> None:
    sys.stderr.write(text.rstrip("\n") + "\n")


def report_error(error: BaseException, debug: bool = False) -> int:
    """Print why a command could not finish, in one line (a traceback only for a bug, with --debug);
    return its exit code."""
    import traceback

    from wfexec.errors import WfexecError
    from wfexec.running.engine import EntryGateFailed, InternalError

    if isinstance(error, EntryGateFailed):
        error_line(error.message)  # the workflow's own words
    elif isinstance(error, InternalError):
        if debug:
            error_line("".join(traceback.format_exception(error.__cause__ or error)).rstrip())
        error_line(error.format())
    elif isinstance(error, WfexecError):
        error_line(error.format())
    elif isinstance(error, KeyboardInterrupt):
        error_line(f"interrupted ({error})" if str(error) else "interrupted")
        run_id = getattr(error, "run_id", None)
        if run_id:
            error_line(f"run {run_id} stopped; continue it with: wfexec resume {run_id}")
    else:
        if debug:
            error_line("".join(traceback.format_exception(error)).rstrip())
        error_line(f"internal error in wfexec: {type(error).__name__}: {error} — a bug; please report it with "
               "the output of --debug")
    return exit_code_for(error)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def question_json(question, run_id) -> dict:
    """A waiting run as `--format json` and the MCP tools give it: the question's one JSON form
    (`Question.to_json`), which run waits, and the key to answer by (`answer_key`, the question's `key`)."""
    return {"status": "waiting", "run_id": run_id, **question.to_json(), "answer_key": question.key}


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


def write_state_out(request, state) -> None:
    """`--state-out`: the state where the run ended, parked or failed (whatever this process last held)."""
    if request.state_out and state is not None:
        from wfexec.system.files import write_output

        write_output(request.state_out, json.dumps(state, indent=2, ensure_ascii=False, default=str) + "\n",
                     option="--state-out")


def report_waiting(request, question, run_id) -> int:
    ids = ", ".join(c.id for c in question.choices)
    other = " (or free text)" if question.allow_other else ""
    key = question.key
    if request.json_output:
        print_json(question_json(question, run_id))
    value = "<option id>" if question.choices else "<text>"
    how = (f"wfexec resume {run_id} --answer {key}={value}" if run_id else
           f"wfexec run {request.path} --answer {key}={value}")
    who = f"agent '{key}' of node '{question.node}'" if question.asker else f"node '{question.node}'"
    error_line(f"waiting: {who} asks: {question.text}\n"
           + (f"  options: {ids}{other}\n" if question.choices else "")
           + f"  answer with: {how}")
    return exit_code_for("waiting")


def write_case(request, status: str, ending: str | None, output, state) -> int:
    """`--record-case`: the run as a test case. 0, or exit 2 after saying why the file could not take it: the
    FILE on the command line was the wrong one to give (the same code as when that is found before the run). A
    run that ended otherwise than in success keeps its own code; the caller decides (`report_result`)."""
    case = request.case
    if case is None:
        return 0
    from wfexec.commands.record_case import case_from, write_case as write_case_file

    made = case_from(case["recorder"], inputs=case["inputs"], overrides=case["overrides"], status=status,
                     ending=ending, output=output, state=state, state_paths=request.record_state)
    try:
        error_line(write_case_file(request.record_case, made))
    except (OSError, ValueError) as exc:
        error_line(f"error: the test case was not written: {exc}")
        return exit_code_for("invalid")
    return 0


def report_result(request, result, io, run_id) -> int:
    write_state_out(request, result.state)
    if request.json_output:
        from wfexec.durable.store import ending_status

        print_json({"status": ending_status(result.type), "run_id": run_id, **result.to_json()})
    else:
        print_ending(result, io)
    not_written = write_case(request, result.type, result.ending, result.output, result.state)
    # A success whose case was not written is no success; any other ending's code says more and stays.
    return exit_code_for(result.type) or not_written


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
