"""Helpers shared by the protocol tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

import io
import os
import textwrap
from pathlib import Path

from wfexec.backends.base import Backend, LLMReply, LLMRequest
from wfexec.running.console import Console

FIXTURES = Path(__file__).resolve().parent / "fixtures"


class ScriptedBackend(Backend):
    """A backend answering from a list of replies, remembering every request.

    A reply is a string, or a dict with `text` and optionally `session_id` and
    `cost_usd`. Sessions default to `s1`, `s2`, … in call order.
    """

    name = "scripted"

    def __init__(self, *replies):
        self.replies = list(replies)
        self.requests: list[LLMRequest] = []

    async def invoke(self, request: LLMRequest) -> LLMReply:
        self.requests.append(request)
        if not self.replies:
            raise AssertionError(f"no scripted reply left for {request.agent_id} at {request.state}")
        item = self.replies.pop(0)
        if isinstance(item, str):
            item = {"text": item}
        session = item.get("session_id", f"s{len(self.requests)}")
        return LLMReply(text=item["text"], session_id=session, cost_usd=item.get("cost_usd", 0.0))


def write_states(folder: Path, files: dict[str, str]) -> Path:
    """Write state files (dedented) into `folder`; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return folder


class Quiet:
    """A console whose output the test can read."""

    def __init__(self, trace: bool = False):
        self.out = io.StringIO()
        self.err = io.StringIO()
        self.console = Console(out=self.out, err=self.err, trace=trace, color=False)

    @property
    def printed(self) -> str:
        return self.out.getvalue()

    @property
    def errors(self) -> str:
        return self.err.getvalue()


def run_folder(folder, *, backend=None, input=None, cwd=None, trace=False, **options):
    """Run a states folder with wfexec.commands.states.run_states_path; returns (result, Quiet)."""
    from wfexec.commands.states import run_states_path

    quiet = Quiet(trace)
    if cwd is None:
        cwd = folder if os.path.isdir(folder) else os.path.dirname(os.fspath(folder))
    result = run_states_path(folder, input=input, backend=backend, cwd=cwd, io=quiet.console,
                             **options)
    return result, quiet
