"""Source positions of a rewritten document: what the v8 rewrite and the composite expansion move keeps pointing
at what the author wrote, at a cost that does not depend on how much was moved.

A move is recorded, not copied: copying every position below a moved path cost about a third of validating a v8
workflow of composites. A lookup that finds no position of its own follows the moves; only a diagnostic and a
compiled node's place look one up.
"""

from __future__ import annotations

from typing import Any

_KEY = ("@key",)  # the prefix of a key's own position (diagnostics.Reporter)


class MovedPositions(dict):
    """A document's positions (path → (line, column); `("@key",) + path` → its key's) and the moves made since
    it was read: after `move(old, new)`, a path under `new` that has no position of its own has the one of the
    same path under `old` (or of its key). Where several moves cover a path, the one nearest to it decides,
    whatever the order they were made in (a restart ending's `target_node` moved to a generated node's
    `on_success` before the ending moved to that node), and the next one answers what it lacks.

    A position of the path's own wins over any move. The rewrites move only to names the author did not write,
    so that matters only in a v8 file that also keeps an `endings:` block (an error) naming an ending node.
    `in` and iteration see only the positions themselves, not what moves give."""

    __slots__ = ("moves",)

    def __init__(self, positions: dict):
        super().__init__(positions)
        # A rewrite of a rewritten document (v8 after composites) keeps the first one's moves.
        self.moves: dict[tuple, tuple] = dict(getattr(positions, "moves", {}))

    def move(self, old: tuple, new: tuple) -> None:
        """Positions under `old` (and of its keys) are now also those of `new`."""
        self.moves[new] = old

    def get(self, path: Any, default: Any = None) -> Any:
        found = dict.get(self, path)
        if found is None and self.moves and type(path) is tuple:
            found = self._moved(path)
        return default if found is None else found

    def __missing__(self, path: Any) -> Any:
        found = self._moved(path) if self.moves and type(path) is tuple else None
        if found is None:
            raise KeyError(path)
        return found

    def _moved(self, path: tuple) -> tuple[int, int] | None:
        key = path[:1] == _KEY
        bare = path[1:] if key else path
        moves = self.moves
        for cut in range(len(bare), 0, -1):
            old = moves.get(bare[:cut])
            if old is not None:
                found = self.get((_KEY + old if key else old) + bare[cut:])
                if found is not None:
                    return found
        return None
