"""Going from a name to what it names: a target to its node, a node to every route into it, a document path to
the file, and renaming a node everywhere it is named. Plain values here; `server` turns them into LSP types."""

from __future__ import annotations

import re
from pathlib import Path

from wfexec.lsp.index import Definition, Route, Span, WorkflowIndex
from wfexec.lsp.text import entry

# Keys whose value is a file or folder a node reads (a reference's doc or sub-workflow, a states folder).
_PATH_KEYS = ("doc", "workflow", "folder", "path", "skill_path", "script", "file")
_ID = re.compile(r"^[A-Za-z_][\w\-]*$")


def named_at(index: WorkflowIndex, line: int, character: int) -> str | None:
    """The node or ending id under the cursor: at its definition or in a route to it."""
    found = index.at(line, character)
    if isinstance(found, Definition):
        return found.id
    if isinstance(found, Route):
        return found.target
    return None


def definition(index: WorkflowIndex, line: int, character: int) -> tuple[Path, Span] | None:
    name = named_at(index, line, character)
    if name is not None and name in index.definitions:
        return index.path, index.definitions[name].span
    target = document_at(index, line, character)
    return (target, Span(0, 0, 0)) if target is not None else None


def references(index: WorkflowIndex, line: int, character: int, with_declaration: bool) -> list[Span]:
    name = named_at(index, line, character)
    if name is None:
        return []
    spans = [route.span for route in index.routes_to(name)]
    if with_declaration and name in index.definitions:
        spans.insert(0, index.definitions[name].span)
    return spans


def rename_spans(index: WorkflowIndex, line: int, character: int, new_name: str) -> list[Span]:
    """Where to write `new_name` to rename the node under the cursor: its id and every route into it.
    Raises ValueError saying why it cannot be renamed so."""
    name = named_at(index, line, character)
    if name is None or name not in index.definitions:
        raise ValueError("put the cursor on a node or ending id, or on a target naming one")
    if not _ID.match(new_name):
        raise ValueError(f"'{new_name}' is no id: use letters, digits, '_' and '-', starting with a letter or '_'")
    if new_name != name and new_name in index.definitions:
        raise ValueError(f"'{new_name}' is already a node or ending of this workflow")
    return [index.definitions[name].span] + [route.span for route in index.routes_to(name)]


def document_at(index: WorkflowIndex, line: int, character: int) -> Path | None:
    """The file a `doc:`/`workflow:`/`folder:` value under the cursor names (a states folder: its first state)."""
    from wfexec.language.documents import find_document
    from wfexec.lsp.states import entry_file

    found = entry(index.lines[line]) if line < len(index.lines) else None
    if found is None or found.key not in _PATH_KEYS or not found.value or character < found.value_start:
        return None
    value = found.value.strip("\"'")
    place = find_document(value, index.path, folder=True).found
    if place is None:
        return None
    return entry_file(place) if place.is_dir() else place
