"""What a person can do to a run from the page: answer it, cancel it, continue it, launch a new one. Each goes
through the code the command line uses: an answer is checked by the engine's own `match_answer` against the
question as the store keeps it, then given to a `wfexec resume --answers FILE` process (which checks it again, as
it would at a terminal); a cancel is `wfexec cancel`'s function; a launch is a `wfexec run` process.

Values reach those processes as they were given, as they reach a run through the API and MCP: an answer, and the
inputs the JSON API was sent (or a run was started with, to run it again), in a file the process reads
(`--answers`, `--input-file`), which keeps each value's type and every character. Only a form's fields are text,
given as `--input NAME=TEXT` is at a terminal (read by the type the input declares; a field left empty is left
out)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from wfexec.durable.store import StoreError
from wfexec.serve.processes import NotPassable, Processes, Started
from wfexec.serve.workflows import Workflows


class ActionRefused(Exception):
    """The action cannot be done as asked; `status` is the HTTP status that says why."""

    def __init__(self, status: int, message: str, hint: str = "", **extra: Any):
        super().__init__(message)
        self.status = status
        self.message = message
        self.hint = hint
        self.extra = extra

    def to_json(self) -> dict[str, Any]:
        return {"error": self.message, **({"hint": self.hint} if self.hint else {}), **self.extra}


def answer(view, processes: Processes, run_id: str, value: Any) -> Started:
    from wfexec.nodes.base import Question
    from wfexec.running.prompts import AnswerRefused, match_answer

    if not isinstance(value, str) or not value.strip():
        raise ActionRefused(400, "give an answer: one of the options, or text where the question takes it")
    record = view.one_run(run_id)
    pending = record.get("pending_question")
    if record["status"] != "waiting" or not pending:
        raise ActionRefused(409, f"run {record['id']} is not waiting for an answer (it is {record['status']})")
    try:
        match_answer(Question.from_json(pending), value)
    except AnswerRefused as refused:
        raise ActionRefused(422, refused.message, options=[o["id"] for o in pending.get("options") or ()]) \
            from None
    key = pending.get("key") or pending["node"]
    if view.backend == "temporal":  # the run goes on by itself on the cluster once its update is accepted
        return view.answer(record["id"], key, value)
    return _started_or_refused(_passed(processes.resume, record["id"], (key, value)))


IN_FLIGHT_CHOICES = ("rerun", "skip")


def resume(view, processes: Processes, run_id: str, in_flight: Any = None) -> Started:
    """Continue a stopped or interrupted run; `in_flight` ("rerun" or "skip") says what becomes of the step that
    was in flight when it stopped, as `wfexec resume --rerun/--skip` does."""
    if view.backend == "temporal":
        raise ActionRefused(409, "a run on the cluster goes on by itself while a worker serves its task queue; a "
                                 "step lost with its worker asks whether to run it again or skip it: answer that")
    record = view.one_run(run_id)
    if record["finished"]:
        raise ActionRefused(409, f"run {record['id']} has already finished ({record['status']})")
    if record["status"] == "waiting":
        raise ActionRefused(409, f"run {record['id']} waits for an answer: answer it to go on")
    if in_flight in ("", None):
        in_flight = None
    elif in_flight not in IN_FLIGHT_CHOICES:
        raise ActionRefused(400, f"'in_flight' must be one of {', '.join(IN_FLIGHT_CHOICES)}, not '{in_flight}'")
    if record["in_flight"] and in_flight is None:
        step = record["in_flight"]
        raise ActionRefused(409, f"step {step['step']} ({step['node']}) was in flight when run {record['id']} "
                                 "stopped: say whether to run it again or skip it", choices=list(IN_FLIGHT_CHOICES))
    return _started_or_refused(processes.resume(record["id"], in_flight=in_flight))


def again(view, processes: Processes, workflows: Workflows, run_id: str) -> Started:
    """A new run of the same workflow with the same inputs (the values the run recorded, empty texts included), if
    that workflow is one this server may launch."""
    from wfexec.serve.command_lines import command_lines

    record = view.with_inputs(view.one_run(run_id))
    found = workflows.at(Path(record["workflow_path"]))
    if found is None:
        raise ActionRefused(404, f"{record['workflow_path']} is not under the folders this server was given "
                                 "(--root): it cannot be launched from here",
                            hint=f"at a terminal: {command_lines(record, view.where_runs)['again']}")
    return launch(processes, workflows, found.id, record["inputs"] or {})


def cancel(view, run_id: str) -> dict[str, Any]:
    from wfexec.commands.runs import cancel_run

    if view.backend == "temporal":
        return view.cancel(run_id)
    run_id = view.one_run(run_id)["id"]  # an unknown run is a 404, as for every other action
    try:
        cancel_run(view.path, run_id, out=io.StringIO())
    except StoreError as exc:
        raise ActionRefused(409, exc.message, exc.hint) from None
    return view.one_run(run_id)


def launch(processes: Processes, workflows: Workflows, workflow_id: Any, inputs: dict[str, Any] | None = None,
           texts: dict[str, str] | None = None) -> Started:
    """A `wfexec run` of the workflow `workflow_id` names. `inputs`: values as given (the JSON API's `inputs`, a
    run's recorded ones), each passed as it is, as the API and MCP take them; `texts`: a form's fields, each text
    as `--input NAME=TEXT` gives it, left out when empty (a field left unfilled)."""
    found = workflows.get(workflow_id) if isinstance(workflow_id, str) else None
    if found is None:
        raise ActionRefused(404, f"no workflow '{workflow_id}' under the folders this server was given (--root)")
    described = workflows.describe(found)
    if not described["valid"]:
        raise ActionRefused(422, f"{found.path} has errors; it is not run", errors=described["errors"])
    typed = {str(name): value for name, value in (inputs or {}).items()}
    given = {name: text for name, text in (texts or {}).items() if text != ""}
    for name, text in given.items():
        field = f"input.{name}"
        if not isinstance(text, str):
            raise ActionRefused(400, f"'{field}' must be text, as a form's field is (send other values as JSON "
                                     "in 'inputs')")
        if "\0" in name or "\0" in text or "=" in name:
            why = "a NUL character" if "\0" in name + text else "'='"
            raise ActionRefused(400, f"'{field}' holds {why}, which `--input NAME=TEXT` cannot carry; send the "
                                     "inputs as JSON ('inputs': {NAME: VALUE}) to give any character")
    return _started_or_refused(_passed(processes.launch, found.path, typed, given))


def _passed(start, *args: Any) -> Started:
    """A process started with values it is given in a file, or a 400 naming the one that cannot be written
    there as it is."""
    try:
        return start(*args)
    except NotPassable as refused:
        raise ActionRefused(400, str(refused)) from None


def _started_or_refused(started: Started) -> Started:
    if started.ok:
        return started
    raise ActionRefused(422, started.message or f"the run's process ended with exit code {started.exit_code}",
                        run_id=started.run_id)
