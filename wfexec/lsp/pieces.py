"""Loading a workflow's text again after an edit, parsing only the pieces whose text changed.

The text is cut where the YAML cannot carry over: before each top-level key, and, in a block `nodes:` or
`endings:` section, before each entry. Each piece is parsed on its own (`load_text`, as `wfexec validate` parses
the whole file) and kept by its text; the pieces' values are put together in file order, their positions moved
down to where the piece starts. What comes out is the `Document` that `load_text` gives for the whole text: same
data, same positions. When the text has anything that might parse differently cut up (a piece that does not parse
alone, a key written twice across pieces, an alias, a `---`, other line breaks than `\\n`, nesting near the depth
limit), the whole text is parsed instead, so the diagnostics of a broken file are the whole file's.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from wfexec.language.loader import ALIAS_VALUES_VARIABLE, MAX_ALIAS_VALUES, MAX_DEPTH, Document, limit, load_text

SPLIT_SECTIONS = ("nodes", "endings")
_KEY = r"(?:[A-Za-z0-9_$][\w$.-]*|\"[^\"\\\n]*\"|'[^'\n]*')[ ]*:(?:[ ]|$)"
_TOP_KEY = re.compile(_KEY, re.MULTILINE)
_SECTION_HEADER = re.compile(r"(nodes|endings)[ ]*:[ ]*(?:#.*)?$", re.MULTILINE)
# Searched from a line break, not with `^`: the search then skips to each line break in C, ten times faster.
_CONTENT_LINE = re.compile(r"\n([ ]*)[^ \n#]")  # a line neither blank nor a comment
_LEFT_EDGE = re.compile(r"\n[^ \n#]")
# Whatever could make a piece read differently alone: other line breaks (and anything else `str.splitlines` takes
# for one: the editor's lines would not be YAML's), a byte-order mark, a document marker or directive at the start
# of a line. (An alias of an anchor in another piece does not parse alone.)
_WHOLE_FILE_ONLY = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\ufeff",
                    "\n---", "\n...", "\n%")


@dataclass(frozen=True)
class Piece:
    section: str | None  # None for a top-level key; "nodes" or "endings" for one entry of that section
    start: int           # its first line (0-based)
    text: str
    header: bool = False  # the line `nodes:` (or `endings:`) of a section cut into entries, at line `start`


@dataclass
class _Parsed:
    """One piece's text parsed alone: its value and positions, relative to the piece (paths and lines)."""

    data: dict
    positions: dict
    deepest: int
    repeats: int  # at most this many values repeated through aliases (0: the piece has no alias)
    keyed: dict  # the positions by their path in the file (their lines still the piece's own)


class PieceLoader:
    """Loads the successive texts of one file, reusing the pieces whose text did not change."""

    def __init__(self) -> None:
        self._parsed: dict[tuple[str | None, str], _Parsed | None] = {}  # by (section, text)
        self._placed: dict[tuple, dict] = {}  # (section, text, first line) → its positions in the file

    def load(self, text: str, path: str) -> tuple[Document, dict[tuple[str | None, str], Piece]]:
        """The document `load_text(text, path)` gives, and the piece each node and ending was read from (empty
        when the whole text was parsed at once)."""
        pieces = split(text)
        document = self._assembled(pieces, text, path) if pieces is not None else None
        if pieces is None or document is None:
            # Kept for when the text parses in pieces again (a typo being fixed), unless too much piles up.
            if len(self._parsed) > 2 * len(pieces or ()) + 256:
                self._parsed.clear()
                self._placed.clear()
            return load_text(text, path), {}
        used = {(piece.section, piece.text) for piece in pieces}
        self._parsed = {key: value for key, value in self._parsed.items() if key in used}
        placed = {(piece.section, piece.text, piece.start) for piece in pieces}
        self._placed = {key: value for key, value in self._placed.items() if key in placed}
        entries = {}
        for piece in pieces:
            parsed = self._parsed[piece.section, piece.text] if piece.section is not None and not piece.header \
                else None
            if parsed is not None:
                entries[(piece.section, next(iter(parsed.data)))] = piece
        return document, entries

    def _parse(self, piece: Piece) -> _Parsed | None:
        if (piece.section, piece.text) in self._parsed:
            return self._parsed[piece.section, piece.text]
        loaded = load_text(piece.text)
        parsed = None
        if not loaded.diagnostics and isinstance(loaded.data, dict) and \
                (piece.section is None or len(loaded.data) == 1):
            section = piece.section
            keyed = {path if section is None else
                     ("@key", section) + path[1:] if path[0] == "@key" else (section,) + path: at
                     for path, at in loaded.positions.items() if path}
            parsed = _Parsed(loaded.data, loaded.positions, max(len(p) for p in loaded.positions),
                             len(loaded.positions) if "*" in piece.text else 0, keyed)
        self._parsed[piece.section, piece.text] = parsed
        return parsed

    def _assembled(self, pieces: list[Piece], text: str, path: str) -> Document | None:
        data: dict[str, Any] = {}
        positions: dict = {}
        repeats, most_repeats = 0, limit(ALIAS_VALUES_VARIABLE, MAX_ALIAS_VALUES)
        for number, piece in enumerate(pieces):
            if piece.header:
                if number == 0:
                    positions[()] = (piece.start + 1, 1)
                if str(piece.section) in data:
                    return None  # a second `nodes:`: the whole file's parse says so
                data[str(piece.section)] = {}
                positions[("@key", piece.section)] = (piece.start + 1, 1)
                continue
            parsed = self._parse(piece)
            if parsed is None or parsed.deepest >= MAX_DEPTH - 4:
                return None
            repeats += parsed.repeats
            if repeats > most_repeats:  # the aliases of all pieces together might pass the limit
                return None
            if piece.section is None:
                if number == 0:
                    positions[()] = _moved(parsed.positions[()], piece.start)
                if data.keys() & parsed.data.keys():
                    return None
                data.update(parsed.data)
            else:
                entries = data[str(piece.section)]
                if entries.keys() & parsed.data.keys():
                    return None
                if not entries:  # the section's mapping starts at its first entry
                    positions[(piece.section,)] = _moved(parsed.positions[()], piece.start)
                entries.update(parsed.data)
            positions.update(self._place(piece, parsed))
        return Document(path=path, data=data, positions=positions, diagnostics=[], text=text)

    def _place(self, piece: Piece, parsed: _Parsed) -> dict:
        key = (piece.section, piece.text, piece.start)
        placed = self._placed.get(key)
        if placed is None:
            start = piece.start
            placed = self._placed[key] = {path: (line + start, column)
                                          for path, (line, column) in parsed.keyed.items()}
        return placed


def _moved(at: tuple[int, int], lines: int) -> tuple[int, int]:
    return at[0] + lines, at[1]


def split(text: str) -> list[Piece] | None:
    """The pieces of `text`, or None when it must be parsed whole."""
    if text.startswith(("---", "...", "%")) or any(sign in text for sign in _WHOLE_FILE_ONLY):
        return None
    starts: list[tuple[int, str | None]] = []  # (offset, section) where a piece starts
    tops = ([0] if text[:1] not in ("", " ", "\n", "#") else []) + \
        [found.start() + 1 for found in _LEFT_EDGE.finditer(text)]
    for number, at in enumerate(tops):
        if text[at] == "-" and starts and text[at + 1:at + 2] in (" ", "\n", ""):
            continue  # a list written at the left edge: it belongs to the key above
        if not _TOP_KEY.match(text, at):
            return None
        starts.append((at, None))
        header = _SECTION_HEADER.match(text, at)
        if header is None:
            continue
        end = tops[number + 1] if number + 1 < len(tops) else len(text)
        first = _CONTENT_LINE.search(text, header.end(), end)
        if first is None:
            continue
        indent = len(first.group(1))
        # The lines no deeper than the entries: each starts an entry (a shallower one is no YAML a piece can keep).
        for entry in _shallow(indent).finditer(text, first.start(), end):
            if len(entry.group(1)) != indent or not _TOP_KEY.match(text, entry.end(1)):
                return None
            starts.append((entry.start() + 1, header.group(1)))
    if not starts:
        return None
    pieces = []
    line, counted_to = 0, 0
    for number, (at, in_section) in enumerate(starts):
        line, counted_to = line + text.count("\n", counted_to, at), at
        following = starts[number + 1] if number + 1 < len(starts) else None
        if in_section is None and following is not None and following[1] is not None:
            pieces.append(Piece(following[1], line, "", header=True))  # its entries are its pieces
            continue
        if number == 0:
            at, first_line = 0, 0  # what comes before the first key (comments) goes with it
        else:
            first_line = line
        pieces.append(Piece(in_section, first_line, text[at:following[0]] if following is not None else text[at:]))
    return pieces


@functools.lru_cache(maxsize=16)
def _shallow(indent: int) -> re.Pattern:
    """The lines that are neither blank nor a comment and indented by at most `indent` (at least one) spaces."""
    return re.compile(rf"\n([ ]{{1,{indent}}})[^ \n#]")
