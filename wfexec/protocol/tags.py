"""Transition tags in a state's output: `<goto>`, `<reset>`, `<call>`, `<function>`,
`<fork>`, `<result>`, `<ask>`; and `<print>`, which is output for the user, not a transition.

Rules (reference §1.3, with DESIGN §4's word boundary): a tag may sit anywhere
in the text; the name must be followed by whitespace or `>` (so `<gotox>` is
not a goto); attributes are `key="value"` or `key='value'` (unquoted ones are
ignored, the last of a repeated key wins); the closing tag is the first
`</name>` after the opening one, and an opening tag that is never closed is
skipped. A target is the trimmed content and must be a state name: empty
targets and targets holding `/` or `\\` are errors. A `<result>` payload is the
raw content.

Every opening tag counts, wherever it stands, as in Raymond's parser (which finds the opening tags first, then
each one's closing tag): a tag inside another tag's body (`<result>done <goto>X</goto></result>`) or inside a
`<print>` is a transition too, so that text holds two and a state must emit exactly one. `<print>` itself is never
a transition.

An `<ask next="STATE">question</ask>` parks the agent until a person answers (its target is `next`, its
payload the question). The cross-workflow tags (`<call-workflow>` & co.) name another states folder by path
(`wfexec.protocol.workflows`).
"""

from __future__ import annotations

import re
from wfexec.records import dataclass, field

from wfexec.errors import WfexecError
from wfexec.system.patterns import lazy

TRANSITION_TAGS = ("goto", "reset", "call", "function", "fork", "result", "ask",
                   "call-workflow", "function-workflow", "fork-workflow", "reset-workflow")
WORKFLOW_TAGS = ("call-workflow", "function-workflow", "fork-workflow", "reset-workflow")
UNSUPPORTED_TAGS: tuple[str, ...] = ()
_NAMES = frozenset(TRANSITION_TAGS + UNSUPPORTED_TAGS)
_NAME_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyz-")
# A key is a whole word: `my-key="x"` is not read as `key="x"`.
_ATTRIBUTE = lazy(r"(?<![\w-])(\w+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")
_PRINT = lazy(r"<print>(.*?)</print>", re.DOTALL)


class TagError(WfexecError, ValueError):
    """A tag that is there but malformed: never re-prompted (reference §1.3)."""


@dataclass(frozen=True)
class Transition:
    tag: str
    target: str = ""
    attributes: dict = field(default_factory=dict)
    payload: str = ""
    # A cross-workflow tag once resolved: the scope it goes to (its target is then that scope's first state),
    # and the short name its worker ids use.
    scope: str = ""
    abbrev: str = ""

    def show(self) -> str:
        """The tag as it would be written (for messages and traces)."""
        attrs = "".join(f' {k}="{v}"' for k, v in self.attributes.items())
        body = self.payload if self.tag in ("result", "ask") else self.target
        if len(body) > 40:
            body = body[:37] + "..."
        return f"<{self.tag}{attrs}>{body}</{self.tag}>"


def parse_attributes(text: str) -> dict:
    if "=" not in text:  # most tags have none: the pattern is not compiled for them
        return {}
    attributes = {}
    for match in _ATTRIBUTE.finditer(text):
        value = match.group(2) if match.group(2) is not None else match.group(3)
        attributes[match.group(1)] = value
    return attributes


def parse_transitions(text: str) -> list[Transition]:
    """Every transition tag in `text`, in document order. Raises TagError for a malformed one."""
    if "<" not in text:
        return []
    found: list[Transition] = []
    position = 0
    while True:
        opening = _next_opening(text, position)
        if opening is None:
            return found
        name, attributes, end = opening
        # The next opening tag is looked for right after this one, not after its closing tag: one written in
        # this tag's body is a transition of its own (Raymond's parser finds every opening tag).
        position = end
        close = text.find(f"</{name}>", end)
        if close < 0:
            continue  # never closed: skipped, like Raymond
        found.append(_build(name, parse_attributes(attributes), text[end:close]))


def _next_opening(text: str, position: int) -> tuple[str, str, int] | None:
    """The first opening transition tag from `position` on: (its name, the text of its attributes, where it
    ends), or None. What `<(goto|reset|…)(?=[\\s>])([^>]*)>` finds, without compiling that pattern (a tenth of a
    millisecond or more: every `wfexec states` reads a state's output)."""
    while True:
        start = text.find("<", position)
        if start < 0:
            return None
        end = start + 1
        while end < len(text) and text[end] in _NAME_CHARACTERS:
            end += 1
        if text[start + 1:end] in _NAMES and end < len(text) and (text[end] == ">" or text[end].isspace()):
            close = text.find(">", end)
            if close < 0:
                return None  # no `>` from here on: no tag either
            return text[start + 1:end], text[end:close], close + 1
        position = start + 1


def _build(name: str, attributes: dict, content: str) -> Transition:
    if name == "result":
        return Transition("result", "", attributes, content)
    if name == "ask":  # the body is the question for a person; `next` is where the answer goes
        following = attributes.get("next", "")
        if not following:
            raise TagError('<ask> needs a non-empty `next` attribute: the state that gets the answer',
                           'write e.g. <ask next="REVIEW">Which option?</ask>')
        check_state_name(following, "<ask> next")
        return Transition("ask", following, attributes, content)
    if name in WORKFLOW_TAGS:  # a path to another states folder: separators are the point
        target = content.strip()
        if not target:
            raise TagError(f"<{name}> has an empty target; write the folder, .zip or .yaml of the workflow")
        return Transition(name, target, attributes, "")
    target = content.strip()
    if not target:
        raise TagError(f"<{name}> has an empty target; write the state to go to between the tags")
    check_state_name(target, f"<{name}> target")
    return Transition(name, target, attributes, "")


def check_state_name(name: str, what: str) -> None:
    if "/" in name or "\\" in name:
        raise TagError(f"{what} '{name}' contains a path separator; a target is a state name in the same "
                       "folder, never a path")


def extract_prints(text: str) -> list[str]:
    """The contents of every complete `<print>…</print>` in `text`."""
    if "<print>" not in text:
        return []
    return _PRINT.findall(text)


class PrintScanner:
    """Finds `<print>` blocks in output that arrives in chunks; a block split across chunks is joined."""

    __slots__ = ("_buffer",)
    _KEEP = len("<print>") - 1

    def __init__(self):
        self._buffer = ""

    def feed(self, chunk: str) -> list[str]:
        buffer = self._buffer + chunk
        found: list[str] = []
        while True:
            start = buffer.find("<print>")
            if start < 0:
                # Keep a tail that could be the start of a `<print>` split by the chunking.
                self._buffer = buffer[-self._KEEP:] if "<" in buffer[-self._KEEP:] else ""
                return found
            end = buffer.find("</print>", start + 7)
            if end < 0:
                self._buffer = buffer[start:]
                return found
            found.append(buffer[start + 7:end])
            buffer = buffer[end + 8:]
