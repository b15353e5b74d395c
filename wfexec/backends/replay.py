"""Cassettes: recording a run's LLM replies (and human answers), and replaying them offline.

A cassette is YAML:

```yaml
wfexec_cassette: 1
interactions:
  - kind: llm
    agent: main              # the protocol agent that asked (absent for judgement steps)
    state: REVIEW.md         # the state file that asked
    session_id: null         # the session the request resumed
    fork_session: false
    prompt: |
      Review the change…
    reply: |
      Looks good. <goto>COMMIT</goto>
    reply_session_id: 6f1c…
    cost_usd: 0.0123
  - kind: answer
    node: confirm            # a user_prompt node
    answer: yes
  - kind: clock
    node: stamp              # a step whose expressions read the time (Date.now(), new Date())
    ms: 1763900000000
```

Replaying matches each request to the next recorded reply *of the same agent
and state*, so forked agents may ask in any order. The deterministic parts of
the run (scripts, routing) run for real; the first request whose prompt differs
from the recording, or that the recording never saw, stops the run with a
message that shows where and how it diverged.
"""

from __future__ import annotations

import threading
from collections import deque
from pathlib import Path
from typing import Any

from wfexec.errors import WfexecError
from wfexec.backends.base import Backend, BackendUnavailable, LLMReply, LLMRequest, invoke_backend

FORMAT_KEY = "wfexec_cassette"
FORMAT_VERSION = 1


class CassetteError(WfexecError, ValueError):
    """A cassette file that cannot be read."""


class ReplayDiverged(BackendUnavailable):
    """The run asked for something the recording does not hold."""


def _who(agent: str | None, state: str | None) -> str:
    if agent or state:
        return f"agent {agent or '?'} at {state or '?'}"
    return "a judgement step (reference document or LLM hook)"


# -- reading and writing --------------------------------------------------------------

def load_cassette(path: str | Path) -> list[dict]:
    from wfexec.language.loader import load_file

    doc = load_file(path)
    if doc.diagnostics:
        raise CassetteError(doc.diagnostics[0].format())
    data = doc.data
    if not isinstance(data, dict) or not isinstance(data.get("interactions", []), list):
        raise CassetteError(f"{path}: a cassette is a mapping with `{FORMAT_KEY}: 1` and `interactions: [...]`")
    if data.get(FORMAT_KEY) != FORMAT_VERSION:
        raise CassetteError(f"{path}: not a wfexec cassette (`{FORMAT_KEY}: {FORMAT_VERSION}` is missing)")
    interactions = data.get("interactions") or []
    for index, item in enumerate(interactions, 1):
        if not isinstance(item, dict) or item.get("kind") not in ("llm", "answer", "clock"):
            raise CassetteError(f"{path}: interaction #{index} must be a mapping with kind: llm, answer or clock")
        if item["kind"] == "clock" and not isinstance(item.get("ms"), int):
            raise CassetteError(f"{path}: interaction #{index} (clock) has no whole-number `ms`")
        if item["kind"] == "llm" and not isinstance(item.get("reply"), str):
            raise CassetteError(f"{path}: interaction #{index} (llm) has no `reply` text")
        if item["kind"] == "answer" and "node" not in item:
            raise CassetteError(f"{path}: interaction #{index} (answer) has no `node`")
    return interactions


def dump_cassette(interactions: list[dict]) -> str:
    import io

    from ruamel.yaml import YAML
    from ruamel.yaml.scalarstring import LiteralScalarString

    def readable(value: Any) -> Any:
        # Multi-line prompts and replies as block scalars, so a cassette reads (and diffs) like the text itself.
        if isinstance(value, str) and "\n" in value and _block_safe(value):
            return LiteralScalarString(value)
        if isinstance(value, dict):
            return {k: readable(v) for k, v in value.items()}
        if isinstance(value, list):
            return [readable(v) for v in value]
        return value

    yaml = YAML()
    yaml.width = 4096
    out = io.StringIO()
    yaml.dump({FORMAT_KEY: FORMAT_VERSION, "interactions": readable(interactions)}, out)
    return out.getvalue()


def _block_safe(text: str) -> bool:
    return not any(ch in text for ch in "\r\t\x0b\x0c\x85\u2028\u2029") and \
        all(line == line.rstrip(" ") for line in text.split("\n")) and not text.startswith((" ", "\n"))


# -- replay -------------------------------------------------------------------------

class ReplayBackend(Backend):
    name = "replay"

    def __init__(self, path: str | Path, interactions: list[dict] | None = None):
        """Replay the cassette at `path`, or `interactions` already read (a `wfexec test` case's `replies:`),
        which `path` then only names in messages."""
        self.path = Path(path)
        if interactions is None:
            interactions = load_cassette(self.path)
        self._queues: dict[tuple, deque] = {}
        self._served: dict[tuple, int] = {}
        self._answers: dict[str, list] = {}
        self._clocks: dict[str, deque] = {}
        for number, item in enumerate(interactions, 1):
            if item["kind"] == "llm":
                key = (item.get("agent") or "", item.get("state") or "")
                self._queues.setdefault(key, deque()).append((number, item))
            elif item["kind"] == "clock":
                self._clocks.setdefault(str(item.get("node") or ""), deque()).append(item["ms"])
            else:
                self._answers.setdefault(str(item["node"]), []).append(item.get("answer"))
        self._lock = threading.Lock()

    def describe(self) -> str:
        return f"replay ({self.path})"

    def answers(self) -> dict[str, list]:
        """Recorded human answers: node id → answers in order (feed them to `Answers`)."""
        return {node: list(values) for node, values in self._answers.items()}

    def recorded_clock(self, node: str) -> int | None:
        """The time the recording's next step at `node` read, or None: that step then reads the real clock."""
        with self._lock:
            queue = self._clocks.get(node)
            return queue.popleft() if queue else None

    def unused(self) -> list[str]:
        """The recorded replies this run never asked for."""
        return [f"#{n} {_who(i.get('agent'), i.get('state'))}" for q in self._queues.values() for n, i in q]

    async def invoke(self, request: LLMRequest) -> LLMReply:
        key = (request.agent_id or "", request.state or "")
        with self._lock:
            queue = self._queues.get(key)
            served = self._served.get(key, 0)
            if not queue:
                raise ReplayDiverged(
                    f"the run diverged from the recording {self.path}: {_who(*key)} asks for LLM reply "
                    f"#{served + 1}, and the recording holds {served} for it")
            number, item = queue[0]
            recorded = item.get("prompt")
            if recorded is not None and recorded != request.prompt:
                raise ReplayDiverged(f"the run diverged from the recording {self.path} at interaction #{number} "
                                     f"({_who(*key)}): {_first_difference(recorded, request.prompt)}")
            queue.popleft()
            self._served[key] = served + 1
        cost = item.get("cost_usd") or 0.0
        return LLMReply(text=item["reply"], session_id=item.get("reply_session_id"), cost_usd=float(cost),
                        error=item.get("error"))


def _first_difference(recorded: str, now: str) -> str:
    old_lines, new_lines = recorded.split("\n"), now.split("\n")
    for number, (old, new) in enumerate(zip(old_lines, new_lines), 1):
        if old != new:
            return f"the prompt differs at line {number}: recorded {old[:120]!r}, now {new[:120]!r}"
    if len(old_lines) != len(new_lines):
        return (f"the prompt has {len(new_lines)} lines where the recording has {len(old_lines)} "
                f"(same up to line {min(len(old_lines), len(new_lines))})")
    return "the prompt differs"


# -- recording ------------------------------------------------------------------------

class RecordingBackend(Backend):
    """Passes every call to `inner` and writes the cassette after each reply (a crash keeps what was recorded)."""

    name = "record"

    def __init__(self, inner: Any, path: str | Path):
        self.inner = inner
        self.path = Path(path)
        self.interactions: list[dict] = []
        self._lock = threading.Lock()
        self._save()

    def describe(self) -> str:
        inner = self.inner.describe() if hasattr(self.inner, "describe") else type(self.inner).__name__
        return f"{inner}, recorded to {self.path}"

    async def invoke(self, request: LLMRequest) -> LLMReply:
        reply = await invoke_backend(self.inner, request)
        item: dict[str, Any] = {"kind": "llm"}
        if request.agent_id:
            item["agent"] = request.agent_id
        if request.state:
            item["state"] = request.state
        item.update({"session_id": request.session_id, "fork_session": request.fork_session})
        if request.model:
            item["model"] = request.model
        item.update({"prompt": request.prompt, "reply": reply.text, "reply_session_id": reply.session_id,
                     "cost_usd": reply.cost_usd})
        if reply.error:  # the backend marked the turn as failed (LLMReply.error)
            item["error"] = reply.error
        self._append(item)
        return reply

    def recording(self, inner: Any) -> "RecordingBackend":
        """Another backend's replies into this same cassette (a nested workflow that runs on its own backend)."""
        view = object.__new__(RecordingBackend)
        view.inner, view.path, view.interactions, view._lock = inner, self.path, self.interactions, self._lock
        return view

    def record_answer(self, node: str, answer: Any) -> None:
        """Keep a human's answer to a user_prompt node, so a replay can give it again."""
        self._append({"kind": "answer", "node": node, "answer": answer})

    def record_clock(self, node: str, ms: int) -> None:
        """Keep the time a step's expressions read, so a replay computes the same values."""
        self._append({"kind": "clock", "node": node, "ms": ms})

    def _append(self, item: dict) -> None:
        with self._lock:
            self.interactions.append(item)
            self._save()

    def _save(self) -> None:
        from wfexec.system.files import write_atomic

        write_atomic(self.path, dump_cassette(self.interactions))
