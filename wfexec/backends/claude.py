"""`claude`: the Claude Code CLI in print mode with streaming JSON output.

    claude -p --output-format stream-json --verbose
           --dangerously-skip-permissions | --permission-mode MODE
           --model M [--effort E]
           [--resume SESSION [--fork-session] | -c --fork-session]
           --disallowed-tools EnterPlanMode,ExitPlanMode,AskUserQuestion,NotebookEdit
           -- PROMPT

The output is one JSON object a line as the turn goes on (`system` init,
`assistant` messages with text and tool calls, `user` tool results), ending
with `{"type": "result", "subtype": "success", "result": TEXT, "session_id":
ID, "total_cost_usd": COST, ...}`; a single JSON object (`--output-format
json`) is accepted too. Streaming is what makes a long turn visible (the
status line shows the tool in use) and gives `timeout` its meaning: seconds
without output, not seconds in all. A `goto`
resumes the agent's session; a `call` resumes the caller's with
`--fork-session`, so the callee works on a branch and the caller's history
stays clean. Prompts larger than argv comfortably holds go on stdin.
"""

from __future__ import annotations

import json
import os
from typing import Sequence

from wfexec.backends.base import (Backend, BackendError, BackendTimeout, BackendUnavailable, LLMReply, LLMRequest,
                                  UsageLimitReached)
from wfexec.system import progress

DEFAULT_MODEL = "sonnet"
DISALLOWED_TOOLS = "EnterPlanMode,ExitPlanMode,AskUserQuestion,NotebookEdit"
PROMPT_ON_ARGV_LIMIT = 100_000  # bytes; Linux refuses one argument over 128 KiB
USAGE_LIMIT_MARKERS = ("hit your limit", "out of extra usage")
ROOT_REFUSAL = "--dangerously-skip-permissions cannot be used with root/sudo privileges"
# Accepted spellings of "no permission prompts at all".
BYPASS = ("bypass", "bypassPermissions", "dangerously-skip-permissions", "skip")


class ClaudeBackend(Backend):
    name = "claude"

    def __init__(self, executable: str = "claude", *, model: str | None = None, effort: str | None = None,
                 permission_mode: str = "bypass", extra_args: Sequence[str] = (), timeout: float | None = None):
        self.executable = executable
        self.model = model
        self.effort = effort
        self.permission_mode = permission_mode
        self.extra_args = tuple(extra_args)
        self.timeout = timeout

    def describe(self) -> str:
        return f"claude ({self.executable})"

    def argv(self, request: LLMRequest) -> tuple[list[str], bytes | None]:
        """The command line for `request`, and the bytes for stdin (None: the prompt is on the command line)."""
        argv = [self.executable, "-p", "--output-format", "stream-json", "--verbose"]
        if self.permission_mode in BYPASS:
            argv.append("--dangerously-skip-permissions")
        else:
            argv += ["--permission-mode", self.permission_mode]
        argv += ["--model", request.model or self.model or DEFAULT_MODEL]
        effort = request.effort or self.effort
        if effort:
            argv += ["--effort", effort]
        if request.continue_latest:  # --continue-session: the folder's latest session, branched
            argv += ["-c", "--fork-session"]
        elif request.session_id:
            argv += ["--resume", request.session_id]
            if request.fork_session:
                argv.append("--fork-session")
        argv += ["--disallowed-tools", DISALLOWED_TOOLS, *self.extra_args]
        prompt = request.prompt.encode("utf-8")
        if len(prompt) <= PROMPT_ON_ARGV_LIMIT:
            return argv + ["--", request.prompt], None
        return argv, prompt

    async def invoke(self, request: LLMRequest) -> LLMReply:
        from wfexec.protocol.processes import ProcessStartError, ProcessTimeout, run_process

        argv, stdin = self.argv(request)
        env = dict(os.environ)
        env.pop("CLAUDECODE", None)  # claude refuses to start "inside" another Claude Code session
        try:
            output = await run_process(argv, cwd=request.cwd or os.getcwd(), env=env, stdin=stdin,
                                       timeout=request.timeout or self.timeout, on_stdout=_StreamLines(request))
        except ProcessStartError as exc:
            raise BackendUnavailable(f"{exc}; install Claude Code (https://docs.claude.com/claude-code) or "
                                     "choose another backend") from None
        except ProcessTimeout as exc:
            raise BackendTimeout(f"claude gave no reply for {exc.seconds:g} s and was stopped", exc.seconds) from None
        return parse_reply(output.stdout, output.stderr, output.returncode)


class _StreamLines:
    """Reads the stream as it comes: tells the status line what the agent is doing, and the request's `stream`
    each object and the text of each assistant message (its `<print>`s show as they are written)."""

    def __init__(self, request: LLMRequest):
        self.pending = ""
        self.who = f"claude ({request.agent_id}: {request.state})" if request.agent_id else "claude"
        self.stream = request.stream

    def __call__(self, text: str) -> None:
        *lines, self.pending = (self.pending + text).split("\n")
        for line in lines:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if self.stream is not None:
                self.stream.event(event)
                for block in _content(event):
                    if block.get("type") == "text" and isinstance(block.get("text"), str):
                        self.stream.text(block["text"])
            doing = _activity(event)
            if doing:
                progress.running(f"{self.who}: {doing}")


def _content(event) -> list:
    """The content blocks of an assistant message."""
    if not isinstance(event, dict) or event.get("type") != "assistant":
        return []
    content = (event.get("message") or {}).get("content")
    return [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []


def _activity(event) -> str:
    if not isinstance(event, dict) or event.get("type") != "assistant":
        return ""
    for block in reversed(_content(event)):
        if isinstance(block, dict) and block.get("type") == "tool_use":
            return f"using {block.get('name', 'a tool')}"
        if isinstance(block, dict) and block.get("type") == "text":
            return "writing"
    return "thinking"


def _says_usage_limit(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in USAGE_LIMIT_MARKERS)


def parse_reply(stdout: str, stderr: str, returncode: int) -> LLMReply:
    result = _result_object(stdout)
    text_seen = str((result.get("result") if isinstance(result, dict) else "") or "")
    # A limit only when Claude says it failed: a reply that merely mentions "hit your limit" is a reply.
    errored = isinstance(result, dict) and bool(result.get("is_error"))
    if (errored and _says_usage_limit(text_seen)) or (returncode != 0 and _says_usage_limit(text_seen + stderr)):
        raise UsageLimitReached(f"claude hit a usage limit: {(text_seen or stderr).strip()[:300]}")
    if returncode != 0 and ROOT_REFUSAL in stderr:
        # Every call would fail the same way: say why, once, instead of failing each .md state.
        raise BackendUnavailable(
            "Claude Code refuses --dangerously-skip-permissions to the root user unless the environment says it "
            "is a sandbox (IS_SANDBOX=1)",
            "in a container or VM, set IS_SANDBOX=1; otherwise run wfexec as a normal user, or use "
            "--backend claude:permission_mode=acceptEdits")
    if returncode != 0:
        detail = (stderr.strip() or str(text_seen).strip() or stdout.strip())[-1000:]
        raise BackendError(f"claude exited with status {returncode}: {detail}")
    if not isinstance(result, dict):
        raise BackendError(f"claude printed no JSON result object: {stdout.strip()[:300]!r}")
    if result.get("is_error") or result.get("subtype", "success") != "success":
        raise BackendError(f"claude reported an error ({result.get('subtype', 'error')}): "
                           f"{str(result.get('result') or '')[:500]}")
    text = result.get("result")
    if not isinstance(text, str):
        raise BackendError("claude's JSON result has no `result` text")
    cost = result.get("total_cost_usd") or 0.0
    try:
        cost = float(cost)
    except (TypeError, ValueError):
        cost = 0.0
    session = result.get("session_id") or (result.get("metadata") or {}).get("session_id")
    return LLMReply(text=text, session_id=session, cost_usd=cost)


def _result_object(stdout: str):
    text = stdout.strip()
    if not text:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        # One JSON object per line (stream-json): the last `result` object wins.
        data = []
        for line in text.splitlines():
            try:
                data.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    if isinstance(data, list):
        results = [item for item in data if isinstance(item, dict) and item.get("type") == "result"]
        return results[-1] if results else None
    return data if isinstance(data, dict) else None
