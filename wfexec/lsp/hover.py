"""What the editor shows over a name: a node (its type and what that does), an ending (what it means), a
precondition or consequence type (its doc and parameters), a parameter, or a `${…}` name (who writes it)."""

from __future__ import annotations

from wfexec.lsp.index import Definition, Route, WorkflowIndex
from wfexec.lsp.text import entry, flow_key, key_path, sibling_value, template_name_at, word_range

ENDING_MEANINGS = {
    "success": "the run did what it was for (exit code 0)",
    "failure": "the run ended without doing it, as the workflow foresaw (exit code 1)",
    "error": "something went wrong that the workflow could not handle (exit code 1)",
    "cancelled": "the run was stopped on purpose, by a person or a step (exit code 1)",
    "indeterminate": "v8: the outcome could not be told; runs as a `failure` of category `indeterminate` (exit 1)",
}
# The keys under which a `type:` names a precondition (elsewhere a call's type is a consequence's).
PRECONDITION_PLACES = ("condition", "conditions", "preconditions", "entry_preconditions", "validations")


def hover(index: WorkflowIndex, line: int, character: int) -> str | None:
    """Markdown for the name under the cursor, or None."""
    found = index.at(line, character)
    if isinstance(found, Definition):
        return _definition(index, found)
    if isinstance(found, Route):
        named = index.definitions.get(found.target)
        return _definition(index, named) if named else f"`{found.target}` names no node or ending of this workflow"
    text = index.lines[line] if line < len(index.lines) else ""
    name = template_name_at(text, character)
    if name is not None:
        return _writers(index, name)
    here = entry(text)
    if here is None:
        return None
    path = key_path(index.lines, line)
    if character >= here.value_start:
        flow = flow_key(text, character)
        key = flow or here.key
        if key not in ("type", "outcome", "result"):
            return None
        start, end = word_range(text, character)
        return type_doc(text[start:end], path + (key,) if flow else path)
    if here.key_start <= character <= here.key_end:
        return _parameter(index, line, here.key, path)
    return None


def _definition(index: WorkflowIndex, definition: Definition) -> str:
    routes = len(index.routes_to(definition.id))
    into = f"{routes} route{'s' if routes != 1 else ''} in"
    if definition.kind == "ending":
        meaning = ENDING_MEANINGS.get(definition.type, "")
        parts = [f"**{definition.id}**: `{definition.type}` ending — {meaning}", definition.message, into]
    else:
        parts = [f"**{definition.id}**: `{definition.type}` node", definition.description,
                 _node_type_doc(definition.type), into]
    return "\n\n".join(part for part in parts if part)


def _node_type_doc(name: str) -> str:
    """A node type's doc, or a v8 composite's (`confirm`, `gated_action`, `goal_seek`)."""
    from wfexec.language.composites import SCHEMAS
    from wfexec.nodes.base import node_types

    types = node_types()
    if name in types:
        return types[name].docs.doc
    return str(SCHEMAS.get(name, {}).get("description", ""))


def type_doc(name: str, path: tuple[str, ...]) -> str | None:
    """A node type's, an ending type's, or a precondition's or consequence's doc with its parameters."""
    if name in ENDING_MEANINGS:
        return f"`{name}` ending: {ENDING_MEANINGS[name]}"
    if len(path) == 3 and path[0] == "nodes":
        if name == "ending":
            return "`ending` (v8): the run ends here; `outcome` says how (" + \
                ", ".join(f"`{outcome}`" for outcome in ENDING_MEANINGS) + ")"
        doc = _node_type_doc(name)
        return f"`{name}` node type\n\n{doc}" if doc else None
    spec = call_spec(name, path)
    if spec is None:
        return None
    lines = [f"`{name}` {spec.kind}: {spec.doc}"]
    for param in spec.params:
        required = " (required)" if param in spec.required else ""
        lines.append(f"- `{param}`{required}: {spec.param_description(param)}")
    if spec.effects:
        lines.append(f"\neffects: {', '.join(spec.effects)}")
    return "\n".join(lines)


def call_spec(name: str, path: tuple[str, ...]):
    """The precondition or consequence type `name`, looked up where a call at `path` is one."""
    from wfexec.types.registry import consequences, preconditions

    first, second = (preconditions(), consequences())
    if not any(part in PRECONDITION_PLACES for part in path):
        first, second = second, first
    return first.get(name) or second.get(name)


def _parameter(index: WorkflowIndex, line: int, key: str, path: tuple[str, ...]) -> str | None:
    call_type = sibling_value(index.lines, line, "type")
    if call_type is None or key == "type":
        return None
    if len(path) == 3 and path[0] == "nodes":
        from wfexec.nodes.base import node_types

        types = node_types()
        note = types[call_type].docs.field_notes.get(key, "") if call_type in types else ""
        return f"`{key}` of a `{call_type}` node: {note}" if note else None
    spec = call_spec(call_type, path)
    if spec is None or key not in spec.params:
        return None
    return f"`{key}` of `{call_type}`: {spec.param_description(key)}"


def _writers(index: WorkflowIndex, name: str) -> str:
    writers = index.writers_of(name)
    if not writers:
        return f"`{name}`: nothing in this workflow writes it (a run reads it as `undefined`)"
    lines = [f"`{name}` is written by:"]
    for writer in writers[:20]:
        where = f" (line {writer.span.line + 1})" if writer.span else ""
        lines.append(f"- `{writer.path}` — {writer.owner}{where}")
    if len(writers) > 20:
        lines.append(f"- and {len(writers) - 20} more")
    return "\n".join(lines)
