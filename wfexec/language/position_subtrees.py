"""Copying the source positions of one part of a document to another path, in time proportional to that part.

The v8 rewrite and the composite expansion give generated paths the positions of what the author wrote. Scanning
every position of the file for each copy made a v8 workflow's validation grow with the square of its node count;
here each path knows its children, and a copy visits only the subtree it copies.
"""

from __future__ import annotations

_KEY = ("@key",)  # the prefix of a key's own position (diagnostics.Reporter)


class SubtreePositions:
    """A view of a positions dict (path → (line, column), and `("@key",) + path` → the key's) that copies whole
    subtrees cheaply."""

    def __init__(self, positions: dict):
        self.positions = positions
        self.children: dict[tuple, list[tuple]] = {}
        for path in positions:
            self._know(path[1:] if path[:1] == _KEY else path)

    def _know(self, path: tuple) -> None:
        """Make `path` (without the key prefix) reachable from each of its ancestors."""
        children = self.children
        while path and path not in children:
            children[path] = []
            path, parent = path[:-1], path
            children.setdefault(path, []).append(parent)

    def set(self, path: tuple, position: tuple[int, int]) -> None:
        if path not in self.positions:
            self._know(path[1:] if path[:1] == _KEY else path)
        self.positions[path] = position

    def copy(self, old: tuple, new: tuple) -> None:
        """Positions under `old` (and of its keys) are now also those of `new` (a later copy wins)."""
        positions, children = self.positions, self.children
        if old not in children:
            return
        found = []
        size = len(old)
        waiting = [old]
        while waiting:
            path = waiting.pop()
            target = new + path[size:]
            position = positions.get(path)
            if position is not None:
                found.append((target, position))
            position = positions.get(_KEY + path)
            if position is not None:
                found.append((_KEY + target, position))
            below = children.get(path)
            if below:
                waiting.extend(below)
        for path, position in reversed(found):
            if path not in positions:
                self._know(path[1:] if path[:1] == _KEY else path)
            positions[path] = position
