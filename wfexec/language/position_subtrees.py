"""Copying the source positions of one part of a document to another path, in time proportional to that part.

The v8 rewrite and the composite expansion give generated paths the positions of what the author wrote. Scanning
every position of the file for each copy made a v8 workflow's validation grow with the square of its node count;
here positions are grouped by the first two steps of their path (`("nodes", name)`), and a copy reads one group.
"""

from __future__ import annotations

_KEY = ("@key",)  # the prefix of a key's own position (diagnostics.Reporter)
_GROUP_DEPTH = 2


def _group(path: tuple) -> tuple:
    return (path[1:] if path[:1] == _KEY else path)[:_GROUP_DEPTH]


class SubtreePositions:
    """A view of a positions dict (path → (line, column)) that copies whole subtrees cheaply."""

    def __init__(self, positions: dict):
        self.positions = positions
        self.groups: dict[tuple, list[tuple]] = {}
        for path in positions:
            self.groups.setdefault(_group(path), []).append(path)

    def set(self, path: tuple, position: tuple[int, int]) -> None:
        if path not in self.positions:
            self.groups.setdefault(_group(path), []).append(path)
        self.positions[path] = position

    def copy(self, old: tuple, new: tuple) -> None:
        """Positions under `old` (and of its keys) are now also those of `new` (a later copy wins)."""
        for prefix, out in ((old, new), (_KEY + old, _KEY + new)):
            group = _group(prefix)
            candidates = self.groups.get(group, ()) if len(group) == _GROUP_DEPTH else self.positions
            size = len(prefix)
            found = [(path, self.positions[path]) for path in candidates if path[:size] == prefix]
            for path, position in found:
                self.set(out + path[size:], position)
