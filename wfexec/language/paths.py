"""Dotted paths into the run state: `computed.sha`, `sources[0].id`, `config['a key']`.

A path is a full path from the state root, parsed once when the workflow is
compiled (`parse_path`) into a tuple of keys and indexes that `get_path`,
`set_path` and `delete_path` follow. Compiler, engine, journal and types use
these; none of them owns them.
"""

from __future__ import annotations

import functools

import re

from wfexec.errors import WfexecError
from wfexec.system.patterns import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

_SEGMENT = lazy(r"""
    (?P<name>[^.\[\]]+)            # a key
  | \[(?P<index>-?\d+)\]           # [3] or [-1]
  | \[(?P<quoted>'[^']*'|"[^"]*")\]  # ['a key with spaces']
  | (?P<dot>\.)
""", re.VERBOSE)


# Keys of mappings and indexes of lists, from the state root: ('sources', 0, 'id').
StatePath = tuple[str | int, ...]


class PathError(WfexecError, ValueError):
    """A malformed state path, or one that cannot be written."""


def parse_path(text: str) -> StatePath:
    """`a.b[0]['c d']` → ('a', 'b', 0, 'c d')."""
    if not isinstance(text, str) or not text.strip():
        raise PathError("a state path must be a non-empty string such as `computed.result`")
    return _parsed(text)


# A workflow names the same paths again and again (each check that reads writes, each step at run time).
@functools.lru_cache(maxsize=65_536)
def _parsed(text: str) -> StatePath:
    # Most paths are names and dots (`computed.result`): split in C, where reading them segment by segment with
    # the regex cost a validate a fiftieth of its time. Anything else, a malformed path too, is read below.
    if "[" not in text and "]" not in text:
        names = text.split(".")
        if "" not in names:
            return tuple(map(str.strip, names))
    return _segments(text)


def _segments(text: str) -> StatePath:
    parts: list[str | int] = []
    pos = 0
    expect_name = True
    while pos < len(text):
        match = _SEGMENT.match(text, pos)
        if not match:
            raise PathError(f"invalid state path `{text}` at character {pos + 1}")
        if match.group("dot"):
            if expect_name:
                raise PathError(f"invalid state path `{text}`: empty segment")
            expect_name = True
        elif match.group("name") is not None:
            if not expect_name:
                raise PathError(f"invalid state path `{text}`: missing `.` before `{match.group('name')}`")
            parts.append(match.group("name").strip())
            expect_name = False
        elif match.group("index") is not None:
            if not parts:
                raise PathError(f"invalid state path `{text}`: starts with an index")
            parts.append(int(match.group("index")))
            expect_name = False
        else:
            parts.append(match.group("quoted")[1:-1])
            expect_name = False
        pos = match.end()
    if expect_name:
        raise PathError(f"invalid state path `{text}`: ends with `.`")
    return tuple(parts)


# What a name must not hold to be written after a `.` (else it is written quoted in brackets). A set, not a
# pattern: compiling one cost every run's start half a millisecond of CPU (issue 27).
_NOT_IN_A_PLAIN_NAME = frozenset(".[]'\"")


def written_path(params: Mapping[str, Any], name: str) -> StatePath | None:
    """The state path in the parameter `name` of a call when the workflow writes it out; None when it is computed,
    or malformed (the call's handler then says so at run time). What a type's direct form writes or reads."""
    text = params.get(name)
    if text.__class__ is not str:
        return None
    try:
        return parse_path(text)
    except PathError:
        return None


def format_path(parts: StatePath) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part and _NOT_IN_A_PLAIN_NAME.isdisjoint(part):
            out += ("." if out else "") + part
        else:
            out += f"['{part}']"
    return out


_MISSING = object()


def get_path(state: Any, parts: StatePath, default: Any = None) -> Any:
    node = state
    for part in parts:
        if isinstance(part, int):
            if isinstance(node, list) and -len(node) <= part < len(node):
                node = node[part]
                continue
            return default
        if isinstance(node, dict) and part in node:
            node = node[part]
            continue
        return default
    return node


def has_path(state: Any, parts: StatePath) -> bool:
    return get_path(state, parts, _MISSING) is not _MISSING


def set_path(state: dict, parts: StatePath, value: Any) -> None:
    """Set a value, creating missing mappings on the way. Raises PathError when a segment crosses something
    that is not a mapping or list; then the state is left as it was (no mapping made on the way stays)."""
    last = len(parts) - 1
    if last == 0 and parts[0].__class__ is str and state.__class__ is dict:  # most writes: a top-level name
        state[parts[0]] = value
        return
    node: Any = state
    i = 0
    while i < last:  # through what exists
        part = parts[i]
        if isinstance(part, int):
            if not isinstance(node, list) or not -len(node) <= part < len(node):
                raise PathError(f"`{format_path(parts[:i + 1])}` is not an existing list item")
            child = node[part]
        else:
            if not isinstance(node, dict):
                raise PathError(f"`{format_path(parts[:i])}` is not a mapping, cannot set `{format_path(parts)}`")
            child = node.get(part)
        if child is None:
            break
        node = child
        i += 1
    if i < last:  # the rest is made as mappings, so it can hold no list index
        for j in range(i + 1, last + 1):
            if isinstance(parts[j], int):
                raise PathError(f"`{format_path(parts[:j + 1])}` is not an existing list item")
        for part in parts[i:last]:
            child = {}
            node[part] = child
            node = child
    tail = parts[last]
    if isinstance(tail, int):
        if not isinstance(node, list) or not -len(node) <= tail < len(node):
            raise PathError(f"`{format_path(parts)}` is not an existing list item")
        node[tail] = value
    else:
        if not isinstance(node, dict):
            raise PathError(f"`{format_path(parts[:-1])}` is not a mapping, cannot set `{format_path(parts)}`")
        node[tail] = value


def absolute_path(state: Any, parts: StatePath) -> StatePath:
    """`parts` with each negative list index counted from the start instead, as the lists in `state` are now."""
    out: list = []
    node = state
    for part in parts:
        if isinstance(part, int) and part < 0 and isinstance(node, list):
            part += len(node)
        out.append(part)
        node = get_path(node, (part,))
    return tuple(out)


def delete_path(state: dict, parts: StatePath) -> None:
    parent = get_path(state, parts[:-1], None) if len(parts) > 1 else state
    last = parts[-1]
    if isinstance(parent, dict):
        parent.pop(last, None)
    elif isinstance(parent, list) and isinstance(last, int) and -len(parent) <= last < len(parent):
        del parent[last]
