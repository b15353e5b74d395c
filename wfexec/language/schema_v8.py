"""The published JSON Schema of blueprint-lib v8 files as their authors write them (`wfexec schema --v8`,
`schemas/workflow-v8.schema.json`), for editors and check-jsonschema.

wfexec itself never checks a v8 file against it: it rewrites the file into the classic shape first (v8.py,
composites.py) and checks that. This schema describes what the author writes before the rewrite, from the same
pieces as the classic one (schema.py): the registry's node types, with the fields v8 writes differently; the
classic ending as a `type: ending` node; the composites' own schemas; every registered precondition and consequence
type with its parameters.
"""

from __future__ import annotations

import copy
from typing import Any

from wfexec.language.composites import COMPOSITES, SCHEMAS as COMPOSITE_SCHEMAS
from wfexec.language.schema import (DRAFT, ENDING, TARGET, TOP_LEVEL, allow_x_keys, call_type_defs,
                                    dispatch_on_type, node_schema)
from wfexec.language.v8 import COMBINATORS, OUTCOMES
from wfexec.nodes.base import node_types
from wfexec.types.registry import Registry

SCHEMA_V8_ID = "https://wfexec.dev/schemas/workflow-v8.schema.json"

CONDITION_REF = {"$ref": "#/$defs/condition"}
CONSEQUENCES = {"type": "array", "items": {"$ref": "#/$defs/consequence"}}

CONDITION = {
    "description": "a condition: an expression string, `{all|any|none|xor: [conditions]}`, or a precondition object",
    "oneOf": [
        {"type": "string", "minLength": 1,
         "description": "a JavaScript expression over the state, e.g. `computed.count > 1`"},
        {"type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": False,
         "description": "one of all, any, none or xor, naming the conditions it combines",
         "properties": {word: {"type": "array", "minItems": 1, "items": CONDITION_REF,
                               "description": f"true when {meaning} (as the `{COMBINATORS[word]}` precondition)"}
                        for word, meaning in (("all", "every condition is true"), ("any", "some condition is true"),
                                              ("none", "no condition is true"),
                                              ("xor", "exactly one condition is true"))}},
        {"$ref": "#/$defs/precondition"},
    ],
}


def top_level() -> dict:
    properties = {name: field for name, field in TOP_LEVEL["properties"].items()  # type: ignore[attr-defined]
                  if name not in ("endings", "definitions")}
    properties["nodes"] = {**properties["nodes"],
                           "description": "node id → node: the steps (action, conditional, user_prompt, ...), the "
                                          "composites (confirm, gated_action, goal_seek) and the endings "
                                          "(`type: ending`)"}
    properties = _replaced(properties, "start_node", {
        "start_node": properties["start_node"],
        "default_error": {"type": "string", "minLength": 1,
                          "description": "the ending node every action without `on_failure`, and every conditional "
                                         "without `on_unknown`, goes to"}})
    return {**TOP_LEVEL, "properties": properties,
            "required": ["name", "version", "start_node", "default_error", "nodes"]}


def ending_node() -> dict:
    properties = {name: field for name, field in ENDING["properties"].items()  # type: ignore[attr-defined]
                  if name not in ("type", "delegate")}
    return allow_x_keys({
        **ENDING,
        "description": "`ending`: the run ends here, with this outcome",
        "properties": {
            "type": {"const": "ending", "description": "the node type: an ending"},
            "outcome": {"enum": list(OUTCOMES),
                        "description": "`success` (exit code 0), `failure`, `error`, `cancelled` or "
                                       "`indeterminate` (a failure of category `indeterminate`; exit code 1)"},
            **properties,
        },
        "required": ["type", "outcome"],
    })


def action_node(type_names: list[str]) -> dict:
    schema = node_schema("action")
    properties = _replaced(_typed(schema["properties"], type_names), "actions", {
        "consequences": {**CONSEQUENCES, "description": "consequences run in order; the first failure skips the "
                                                         "rest"}})
    properties["on_failure"] = {**properties["on_failure"],
                                "description": "where to go when a consequence failed (default: the workflow's "
                                               "`default_error`); the message is at `computed.last_error`"}
    properties["run_as"] = {"enum": ["inline", "subagent"],
                            "description": "written by a goal_seek's expansion for a goal `run_as: subagent`; "
                                           "wfexec runs it inline"}
    properties.pop("effect", None)  # an older file's prose action: v8 files write their work as consequences
    schema = {key: value for key, value in schema.items() if key != "anyOf"}
    return {**schema, "properties": properties, "required": ["type", "consequences", "on_success"]}


def conditional_node(type_names: list[str]) -> dict:
    schema = node_schema("conditional")
    properties = _replaced(_typed(schema["properties"], type_names), "branches", {
        "on_true": {"$ref": "#/$defs/target", "description": "where to go when the condition is true"},
        "on_false": {"$ref": "#/$defs/target", "description": "where to go when the condition is false"}})
    properties["condition"] = {**CONDITION_REF, "description": CONDITION["description"]}
    properties["on_unknown"] = {**properties["on_unknown"],
                                "description": "where to go when the condition cannot be evaluated (default: the "
                                               "workflow's `default_error`)"}
    return {**schema, "properties": properties, "required": ["type", "condition", "on_true", "on_false"]}


def user_prompt_node(type_names: list[str]) -> dict:
    schema = node_schema("user_prompt")
    properties = _typed(schema["properties"], type_names)
    handler = allow_x_keys({
        "type": "object", "required": ["next_node"], "additionalProperties": False,
        "description": "consequences run for this answer, then the node to go to",
        "properties": {"consequences": {**CONSEQUENCES, "description": "consequences run for this answer"},
                       "next_node": {"$ref": "#/$defs/target", "description": "where this answer goes"}}})
    properties["on_response"] = {
        "type": "object", "minProperties": 1,
        "additionalProperties": {"oneOf": [{**TARGET, "description": "where this answer goes"}, handler]},
        "description": "answer id → the node it goes to, or `{consequences: [...], next_node}`; `other` takes free "
                       "text, `selected` an option built from state"}
    return {**schema, "properties": properties}


def composite_node(name: str) -> dict:
    """A composite's schema (as composites.py checks it), with its consequences and conditions checked by type."""
    def typed(schema: Any, field: str = "") -> Any:
        if isinstance(schema, list):
            return [typed(item) for item in schema]
        if not isinstance(schema, dict):
            return schema
        if field == "consequences":
            return {**CONSEQUENCES, "description": schema["description"]}
        if field in ("condition", "success_condition"):
            return {**CONDITION_REF, "description": schema["description"]}
        out = {}
        for key, value in schema.items():
            if key == "properties":
                out[key] = {prop: typed(sub, prop) for prop, sub in value.items()}
            else:
                out[key] = typed(value)
        return out

    return allow_x_keys(typed(copy.deepcopy(COMPOSITE_SCHEMAS[name])))


def _replaced(properties: dict, name: str, fields: dict) -> dict:
    """`properties` with `fields` in the place of `name` (the order is what an editor offers)."""
    out: dict = {}
    for key, field in properties.items():
        out.update(fields if key == name else {key: field})
    return out


def _typed(properties: dict, type_names: list[str]) -> dict:
    """`properties` whose `type` offers the v8 node types."""
    return {**properties, "type": {**properties["type"], "enum": type_names}}


def published_v8_schema(preconditions: Registry, consequences: Registry) -> dict:
    """The v8 authoring shape as one JSON Schema document."""
    kinds = node_types()
    type_names = sorted([*kinds.names(), "ending", *COMPOSITES])
    nodes: dict[str, dict] = {}
    for node_type in kinds.names():
        special = {"action": action_node, "conditional": conditional_node, "user_prompt": user_prompt_node}
        if node_type in special:
            nodes[node_type] = special[node_type](type_names)
        else:
            schema = node_schema(node_type)
            nodes[node_type] = {**schema, "properties": _typed(schema["properties"], type_names)}
    nodes["ending"] = ending_node()
    for name in COMPOSITES:
        nodes[name] = composite_node(name)
    defs: dict[str, Any] = {"target": TARGET, "condition": CONDITION}
    for node_type in sorted(nodes):
        defs[f"node.{node_type}"] = nodes[node_type]
    defs["node"] = dispatch_on_type({t: f"#/$defs/node.{t}" for t in sorted(nodes)}, type_names,
                                    "a node: a step, a composite or an ending")
    calls = call_type_defs(preconditions, consequences)
    for name in calls:
        # Inside a v8 condition a combinator's parts are conditions too: strings and `{all: [...]}` included.
        if name.startswith("precondition."):
            calls[name] = _conditions_within(calls[name])
    defs.update(calls)
    return {"$schema": DRAFT, "$id": SCHEMA_V8_ID, "title": "wfexec workflow (blueprint-lib v8)",
            "description": "A blueprint-lib v8 workflow.yaml as wfexec reads it: endings as nodes, "
                           "`default_error`, composites, flat conditionals, `consequences:`.",
            **top_level(), "$defs": defs}


def _conditions_within(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_conditions_within(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if schema == {"$ref": "#/$defs/precondition"}:
        return dict(CONDITION_REF)
    return {key: _conditions_within(value) for key, value in schema.items()}
