"""Helpers shared by the protocol tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

import io
import json
import os
import stat
import sys
import textwrap
from pathlib import Path

import pytest

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


FAKE_CLAUDE = """\
#!{python}
# A stand-in for the Claude Code CLI in `-p --output-format stream-json --verbose` mode (or `json`). It logs its
# argv, then answers with the next reply of $FAKE_CLAUDE_REPLIES (a JSON list) as the real CLI does.
import json, os, sys
argv = sys.argv[1:]
prompt = argv[argv.index("--") + 1] if "--" in argv else sys.stdin.read()
with open(os.environ["FAKE_CLAUDE_LOG"], "a") as log:
    log.write(json.dumps({{"argv": argv, "prompt": prompt, "cwd": os.getcwd(),
                          "claudecode": os.environ.get("CLAUDECODE")}}) + "\\n")
replies = json.load(open(os.environ["FAKE_CLAUDE_REPLIES"]))
count_file = os.environ["FAKE_CLAUDE_REPLIES"] + ".count"
n = int(open(count_file).read()) if os.path.exists(count_file) else 0
open(count_file, "w").write(str(n + 1))
reply = replies[n]
if "--resume" in argv and "--fork-session" not in argv:
    session = argv[argv.index("--resume") + 1]
else:
    session = "sess-%d" % (n + 1)
if reply.get("stderr"):
    sys.stderr.write(reply["stderr"])
streaming = "stream-json" in argv  # one JSON object a line as the turn goes on, as the real CLI
if reply.get("raw") is not None:
    sys.stdout.write(reply["raw"])
else:
    if streaming:
        print(json.dumps({{"type": "system", "subtype": "init", "session_id": session}}), flush=True)
        for tick in range(reply.get("ticks", 0)):  # a long turn: a tool call every tick_seconds
            print(json.dumps({{"type": "assistant", "session_id": session, "message": {{"content": [
                {{"type": "tool_use", "id": "t%d" % tick, "name": "Bash", "input": {{"command": "make"}}}}]}}}}),
                flush=True)
            import time; time.sleep(reply.get("tick_seconds", 0))
        for text in reply.get("assistant", []):  # messages written before the final one, `assistant_seconds` apart
            print(json.dumps({{"type": "assistant", "session_id": session, "message": {{"content": [
                {{"type": "text", "text": text}}]}}}}), flush=True)
            import time; time.sleep(reply.get("assistant_seconds", 0))
        if reply.get("wait_for"):  # hold the turn open until the test says so (a file appears)
            import time
            for _ in range(6000):
                if os.path.exists(reply["wait_for"]):
                    break
                time.sleep(0.01)
        if reply.get("result") and not reply.get("is_error"):  # the final message streams too, as the real CLI's
            print(json.dumps({{"type": "assistant", "session_id": session, "message": {{"content": [
                {{"type": "text", "text": reply["result"]}}]}}}}), flush=True)
    print(json.dumps({{"type": "result", "subtype": reply.get("subtype", "success"),
                      "is_error": reply.get("is_error", False), "result": reply.get("result", ""),
                      "session_id": session, "total_cost_usd": reply.get("cost", 0.01), "num_turns": 1}}))
sys.exit(reply.get("exit", 0))
"""


@pytest.fixture
def fake_claude(tmp_path, monkeypatch):
    """Put a fake `claude` first on PATH; returns (set_replies(list), calls() -> [logged call])."""
    log, replies = _fake_on_path(tmp_path, monkeypatch, "claude", FAKE_CLAUDE, tmp_path / "bin")

    def set_replies(items):
        replies.write_text(json.dumps(items))

    return set_replies, _calls(log)


def _fake_on_path(tmp_path, monkeypatch, name: str, source: str, bin_dir):
    """Install the fake `name` first on PATH; its log and replies files, named in FAKE_<NAME>_LOG / _REPLIES."""
    bin_dir.mkdir()
    exe = bin_dir / name
    exe.write_text(source.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    log, replies = tmp_path / f"{name}-log.jsonl", tmp_path / f"{name}-replies.json"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv(f"FAKE_{name.upper()}_LOG", str(log))
    monkeypatch.setenv(f"FAKE_{name.upper()}_REPLIES", str(replies))
    return log, replies


def _calls(log):
    """What the fake logged: one JSON object per call."""
    def calls():
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    return calls


def argv_value(argv, flag):
    return argv[argv.index(flag) + 1] if flag in argv else None


FAKE_PI = """\
#!{python}
# A stand-in for the pi coding agent in `--mode json`, as Raymond's pi backend reads it. It logs its argv, then
# answers with the next reply of $FAKE_PI_REPLIES (a JSON list of {{text, deltas, cost, exit, stderr}}): a
# `session` event, `message_update` text deltas, `agent_end` with the messages; and it keeps the session's file
# (a `message` record with usage.cost.total per turn) where pi does, a fork starting as a copy of its parent's.
import json, os, sys, datetime
argv = sys.argv[1:]
def value(flag):
    return argv[argv.index(flag) + 1] if flag in argv else None
with open(os.environ["FAKE_PI_LOG"], "a") as log:
    log.write(json.dumps({{"argv": argv, "prompt": argv[-1], "cwd": os.getcwd()}}) + "\\n")
replies = json.load(open(os.environ["FAKE_PI_REPLIES"]))
count_file = os.environ["FAKE_PI_REPLIES"] + ".count"
n = int(open(count_file).read()) if os.path.exists(count_file) else 0
open(count_file, "w").write(str(n + 1))
reply = replies[n]
folder = value("--session-dir") or os.path.join(os.environ["HOME"], ".pi", "agent", "sessions",
                                                 "--" + os.getcwd().strip("/").replace("/", "-") + "--")
os.makedirs(folder, exist_ok=True)
def path_of(session):
    for name in os.listdir(folder):
        if name.endswith("_" + session + ".jsonl"):
            return os.path.join(folder, name)
    return None
session = value("--session")
history = []
if session is None:
    session = "pi-%d" % (n + 1)
    parent = value("--fork")
    if parent:
        history = open(path_of(parent)).read().splitlines()
path = path_of(session) or os.path.join(folder, "2026-01-01T00-00-%02d_%s.jsonl" % (n, session))
if history:
    open(path, "w").write("\\n".join(history) + "\\n")
if reply.get("stderr"):
    sys.stderr.write(reply["stderr"])
if reply.get("exit"):
    sys.exit(reply["exit"])
print(json.dumps({{"type": "session", "id": session}}), flush=True)
print(json.dumps({{"type": "agent_start"}}), flush=True)
for delta in reply.get("deltas", [reply["text"]]):
    print(json.dumps({{"type": "message_update", "updateType": "text_delta", "text": delta}}), flush=True)
with open(path, "a") as out:
    out.write(json.dumps({{"type": "message", "message": {{"role": "user", "content": argv[-1]}}}}) + "\\n")
    out.write(json.dumps({{"type": "message", "message": {{"role": "assistant", "usage": {{"input": 10,
        "cost": {{"total": reply.get("cost", 0.01)}}}}}}}}) + "\\n")
print(json.dumps({{"type": "agent_end", "messages": [{{"role": "user", "content": argv[-1]}},
                  {{"role": "assistant", "content": [{{"type": "text", "text": reply["text"]}}]}}]}}), flush=True)
"""


@pytest.fixture
def fake_pi(tmp_path, monkeypatch):
    """Put a fake `pi` first on PATH, with HOME in tmp_path (its sessions are under ~/.pi); returns
    (set_replies(list), calls() -> [logged call])."""
    log, replies = _fake_on_path(tmp_path, monkeypatch, "pi", FAKE_PI, tmp_path / "pi-bin")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))

    def set_replies(items):
        replies.write_text(json.dumps(items))
        count = tmp_path / "pi-replies.json.count"
        if count.exists():
            count.unlink()

    return set_replies, _calls(log)
