"""`wfexec mcp`: wfexec's commands as tools of a stdio MCP server, for Claude Code (`claude mcp add`).

A skill drives a workflow with `run`, then `answer` for each question it parks on: every call is a function
call in this one process, not a new `wfexec` process, and the compiled workflows stay in memory between calls
(checked against their files each time: an edited workflow is compiled again). Results are structured: a run
that parks returns the question with its options; one that ends returns its ending.

Tools: validate, run, answer, resume, show, runs, cancel. Resources: `wfexec://runs/{run_id}/state` (the run's
state) and `wfexec://runs/{run_id}/graph` (its workflow, as Mermaid).

Runs are recorded in the store `--store` names (else $WFEXEC_STORE, else `.wfexec/runs.db` in the folder the
server was started in), like the CLI's, so `wfexec runs`, `show` and `resume` see them too.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

INSTRUCTIONS = (
    "wfexec runs YAML agent workflows (workflow.yaml) deterministically. Call `run` with the workflow's path; "
    "when the result's status is `waiting`, ask the person the `question` (offer its `options`), then call "
    "`answer` with the run_id and {answer_key: option id or text}. Repeat until the status is `completed` or "
    "`failed`; the result's `message` is what the workflow says at its end.")


class Server:
    """The tools' work, kept apart from the MCP wiring (`serve`) so it can be called directly."""

    def __init__(self, store: Path | None = None):
        self.store = store
        self.compiled: dict = {}  # workflow_cache's memory: compiled workflows kept between calls

    # -- workflows -------------------------------------------------------------------------------
    def _checked(self, path: str):
        from wfexec.api import check_with_summary, resolve_workflow_path
        from wfexec.language import workflow_cache

        file = resolve_workflow_path(path)
        kept = workflow_cache.load(file, self.compiled)
        if kept is not None:
            return kept
        checked = check_with_summary(path)  # compiles, and keeps a result without errors in the disk cache
        return workflow_cache.load(file, self.compiled) or checked

    def validate(self, path: str) -> dict:
        from wfexec.language.diagnostics import ERROR

        checked = self._checked(path)
        found = self._linted(checked)
        diagnostics = [d.to_json() for d in found]
        return {"valid": not any(d.severity == ERROR for d in found), "diagnostics": diagnostics,
                "summary": checked.summary.to_json() if checked.summary is not None else None}

    @staticmethod
    def _linted(checked) -> list:
        """Its diagnostics and those of what its nodes read besides it (a states folder): what `wfexec validate`
        reports, and what a run refuses to start on."""
        from wfexec.api import lint_nodes

        return [*checked.diagnostics, *(lint_nodes(checked.workflow) if checked.workflow is not None else ())]

    def _workflow(self, path: str):
        from wfexec.language.diagnostics import ERROR, WorkflowError

        checked = self._checked(path)
        errors = [d for d in self._linted(checked) if d.severity == ERROR]
        if checked.workflow is None or errors:
            raise WorkflowError(errors)
        return checked.workflow

    # -- runs -----------------------------------------------------------------------------------
    def _options(self, answers: dict | None):
        from wfexec.running.engine import Options
        from wfexec.running.prompts import Answers

        return Options(interactive=False, answers=Answers({str(k): v for k, v in (answers or {}).items()}))

    def _finish(self, drive) -> dict:
        from wfexec.commands.run import driven_json
        from wfexec.durable.store import open_store
        from wfexec.errors import WfexecError
        from wfexec.running.console import Console
        from wfexec.running.prompts import AnswerRefused

        out, err = io.StringIO(), io.StringIO()
        console = Console(out=out, err=err, color=False)
        store = open_store(self.store)
        try:
            driven = drive(store, console)
        except AnswerRefused:
            raise  # the tool's error (`serve`), not a result: the run did not move
        except WfexecError as exc:
            return {"status": exc.outcome, "error": exc.message, "hint": exc.hint or None}
        finally:
            store.close()
        if driven.refused is not None:
            raise driven.refused
        result = driven_json(driven)
        result["output"] = out.getvalue()
        if err.getvalue():
            result["notes"] = err.getvalue()
        if getattr(driven, "notes", None):
            result["notes"] = (result.get("notes") or "") + "".join(f"note: {n}\n" for n in driven.notes)
        return result

    def run(self, path: str, inputs: dict | None = None, answers: dict | None = None) -> dict:
        from wfexec.durable.journal import start_run
        from wfexec.language.inputs import InputError, check_inputs
        from wfexec.language.diagnostics import WorkflowError

        try:
            workflow = self._workflow(path)
            checked_inputs = check_inputs(dict(inputs or {}), workflow.input_schema)
        except WorkflowError as exc:
            return {"status": "invalid", "error": "the workflow has errors",
                    "diagnostics": [d.to_json() for d in exc.diagnostics]}
        except InputError as exc:
            return {"status": "invalid", "error": str(exc)}
        return self._finish(lambda store, console: start_run(
            store, workflow, inputs=checked_inputs, overrides={}, io=console, options=self._options(answers)))

    def resume(self, run_id: str, answers: dict | None = None, rerun: bool = False, skip: bool = False,
               accept_changes: bool = False) -> dict:
        from wfexec.durable.journal import ResumeChoices, resume_run

        return self._finish(lambda store, console: resume_run(
            store, run_id, self._workflow, io=console, options=self._options(answers),
            choices=ResumeChoices(accept_changes, rerun, skip)))

    def show(self, run_id: str) -> dict:
        return self._read(lambda store: {**store.get(run_id).to_json(), "journal": store.journal(store.get(run_id).id)})

    def runs(self, status: str | None = None, limit: int = 50) -> dict:
        return self._read(lambda store: {"runs": [r.to_json() for r in store.list(status, limit or -1)],
                                         "total": store.count(status)})

    def state(self, run_id: str) -> dict:
        return self._read(lambda store: store.snapshot(store.get(run_id).id)[1])

    def graph(self, run_id: str) -> str:
        from wfexec.outputs.graph import mermaid_of, picture

        path = self._read(lambda store: {"path": store.get(run_id).workflow_path})
        if "error" in path:
            return f"error: {path['error']}"
        return mermaid_of(picture(self._workflow(path["path"])))

    def cancel(self, run_id: str) -> dict:
        from wfexec.durable.store import FINISHED, StoreError, open_store

        store = open_store(self.store)
        try:
            record = store.get(run_id)
            if record.status in FINISHED:
                raise StoreError(f"run {record.id} has already finished ({record.status})", "nothing to cancel")
            store.set_status(record.id, "cancelled", current_node=None, pending_question=None)
            return {"status": "cancelled", "run_id": record.id}
        except StoreError as exc:
            return {"status": "invalid", "error": exc.message, "hint": exc.hint or None}
        finally:
            store.close()

    def _read(self, body) -> Any:
        from wfexec.durable.store import StoreError, open_store

        try:
            store = open_store(self.store, readonly=True)
        except StoreError as exc:
            return {"error": exc.message, "hint": exc.hint or None}
        try:
            return body(store)
        except StoreError as exc:
            return {"error": exc.message, "hint": exc.hint or None}
        finally:
            store.close()


def serve(store: Path | None = None) -> int:
    """Serve the tools over stdio until the client closes the connection."""
    try:
        import anyio
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        print("error: `wfexec mcp` needs the MCP SDK — pip install 'wfexec[mcp]'", file=sys.stderr)
        return 2
    from wfexec.running.prompts import AnswerRefused
    from wfexec.version import __version__

    work = Server(store)
    server = MCPServer(name="wfexec", version=__version__, instructions=INSTRUCTIONS)

    one_at_a_time = anyio.CapacityLimiter(1)

    async def off_the_loop(fn, *args):
        # A run blocks (scripts, LLM calls, a states node's own event loop): it goes to a worker thread, and one
        # call runs at a time, since a run marks the processes it starts as its own (wfexec.system.subprocesses).
        try:
            return await anyio.to_thread.run_sync(lambda: fn(*args), limiter=one_at_a_time)
        except AnswerRefused as refused:  # a tool error the model reads, with the options to answer again
            raise ToolError(refused.message + (f" — {refused.hint}" if refused.hint else "")) from None

    @server.tool(structured_output=True, description="Check a workflow.yaml (or a skill folder holding one): its diagnostics, and how "
                             "many of its steps run as code, ask a person, or go to an LLM.")
    async def validate(path: str) -> dict[str, Any]:
        return await off_the_loop(work.validate, path)

    @server.tool(structured_output=True, description="Start a run of a workflow. Returns its ending, or the question it waits on "
                             "(status `waiting`, with `answer_key`, `question` and `options`): answer it with "
                             "`answer`. `inputs` are the workflow's inputs; `answers` may answer questions up front "
                             "({node id: option id or text}, each used once; a key ending in `*` answers every "
                             "time). An answer that is no option, or a key that names no question, is an error.")
    async def run(path: str, inputs: dict[str, Any] | None = None, answers: dict[str, str] | None = None) -> dict[str, Any]:
        return await off_the_loop(work.run, path, inputs, answers)

    @server.tool(structured_output=True, description="Answer the question a run waits on and go on: `answers` maps the question's "
                             "`answer_key` to an option id (or free text when `allow_other`). Returns the next "
                             "question or the ending, as `run` does. An answer that is no option is an error "
                             "naming the options; the run keeps waiting for a right one.")
    async def answer(run_id: str, answers: dict[str, str]) -> dict[str, Any]:
        return await off_the_loop(work.resume, run_id, answers)

    @server.tool(structured_output=True, description="Continue a stopped or interrupted run (after a fix, a kill, a usage limit). "
                             "`rerun`/`skip` settle a step that was in flight; `accept_changes` goes on with an "
                             "edited workflow.")
    async def resume(run_id: str, answers: dict[str, str] | None = None, rerun: bool = False, skip: bool = False,
                     accept_changes: bool = False) -> dict[str, Any]:
        return await off_the_loop(work.resume, run_id, answers, rerun, skip, accept_changes)

    @server.tool(structured_output=True, description="A run's status, pending question, last error and step-by-step history.")
    async def show(run_id: str) -> dict[str, Any]:
        return await off_the_loop(work.show, run_id)

    @server.tool(structured_output=True, description="Recorded runs, newest first (`status`: running, waiting, completed, failed, "
                             "stopped, cancelled, interrupted; `limit` 0 lists all).")
    async def runs(status: str | None = None, limit: int = 50) -> dict[str, Any]:
        return await off_the_loop(work.runs, status, limit)

    @server.tool(structured_output=True, description="Cancel a run that has not finished.")
    async def cancel(run_id: str) -> dict[str, Any]:
        return await off_the_loop(work.cancel, run_id)

    @server.resource("wfexec://runs/{run_id}/state", mime_type="application/json",
                     description="A run's state after its last step.")
    async def run_state(run_id: str) -> dict[str, Any]:
        return await off_the_loop(work.state, run_id)

    @server.resource("wfexec://runs/{run_id}/graph", mime_type="text/plain",
                     description="The graph of a run's workflow, as a Mermaid flowchart.")
    async def run_graph(run_id: str) -> str:
        return await off_the_loop(work.graph, run_id)

    server.run("stdio")
    return 0
