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
json`) is accepted too. As in Raymond, a result with `"is_error": true` is a
failed call only when it says a usage limit is reached; any other (e.g.
`error_max_turns`) is the turn's reply, its text the `result` or else the
assistant messages' text, and its cost counts. A claude that exits non-zero
fails the call (tried again), its cost counted all the same. Streaming is
what makes a long turn visible (the status line shows the tool in use) and
gives `timeout` its meaning: seconds without output, not seconds in all. A
`goto` resumes the agent's session; a `call` resumes the caller's with
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
    objects = _objects(stdout)
    results = [item for item in objects if item.get("type") == "result" or len(objects) == 1 and "type" not in item]
    result = results[-1] if results else None  # the last `result` object wins
    text_seen = str((result.get("result") if result is not None else "") or "")
    # Every turn's cost counts toward the budget, a failed one's too: the money is spent whatever it says.
    cost = _cost(result)
    # A limit only when Claude says it failed: a reply that merely mentions "hit your limit" is a reply.
    errored = result is not None and bool(result.get("is_error"))
    if (errored and _says_usage_limit(text_seen)) or (returncode != 0 and _says_usage_limit(text_seen + stderr)):
        raise _costing(UsageLimitReached(f"claude hit a usage limit: {(text_seen or stderr).strip()[:300]}"), cost)
    if returncode != 0 and ROOT_REFUSAL in stderr:
        # Every call would fail the same way: say why, once, instead of failing each .md state.
        raise BackendUnavailable(
            "Claude Code refuses --dangerously-skip-permissions to the root user unless the environment says it "
            "is a sandbox (IS_SANDBOX=1)",
            "in a container or VM, set IS_SANDBOX=1; otherwise run wfexec as a normal user, or use "
            "--backend claude:permission_mode=acceptEdits")
    if returncode != 0:  # tried again, as Raymond does with a claude that exits non-zero
        detail = (stderr.strip() or str(text_seen).strip() or stdout.strip())[-1000:]
        raise _costing(BackendError(f"claude exited with status {returncode}: {detail}"), cost)
    if result is None:
        raise BackendError(f"claude printed no JSON result object: {stdout.strip()[:300]!r}")
    # As Raymond's RunTurn: a result that is no usage limit is the turn's reply, `is_error` or not (e.g.
    # error_max_turns, once the model may have written its tag); its text is the `result`, else the assistant
    # messages' text. The error is kept with it (`complete` raises it; a state says it when tracing).
    error = None
    if errored or result.get("subtype", "success") != "success":
        error = f"claude reported an error ({result.get('subtype', 'error')})" + (f": {text_seen[:500]}"
                                                                                    if text_seen else "")
    text = result.get("result")
    if not isinstance(text, str):
        text = "".join(block["text"] for item in objects for block in _content(item)
                       if block.get("type") == "text" and isinstance(block.get("text"), str))
    session = result.get("session_id") or (result.get("metadata") or {}).get("session_id")
    return LLMReply(text=text, session_id=session, cost_usd=cost, error=error)


def _cost(result) -> float:
    try:
        return float((result or {}).get("total_cost_usd") or 0.0)
    except (TypeError, ValueError):
        return 0.0


def _costing(error: BackendError, cost: float) -> BackendError:
    error.cost_usd = cost
    return error


def _objects(stdout: str) -> list[dict]:
    """The JSON objects claude printed: one a line (stream-json), or one object or list (json)."""
    text = stdout.strip()
    if not text:
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = []
        for line in text.splitlines():
            try:
                data.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    if isinstance(data, dict):
        data = [data]
    return [item for item in data if isinstance(item, dict)] if isinstance(data, list) else []
