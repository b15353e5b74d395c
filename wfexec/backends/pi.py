"""`pi`: the pi coding agent (`npm install -g @mariozechner/pi-coding-agent`), run as Raymond's pi backend runs it.

    pi --mode json [--session-dir DIR] [--session SESSION | --fork SESSION] [--model M] [--provider P]
       [--thinking LEVEL] [--no-tools | --no-builtin-tools | --tools a,b,c] [--no-extensions] [--extension E]...
       [--no-skills] [--skill S]... PROMPT

A workflow chooses it with `backend: pi` (or `backend: {name: pi, options: {...}}`) in its manifest or Raymond
`.yaml`, or a run with `--backend pi:provider=anthropic,thinking=low`. The options are Raymond's: `provider`,
`thinking` (the default when a state gives no effort; a state's `effort` becomes `--thinking`), `tools` (an
allowlist; without one and without permission prompts skipped, read, edit, write, grep, find and ls),
`no_tools`, `no_builtin_tools`, `extensions`, `no_extensions`, `skills`, `no_skills`, `session_dir`. The model is
passed as written (pi has its own default and names).

pi prints one JSON object a line: `session` (its `id`), `message_update` (`text_delta`s: the text as it is
written, where `<print>`s are found), `agent_end` (the messages; the reply is the text of the last assistant
one). A goto resumes the session (`--session`), a `<call>` branches it (`--fork`), `--continue-session` branches
the latest session of the working directory. pi reports no cost in the stream: it is read from the session's
file (`<session dir>/<time>_<id>.jsonl`, by default under `~/.pi/agent/sessions/--<cwd with - for />--/`),
summing its assistant messages' `usage.cost.total`, before and after the turn; the difference is the turn's
(a fork copies its parent's history, and its cost). pi has no usage-limit messages to detect.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

from wfexec.backends.base import Backend, BackendError, BackendTimeout, BackendUnavailable, LLMReply, LLMRequest

DEFAULT_TOOLS = ("read", "edit", "write", "grep", "find", "ls")
OPTIONS = ("provider", "thinking", "tools", "no_tools", "no_builtin_tools", "extensions", "no_extensions", "skills",
           "no_skills", "session_dir", "executable", "timeout", "skip_permissions")
_LISTS = ("tools", "extensions", "skills")
_FLAGS = ("no_tools", "no_builtin_tools", "no_extensions", "no_skills", "skip_permissions")


class PiBackend(Backend):
    name = "pi"

    def __init__(self, executable: str = "pi", *, provider: str | None = None, thinking: str | None = None,
                 tools: Sequence[str] = (), no_tools: bool = False, no_builtin_tools: bool = False,
                 extensions: Sequence[str] = (), no_extensions: bool = False, skills: Sequence[str] = (),
                 no_skills: bool = False, session_dir: str | None = None, timeout: float | None = None,
                 skip_permissions: bool = True):
        self.executable = executable
        self.provider, self.thinking = provider, thinking
        self.tools, self.no_tools, self.no_builtin_tools = tuple(tools), no_tools, no_builtin_tools
        self.extensions, self.no_extensions = tuple(extensions), no_extensions
        self.skills, self.no_skills = tuple(skills), no_skills
        self.session_dir = session_dir
        self.timeout = timeout
        self.skip_permissions = skip_permissions

    @classmethod
    def from_options(cls, options: dict) -> "PiBackend":
        """From a manifest's `backend.options` (or a `pi:key=value,...` spec). Raises ValueError."""
        given: dict[str, Any] = {}
        for key, value in options.items():
            if key not in OPTIONS:
                raise ValueError(f"pi backend option '{key}' is not one of: {', '.join(OPTIONS)}")
            if key in _LISTS:
                items = value.split("+") if isinstance(value, str) else value
                if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
                    raise ValueError(f"pi backend option '{key}' is a list of names")
                given[key] = tuple(items)
            elif key in _FLAGS:
                given[key] = value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes")
            elif key == "timeout":
                try:
                    given[key] = float(value)
                except (TypeError, ValueError):
                    raise ValueError(f"pi backend timeout '{value}' is not a number of seconds") from None
            else:
                given[key] = str(value)
        return cls(**given)

    def describe(self) -> str:
        return f"pi ({self.executable})"

    def argv(self, request: LLMRequest, session: str | None, fork: bool) -> list[str]:
        argv = [self.executable, "--mode", "json"]
        if self.session_dir:
            argv += ["--session-dir", self.session_dir]
        if session:
            argv += ["--fork" if fork else "--session", session]
        if request.model:
            argv += ["--model", request.model]
        if self.provider:
            argv += ["--provider", self.provider]
        thinking = request.effort or self.thinking
        if thinking:
            argv += ["--thinking", thinking]
        if self.no_tools:
            argv.append("--no-tools")
        elif self.no_builtin_tools:
            argv.append("--no-builtin-tools")
        elif self.tools:
            argv += ["--tools", ",".join(self.tools)]
        elif not self.skip_permissions:
            argv += ["--tools", ",".join(DEFAULT_TOOLS)]
        if self.no_extensions:
            argv.append("--no-extensions")
        for extension in self.extensions:
            argv += ["--extension", extension]
        if self.no_skills:
            argv.append("--no-skills")
        for skill in self.skills:
            argv += ["--skill", skill]
        return argv + [request.prompt]

    async def invoke(self, request: LLMRequest) -> LLMReply:
        from wfexec.protocol.processes import ProcessStartError, ProcessTimeout, run_process

        cwd = request.cwd or os.getcwd()
        session, fork = request.session_id, request.fork_session
        if request.continue_latest:
            session, fork = latest_session(self.session_dir, cwd), True
            if session is None:
                raise BackendError("--continue-session: pi has no session in this working directory to continue "
                                   f"from ({session_folder(self.session_dir, cwd)})")
        before = session_cost(session, self.session_dir, cwd) if session else 0.0
        reader = _PiStream(request)
        try:
            output = await run_process(self.argv(request, session, fork), cwd=cwd, env=dict(os.environ),
                                       timeout=request.timeout or self.timeout, on_stdout=reader)
        except ProcessStartError as exc:
            raise BackendUnavailable(f"{exc}; install pi with `npm install -g @mariozechner/pi-coding-agent` "
                                     "(Node.js is needed), or choose another backend") from None
        except ProcessTimeout as exc:
            raise BackendTimeout(f"pi gave no reply for {exc.seconds:g} s and was stopped", exc.seconds) from None
        reader("\n")  # a last line without its newline
        if output.returncode != 0:
            detail = (output.stderr.strip() or output.stdout.strip())[-1000:]
            raise BackendError(f"pi exited with status {output.returncode}: {detail}")
        if reader.text is None:
            raise BackendError(f"pi printed no agent_end event: {output.stdout.strip()[:300]!r}")
        cost = 0.0
        if reader.session_id:
            cost = max(0.0, session_cost(reader.session_id, self.session_dir, cwd) - before)
        return LLMReply(text=reader.text, session_id=reader.session_id, cost_usd=cost)


class _PiStream:
    """pi's JSON lines as they come: the session id, the text deltas (to the request's stream), the final text."""

    def __init__(self, request: LLMRequest):
        self.pending = ""
        self.stream = request.stream
        self.session_id: str | None = None
        self.text: str | None = None

    def __call__(self, chunk: str) -> None:
        *lines, self.pending = (self.pending + chunk).split("\n")
        for line in lines:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(event, dict):
                continue
            if self.stream is not None:
                self.stream.event(event)
            kind = event.get("type")
            if kind == "session" and isinstance(event.get("id"), str) and event["id"]:
                self.session_id = event["id"]
            elif kind == "agent_start" and isinstance(event.get("sessionId"), str) and event["sessionId"]:
                self.session_id = event["sessionId"]  # older pi put it here
            elif kind == "message_update" and event.get("updateType") == "text_delta":
                if self.stream is not None and isinstance(event.get("text"), str):
                    self.stream.text(event["text"])
            elif kind == "agent_end":
                self.text = _last_assistant_text(event.get("messages"))


def _last_assistant_text(messages: Any) -> str:
    for message in reversed(messages if isinstance(messages, list) else []):
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return "".join(part.get("text", "") for part in content or []
                       if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str))
    return ""


def session_folder(session_dir: str | None, cwd: str) -> Path:
    """Where pi keeps the sessions of `cwd`: `session_dir`, else ~/.pi/agent/sessions/--<cwd, / as ->--."""
    if session_dir:
        return Path(session_dir)
    mangled = "--" + cwd.replace(os.sep, "/").strip("/").replace("/", "-") + "--"
    return Path.home() / ".pi" / "agent" / "sessions" / mangled


def _session_file(session: str, session_dir: str | None, cwd: str) -> Path | None:
    folder = session_folder(session_dir, cwd)
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    for name in names:
        if name.endswith(f"_{session}.jsonl") or name == f"{session}.jsonl":
            return folder / name
    return None


def session_cost(session: str, session_dir: str | None, cwd: str) -> float:
    """The cost of a pi session so far: its assistant messages' `usage.cost.total`, summed (0 without a file)."""
    path = _session_file(session, session_dir, cwd)
    if path is None:
        return 0.0
    total = 0.0
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return 0.0
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(record, dict):
            continue
        message = record["message"] if isinstance(record.get("message"), dict) else {}
        if record.get("type") == "turn_end" or (record.get("type") == "message" and message.get("role") == "assistant"):
            usage = record["usage"] if isinstance(record.get("usage"), dict) else message.get("usage")
            cost = usage.get("cost") if isinstance(usage, dict) else None
            if isinstance(cost, dict) and isinstance(cost.get("total"), (int, float)):
                total += float(cost["total"])
    return total


def latest_session(session_dir: str | None, cwd: str) -> str | None:
    """The id of the session pi wrote last in this working directory, or None."""
    folder = session_folder(session_dir, cwd)
    try:
        files = [folder / n for n in os.listdir(folder) if n.endswith(".jsonl")]
    except OSError:
        return None
    if not files:
        return None
    stem = max(files, key=lambda p: p.stat().st_mtime).name[: -len(".jsonl")]
    return stem.rpartition("_")[2] or stem
