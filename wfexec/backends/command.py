"""`command`: any program as an LLM. The prompt goes to its stdin; its stdout is the reply.

    wfexec run flow/ --backend 'command:./my-llm --temperature 0'

The program runs in the agent's working directory with these variables, so it
can keep conversations if it wants to:
- `WFEXEC_SESSION_ID`: the session this turn belongs to (a new id for a fresh or
  branched session; the same id for a `goto` that resumes it);
- `WFEXEC_PARENT_SESSION_ID`: on a branched turn (a `<call>`), the session it
  branches from;
- `WFEXEC_MODEL`, `WFEXEC_EFFORT`, `WFEXEC_AGENT_ID`, `WFEXEC_STATE` when known.
A non-zero exit is a failed call. A command costs $0 as far as wfexec knows.
"""

from __future__ import annotations

import os
import shlex
import uuid
from typing import Sequence

from wfexec.backends.base import Backend, BackendError, BackendUnavailable, LLMReply, LLMRequest


class CommandBackend(Backend):
    name = "command"

    def __init__(self, argv: Sequence[str], *, timeout: float | None = None):
        if not argv:
            raise ValueError("the command backend needs a program, e.g. command:./my-llm")
        self.argv = list(argv)
        self.timeout = timeout

    @classmethod
    def from_text(cls, text: str, **options) -> "CommandBackend":
        return cls(shlex.split(text), **options)

    def describe(self) -> str:
        return "command: " + shlex.join(self.argv)

    async def invoke(self, request: LLMRequest) -> LLMReply:
        from wfexec.protocol.processes import ProcessStartError, ProcessTimeout, run_process

        resumes = request.session_id and not request.fork_session
        session = request.session_id if resumes and request.session_id else f"cmd-{uuid.uuid4().hex}"
        env = dict(os.environ)
        env.pop("CLAUDECODE", None)
        env["WFEXEC_SESSION_ID"] = session
        optional = {"WFEXEC_PARENT_SESSION_ID": request.session_id if request.fork_session else None,
                    "WFEXEC_MODEL": request.model, "WFEXEC_EFFORT": request.effort,
                    "WFEXEC_AGENT_ID": request.agent_id, "WFEXEC_STATE": request.state}
        for key, value in optional.items():
            if value:
                env[key] = value
            else:
                env.pop(key, None)
        try:
            output = await run_process(self.argv, cwd=request.cwd or os.getcwd(), env=env,
                                       stdin=request.prompt.encode("utf-8"), timeout=request.timeout or self.timeout)
        except ProcessStartError as exc:
            raise BackendUnavailable(str(exc)) from None
        except ProcessTimeout as exc:
            raise BackendError(f"`{self.argv[0]}` gave no reply for {exc.seconds:g} s and was stopped") from None
        if output.returncode != 0:
            detail = output.stderr.strip()[-1000:]
            raise BackendError(f"`{self.argv[0]}` exited with status {output.returncode}"
                               + (f": {detail}" if detail else ""))
        return LLMReply(text=output.stdout, session_id=session, cost_usd=0.0)
