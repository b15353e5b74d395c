"""`run`, `resume`, `runs`, `show`, `cancel` and `worker` against a Temporal cluster (`--temporal HOST:PORT` or
WFEXEC_TEMPORAL): the same output and exit codes as with the SQLite store. Imported only when that option is
given, and temporalio only from here on."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any, Callable, Coroutine

from wfexec.commands.reporting import report_error, report_result, report_waiting, state_as_yaml
from wfexec.exit_codes import exit_code_for

TEMPORAL_VARIABLE = "WFEXEC_TEMPORAL"


def _error(text: str) -> None:
    sys.stderr.write(text.rstrip("\n") + "\n")


def _guarded(address: str, body: Callable[[], Coroutine[Any, Any, int]], debug: bool) -> int:
    """Run one command's coroutine; a missing extra, an unreachable server or a refused request is one line and
    an exit code, never a traceback."""
    from wfexec.temporal import require_temporalio

    try:
        require_temporalio()
        from temporalio.service import RPCError

        from wfexec.temporal.client import unavailable

        try:
            return asyncio.run(body())
        except RPCError as exc:
            raise unavailable(address, exc) from None
    except (Exception, KeyboardInterrupt) as exc:
        return report_error(exc, debug)


def _report_waiting_on_cluster(request, asked: dict, run_id: str) -> int:
    """A run that waits for an answer: said as with SQLite (exit 3). A lost step not safe to run twice is said
    as a SQLite run's resume says it (the question carries the hint), answered with --rerun or --skip."""
    from wfexec.durable.journal import ResumeRefused
    from wfexec.nodes.base import Question

    if asked.get("in_flight_hint") is not None:
        raise ResumeRefused(Question.from_json(asked).text, asked["in_flight_hint"], awaits_decision=True)
    return report_waiting(request, Question.from_json(asked), run_id)


def _show_events(io) -> Callable[[list], None]:
    from wfexec.temporal.steps import replay_events

    return lambda events: replay_events(events, io)


async def _follow_and_report(request, client, handle, io, printed: int = 0, pending=None,
                             known: dict | None = None) -> int:
    """Follow the run until it ends or waits; answer at a terminal, else park with exit 3. `known`: the question
    the run already waited on, unanswered, when this command began (a refusal on it was reported before)."""
    from wfexec.running.engine import Result
    from wfexec.running.prompts import AnswerRefused, Answers
    from wfexec.temporal.client import follow, send_answer
    from wfexec.nodes.base import Question

    pending = pending if pending is not None else Answers()
    while True:
        outcome = await follow(handle, printed, _show_events(io), _error, request.task_queue, request.temporal)
        if outcome["status"] != "waiting":
            break
        printed = outcome["printed"]
        question = Question.from_json(outcome["question"])
        if outcome["question"].get("refused") and outcome["question"] != known:
            raise AnswerRefused(outcome["question"]["refused"], key=question.key, question=question) \
                .waiting_in(handle.id)
        value: Any = pending.take(question.key)
        if value is None and request.interactive:
            answer = io.ask(question)
            value = answer.choice.id if getattr(answer, "choice", None) else getattr(answer, "text", answer)
        if value is None:
            return _report_waiting_on_cluster(request, outcome["question"], handle.id)
        await send_answer(handle, question.key, value)
    if "result" in outcome:
        data = outcome["result"]
        result = Result.from_json(data, run_id=handle.id)
        return report_result(request, result, io, handle.id)
    error = outcome.get("error") or {"text": "the run failed", "outcome": "failed"}
    _error(error["text"])
    if outcome["status"] == "stopped":
        _error(f"run {handle.id} stopped")
    if request.json_output:
        sys.stdout.write(json.dumps({"status": outcome["status"], "run_id": handle.id, "error": error.get("message")
                                     or error["text"]}, indent=2) + "\n")
    return exit_code_for(outcome["status"] if outcome["status"] != "cancelled" else "failed")


def run_on_cluster(request, workflow, inputs: dict, answers, io) -> int:
    """The Temporal client's door: the run request, started on the cluster (the workflow takes the answers)."""
    async def body() -> int:
        from wfexec.temporal.client import connect, run_request, start

        client = await connect(request.temporal)
        handle = await start(client, workflow, run_request(workflow, inputs=inputs, overrides=dict(request.overrides),
                                                           answers=answers.to_dict(), max_steps=request.max_steps,
                                                           backend=request.backend),
                             request.task_queue)
        if request.trace:
            _error(f"Run {handle.id} (Temporal {request.temporal}, task queue {request.task_queue})")
        return await _follow_and_report(request, client, handle, io)  # the workflow takes the answers itself

    return _guarded(request.temporal, body, request.debug)


def resume_on_cluster(request, io) -> int:
    async def body() -> int:
        from wfexec.running.prompts import Answers
        from wfexec.temporal.client import check_answers, connect, find, progress, send_answer
        from wfexec.nodes.base import Question
        from wfexec.temporal.steps import RERUN_OR_SKIP

        client = await connect(request.temporal)
        handle = await find(client, request.run_id)
        description = await handle.describe()
        from temporalio.client import WorkflowExecutionStatus

        if description.status != WorkflowExecutionStatus.RUNNING:
            from wfexec.durable.journal import ResumeRefused

            raise ResumeRefused(f"run {handle.id} has already finished "
                                f"({description.status.name.lower() if description.status else 'unknown'}); "
                                "there is nothing to resume",
                                "`wfexec show RUN --temporal ...` prints how it ended; start a new run with `wfexec run`")
        seen = await progress(handle)
        pending = Answers.given(request.answers, request.answer_files)
        await check_answers(handle, pending)
        known = None
        if seen is not None and seen["status"] == "waiting":
            question = Question.from_json(seen["question"])
            value = pending.take(question.key)
            if value is None and question.header == RERUN_OR_SKIP:  # --rerun/--skip: a lost step's question
                value = "rerun" if request.rerun else "skip" if request.skip else None
            if value is None and not request.interactive:
                return _report_waiting_on_cluster(request, seen["question"], handle.id)
            if value is not None:
                await send_answer(handle, question.key, value)
            else:
                known = seen["question"]
        return await _follow_and_report(request, client, handle, io, printed=seen["events"] if seen else 0,
                                        pending=pending, known=known)

    return _guarded(request.temporal, body, request.debug)


def list_on_cluster(address: str, status: str | None, as_json: bool, limit: int, debug: bool) -> int:
    async def body() -> int:
        from wfexec.temporal.client import connect, list_runs

        client = await connect(address)
        rows = [row for row in await list_runs(client, limit) if status is None or row["status"] == status]
        if as_json:
            sys.stdout.write(json.dumps({"runs": rows}, indent=2) + "\n")
            return 0
        if not rows:
            print("No runs on the cluster.")
            return 0
        for row in rows:
            print(f"{row['id']}  {row['status']:<10} {row['workflow']:<24} {row['current_node'] or '-':<20} "
                  f"{row['started'] or ''}" + (f"  (state missing: {row['problem']})" if row.get("problem") else ""))
        return 0

    return _guarded(address, body, debug)


def show_on_cluster(address: str, run_id: str, with_state: bool, as_json: bool, debug: bool) -> int:
    async def body() -> int:
        from wfexec.temporal.client import connect, describe, find

        client = await connect(address)
        shown = await describe(client, await find(client, run_id))
        state = shown.pop("state", None)
        shown.pop("events", None)
        if as_json:
            sys.stdout.write(json.dumps({**shown, "state": state}, indent=2, default=str) + "\n")
            return 0
        result = shown.get("result") or {}
        print(f"run {shown['id']}: {shown.get('status')} ({shown['workflow']}, {shown['path']})")
        if shown.get("current_node"):
            print(f"  at node: {shown['current_node']}")
        if shown.get("question"):
            question = shown["question"]
            print(f"  waiting: {question['key']} asks: {question['text']}")
            print(f"  options: {', '.join(c['id'] for c in question['choices'])}")
        if result:
            print(f"  ending: {result.get('ending')} ({result.get('type')}): {result.get('message')}")
        if shown.get("error"):
            print(f"  error: {shown['error'].get('text')}")
        if shown.get("steps") is not None:
            print(f"  steps: {shown['steps']}")
        for entry in (state or {}).get("history", [])[-20:]:
            print(f"  {entry.get('at', '')}  {entry['node']} → {entry['target']}")
        if with_state and state is not None:
            sys.stdout.write(state_as_yaml({k: v for k, v in state.items() if k != "history"}))
        return 0

    return _guarded(address, body, debug)


def cancel_on_cluster(address: str, run_id: str, debug: bool) -> int:
    async def body() -> int:
        from temporalio.client import WorkflowExecutionStatus

        from wfexec.temporal.client import RunNotFound, connect, find

        client = await connect(address)
        handle = await find(client, run_id)
        description = await handle.describe()
        if description.status != WorkflowExecutionStatus.RUNNING:
            raise RunNotFound(f"run {handle.id} has already finished; there is nothing to cancel")
        await handle.cancel()
        print(f"cancelled run {handle.id}")
        return 0

    return _guarded(address, body, debug)


# Compiled once, and every node type and registry imported, before a worker takes work: a run's first workflow task
# compiles its workflow, and Temporal takes a workflow task that does not yield within 2 s for a deadlock and
# interrupts it, which can leave a module (yaml, the node types, the expression engine) half imported for every
# later task of the worker, and its import lock held, so the step threads that import it next wait forever (seen
# with 100 runs started at once on a loaded machine: their local activities never ended).
_WARM_UP = """
name: warm-up
version: "1"
start_node: a
nodes:
  a: {type: action, actions: [{type: set_state, field: computed.x, value: "${1 + 1}"}], on_success: done}
endings:
  done: {type: success, message: "${computed.x}"}
"""


def _warm_up() -> None:
    from wfexec.api import validate_text
    from wfexec.nodes.base import node_types
    from wfexec.types.registry import consequences, preconditions

    node_types()
    preconditions()
    consequences()
    validate_text(_WARM_UP, "warm-up.yaml")


def worker(address: str, task_queue: str, debug: bool, workdir=None, blob_retention: float | None = None) -> int:
    """Serve until Ctrl-C or SIGTERM, which is how a worker is meant to stop (exit 0)."""

    async def body() -> int:
        from wfexec.api import load
        from wfexec.temporal.worker import serve

        if workdir is not None:
            workdir.mkdir(parents=True, exist_ok=True)
        _warm_up()
        await serve(address, task_queue, load=load, workdir=workdir.resolve() if workdir is not None else None,
                    blob_retention=blob_retention)
        _error("wfexec worker: stopped")
        return 0

    from wfexec.temporal import require_temporalio

    try:
        require_temporalio()
        return asyncio.run(body())
    except KeyboardInterrupt:
        _error("wfexec worker: stopped")
        return 0
    except Exception as exc:
        return report_error(exc, debug)
