"""One workflow file as the editor sees it: validate's diagnostics, its nodes and endings, every route into them
and every state path it writes, each with where it is written.

Built from the checker (`check_document` on the unsaved text, then `lint_nodes`, as `wfexec validate` does), so
the editor and the command line never disagree. Positions are 0-based (line, character) spans.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from wfexec.language.diagnostics import Diagnostic
from wfexec.language.node_reuse import NodeReuse
from wfexec.lsp.pieces import Piece, PieceLoader

# The keys whose value is a state path a step writes (the name checks read the same keys).
from wfexec.language.name_checks import _FLAG_KEYS as FLAG_KEYS, _WRITING_KEYS as WRITING_KEYS

# A file is a workflow when it is a mapping with `nodes:`; one that does not parse yet is when a line says so.
_NODES_LINE = re.compile(r"^nodes[ ]*:", re.MULTILINE)


@dataclass(frozen=True)
class Span:
    line: int
    start: int
    end: int

    def holds(self, line: int, character: int) -> bool:
        return line == self.line and self.start <= character <= self.end


@dataclass(frozen=True)
class Definition:
    """A node or an ending, at its id."""

    id: str
    kind: str           # "node" or "ending"
    type: str           # the node type, or the ending type (success, failure, error, cancelled)
    description: str
    span: Span
    last_line: int      # where its block ends (for document symbols)
    message: str = ""   # an ending's message (kept rather than the node: the parsed file is let go of)


@dataclass(frozen=True)
class Route:
    """A target written out: the node or ending `target` names, at the name."""

    target: str
    span: Span


@dataclass(frozen=True)
class Writer:
    """A place that writes state path `path`: a step's `store_as`/`field`/`flag`, `initial_state`, an input."""

    path: str
    owner: str          # node or ending id, or "initial_state" / "input_schema"
    span: Span | None


@dataclass
class WorkflowIndex:
    path: Path
    lines: list[str]
    diagnostics: list[Diagnostic]
    definitions: dict[str, Definition] = field(default_factory=dict)
    routes: list[Route] = field(default_factory=list)
    writers: list[Writer] = field(default_factory=list)
    v8: bool = False

    def at(self, line: int, character: int) -> Definition | Route | None:
        for definition in self.definitions.values():
            if definition.span.holds(line, character):
                return definition
        for route in self.routes:
            if route.span.holds(line, character):
                return route
        return None

    def routes_to(self, name: str) -> list[Route]:
        return [route for route in self.routes if route.target == name]

    def target_keys(self) -> set[str]:
        """The keys that hold a target in this file (besides the fields every file has)."""
        from wfexec.lsp.text import entry

        keys = set(TARGET_FIELDS)
        for route in self.routes:
            found = entry(self.lines[route.span.line]) if route.span.line < len(self.lines) else None
            if found is not None and found.value_start <= route.span.start:
                keys.add(found.key)
        return keys

    def writers_of(self, name: str) -> list[Writer]:
        """Who writes what `${name}` reads: the path itself, a path inside it, or the value it is inside of;
        a bare name is looked up in computed, flags, user_responses and the top level, as a run looks it up."""
        wanted = {name} if "." in name else {name, f"computed.{name}", f"flags.{name}", f"user_responses.{name}"}
        found = []
        for writer in self.writers:
            if any(writer.path == w or writer.path.startswith(w + ".") or w.startswith(writer.path + ".")
                   for w in wanted):
                found.append(writer)
        return found


# Target fields of the built-in node types and endings, for completion before the file has any route.
TARGET_FIELDS = ("start_node", "next_node", "on_success", "on_failure", "on_true", "on_false", "on_unknown",
                 "on_valid", "on_invalid", "retry_node", "default_error")


def looks_like_workflow(path: Path, text: str, data: Any) -> bool:
    if path.suffix.lower() not in (".yaml", ".yml"):
        return False
    if isinstance(data, dict):
        return "nodes" in data
    return data is None and _NODES_LINE.search(text) is not None


class Rechecks:
    """What one open file's checks keep for the next: its parsed pieces and compiled nodes."""

    def __init__(self) -> None:
        self.pieces = PieceLoader()
        self.nodes = NodeReuse()
        # Each node's and ending's definition and writers, by the piece of text it was read from (the last check's).
        self.entries: dict[tuple, tuple] = {}
        self.kept_entries: dict[tuple, tuple] = {}


def analyse(path: Path, text: str, rechecks: Rechecks | None = None) -> WorkflowIndex | None:
    """The index of the workflow `text` (the file at `path` as the editor holds it); None when it is no workflow.
    `rechecks`: what the last check of the same file kept, to reuse what the edit did not change."""
    from wfexec.language.loader import load_text

    reuse: NodeReuse | None = None
    pieces: dict[tuple[str | None, str], Piece] = {}
    if rechecks is None:
        document = load_text(text, str(path))
    else:
        document, pieces = rechecks.pieces.load(text, str(path))
        reuse = rechecks.nodes
        if pieces:  # (a text parsed whole leaves those of the last one parsed in pieces)
            rechecks.entries, rechecks.kept_entries = rechecks.kept_entries, {}
        reuse.begin({node_id: (piece.text, piece.start) for (section, node_id), piece in pieces.items()
                     if section == "nodes"}, str(path))
    if not looks_like_workflow(path, text, document.data):
        return None
    diagnostics, targets = _diagnostics(path, document, reuse)
    index = WorkflowIndex(path, text.splitlines(), diagnostics)
    if isinstance(document.data, dict):
        _index_writers(index, document.data, document.positions)
        _index_definitions(index, document, targets, rechecks, pieces)
    return index


def _diagnostics(path: Path, document, reuse=None) -> tuple[list[Diagnostic], tuple]:
    """What `wfexec validate` reports for the document (its own file's; those of other files it reads are theirs),
    and the targets the check found."""
    from wfexec.api import lint_nodes
    from wfexec.language.compiler import check_document
    from wfexec.types.registry import BrokenPlugins, check_plugins

    try:
        check_plugins()
    except BrokenPlugins as exc:
        return [Diagnostic(str(path), 1, 1, "", "error", "broken-plugins", exc.message, exc.hint)], ()
    checked = check_document(document, reuse=reuse)
    diagnostics = sorted(checked.diagnostics, key=lambda d: (d.line, d.column))
    if checked.workflow is not None:
        diagnostics += lint_nodes(checked.workflow)
    return [d for d in diagnostics if d.file == document.path], checked.targets


def _index_definitions(index: WorkflowIndex, document, targets: tuple, rechecks: Rechecks | None,
                       pieces: dict) -> None:
    from wfexec.language import v8

    data = document.data
    index.v8 = v8.is_v8(data)
    for section in ("nodes", "endings"):
        found = data.get(section)
        if not isinstance(found, dict):
            continue
        for name, raw in found.items():
            piece = pieces.get((section, name))
            key = (section, name, piece.text) if piece is not None and rechecks is not None else None
            kept = rechecks.entries.get(key) if key is not None else None  # type: ignore[union-attr]
            if kept is not None and kept[0] != piece.start:  # type: ignore[union-attr]
                kept = _moved_entry(kept, piece.start)  # type: ignore[union-attr]
            line, definition, writers = kept or (None, _definition(index, document, section, name, raw),
                                                 _writers(index, document.positions, section, name, raw))
            if key is not None:
                rechecks.kept_entries[key] = (piece.start, definition, writers)  # type: ignore[union-attr]
            if definition is not None:
                index.definitions[str(name)] = definition
            index.writers.extend(writers)
    seen: set[Route] = set()
    for (line, column), name in targets:
        line = max(line - 1, 0)
        start, written = _route_at(index.lines[line] if line < len(index.lines) else "", column - 1, name)
        if written != name and not (name.startswith(written + "__") and written in index.definitions):
            continue  # no route the file spells out: one a v8 rewrite added (`default_error`)
        # A composite's route goes to its first expanded node (`confirm_write__ask`): in the file, the composite.
        route = Route(written, Span(line, start, start + len(written)))
        if route not in seen:  # a composite's expansion names the same route more than once
            seen.add(route)
            index.routes.append(route)


@functools.lru_cache(maxsize=1 << 16)  # a line of a route and its target seldom change between two checks
def _route_at(text: str, column: int, name: str) -> tuple[int, str]:
    """Where the target `name` the checker found at 0-based `column` of the line `text` starts, and what is written
    there (inside its quotes)."""
    from wfexec.lsp.text import scalar_range

    if column < len(text) and text[column] in "\"'":
        column += 1
    return column, text[column:scalar_range(text, column)[1]].rstrip("\"'")


def _moved_entry(kept: tuple, line: int) -> tuple:
    """A node's kept definition and writers, for the node now starting at `line`."""
    lines = line - kept[0]
    definition, writers = kept[1], kept[2]

    def moved(span: Span | None) -> Span | None:
        return None if span is None else Span(span.line + lines, span.start, span.end)

    if definition is not None:
        definition = replace(definition, span=moved(definition.span), last_line=definition.last_line + lines)
    # (constructed, not `replace`d: a node has a handful, a move touches every node below it)
    return line, definition, [Writer(writer.path, writer.owner, moved(writer.span)) for writer in writers]


def _definition(index: WorkflowIndex, document, section: str, name: str, raw: Any) -> Definition | None:
    from wfexec.lsp.text import block_end

    at = document.positions.get(("@key", section, name))
    if at is None:
        return None
    span = _name_span(index.lines, at, str(name))
    raw_type = raw.get("type") if isinstance(raw, dict) else None
    is_ending = section == "endings" or raw_type == "ending"
    ending_type = raw.get("outcome", raw.get("result")) if index.v8 and is_ending else raw_type
    return Definition(
        str(name), "ending" if is_ending else "node", str(ending_type if is_ending else raw_type or ""),
        str(raw.get("description", "")) if isinstance(raw, dict) else "", span,
        block_end(index.lines, span.line),
        str(raw.get("message", "")) if isinstance(raw, dict) and is_ending else "")


def _name_span(lines: list[str], at: tuple[int, int], name: str) -> Span:
    """The span of `name` written at 1-based `at`, inside its quotes when it has them."""
    line, column = at[0] - 1, at[1] - 1
    text = lines[line] if 0 <= line < len(lines) else ""
    if column < len(text) and text[column] in "\"'":
        column += 1
    return Span(max(line, 0), column, column + len(name))


def _index_writers(index: WorkflowIndex, data: dict, positions: dict) -> None:
    """The writers outside the nodes and endings (theirs come with each, `_writers`)."""
    def span(path: tuple, value: str) -> Span | None:
        at = positions.get(path)
        return _name_span(index.lines, at, value) if at else None

    initial = data.get("initial_state")
    if isinstance(initial, dict):
        for key, value in initial.items():
            index.writers.append(Writer(str(key), "initial_state", span(("@key", "initial_state", key), str(key))))
            if isinstance(value, dict):
                for inner in value:
                    index.writers.append(Writer(f"{key}.{inner}", "initial_state",
                                                span(("@key", "initial_state", key, inner), str(inner))))
    schema = data.get("input_schema")
    if isinstance(schema, dict):
        properties = schema.get("properties")
        for name in properties if isinstance(properties, dict) else schema:
            index.writers.append(Writer(str(name), "input_schema", span(("@key", "input_schema", name), str(name))))


def _writers(index: WorkflowIndex, positions: dict, section: str, owner: str, raw: Any) -> list[Writer]:
    def span(path: tuple, value: str) -> Span | None:
        at = positions.get(path)
        return _name_span(index.lines, at, value) if at else None

    found: list[Writer] = []
    if isinstance(raw, dict) and raw.get("type") == "user_prompt":
        found.append(Writer(f"user_responses.{owner}", str(owner), span(("@key", section, owner), str(owner))))
    _walk_writes(raw, (section, owner), str(owner), found, span)
    return found


def _walk_writes(value: Any, path: tuple, owner: str, found: list[Writer], span) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str) and "${" not in item:
                if key in WRITING_KEYS:
                    found.append(Writer(item, owner, span(path + (key,), item)))
                elif key in FLAG_KEYS:
                    found.append(Writer(f"flags.{item.split('.')[0]}", owner, span(path + (key,), item)))
            elif isinstance(item, (dict, list)):
                _walk_writes(item, path + (key,), owner, found, span)
    elif isinstance(value, list):
        for number, item in enumerate(value):
            if isinstance(item, (dict, list)):
                _walk_writes(item, path + (number,), owner, found, span)
