"""The published JSON Schema and structural validation.

One schema is published (`wfexec schema`, `schemas/workflow.schema.json`),
with a branch per node type and per registered precondition/consequence
type, so editors complete and check every field. Internally the same pieces
are validated one at a time (top level, each node by its type, each call by
its registry type): a wrong field is reported once, against the right
definition, and validation stays fast on large files.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from wfexec.language.diagnostics import Reporter, did_you_mean, format_yaml_path
from wfexec.nodes.base import node_types
from wfexec.language.jsonschemas import SchemaCheck, inline_refs
from wfexec.types.registry import TEMPLATE_PATTERN, Registry

SCHEMA_ID = "https://wfexec.dev/schemas/workflow.schema.json"
DRAFT = "https://json-schema.org/draft/2020-12/schema"

_X_KEYS: dict[str, dict] = {"^x-": {}}

TOP_LEVEL = {
    "type": "object",
    "properties": {
        "$schema": {"type": "string",
                    "description": "accepted and ignored (editors read the `# yaml-language-server` comment)"},
        "name": {"type": "string", "minLength": 1, "description": "The workflow's name (usually the skill folder's)."},
        "version": {"type": ["string", "number"], "description": "The workflow's own version."},
        "description": {"type": "string", "description": "What the workflow does; becomes the skill description."},
        "start_node": {"type": "string", "minLength": 1, "description": "The first node."},
        "entry_preconditions": {"type": "array", "items": {"$ref": "#/$defs/precondition"},
                                "description": "Checked before the run starts; a failure stops it."},
        "initial_state": {"type": "object", "description": "State the run starts with.",
                          "properties": {
                              "flags": {"type": "object", "description": "flag name → true/false (`flags.<name>`)"},
                              "computed": {"type": "object", "description": "values the steps compute and read"},
                              "user_responses": {"type": "object",
                                                 "description": "answers to questions, by node id"}}},
        "imports": {"type": "object", "additionalProperties": {"type": "string"},
                    "description": "alias → relative YAML file, readable as imports.<alias>."},
        "input_schema": {"type": "object", "description": "inputs the workflow takes: name → a JSON Schema for it "
                                                         "(type, enum, pattern, items, properties, ...) plus "
                                                         "`required: true`, `default`, `description`; or one JSON "
                                                         "Schema of type object with `properties`"},
        "output_schema": {"type": "object", "description": "values the workflow returns: name → {type, description}"},
        "definitions": {"description": "accepted and ignored: wfexec ships its types."},
        "composes": {"description": "blueprint-lib v3: the sub-flows this workflow is made of, for readers; "
                                    "accepted and ignored (a `reference` node runs a sub-workflow)"},
        "nodes": {"type": "object", "minProperties": 1, "additionalProperties": {"$ref": "#/$defs/node"},
                  "description": "node id → node (action, conditional, user_prompt, ...): the steps."},
        "endings": {"type": "object", "minProperties": 1, "additionalProperties": {"$ref": "#/$defs/ending"},
                    "description": "ending id → {type, message}: the ways a run can end."},
        "trust_mode": {"enum": ["stateless", "gated"],
                       "description": "v8: the workflow's trust mode; recorded, wfexec's own checks do not change"},
        "data_mcps": {"type": "object", "propertyNames": {"pattern": "^[a-z_][a-z0-9_-]*$"},
                      "additionalProperties": {"type": "string", "pattern": "^[\\w-]+@[\\w.\\-\\^~><=*|,\\s]+$"},
                      "description": "v8: alias → MCP server as `name@version-range`; `mcp_tool_call` names a tool "
                                     "as `alias.tool`"},
        "payload_types": {"type": "object", "propertyNames": {"pattern": "^[a-z_][a-z0-9_]*@\\d+$"},
                          "additionalProperties": {"type": "object"},
                          "description": "v8: `name@version` → field → type, checked where a call names it as "
                                         "`params_type`"},
        "declared_effects": {"type": "object", "propertyNames": {"pattern": "^[a-z_][a-z0-9_-]*$"},
                             "additionalProperties": {"oneOf": [
                                 {"const": "forbidden"},
                                 {"type": "object", "properties": {
                                     "tools": {"type": "array", "uniqueItems": True,
                                               "items": {"type": "string", "pattern": "^[a-z_][a-z0-9_]*$"},
                                               "description": "the tools of this alias the workflow may call"},
                                     "max_call_count": {"type": "integer", "minimum": 0,
                                                        "description": "at most this many calls to the alias in "
                                                                       "a run"}}}]},
                             "description": "v8: what the workflow may do, per MCP alias: `forbidden`, or "
                                            "{tools, max_call_count}; a key that is no alias may only be "
                                            "`forbidden`, and when it names an effect (files, process or shell, "
                                            "network, git, llm, display, mcp) every step with that effect is "
                                            "refused"},
    },
    "required": ["name", "version", "start_node", "nodes", "endings"],
    "patternProperties": _X_KEYS,
    "additionalProperties": False,
}

ENDING = {
    "type": "object",
    "properties": {
        "type": {"enum": ["success", "failure", "error", "cancelled"],
                 "description": "`success` (exit code 0), `failure`, `error` or `cancelled` (exit code 1)"},
        "message": {"type": "string",
                    "description": "the line shown when the run ends (templates rendered with the final state)"},
        "details": {"type": "string", "description": "more text shown under the message"},
        "category": {"type": "string", "description": "a free label for tools (e.g. the kind of failure)"},
        "code": {"type": ["string", "integer"],
                 "description": "blueprint-lib v3: a code for tools (`MISSING_JQ`), printed by `--format json`"},
        "summary": {"type": "object", "additionalProperties": {},
                    "description": "label → value, shown one per line under the message"},
        "recovery": {"description": "what to do next: a sentence, a skill name, or "
                                    "`{suggestion, related_skill, retry_node}`", "oneOf": [
            {"type": "string"},
            {"type": "object", "properties": {
                "suggestion": {"type": "string", "description": "what the person could do"},
                "related_skill": {"type": "string", "description": "a skill that helps (shown as /name)"},
                "retry_node": {"type": "string", "description": "the node a retry starts from"}},
             "patternProperties": _X_KEYS, "additionalProperties": False},
        ]},
        "output": {"description": "values returned to a calling workflow and printed by `--format json`"},
        "delegate": {"type": "object", "description": "the skill to hand over to, `{skill, context}` (older files' "
                                                  "form of v8's `behavior: {type: delegate}`)",
                     "properties": {"skill": {"type": "string", "description": "the skill to continue with"},
                                    "args": {"type": "string", "description": "its arguments"},
                                    "context": {"type": "object", "description": "values handed over with it"}}},
        "consequences": {"type": "array", "items": {"$ref": "#/$defs/consequence"},
                         "description": "v8: run when the run reaches this ending (a failure is reported, and the run "
                                        "ends all the same)"},
        "behavior": {"type": "object", "required": ["type"],
                     "properties": {"type": {"enum": ["silent", "delegate", "restart"],
                                             "description": "silent: the message is not printed; delegate: the "
                                                            "result names the skill to continue with; restart: "
                                                            "the run goes back to target_node"},
                                    "skill": {"type": "string", "description": "delegate: the skill to hand over to"},
                                    "args": {"type": "string", "description": "delegate: its arguments"},
                                    "context": {"type": "object",
                                                "description": "delegate: values handed over with it"},
                                    "target_node": {"type": "string",
                                                    "description": "restart: where to go back to (default the "
                                                                   "start node)"},
                                    "reset_state": {"type": "boolean",
                                                    "description": "restart: computed, flags and user_responses go "
                                                                   "back to initial_state"},
                                    "max_restarts": {"type": "integer", "minimum": 1,
                                                     "description": "restart: after this many the ending ends the "
                                                                    "run (default 3)"}},
                     "description": "v8: what happens besides ending (a `restart` becomes nodes at load)"},
        "description": {"type": "string", "description": "what the ending means (documentation only)"},
    },
    "required": ["type", "message"],
    "patternProperties": _X_KEYS,
    "additionalProperties": False,
}

def common_node_properties(type_names: Iterable[str]) -> dict:
    """The fields every node has; `type` is one of `type_names`."""
    return {
        "type": {"enum": sorted(type_names), "description": "the node type: what the node does"},
        "description": {"type": "string", "description": "what the node is for (documentation only)"},
        "max_visits": {"type": "integer", "minimum": 1,
                       "description": "stop the run when the node is entered more often"},
        "idempotent": {"type": "boolean", "description": "false: resume asks before running the node again"},
    }

TARGET = {"type": "string", "minLength": 1, "description": "a node id or an ending id, or a ${...} template"}



def allow_x_keys(schema: Any) -> Any:
    """A copy of `schema` where every mapping with a fixed set of fields also takes `x-` keys."""
    if isinstance(schema, list):
        return [allow_x_keys(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("properties", "patternProperties", "$defs") and isinstance(value, dict):
            out[key] = {name: allow_x_keys(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "oneOf", "anyOf", "allOf", "not", "if", "then", "else"):
            out[key] = allow_x_keys(value)
        else:
            out[key] = value
    if out.get("additionalProperties") is False:
        out["patternProperties"] = {**_X_KEYS, **out.get("patternProperties", {})}
    return out


def node_schema(node_type: str) -> dict:
    kinds = node_types()
    kind = kinds[node_type]
    own = kind.schema
    notes = kind.docs.field_notes or {}
    properties = {name: ({**field, "description": notes[name]}
                         if isinstance(field, dict) and "description" not in field and name in notes else field)
                  for name, field in own.get("properties", {}).items()}
    schema = {
        "type": "object",
        "description": kind.docs.doc.strip().splitlines()[0] if kind.docs.doc else node_type,
        "properties": {**common_node_properties(kinds), **properties},
        "required": ["type", *own.get("required", [])],
        "patternProperties": _X_KEYS,
        "additionalProperties": False,
    }
    for key in ("oneOf", "anyOf", "allOf"):
        if key in own:
            schema[key] = own[key]
    return allow_x_keys(schema)


def dispatch_on_type(kind_defs: dict, discriminator_enum: Iterable[str], description: str) -> dict:
    """A schema that checks `type` and then the branch for that type."""
    return {
        "type": "object",
        "description": description,
        "required": ["type"],
        "properties": {"type": {"enum": sorted(discriminator_enum), "description": "which one: " + description}},
        "allOf": [{"if": {"properties": {"type": {"const": name}}, "required": ["type"]},
                   "then": {"$ref": ref}} for name, ref in kind_defs.items()],
    }


def call_type_defs(preconditions: Registry, consequences: Registry) -> dict[str, Any]:
    """`precondition.<name>` and `consequence.<name>` for every registered type, and the `precondition` and
    `consequence` that pick one by `type`."""
    defs: dict[str, Any] = {}
    for registry, label in ((preconditions, "precondition"), (consequences, "consequence")):
        refs = {}
        for spec in registry.specs():
            defs[f"{label}.{spec.name}"] = spec.parameter_schema()
            refs[spec.name] = f"#/$defs/{label}.{spec.name}"
        defs[label] = dispatch_on_type(refs, registry.names(), f"a {label} (a registered type)")
    return defs


def published_schema(preconditions: Registry, consequences: Registry) -> dict:
    """The whole language as one JSON Schema document."""
    defs: dict[str, Any] = {"target": TARGET, "ending": ENDING}
    node_refs = {}
    kinds = node_types()
    for node_type in kinds.names():
        defs[f"node.{node_type}"] = node_schema(node_type)
        node_refs[node_type] = f"#/$defs/node.{node_type}"
    defs["node"] = dispatch_on_type(node_refs, kinds, "a node of the graph")
    defs.update(call_type_defs(preconditions, consequences))
    return {"$schema": DRAFT, "$id": SCHEMA_ID, "title": "wfexec workflow",
            "description": "A workflow.yaml run by wfexec (hiivmind seed format and blueprint-lib v3 names).",
            **TOP_LEVEL, "$defs": defs}


# --------------------------------------------------------------------------- #
# Internal validation.

_validators: dict[str, Any] = {}


def _validator(key: str, schema_fn):
    validator = _validators.get(key)
    if validator is None:
        root = dict(schema_fn())
        # Nodes, endings and calls are checked one by one later (check_node,
        # check_ending, check_call), with messages made for them: here they
        # accept anything, so a problem is reported once.
        defs = {"target": TARGET, "precondition": {}, "consequence": {}, "node": {}, "ending": {}}
        # Inlined rather than referenced: resolving a $ref costs more than the check it leads to.
        validator = SchemaCheck(inline_refs(root, defs))
        _validators[key] = validator
    return validator


def _endings_only_allowed() -> dict:
    """TOP_LEVEL for a v8 file, which may be all endings (its start node one of them): no node is needed."""
    properties: dict = dict(TOP_LEVEL["properties"])  # type: ignore[call-overload]  # a literal dict of dicts
    properties["nodes"] = {k: v for k, v in properties["nodes"].items() if k != "minProperties"}
    return {**TOP_LEVEL, "properties": properties}


def check_top_level(data: Any, report: Reporter, v8: bool = False) -> bool:
    if not isinstance(data, dict):
        report.error((), "not-a-mapping", "a workflow must be a YAML mapping with name, version, start_node, "
                     "nodes and endings", "the file's top level must be `key: value` lines, starting with `name:`")
        return False
    before = len(report.diagnostics)
    validator = _validator("top-v8", _endings_only_allowed) if v8 else _validator("top", lambda: TOP_LEVEL)
    report_errors(validator.errors(data), (), report, "workflow")
    return len(report.diagnostics) == before


def check_node(node_id: str, raw: Any, report: Reporter) -> bool:
    path = ("nodes", node_id)
    if not isinstance(raw, dict):
        report.error(path, "node-shape", f"node '{node_id}' must be a mapping with a `type`")
        return False
    node_type = raw.get("type")
    kinds = node_types()
    if not isinstance(node_type, str) or node_type not in kinds:
        if node_type is None:
            report.error(path, "node-type-missing", f"node '{node_id}' has no `type`",
                         "add `type:` with one of: " + ", ".join(kinds.names()), at_key=True)
        elif not isinstance(node_type, str):
            report.error(path + ("type",), "node-type-unknown",
                         f"the `type` of node '{node_id}' must be a node type name, not {_type_name(node_type)}",
                         "use one of: " + ", ".join(kinds.names()))
        else:
            hint = did_you_mean(node_type, kinds.names()) or "use one of: " + ", ".join(kinds.names())
            if kinds.problems:  # the type may be a plugin's that failed to load
                hint += "; " + "; ".join(kinds.problems)
            report.error(path + ("type",), "node-type-unknown", f"node '{node_id}' has unknown type '{node_type}'",
                         hint)
        return False
    before = len(report.diagnostics)
    validator = _validator("node." + node_type, lambda: node_schema(node_type))
    report_errors(validator.errors(raw), path, report, f"{node_type} node '{node_id}'")
    return len(report.diagnostics) == before


def check_against(key: str, schema: dict, raw: Any, path: tuple, report: Reporter, what: str) -> bool:
    """Check `raw` (at `path`) against `schema`, kept compiled under `key`; False when it reported errors."""
    before = len(report.diagnostics)
    report_errors(_validator(key, lambda: allow_x_keys(schema)).errors(raw), path, report, what)
    return len(report.diagnostics) == before


def check_ending(ending_id: str, raw: Any, report: Reporter) -> bool:
    path = ("endings", ending_id)
    if not isinstance(raw, dict):
        report.error(path, "ending-shape", f"ending '{ending_id}' must be a mapping with `type` and `message`")
        return False
    before = len(report.diagnostics)
    report_errors(_validator("ending", lambda: ENDING).errors(raw), path, report, f"ending '{ending_id}'")
    return len(report.diagnostics) == before


def check_call(raw: Any, path: tuple, registry: Registry, report: Reporter) -> bool:
    """A precondition or consequence object: known type, parameters per its schema."""
    kind = registry.kind
    if not isinstance(raw, dict):
        report.error(path, f"{kind}-shape", f"a {kind} must be a mapping with a `type`",
                     f"write it as `{{type: <{kind} type>, ...}}`")
        return False
    name = raw.get("type")
    if "type" in raw and not isinstance(name, str):
        report.error(path + ("type",), f"{kind}-type-missing",
                     f"the `type` of this {kind} must be the name of a {kind} type, not {_type_name(name)}",
                     "`wfexec types` lists them")
        return False
    if not isinstance(name, str):
        report.error(path, f"{kind}-type-missing", f"this {kind} has no `type`",
                     "add `type:`; `wfexec types` lists them")
        return False
    if name not in registry:
        # A type of the other kind by that exact name says more than a near name of this kind.
        hint = _other_kind_hint(name, kind) or registry.suggest(name) or f"`wfexec types` lists the {kind} types"
        report.error(path + ("type",), f"unknown-{kind}", f"unknown {kind} type '{name}'", hint)
        return False
    before = len(report.diagnostics)
    report_errors(registry.validator(name).errors(raw), path, report, f"{kind} '{name}'")
    return len(report.diagnostics) == before


def _other_kind_hint(name: str, kind: str) -> str:
    """'count_above is a precondition' when a consequence slot names one (and the reverse)."""
    from wfexec.types.registry import CONSEQUENCE, PRECONDITION, load_registry

    other = CONSEQUENCE if kind == PRECONDITION else PRECONDITION
    if name not in load_registry(other):
        return ""
    where = "a `condition`, `validations` or `entry_preconditions`" if other == PRECONDITION else \
        "`actions` or an `on_response` handler"
    return f"'{name}' is a {other}, not a {kind}: it belongs in {where}"


# --------------------------------------------------------------------------- #
# jsonschema errors → diagnostics a person can act on.

def report_errors(errors, base: tuple, report: Reporter, what: str) -> None:
    seen_required = set()
    for error in sorted(errors, key=lambda e: list(map(str, e.absolute_path))):
        if error.validator == "required":
            # jsonschema yields one error per missing key, each carrying the whole
            # list; the first one reports every missing key.
            where = (tuple(error.absolute_path), tuple(error.relative_schema_path))
            if where in seen_required:
                continue
            seen_required.add(where)
        if error.validator in ("anyOf", "oneOf") and error.context and \
                not all(e.validator == "required" for e in error.context):
            error = _prefer_specific(error)
        _report_one(error, base, report, what)


def _prefer_specific(error):
    """For anyOf/oneOf, report the branch the user most likely meant."""
    from jsonschema.exceptions import best_match

    branches = error.validator_value
    if isinstance(branches, list) and branches and branches[-1].get("pattern") == TEMPLATE_PATTERN:
        # A parameter that also accepts a `${...}` template: the real type is the first branch.
        first = [e for e in error.context if e.schema_path and e.schema_path[0] == 0]
        if first:
            return first[0]
    if isinstance(branches, list):
        # The branch written for the value's own type (a mapping for a mapping) is the one meant:
        # `recovery: {retry: x}` has an unknown field, it is not "a string expected".
        for index, branch in enumerate(branches):
            if isinstance(branch, dict) and _is_type(error.instance, branch.get("type")):
                errors = [e for e in error.context if e.schema_path and e.schema_path[0] == index]
                if errors:
                    return best_match(errors) or errors[0]
    return best_match(error.context) or error


def _is_type(value: Any, declared: Any) -> bool:
    names = declared if isinstance(declared, list) else [declared]
    checks = {"object": dict, "array": list, "string": str}
    return any(isinstance(value, checks[n]) for n in names if n in checks)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
            dict: "a mapping"}.get(type(value), type(value).__name__)


def _report_one(error, base: tuple, report: Reporter, what: str) -> None:
    path = base + tuple(error.absolute_path)
    validator = error.validator
    schema = error.schema if isinstance(error.schema, dict) else {}
    field = path[-1] if len(path) > len(base) else None
    where = f"`{format_yaml_path(path[len(base):])}` in {what}" if field is not None else what
    instance = error.instance
    if validator == "additionalProperties":
        allowed = list(schema.get("properties", {}))
        patterns = schema.get("patternProperties", {})
        for key in instance:
            if key in allowed:
                continue
            if any(re.search(p, str(key)) for p in patterns):
                continue
            hint = did_you_mean(key, allowed) or ("allowed here: " + ", ".join(allowed) if allowed else "")
            if patterns:
                hint += ("; " if hint else "") + "keys starting with x- are free for tools"
            inside = f"`{format_yaml_path(path[len(base):])}` of {what}" if field is not None else what
            report.error(path + (key,), "unknown-field", f"unknown field '{key}' in {inside}", hint, at_key=True)
        return
    if validator == "required":
        missing = [k for k in error.validator_value if k not in instance]
        for key in missing:
            report.error(path, "missing-field", f"{where} is missing required field '{key}'",
                         _field_hint(schema, key), at_key=len(path) > 0)
        return
    if validator == "type":
        expected = error.validator_value
        expected = " or ".join(map(_article, expected)) if isinstance(expected, list) else _article(expected)
        report.error(path, "wrong-type", f"{where} must be {expected}, not {_type_name(instance)}",
                     _field_hint_for(schema))
        return
    if validator in ("enum", "const"):
        options = error.validator_value if validator == "enum" else [error.validator_value]
        hint = did_you_mean(instance, [str(o) for o in options]) if isinstance(instance, str) else ""
        report.error(path, "bad-value", f"{where} is {instance!r}; allowed: {', '.join(map(str, options))}", hint)
        return
    required_choices = _required_choices(error.validator_value) if validator in ("oneOf", "anyOf") else None
    if required_choices and isinstance(instance, dict):
        choices = " | ".join(" + ".join(keys) for keys in required_choices)
        present = [keys for keys in required_choices if all(k in instance for k in keys)]
        if validator == "oneOf" and len(present) > 1:
            both = " and ".join(f"`{' + '.join(keys)}`" for keys in present)
            report.error(path, "one-of", f"{where} has both {both}; it takes exactly one of: {choices}",
                         "keep one of them")
        elif validator == "oneOf":
            report.error(path, "one-of", f"{where} needs exactly one of: {choices}", "add one of them")
        else:
            report.error(path, "any-of", f"{where} needs one of: {choices}", "add one of them")
        return
    if validator == "minItems":
        report.error(path, "too-few", f"{where} needs at least {error.validator_value} item(s)")
        return
    if validator == "minProperties":
        report.error(path, "too-few", f"{where} needs at least {error.validator_value} entry")
        return
    if validator in _BOUNDS:
        report.error(path, "out-of-range", f"{where} must be {_BOUNDS[validator]} {error.validator_value}, "
                     f"not {instance!r}")
        return
    if validator == "pattern" and "${" in str(error.validator_value):
        report.error(path, "wrong-type", f"{where}: {error.message}")
        return
    report.error(path, f"schema-{validator}", f"{where}: {error.message}")


_BOUNDS = {"minimum": "at least", "maximum": "at most", "exclusiveMinimum": "more than",
           "exclusiveMaximum": "less than"}


def _required_choices(branches: Any) -> list[list[str]] | None:
    """[[doc], [workflow]] for `oneOf: [{required: [doc]}, {required: [workflow]}]`, else None."""
    if not isinstance(branches, list) or not branches:
        return None
    if not all(isinstance(b, dict) and set(b) == {"required"} for b in branches):
        return None
    return [list(b["required"]) for b in branches]


def _article(type_name: str) -> str:
    return {"object": "a mapping", "array": "a list", "string": "a string", "integer": "a whole number",
            "number": "a number", "boolean": "true or false", "null": "null"}.get(type_name, type_name)


def _field_hint(schema: dict, key: str) -> str:
    """What to write, then what it means: "add `start_node:`, the first node"."""
    prop = schema.get("properties", {}).get(key, {})
    description = prop.get("description", "") if isinstance(prop, dict) else ""
    description = description.strip().rstrip(".")
    if description:
        return f"add `{key}:`, {description[:1].lower() + description[1:]}"
    return f"add `{key}:`"


def _field_hint_for(schema: dict) -> str:
    return schema.get("description", "") if isinstance(schema, dict) else ""
