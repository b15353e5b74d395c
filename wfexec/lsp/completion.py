"""What the editor offers at the cursor: node and ending ids in a target field, type names after `type:`, a
type's parameters on a new line of its mapping, and the state paths the workflow writes inside `${…}`."""

from __future__ import annotations

from dataclasses import dataclass

from wfexec.lsp.hover import ENDING_MEANINGS, PRECONDITION_PLACES, call_spec
from wfexec.lsp.index import WorkflowIndex
from wfexec.lsp.text import entry, flow_key, inside_template, key_path, sibling_value


@dataclass(frozen=True)
class Offer:
    label: str
    kind: str           # "node", "ending", "type", "parameter", "state"
    detail: str = ""


def offers(index: WorkflowIndex, lines: list[str], line: int, character: int) -> list[Offer]:
    text = lines[line] if line < len(lines) else ""
    if inside_template(text, character):
        return _state_paths(index)
    here = entry(text)
    if here is not None and character >= here.value_start:
        path = key_path(lines, line)
        flow = flow_key(text, character)
        key = flow or here.key
        path = path + (key,) if flow else path  # inside `condition: {type: …}`: a call, not the node
        if key in index.target_keys() or (len(path) >= 2 and path[-2] in ("branches", "on_result")):
            return _ids(index)
        if key == "type":
            return _type_names(index, path)
        if key in ("outcome", "result"):
            return [Offer(name, "type", meaning) for name, meaning in ENDING_MEANINGS.items()]
        return []
    return _parameters(lines, line, character)


def _ids(index: WorkflowIndex) -> list[Offer]:
    return [Offer(d.id, d.kind, f"{d.type} {d.kind}") for d in index.definitions.values()]


def _state_paths(index: WorkflowIndex) -> list[Offer]:
    seen: dict[str, str] = {}
    for writer in index.writers:
        seen.setdefault(writer.path, f"written by {writer.owner}")
    return [Offer(path, "state", detail) for path, detail in sorted(seen.items())]


def _type_names(index: WorkflowIndex, path: tuple[str, ...]) -> list[Offer]:
    from wfexec.nodes.base import node_types
    from wfexec.types.registry import consequences, preconditions

    if len(path) == 3 and path[0] == "nodes":
        found = [Offer(t.name, "type", t.docs.doc.split("\n")[0]) for t in node_types().ordered()]
        return found + ([Offer("ending", "type", "an ending (v8)")] if index.v8 else [])
    if len(path) == 3 and path[0] == "endings":
        return [Offer(name, "type", meaning) for name, meaning in ENDING_MEANINGS.items() if name != "indeterminate"]
    registry = preconditions() if any(part in PRECONDITION_PLACES for part in path) else consequences()
    return [Offer(spec.name, "type", spec.doc.split("\n")[0]) for spec in registry.specs()]


def _parameters(lines: list[str], line: int, character: int) -> list[Offer]:
    """A new key in a call's mapping: the parameters of its type not yet written."""
    from wfexec.nodes.base import node_types

    text = lines[line] if line < len(lines) else ""
    stripped = text.lstrip(" ")
    depth = len(text) - len(stripped) if stripped else character  # a blank line: where the cursor stands
    if stripped.startswith("- "):
        depth += len(stripped) - len(stripped[1:].lstrip(" "))
    call_type = sibling_value(lines, line, "type", depth=depth)
    if call_type is None:
        return []
    path = key_path(lines, line)
    written = _written_keys(lines, line, depth)
    if len(path) <= 3 and path[:1] == ("nodes",):
        types = node_types()
        if call_type not in types:
            return []
        properties = types[call_type].schema.get("properties", {})
        return [Offer(name, "parameter", types[call_type].docs.field_notes.get(name, ""))
                for name in properties if name not in written]
    spec = call_spec(call_type, path)
    if spec is None:
        return []
    return [Offer(name, "parameter", spec.param_description(name)) for name in spec.params if name not in written]


def _written_keys(lines: list[str], line: int, depth: int) -> set[str]:
    written = set()
    for step in (-1, 1):
        index = line + step
        while 0 <= index < len(lines):
            found = entry(lines[index])
            indent = len(lines[index]) - len(lines[index].lstrip(" "))
            if lines[index].strip() and indent < depth and (found is None or found.depth < depth):
                break
            if found is not None and found.depth == depth:
                written.add(found.key)
            index += step
    return written
