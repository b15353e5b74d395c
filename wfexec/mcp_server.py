"""`wfexec mcp`: wfexec's commands as tools of a stdio MCP server, for Claude Code (`claude mcp add`).

A skill drives a workflow with `run`, then `answer` for each question it parks on. Runs go to worker processes
the server keeps warm (`Workers`), each driving one run at a time through the same code as `wfexec run`
(`start_run`, `resume_run`) and keeping the workflows it compiled in memory between calls (checked against
their files each time). A run's process is its own so that stopping it is what Ctrl-C does at a terminal
(SIGINT: the step's process group killed, the run `stopped`, resumable), and so that several runs go at once
while `runs`, `show`, `validate` and `cancel` answer from the server itself. Results are structured: a run that
parks returns the question with its options; one that ends returns its ending.

Tools: validate, run, answer, resume, show, runs, cancel. Resources: `wfexec://runs/{run_id}/state` (the run's
state, whole), `wfexec://runs/{run_id}/state/{page}` (the same JSON text in pages), `wfexec://runs/{run_id}/record`
(what `show` gives, whole) and `wfexec://runs/{run_id}/graph` (its workflow, as Mermaid).

What the tools accept, and why:
- paths only under the server's roots (`--root DIR`, repeatable; by default the working directory and the
  folders Claude Code keeps skills and plugins in), symlinks resolved: the client is a model, and a path
  outside is refused rather than read;
- a file that is not a workflow (no .yaml/.yml, or not a mapping with `nodes`) is reported as not one, without
  a word of its content;
- every tool result is at most `RESULT_CAP_BYTES` of JSON; a bigger one keeps its small fields and says where
  the rest is (the resources above).

Runs are recorded in the store `--store` names (else $WFEXEC_STORE, else `.wfexec/runs.db` in the folder the
server was started in), like the CLI's, so `wfexec runs`, `show` and `resume` see them too.
"""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path
from typing import Any

INSTRUCTIONS = (
    "wfexec runs YAML agent workflows (workflow.yaml) deterministically. Call `run` with the workflow's path; "
    "when the result's status is `waiting`, ask the person the `question` (offer its `options`), then call "
    "`answer` with the run_id and {answer_key: option id or text}. Repeat until the status is `completed` or "
    "`failed`; the result's `message` is what the workflow says at its end.")

# A tool result's JSON, at most: about 25,000 tokens, what a client such as Claude Code shows a model of one
# tool call before it cuts the rest off itself (without saying where the rest is).
RESULT_CAP_BYTES = 100_000
RUNS_LIMIT_MAX = 100
PATH_MAX_CHARS = 4096  # Linux's PATH_MAX: a longer path names no file
WORKFLOW_SUFFIXES = (".yaml", ".yml")
MAX_WORKERS = 8        # runs in flight at once; a further `run` waits for one to end or park
IDLE_WORKERS = 2       # warm workers kept for the next run


TOOL_DESCRIPTIONS = {
    "run": "Start a run of a workflow (a workflow.yaml, a skill folder, or a states folder of .md/.sh states, whose "
           "one input is `input`). Returns its ending, or the question it waits on (status `waiting`, with "
           "`answer_key`, `question` and `options`): answer it with `answer`. `inputs` are the workflow's inputs; "
           "`answers` may answer questions up front ({node id: option id or text}, each used once; a key ending in "
           "`*` answers every time). An answer that is no option, or a key that names no question, is an error.",
    "answer": "Answer the question a run waits on and go on: `answers` maps the question's `answer_key` to an "
              "option id (or free text when `allow_other`). Returns the next question or the ending, as `run` "
              "does. An answer that is no option is an error naming the options; the run keeps waiting for a "
              "right one.",
    "resume": "Continue a stopped or interrupted run (after a fix, a kill, a usage limit). `rerun`/`skip` settle a "
              "step that was in flight; `accept_changes` goes on with an edited workflow.",
}


def tool_signature(tool: str, leading: str):
    """The input of the MCP tool `tool` (run, answer, resume): `leading` (the workflow's path or the run's id),
    then each run option the tool takes, with its declared type, default and bounds (wfexec.running.request)."""
    import inspect
    import typing

    from pydantic import Field

    from wfexec.running.request import RunRequest, options_of

    hints = typing.get_type_hints(RunRequest, localns={"Any": Any})  # request.py imports typing for mypy only
    parameters = [inspect.Parameter(leading, inspect.Parameter.KEYWORD_ONLY, annotation=str)]
    for spec in options_of("mcp", tool):
        bounds: dict[str, Any] = {key: value for key, value in (("ge", spec.min), ("le", spec.max)) if value is not None}
        annotation = typing.Annotated.__class_getitem__((hints[spec.name], Field(description=spec.help, **bounds)))  # type: ignore[attr-defined]
        parameters.append(inspect.Parameter(spec.name, inspect.Parameter.KEYWORD_ONLY, default=spec.default,
                                            annotation=annotation))
    return inspect.Signature(parameters, return_annotation=dict[str, Any])


class ToolRefused(Exception):
    """A tool's arguments refused before anything was read or run: the client gets a tool error saying why."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message + (f" — {self.hint}" if self.hint else "")


def default_roots() -> list[Path]:
    """Where paths may lead when `--root` is not given: the working directory (a project's own
    `.claude/skills` included) and the folders Claude Code keeps personal skills and installed plugins in,
    whose SKILL.md files call `run` with `${CLAUDE_SKILL_DIR}`."""
    claude = Path(os.environ.get("CLAUDE_CONFIG_DIR") or "~/.claude").expanduser()
    roots = [Path.cwd(), claude / "skills", claude / "plugins"]
    if os.environ.get("CLAUDE_PLUGIN_ROOT"):  # a plugin's .mcp.json starting this server
        roots.append(Path(os.environ["CLAUDE_PLUGIN_ROOT"]))
    return roots


def capped(result: Any, more: str) -> Any:
    """`result`, or when its JSON is over RESULT_CAP_BYTES, the same mapping with its biggest fields left out and a
    `truncated` message saying so and where the rest is (`more`): the small fields (status, run id, ending,
    question) are what the client acts on."""
    text = json.dumps(result, default=str, ensure_ascii=False)
    size = len(text.encode())
    if size <= RESULT_CAP_BYTES or not isinstance(result, dict):
        return result
    sizes = sorted(((len(json.dumps(v, default=str, ensure_ascii=False).encode()), k) for k, v in result.items()),
                   reverse=True)
    kept, left, total = dict(result), [], size
    for field_size, key in sizes:
        if total <= RESULT_CAP_BYTES // 2:  # room for the message and the placeholders
            break
        kept[key] = f"(left out: {field_size:,} bytes)"
        left.append(key)
        total -= field_size
    kept["truncated"] = (f"this result is {size:,} bytes of JSON, over the {RESULT_CAP_BYTES:,}-byte cap of a "
                         f"tool result; left out: {', '.join(left)}. {more}")
    return kept


def run_more(run_id: str) -> str:
    return (f"Read the run whole as resources: wfexec://runs/{run_id}/record (the record `show` gives), "
            f"wfexec://runs/{run_id}/state (its state; or in pages: wfexec://runs/{run_id}/state/1, /2, …)")


class Server:
    """The tools' work, kept apart from the MCP wiring (`serve`) so it can be called directly; the server and each
    of its workers hold one."""

    def __init__(self, store: Path | None = None, roots: list[Path] | None = None):
        self.store = store
        self.roots = [Path(r).expanduser().resolve() for r in (roots if roots else default_roots())]
        self.compiled: dict = {}  # workflow_cache's memory: compiled workflows kept between calls

    # -- arguments -------------------------------------------------------------------------------
    def allowed(self, path: Any) -> Path:
        """`path` resolved (symlinks too), if it is under a root; else ToolRefused naming the rule."""
        if not isinstance(path, str) or not path:
            raise ToolRefused("`path` must be a non-empty path", "give a workflow.yaml or a skill folder")
        if "\0" in path:
            raise ToolRefused("`path` contains a NUL character, which no file name can hold", "give the path as text")
        if len(path) > PATH_MAX_CHARS:
            raise ToolRefused(f"`path` is {len(path):,} characters long; a path has at most {PATH_MAX_CHARS:,}",
                              "give the workflow's real path")
        try:
            resolved = Path(path).expanduser().resolve()
        except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a name too long for the system
            raise ToolRefused(f"`path` cannot be resolved: {exc}", "give the workflow's real path") from None
        if not any(resolved == root or resolved.is_relative_to(root) for root in self.roots):
            raise ToolRefused(f"{path} is outside the folders this server may read: the tools read only paths under "
                              f"its roots ({', '.join(map(str, self.roots))}), symlinks resolved",
                              "move the workflow under a root, or start the server with `wfexec mcp --root DIR` "
                              "(repeatable)")
        return resolved

    # -- workflows -------------------------------------------------------------------------------
    def _checked(self, path: str):
        """The workflow checked, or a `Checked` whose one diagnostic says the file is not a workflow."""
        from wfexec.api import check_with_summary, resolve_workflow_path
        from wfexec.language import workflow_cache
        from wfexec.language.loader import load_file

        file = resolve_workflow_path(self.allowed(path))
        if not file.exists():  # said as the command line says it (`file-missing`), of the path as given
            return check_with_summary(resolve_workflow_path(Path(path).expanduser()))
        if file.suffix not in WORKFLOW_SUFFIXES:
            return _not_a_workflow(file, f"a workflow is a {' or '.join(WORKFLOW_SUFFIXES)} file, or a folder "
                                         "holding workflow.yaml")
        kept = workflow_cache.load(file, self.compiled)
        if kept is not None:
            return kept
        document = load_file(file)
        data = document.data
        if data is not None and (not isinstance(data, dict) or "nodes" not in data):
            # Said without any of it: whatever the file is, its lines are not the client's to read.
            return _not_a_workflow(file, "its top level is not a mapping with `nodes`")
        checked = check_with_summary(file, document)  # keeps a result without errors in the disk cache
        return workflow_cache.load(file, self.compiled) or checked

    def validate(self, path: str) -> dict:
        """What `wfexec validate` reports (`wfexec.api.validation`), the workflow compiled as this server does."""
        from wfexec.api import validation

        found = validation(self.allowed(path), check=lambda _: self._checked(path))
        diagnostics = [d.to_json() for d in found.diagnostics]
        if found.states:  # a states folder: Raymond's lint is its check
            return {"valid": found.valid, "states": True, "diagnostics": diagnostics, "summary": None}
        return {"valid": found.valid, "diagnostics": diagnostics,
                "summary": found.summary.to_json() if found.summary is not None else None}

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

    def _recorded_workflow(self, path: str):
        """A run's own workflow, as its record names it: the store is trusted (a run started at the command line
        resumes here), so no root applies."""
        from wfexec.api import check_with_summary, resolve_workflow_path
        from wfexec.language import workflow_cache
        from wfexec.language.diagnostics import ERROR, WorkflowError

        file = resolve_workflow_path(path)
        checked = workflow_cache.load(file, self.compiled) or check_with_summary(file)
        errors = [d for d in self._linted(checked) if d.severity == ERROR]
        if checked.workflow is None or errors:
            raise WorkflowError(errors)
        return checked.workflow

    # -- runs -----------------------------------------------------------------------------------
    def request(self, **given: Any):
        """The run request of a tool call: its arguments (the options the tool takes, declared once in
        wfexec.running.request), in this server's store, asking nobody."""
        from wfexec.running.request import OptionError, RunRequest

        try:
            return RunRequest(store=self.store, **{name: value for name, value in given.items() if value is not None})
        except OptionError as exc:  # a tool error, as the SDK's own check of an argument is
            raise ToolRefused(exc.message) from None

    def _finish(self, drive, notes: list[str] | None = None) -> dict:
        from wfexec.commands.run import driven_json
        from wfexec.errors import WfexecError
        from wfexec.running.console import Console
        from wfexec.running.prompts import AnswerRefused

        out, err = io.StringIO(), io.StringIO()
        console = Console(out=out, err=err, color=False)
        try:
            driven = drive(console)
        except AnswerRefused:
            raise  # the tool's error (`serve`), not a result: the run did not move
        except WfexecError as exc:
            return {"status": exc.outcome, "error": exc.message, "hint": in_tool_terms(exc.hint) or None}
        if driven.refused is not None:
            raise driven.refused
        result = driven_json(driven)
        if result.get("hint"):
            result["hint"] = in_tool_terms(result["hint"])
        # What the run printed, beside (never over) `output`, the values its ending returns.
        result["printed"] = out.getvalue()
        if err.getvalue():
            result["notes"] = err.getvalue()
        if getattr(driven, "notes", None):
            result["notes"] = (result.get("notes") or "") + "".join(f"note: {n}\n" for n in driven.notes)
        if notes:  # what was said before the run started (a config file's warnings)
            result["notes"] = "".join(f"{n}\n" for n in notes) + (result.get("notes") or "")
        return capped(result, run_more(driven.run_id))

    def run(self, path: str, **options: Any) -> dict:
        """What `wfexec run PATH` runs: a workflow, or a states folder as the one-node workflow every door runs for
        it (`wfexec.api.states_run`; its input is `inputs: {"input": TEXT}`)."""
        from wfexec.api import engine_options, start_recorded, states_run
        from wfexec.errors import WfexecError
        from wfexec.language.diagnostics import WorkflowError
        from wfexec.language.inputs import InputError, check_inputs
        from wfexec.protocol.folders import workflow_document
        from wfexec.running.prompts import Answers

        allowed = self.allowed(path)
        request = self.request(path=allowed, **options)
        notes: list[str] = []
        written = None
        try:
            try:
                if workflow_document(allowed) is None:  # a states folder (a folder of .md/.sh states, .zip, …)
                    written = states_run(request, warn=notes.append)
                    request = written.request
                    workflow = self._recorded_workflow(request.path)  # written by wfexec beside the store
                else:
                    workflow = self._workflow(path)
                    request = request.replace(path=workflow.path)
                checked_inputs = check_inputs(dict(request.inputs), workflow.input_schema, passing=_passed_as_argument)
            except WorkflowError as exc:
                return capped({"status": "invalid", "error": "the workflow has errors",
                               "diagnostics": [d.to_json() for d in exc.diagnostics]},
                              f"`wfexec validate {path}` lists every diagnostic")
            except InputError as exc:
                return {"status": "invalid", "error": str(exc)}
            except WfexecError as exc:  # the config file, the folder, the store: refused before anything ran
                return {"status": exc.outcome, **_said(exc)}
            engine = engine_options(request, Answers(request.answers))
            return self._finish(lambda console: start_recorded(request, workflow, checked_inputs, console, engine),
                                notes)
        finally:
            if written is not None:
                written.close()

    def resume(self, run_id: str, **options: Any) -> dict:
        from wfexec.api import engine_options, resume_recorded
        from wfexec.running.prompts import Answers

        request = self.request(run_id=run_id, **options)
        engine = engine_options(request, Answers(request.answers))
        return self._finish(lambda console: resume_recorded(request, self._recorded_workflow, console, engine))

    def record(self, run_id: str) -> dict:
        """What `show` gives, whole."""
        return self._read(lambda store: {**store.get(run_id).to_json(),
                                         "journal": store.journal(store.get(run_id).id)})

    def show(self, run_id: str) -> dict:
        shown = self.record(run_id)
        return capped(shown, run_more(shown["id"])) if "id" in shown else shown

    def runs(self, status: str | None = None, limit: int = 50) -> dict:
        from wfexec.durable.store import STATUSES

        shown = (*STATUSES, "interrupted")
        if status is not None and status not in shown:
            raise ToolRefused(f"`status` '{status}' is no status of a run (statuses: {', '.join(shown)})",
                              "leave it out to list runs of every status")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= RUNS_LIMIT_MAX:
            raise ToolRefused(f"`limit` must be a whole number from 1 to {RUNS_LIMIT_MAX}, not {limit!r}",
                              f"the newest {RUNS_LIMIT_MAX} at most; `wfexec runs` lists them all")
        return capped(self._read(lambda store: {"runs": [_summary(r) for r in store.list(status, limit)],
                                                "total": store.count(status)}, listing={"runs": [], "total": 0}),
                      "ask for fewer with `limit`")

    def state(self, run_id: str) -> dict:
        return self._read(lambda store: store.snapshot(store.get(run_id).id)[1])

    def state_page(self, run_id: str, page: str) -> str:
        """Page `page` (from 1) of the state's JSON text, RESULT_CAP_BYTES characters each; joined in order,
        the pages are that text."""
        text = json.dumps(self.state(run_id), default=str, ensure_ascii=False)
        pages = max(1, -(-len(text) // RESULT_CAP_BYTES))
        if not page.isdigit() or not 1 <= int(page) <= pages:
            raise ToolRefused(f"the state of run {run_id} has {pages} page(s); there is no page '{page}'",
                              f"read wfexec://runs/{run_id}/state/1 to /{pages}")
        number = int(page)
        return text[(number - 1) * RESULT_CAP_BYTES:number * RESULT_CAP_BYTES]

    def graph(self, run_id: str) -> str:
        from wfexec.outputs.graph import mermaid_of, picture

        path = self._read(lambda store: {"path": store.get(run_id).workflow_path})
        if "error" in path:
            return f"error: {path['error']}"
        return mermaid_of(picture(self._recorded_workflow(path["path"])))

    def cancel(self, run_id: str) -> dict:
        """Cancel a run nothing drives (waiting, stopped, interrupted): it is never resumed. A run this server
        drives is stopped by `serve`'s cancel instead."""
        from wfexec.durable.store import FINISHED, StoreError, lease_alive, store_of_run

        try:
            store = store_of_run(self.store, run_id, readonly=False)
        except StoreError as exc:
            return {"status": "invalid", **_said(exc)}
        try:
            record = store.get(run_id)
            if record.status in FINISHED:
                raise StoreError(f"run {record.id} has already finished ({record.status})", "nothing to cancel")
            if record.status == "running" and lease_alive(record.lease):
                raise StoreError(f"run {record.id} is being driven by process {record.lease}, not by this server",
                                 "stop it where it runs (Ctrl-C), then cancel it here")
            store.set_status(record.id, "cancelled", current_node=None, pending_question=None)
            return {"status": "cancelled", "run_id": record.id}
        except StoreError as exc:
            return {"status": "invalid", **_said(exc)}
        finally:
            store.close()

    def _read(self, body, listing: Any = None) -> Any:
        """`body` of the store read-only. `listing`: what a listing of no runs gives, as `wfexec runs` says "no runs"
        where none was made yet (store_to_list)."""
        from wfexec.durable.store import StoreError, open_store, store_to_list

        try:
            store = open_store(self.store, readonly=True) if listing is None else store_to_list(self.store)
        except StoreError as exc:
            return _said(exc)
        if store is None:
            return listing
        try:
            return body(store)
        except StoreError as exc:
            return _said(exc)
        finally:
            store.close()


def _said(exc) -> dict:
    """A WfexecError (a StoreError, …) as a tool's result says it."""
    return {"error": exc.message, "hint": exc.hint or None}


def _passed_as_argument(name: str) -> str:
    """How a tool call passes the workflow's input `name` (what a missing input's error tells to do)."""
    return f'`inputs: {{{json.dumps(name)}: VALUE}}`'


def in_tool_terms(hint: str) -> str:
    """A hint the run's code words for the command line (`resume with --rerun to run it again or --skip to go on`,
    `raise --max-steps`), with each flag of an option the tools take named as their argument is (`rerun: true`,
    `skip: true`, `max_steps`): the door's words for the same remedy, from the one declaration of each option."""
    if "--" not in hint:
        return hint
    import re

    from wfexec.running.request import RunRequest, options

    for spec in options().values():
        if spec.mcp and spec.flag and spec.form is None and spec.flag in hint:
            said = f"`{spec.name}: true`" if RunRequest.__annotations__[spec.name] == "bool" else f"`{spec.name}`"
            hint = re.sub(rf"(?<![\w-]){re.escape(spec.flag)}(?![\w-])", said, hint)
    return hint


def _summary(record) -> dict:
    """A run as `runs` lists it: what tells runs apart, not what they hold (show and the resources give that)."""
    pending = record.pending_question or {}
    return {"id": record.id, "workflow": record.workflow_name, "workflow_path": record.workflow_path,
            "status": record.shown_status, "node": record.current_node, "steps": record.steps,
            "created_at": record.created_at, "updated_at": record.updated_at, "finished_at": record.finished_at,
            "ending": record.ending, "ending_type": record.ending_type, "waiting_on": pending.get("node"),
            "last_error": (record.last_error or "")[:500] or None}


def _not_a_workflow(file: Path, why: str):
    from wfexec.language.checked import Checked
    from wfexec.language.diagnostics import Diagnostic

    return Checked(workflow=None, diagnostics=[Diagnostic(
        str(file), 1, 1, "", "error", "not-a-workflow", f"{file} is not a workflow: {why}",
        "give a workflow.yaml, or the skill folder holding one")])


class Worker:
    """One warm worker process (`work`), driving one run at a time: a request line in, a reply line out."""

    def __init__(self, process):
        from anyio.streams.buffered import BufferedByteReceiveStream

        self.process = process
        self.replies = BufferedByteReceiveStream(process.stdout)
        self.done: Any = None  # an anyio.Event set when the call in flight has its reply

    @classmethod
    async def start(cls, argv: list[str]) -> "Worker":
        import anyio

        from wfexec.system import subprocesses

        # Its own process group, known to the orphan watchdog: if the server is killed, its runs' processes go
        # too (each worker's own watchdog then stops the steps it started).
        process = await anyio.open_process(argv, stderr=None, start_new_session=True)
        subprocesses.watch(process.pid)
        return cls(process)

    @property
    def lease(self) -> str:
        from wfexec.durable.store import lease_holder

        return lease_holder(self.process.pid)

    async def ask(self, tool: str, arguments: dict) -> dict:
        import anyio

        self.done = anyio.Event()
        try:
            await self.process.stdin.send((json.dumps({"tool": tool, "arguments": arguments}) + "\n").encode())
            try:
                return await self._reply()
            except anyio.get_cancelled_exc_class():
                # The client cancelled the call (notifications/cancelled): the run stops as at Ctrl-C, and its
                # reply is still read, so the worker is free for the next call.
                with anyio.CancelScope(shield=True):
                    self.interrupt()
                    try:
                        await self._reply()
                    except (ToolRefused, OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                        pass
                raise
        finally:
            self.done.set()

    async def _reply(self) -> dict:
        import anyio

        try:
            # A worker caps what it replies (`capped`); four times the cap leaves room for JSON's escapes.
            line = await self.replies.receive_until(b"\n", 4 * RESULT_CAP_BYTES + 65536)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.DelimiterNotFound):
            code = await self.process.wait() if self.process.returncode is None else self.process.returncode
            raise ToolRefused(f"the worker process driving the run ended unexpectedly (exit code {code})",
                              "see the server's log; `runs` shows where the run was left, `resume` continues it")
        return json.loads(line)

    def interrupt(self) -> None:
        """What Ctrl-C does to `wfexec run`: the step's process group killed, the run `stopped`, resumable."""
        import signal

        if self.process.returncode is None:
            self.process.send_signal(signal.SIGINT)

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    async def close(self) -> None:
        import anyio

        from wfexec.system import subprocesses

        with anyio.CancelScope(shield=True):
            try:
                await self.process.stdin.aclose()  # its loop ends at end of input
            except (OSError, anyio.BrokenResourceError):
                pass
            with anyio.move_on_after(5):
                await self.process.wait()
            subprocesses.done_with(self.process)
            with anyio.move_on_after(2):
                await self.process.aclose()  # reaped and its pipes closed while the event loop still runs


class Workers:
    """The worker processes `run`, `answer` and `resume` go to: started as needed (at most MAX_WORKERS at once),
    a few kept warm for the next call."""

    def __init__(self, argv: list[str]):
        import anyio

        self.argv = argv
        self.idle: list[Worker] = []
        self.busy: set[Worker] = set()
        self.slots = anyio.Semaphore(MAX_WORKERS)

    async def call(self, tool: str, arguments: dict) -> dict:
        async with self.slots:
            worker = self.idle.pop() if self.idle else await Worker.start(self.argv)
            self.busy.add(worker)
            try:
                return await worker.ask(tool, arguments)
            finally:
                self.busy.discard(worker)
                if worker.alive and len(self.idle) < IDLE_WORKERS:
                    self.idle.append(worker)
                else:
                    await worker.close()

    def driving(self, lease: str | None) -> Worker | None:
        return next((w for w in self.busy if lease is not None and w.lease == lease), None)

    async def warm(self) -> None:
        """One worker started ahead, so the first run does not wait for a process to start."""
        if not self.idle and not self.busy:
            self.idle.append(await Worker.start(self.argv))

    async def close(self) -> None:
        import anyio

        with anyio.CancelScope(shield=True):
            for worker in list(self.busy):
                worker.interrupt()  # runs still going when the client leaves stop, resumable
            with anyio.move_on_after(30):
                for worker in list(self.busy):
                    await worker.done.wait()
            for worker in [*self.idle, *self.busy]:
                await worker.close()


def work(argv: list[str]) -> int:
    """A worker process (`python -m wfexec.mcp_server CONFIG`): reads one request per line on stdin and writes one
    reply per line, until its input ends. SIGINT stops the run in flight as Ctrl-C stops `wfexec run`."""
    from wfexec.system import signals

    config = json.loads(argv[0])
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever a run prints goes to the server's log, never into a reply
    signals.install()
    server = Server(Path(config["store"]) if config.get("store") else None, [Path(r) for r in config["roots"]])
    while True:
        line = None
        try:
            line = sys.stdin.readline()
            if not line:
                return 0
            reply = _answer(server, json.loads(line))
        except KeyboardInterrupt as interrupt:
            if not line:
                continue  # a stop meant for a call that had already ended
            reply = {"result": _stopped(interrupt)}
        try:
            with signals.deferred():
                replies.write(json.dumps(reply, default=str, ensure_ascii=False) + "\n")
                replies.flush()
        except KeyboardInterrupt:
            pass  # the call has ended: nothing is left to stop


def _answer(server: Server, request: dict) -> dict:
    from wfexec.running.prompts import AnswerRefused

    try:
        return {"result": getattr(server, request["tool"])(**request["arguments"])}
    except KeyboardInterrupt as interrupt:
        return {"result": _stopped(interrupt)}
    except (AnswerRefused, ToolRefused) as refused:
        return {"refused": refused.message + (f" — {refused.hint}" if refused.hint else "")}
    except Exception as exc:  # a bug: the tool's error says so; the worker lives on for the next call
        import traceback

        traceback.print_exc()
        return {"refused": f"internal error: {type(exc).__name__}: {exc} — a bug in wfexec; please report it with "
                           "the server's log"}


def _stopped(interrupt: KeyboardInterrupt) -> dict:
    run_id = getattr(interrupt, "run_id", None)
    if run_id is None:
        return {"status": "stopped", "run_id": None, "error": "stopped before the run started"}
    return {"status": "stopped", "run_id": run_id, "error": "stopped: the call was cancelled",
            "hint": f"continue it with `resume` (run_id {run_id}), or `cancel` it"}


def serve(store: Path | None = None, roots: list[Path] | None = None) -> int:
    """Serve the tools over stdio until the client closes the connection."""
    try:
        import anyio
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        print("error: `wfexec mcp` needs the MCP SDK — pip install 'wfexec[mcp]'", file=sys.stderr)
        return 2
    from wfexec.version import __version__

    work_here = Server(store, roots)
    server = MCPServer(name="wfexec", version=__version__, instructions=INSTRUCTIONS)
    config = {"store": str(store) if store is not None else None, "roots": [str(r) for r in work_here.roots]}
    workers = Workers([sys.executable, "-m", "wfexec.mcp_server", json.dumps(config)])
    # Checking a workflow compiles it (the JavaScript engine included): one at a time. Reading the store is not.
    compiling = anyio.CapacityLimiter(1)

    async def here(fn, *args, limiter=None):
        try:
            return await anyio.to_thread.run_sync(lambda: fn(*args), limiter=limiter)
        except ToolRefused as refused:  # a tool error the model reads
            raise ToolError(str(refused)) from None

    async def in_worker(tool: str, **arguments) -> dict:
        try:
            reply = await workers.call(tool, arguments)
        except ToolRefused as refused:
            raise ToolError(str(refused)) from None
        if "refused" in reply:  # a tool error the model reads, with the options to answer again
            raise ToolError(reply["refused"])
        return reply["result"]

    @server.tool(structured_output=True, description="Check a workflow.yaml (or a skill folder holding one): its diagnostics, and how "
                             "many of its steps run as code, ask a person, or go to an LLM.")
    async def validate(path: str) -> dict[str, Any]:
        return await here(lambda: capped(work_here.validate(path), f"`wfexec validate {path}` lists them all"),
                          limiter=compiling)

    async def run(**arguments: Any) -> dict[str, Any]:
        return await in_worker("run", **arguments)

    async def answer(**arguments: Any) -> dict[str, Any]:
        return await in_worker("resume", **arguments)

    async def resume(**arguments: Any) -> dict[str, Any]:
        return await in_worker("resume", **arguments)

    for tool, leading in ((run, "path"), (answer, "run_id"), (resume, "run_id")):
        tool.__signature__ = tool_signature(tool.__name__, leading)  # type: ignore[attr-defined]
        server.tool(structured_output=True, description=TOOL_DESCRIPTIONS[tool.__name__])(tool)

    @server.tool(structured_output=True, description="A run's status, pending question, last error and step-by-step history.")
    async def show(run_id: str) -> dict[str, Any]:
        return await here(work_here.show, run_id)

    @server.tool(structured_output=True, description=f"Recorded runs, newest first, as summaries (id, workflow, status, node, "
                             "times, ending): `status` one of running, waiting, completed, failed, stopped, cancelled, "
                             f"interrupted; `limit` from 1 to {RUNS_LIMIT_MAX}.")
    async def runs(status: str | None = None, limit: int = 50) -> dict[str, Any]:
        return await here(work_here.runs, status, limit)

    @server.tool(structured_output=True, description="Stop or cancel a run. A run going now (in a `run`, `answer` or `resume` call) "
                             "stops as at Ctrl-C: its step's processes are killed and it is `stopped`, so `resume` "
                             "can continue it. A run that is waiting or stopped is cancelled for good.")
    async def cancel(run_id: str) -> dict[str, Any]:
        record = await here(work_here.record, run_id)
        worker = workers.driving(record.get("lease")) if record.get("status") == "running" else None
        if worker is None:
            return await here(work_here.cancel, run_id)
        done = worker.done
        worker.interrupt()
        await done.wait()
        after = await here(work_here.record, run_id)
        return {"status": after.get("status"), "run_id": record["id"],
                "hint": f"continue it with `resume` (run_id {record['id']}), or `cancel` it again to end it for good"}

    @server.resource("wfexec://runs/{run_id}/state", mime_type="application/json",
                     description="A run's state after its last step, whole.")
    async def run_state(run_id: str) -> dict[str, Any]:
        return await here(work_here.state, run_id)

    @server.resource("wfexec://runs/{run_id}/state/{page}", mime_type="text/plain",
                     description=f"A run's state as JSON text, in pages of {RESULT_CAP_BYTES:,} characters from 1: "
                                 "joined in order they are the whole text.")
    async def run_state_page(run_id: str, page: str) -> str:
        return await here(work_here.state_page, run_id, page)

    @server.resource("wfexec://runs/{run_id}/record", mime_type="application/json",
                     description="What `show` gives for a run, whole (its result and every journal step).")
    async def run_record(run_id: str) -> dict[str, Any]:
        return await here(work_here.record, run_id)

    @server.resource("wfexec://runs/{run_id}/graph", mime_type="text/plain",
                     description="The graph of a run's workflow, as a Mermaid flowchart.")
    async def run_graph(run_id: str) -> str:
        return await here(work_here.graph, run_id, limiter=compiling)

    async def main() -> None:
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(workers.warm)
                await server.run_stdio_async()
                group.cancel_scope.cancel()
        finally:
            await workers.close()

    anyio.run(main)
    return 0


if __name__ == "__main__":  # a worker process of `serve`
    sys.exit(work(sys.argv[1:]))
