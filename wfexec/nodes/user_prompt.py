"""`user_prompt`: ask a person, route on the answer.

Options are written out (`prompt.options`) or built from a list in state
(`options_from_state` + `option_mapping`). Free text goes to the `other`
handler; a dynamic option to `selected` (unless a handler has its id). The
answer is stored at `user_responses.<node>` as `{id, raw: {label|text}}`,
plus `text` for free text and `selected` (the list item) for dynamic options.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wfexec.language.expressions import Template, render_value
from wfexec.types.registry import ActionFailed
from wfexec.running.state import get_path
from wfexec.nodes.base import CONSEQUENCES, TARGET, Outcome

TYPE = "user_prompt"

_OPTION = {
    "type": "object",
    "properties": {
        "id": {"type": ["string", "integer", "boolean"]},
        "label": {"type": "string"},
        "description": {"type": "string"},
    },
    "required": ["id", "label"],
    "additionalProperties": False,
}
_MAPPING = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "label": {"type": "string"}, "description": {"type": "string"}},
    "required": ["id", "label"],
    "additionalProperties": False,
}
SCHEMA = {
    "properties": {
        "prompt": {
            "type": "object",
            "properties": {
                "question": {"type": "string"},
                "header": {"type": "string"},
                "options": {"type": "array", "items": _OPTION},
                "options_from_state": {"type": "string"},
                "option_mapping": _MAPPING,
                "option_template": _MAPPING,
            },
            "required": ["question"],
            "additionalProperties": False,
            "patternProperties": {"^x-": {}},
        },
        "on_response": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {
                "type": "object",
                "properties": {"consequence": CONSEQUENCES, "consequences": CONSEQUENCES, "next_node": TARGET},
                "required": ["next_node"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["prompt", "on_response"],
}

OTHER = "other"
SELECTED = "selected"


@dataclass(frozen=True)
class Option:
    id: str
    label: Any          # str | Template
    description: Any


@dataclass(frozen=True)
class Handler:
    consequences: tuple
    next_node: Any


@dataclass(frozen=True)
class UserPrompt:
    question: Any
    header: Any
    options: tuple                 # of Option (static)
    options_from: Any              # Template | tuple path | None
    mapping: dict | None           # id/label/description → Template or item path
    handlers: dict                 # id → Handler


@dataclass(frozen=True)
class Choice:
    """One option as shown to the person."""

    id: str
    label: str
    description: str = ""
    item: Any = None


@dataclass(frozen=True)
class Question:
    node: str
    text: str
    header: str
    choices: tuple
    allow_other: bool
    dynamic: bool


def compile(node_id, raw, c):
    prompt = raw.get("prompt") or {}
    options = []
    for i, option in enumerate(prompt.get("options") or []):
        if isinstance(option, dict):
            options.append(Option(id=str(option.get("id")).lower() if isinstance(option.get("id"), bool)
                                  else str(option.get("id")),
                                  label=c.value(option.get("label", ""), ("prompt", "options", i, "label")),
                                  description=c.value(option.get("description", ""),
                                                      ("prompt", "options", i, "description"))))
    source = prompt.get("options_from_state")
    options_from = None
    if source is not None:
        options_from = c.value(source, ("prompt", "options_from_state"))
        if isinstance(options_from, str):
            options_from = c.path(options_from, ("prompt", "options_from_state"))
    mapping_raw = prompt.get("option_mapping") or prompt.get("option_template")
    mapping = None
    if mapping_raw:
        key = "option_mapping" if "option_mapping" in prompt else "option_template"
        mapping = {}
        for field, value in mapping_raw.items():
            compiled = c.value(value, ("prompt", key, field))
            mapping[field] = compiled if isinstance(compiled, Template) else c.path(value, ("prompt", key, field))
    handlers = {}
    for handler_id, handler in (raw.get("on_response") or {}).items():
        if not isinstance(handler, dict):
            continue
        listed = handler.get("consequences", handler.get("consequence", []))
        field = "consequences" if "consequences" in handler else "consequence"
        handlers[str(handler_id)] = Handler(
            consequences=c.calls(listed, ("on_response", handler_id, field), "consequence"),
            next_node=c.target(handler.get("next_node"), ("on_response", handler_id, "next_node")),
        )
    return UserPrompt(question=c.value(prompt.get("question", ""), ("prompt", "question")),
                      header=c.value(prompt.get("header", ""), ("prompt", "header")),
                      options=tuple(options), options_from=options_from, mapping=mapping, handlers=handlers)


def targets(spec):
    return [(handler_id, handler.next_node) for handler_id, handler in spec.handlers.items()]


def calls(spec):
    return [call for handler in spec.handlers.values() for call in handler.consequences]


def build_question(node, run) -> Question:
    spec = node.spec
    scope = run.scope
    choices = [Choice(o.id, str(render_value(o.label, scope)), str(render_value(o.description, scope) or ""))
               for o in spec.options]
    dynamic = spec.options_from is not None
    if dynamic:
        items = (spec.options_from.render(scope) if isinstance(spec.options_from, Template)
                 else get_path(run.state, spec.options_from))
        if isinstance(items, dict):
            items = [{"key": k, "value": v} for k, v in items.items()]
        elif items is not None and not isinstance(items, list):
            run.fail(node, f"options_from_state gave {type(items).__name__} {items!r:.60}, not a list to choose from",
                     "point `options_from_state` at a list (or a mapping) in state")
        for index, item in enumerate(items or []):
            choices.append(_dynamic_choice(spec.mapping, item, index, scope))
    return Question(node=node.id, text=str(render_value(spec.question, scope)),
                    header=str(render_value(spec.header, scope) or ""), choices=tuple(choices),
                    allow_other=OTHER in spec.handlers, dynamic=dynamic)


def _dynamic_choice(mapping, item, index, scope) -> Choice:
    def field(name, default):
        if not mapping or name not in mapping:
            return default
        how = mapping[name]
        if isinstance(how, Template):
            return how.render(scope.child(item=item, index=index))
        return get_path(item, how, default)

    if isinstance(item, dict):
        ident = field("id", item.get("id", index))
        label = field("label", item.get("label", item.get("name", ident)))
    else:
        ident = field("id", item)
        label = field("label", item)
    return Choice(str(ident), str(label), str(field("description", "") or ""), item)


def execute(node, run) -> Outcome:
    spec = node.spec
    question = build_question(node, run)
    answer = run.ask(question)          # may park the run
    response: dict[str, Any]
    if answer.choice is not None:
        choice = answer.choice
        response = {"id": choice.id, "raw": {"label": choice.label}}
        if question.dynamic and choice.item is not None:
            response["selected"] = choice.item
        handler_id = choice.id if choice.id in spec.handlers else (SELECTED if question.dynamic else choice.id)
    else:
        response = {"id": OTHER, "raw": {"text": answer.text}, "text": answer.text}
        handler_id = OTHER
    run.set(("user_responses", node.id), response)
    handler = spec.handlers.get(handler_id)
    if handler is None:
        run.fail(node, f"the answer '{response['id']}' has no handler in on_response",
                 f"add `on_response: {{{handler_id}: {{next_node: ...}}}}`", node.where)
    for call in handler.consequences:
        try:
            run.apply(call)
        except ActionFailed as failure:
            # A handler has no on_failure to route to: the run stops here, saying why.
            run.fail(node, f"the answer's {call.type} failed: {failure.message}", failure.hint, call.where)
    return Outcome(handler.next_node, {"response": response["id"]}, handler_id)

