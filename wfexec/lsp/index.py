"""One workflow file as the editor sees it: validate's diagnostics, its nodes and endings, every route into them
and every state path it writes, each with where it is written.

Built from the checker (`check_document` on the unsaved text, then `lint_nodes`, as `wfexec validate` does), so
the editor and the command line never disagree. Positions are 0-based (line, character) spans.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wfexec.language.diagnostics import Diagnostic

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


def analyse(path: Path, text: str) -> WorkflowIndex | None:
    """The index of the workflow `text` (the file at `path` as the editor holds it); None when it is no workflow."""
    from wfexec.language.loader import load_text

    document = load_text(text, str(path))
    if not looks_like_workflow(path, text, document.data):
        return None
    diagnostics, targets = _diagnostics(path, document)
    index = WorkflowIndex(path, text.splitlines(), diagnostics)
    if isinstance(document.data, dict):
        _index_definitions(index, document, targets)
        _index_writers(index, document.data, document.positions)
    return index


def _diagnostics(path: Path, document) -> tuple[list[Diagnostic], tuple]:
    """What `wfexec validate` reports for the document (its own file's; those of other files it reads are theirs),
    and the targets the check found."""
    from wfexec.api import lint_nodes
    from wfexec.language.compiler import check_document
    from wfexec.types.registry import BrokenPlugins, check_plugins

    try:
        check_plugins()
    except BrokenPlugins as exc:
        return [Diagnostic(str(path), 1, 1, "", "error", "broken-plugins", exc.message, exc.hint)], ()
    checked = check_document(document)
    diagnostics = sorted(checked.diagnostics, key=lambda d: (d.line, d.column))
    if checked.workflow is not None:
        diagnostics += lint_nodes(checked.workflow)
    return [d for d in diagnostics if d.file == document.path], checked.targets


def _index_definitions(index: WorkflowIndex, document, targets: tuple) -> None:
    from wfexec.language import v8
    from wfexec.lsp.text import block_end, scalar_range

    data = document.data
    index.v8 = v8.is_v8(data)
    for section, kind in (("nodes", "node"), ("endings", "ending")):
        entries = data.get(section)
        if not isinstance(entries, dict):
            continue
        for name, raw in entries.items():
            at = document.positions.get(("@key", section, name))
            if at is None:
                continue
            span = _name_span(index.lines, at, str(name))
            raw_type = raw.get("type") if isinstance(raw, dict) else None
            is_ending = kind == "ending" or raw_type == "ending"
            ending_type = raw.get("outcome", raw.get("result")) if index.v8 and is_ending else raw_type
            index.definitions[str(name)] = Definition(
                str(name), "ending" if is_ending else "node", str(ending_type if is_ending else raw_type or ""),
                str(raw.get("description", "")) if isinstance(raw, dict) else "", span,
                block_end(index.lines, span.line),
                str(raw.get("message", "")) if isinstance(raw, dict) and is_ending else "")
    seen: set[Route] = set()
    for (line, column), name in targets:
        span = _name_span(index.lines, (line, column), name)
        text = index.lines[span.line] if span.line < len(index.lines) else ""
        written = text[span.start:scalar_range(text, span.start)[1]].rstrip("\"'")
        if written != name and not (name.startswith(written + "__") and written in index.definitions):
            continue  # no route the file spells out: one a v8 rewrite added (`default_error`)
        # A composite's route goes to its first expanded node (`confirm_write__ask`): in the file, the composite.
        route = Route(written, Span(span.line, span.start, span.start + len(written)))
        if route not in seen:  # a composite's expansion names the same route more than once
            seen.add(route)
            index.routes.append(route)


def _name_span(lines: list[str], at: tuple[int, int], name: str) -> Span:
    """The span of `name` written at 1-based `at`, inside its quotes when it has them."""
    line, column = at[0] - 1, at[1] - 1
    text = lines[line] if 0 <= line < len(lines) else ""
    if column < len(text) and text[column] in "\"'":
        column += 1
    return Span(max(line, 0), column, column + len(name))


def _index_writers(index: WorkflowIndex, data: dict, positions: dict) -> None:
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
    for section in ("nodes", "endings"):
        entries = data.get(section)
        if not isinstance(entries, dict):
            continue
        for owner, raw in entries.items():
            if isinstance(raw, dict) and raw.get("type") == "user_prompt":
                index.writers.append(Writer(f"user_responses.{owner}", str(owner),
                                            span(("@key", section, owner), str(owner))))
            _walk_writes(raw, (section, owner), str(owner), index, span)


def _walk_writes(value: Any, path: tuple, owner: str, index: WorkflowIndex, span) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str) and "${" not in item:
                if key in WRITING_KEYS:
                    index.writers.append(Writer(item, owner, span(path + (key,), item)))
                elif key in FLAG_KEYS:
                    index.writers.append(Writer(f"flags.{item.split('.')[0]}", owner, span(path + (key,), item)))
            _walk_writes(item, path + (key,), owner, index, span)
    elif isinstance(value, list):
        for number, item in enumerate(value):
            _walk_writes(item, path + (number,), owner, index, span)
