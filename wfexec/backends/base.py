"""The `Backend` interface: one prompt in, one reply (plus session and cost) out.

A backend has two entry points:
- `await invoke(LLMRequest) -> LLMReply`, used by `states` nodes: it knows about
  sessions (`session_id` to resume, `fork_session` to branch it instead),
  the model and effort, the working directory, and reports the cost;
- `complete(prompt) -> str`, used by judgement steps (`reference` documents,
  LLM-hook consequences): a fresh session, the reply text only.

Errors: `BackendError` for a failed call (the node routes `on_failure`);
`BackendUnavailable` when the backend cannot work at all (missing program,
a replay that diverged from its recording), which stops the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from wfexec.errors import WfexecError


class BackendError(WfexecError):
    """One call failed: the program exited non-zero, the reply was malformed, a usage limit was hit."""

    cost_usd = 0.0  # what the failed call cost all the same, when the backend says (it counts toward a budget)


class UsageLimitReached(BackendError):
    """The backend refused the call because the account's usage limit is reached (it says until when)."""


class BackendTimeout(BackendError):
    """The program said nothing for `seconds` and was stopped (tried again, as any failed call)."""

    def __init__(self, message: str, seconds: float):
        super().__init__(message)
        self.seconds = seconds


class BackendUnavailable(BackendError):
    """The backend cannot be used at all; retrying or routing elsewhere will not help."""


@dataclass(frozen=True)
class LLMRequest:
    prompt: str
    session_id: str | None = None   # resume this session (None: a fresh one)
    fork_session: bool = False      # branch `session_id` instead of continuing it
    model: str | None = None
    effort: str | None = None
    cwd: str | None = None
    agent_id: str | None = None     # which protocol agent asks, for recordings
    state: str | None = None        # which state file asks, for recordings
    timeout: float | None = None    # seconds without output before giving up (None: never)
    attempt: int = 1                # 2 and 3 are reminder re-prompts
    continue_latest: bool = False   # branch the latest session of `cwd` (claude -c --fork-session)
    # Told of the turn as it streams: `event(object)` for each JSON object, `text(chunk)` for the model's text
    # (where `<print>` blocks are found). Not part of what a recording keeps.
    stream: Any = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "stream"}


@dataclass(frozen=True)
class LLMReply:
    text: str
    session_id: str | None = None
    cost_usd: float = 0.0
    # The backend marked the turn as failed, though it ended with this text (Claude's `is_error` result that is
    # no usage limit): a state takes the text as Raymond does; `complete` raises BackendError(error).
    error: str | None = None


class Backend:
    """Base class; subclasses implement `invoke`."""

    name = "backend"

    async def invoke(self, request: LLMRequest) -> LLMReply:
        raise NotImplementedError

    def complete(self, prompt: str) -> str:
        """A judgement step: one fresh-session call, the reply's text."""
        reply = run_sync(self.invoke(LLMRequest(prompt=prompt)))
        if reply.error:
            raise BackendError(reply.error)
        return reply.text

    def describe(self) -> str:
        return self.name


async def invoke_backend(backend, request: LLMRequest) -> LLMReply:
    """Call any backend: a `Backend`, or a plain object with only `complete(prompt) -> str` (e.g. a test double)."""
    invoke = getattr(backend, "invoke", None)
    if invoke is not None:
        return await invoke(request)
    import asyncio  # imported where used: a lone agent's scripts run without it (wfexec.protocol.processes)

    text = await asyncio.to_thread(backend.complete, request.prompt)
    return LLMReply(text=text if isinstance(text, str) else str(text))


def run_sync(coroutine):
    """Run a coroutine to its end from synchronous code, even when an event loop is already running here."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
