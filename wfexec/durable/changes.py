"""What one step changed in the run state, as the journal records it, and how resume replays it.

A step's record holds three kinds of change, each keyed by a state path's text:
- *set*: the value a path (its first two segments, e.g. `computed.sha`) holds when the step ends;
- *appended*: the items a step appended in place to a list (`append_state`), so that 8,000 appends journal
  8,000 items, not a list that grows with every one of them;
- *removed*: paths that no longer exist when the step ends (a rollback dropped a key, a stale hint was cleared).

Replaying applies appends, then sets (shallower paths first: sorted when replayed, so that recording, at every
step, need not), then removals. That order is exact because of
what recording leaves out: an append under a path that was also set in the step, or inside an item appended in
the step, is left out (the set's value or the item already holds it), and list indices are recorded counted from the start (a negative index means
something else once a list has grown).
"""

from __future__ import annotations

import json

from wfexec.language.paths import StatePath, delete_path, format_path, get_path, parse_path, set_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
_IMMUTABLE = frozenset({str, int, float, bool, type(None)})
_MISSING = object()
_NO_APPENDS: dict = {}  # shared, never changed: what most steps append
_NO_REMOVALS: list = []  # shared, never changed: what most steps remove
_path_text: dict[tuple, str] = {}
_parsed: dict[str, StatePath] = {}
_top_level: dict[tuple, str] = {}  # a top-level name's path (never `history`'s) and its text: most writes
# `history` is the journal itself: resume rebuilds it from the step rows, so it is never a change.
_NOT_STATE = "history"


def path_text(path: tuple) -> str:
    text = _path_text.get(path)
    if text is None:
        text = _path_text[path] = format_path(path)
    return text


def _path(text: str) -> StatePath:
    parts = _parsed.get(text)
    if parts is None:
        parts = _parsed[text] = parse_path(text)
    return parts


def frozen(value: Any) -> Any:
    """The value as it is now: a later step may change a mapping or list in place."""
    return value if value.__class__ in _IMMUTABLE else json.loads(_dumps(value))


def record(state: Mapping[str, Any], changed: Mapping[tuple, Any], appended: Mapping[tuple, int]
           ) -> tuple[dict, dict, list]:
    """(set, appended, removed) for a step that wrote the paths `changed` and appended `appended[path]` items
    to the lists at `appended`'s paths."""
    sets: dict[str, Any] = {}
    removed: list[str] = _NO_REMOVALS
    for path in changed:
        text = _top_level.get(path)
        if text is not None:  # most writes: a top-level name
            value = state.get(path[0], _MISSING)
        elif path[0] == _NOT_STATE:
            continue
        else:
            text = path_text(path)
            if len(path) == 1:
                _top_level[path] = text
                value = state.get(path[0], _MISSING)
            else:
                value = get_path(state, path, _MISSING)
        if value is _MISSING:
            if removed is _NO_REMOVALS:
                removed = []
            removed.append(text)
        else:
            sets[text] = value if value.__class__ in _IMMUTABLE else frozen(value)
    if not appended:
        return sets, _NO_APPENDS, removed
    appends: dict[str, list] = {}
    for path, count in appended.items():
        if path[:1] in changed or path[:2] in changed or path[0] == _NOT_STATE or \
                _inside_appended_item(state, path, appended):
            continue  # a set's value, or an appended item, holds these items already
        items = get_path(state, path)
        appends[path_text(path)] = frozen(items[-count:])
    return sets, appends, removed


def _inside_appended_item(state: Mapping[str, Any], path: tuple, appended: Mapping[tuple, int]) -> bool:
    for outer, count in appended.items():
        depth = len(outer)
        if depth < len(path) and path[:depth] == outer:
            index = path[depth]
            if isinstance(index, int) and index >= len(get_path(state, outer)) - count:
                return True
    return False


def _depth(change: tuple[str, Any]) -> int:
    return len(_path(change[0]))


def replay(state: dict, sets: Mapping[str, Any], appends: Mapping[str, list] | None = None,
           removed: list[str] | None = None) -> None:
    """Apply one step's recorded changes to `state` (the state as it was before that step)."""
    if appends:
        for text, items in appends.items():
            parts = _path(text)
            target = get_path(state, parts)
            if isinstance(target, list):
                target.extend(items)
            else:  # the list was created by the step: recording makes that a set, but be lenient
                set_path(state, parts, list(items))
    for text, value in (sets.items() if len(sets) < 2 else sorted(sets.items(), key=_depth)):
        set_path(state, _path(text), value)
    if removed:
        for text in removed:
            delete_path(state, _path(text))
