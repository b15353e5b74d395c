"""Run inputs: `--input key=value`, `--input-file FILE`, `--set path=value`,
checked against the workflow's `input_schema`.

`input_schema` is written the hiivmind way, input name → a JSON Schema for
that input plus `required: true` (`{url: {type: string, pattern: "^https://",
required: true}}`), or as one JSON Schema of type object with `properties`.
Either way every JSON Schema keyword works (`enum`, `items`, `pattern`,
nested objects, ...): inputs are checked with jsonschema, and an error names
the input.
"""

from __future__ import annotations

from wfexec.errors import WfexecError
from wfexec.language.diagnostics import did_you_mean, format_yaml_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import AbstractSet, Any, Callable, Mapping


class InputError(WfexecError, ValueError):
    """A bad input; the message says which and how to fix it."""


def parse_scalar(text: str) -> Any:
    """A command-line value read as YAML: `3` → 3, `true` → True, `[a, b]` → list, else the text."""
    from wfexec.language.loader import load_text

    doc = load_text(text)
    if doc.diagnostics or doc.data is None and text.strip() not in ("null", "~", ""):
        return text
    return doc.data


def split_pairs(pairs: list[str], option: str) -> list[tuple[str, str]]:
    out = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InputError(f"{option} '{pair}' must look like KEY=VALUE")
        out.append((key.strip(), value))
    return out


def is_object_schema(input_schema: Mapping[str, Any]) -> bool:
    """Written as one JSON Schema (`type: object` + `properties`) rather than name → schema."""
    return input_schema.get("type") == "object" and isinstance(input_schema.get("properties"), dict)


def inputs_as_object_schema(input_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs as one JSON Schema of type object; hiivmind's `required: true` per input becomes the object's
    `required` list (a `required` that is a list stays JSON Schema's own keyword)."""
    if is_object_schema(input_schema):
        return dict(input_schema)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, spec in input_schema.items():
        spec = _as_json_schema(dict(spec) if isinstance(spec, dict) else {})
        if isinstance(spec.get("required"), bool):
            if spec.pop("required"):
                required.append(str(name))
        properties[str(name)] = spec
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _as_json_schema(spec: dict) -> dict:
    """One input as blueprint-lib v3's parameter definitions mean it: `type: any` takes any value, and an optional
    input whose `default` is null may be null whatever its type (`{type: string, default: null}`: not given)."""
    declared = spec.get("type")
    if declared == "any":
        del spec["type"]
    elif "default" in spec and spec["default"] is None and declared is not None:
        types = declared if isinstance(declared, list) else [declared]
        if "null" not in types:
            spec["type"] = [*types, "null"]
    return spec


def _takes_text(schema: dict) -> bool:
    declared = schema.get("type")
    return declared is None or declared == "string" or (isinstance(declared, list) and "string" in declared)


def passed_on_the_command_line(name: str) -> str:
    """How the command line passes the input `name` (what a missing input's error tells to do)."""
    return f"--input {name}=VALUE"


def check_inputs(given: Mapping[str, Any], input_schema: Mapping[str, Any] | None, *,
                 from_text: AbstractSet[str] = frozenset(),
                 passing: Callable[[str], str] = passed_on_the_command_line) -> dict:
    """Apply defaults, read command-line text as the declared type, and reject what does not fit. `passing` says
    how the door asking passes an input, in its own terms (the command line's `--input NAME=VALUE`, the API's
    keyword argument, MCP's tool argument)."""
    if not input_schema:
        return dict(given)
    import copy  # (with weakref, ~1 ms) for a workflow that declares inputs, not at every start

    whole = inputs_as_object_schema(input_schema)
    properties = whole.get("properties") or {}
    result: dict[str, Any] = {}
    for name, value in given.items():
        if name not in properties and whole.get("additionalProperties") is False:
            hint = did_you_mean(name, properties) or "declared inputs: " + ", ".join(properties)
            raise InputError(f"unknown input '{name}' ({hint})")
        schema = properties.get(name)
        if name in from_text and isinstance(schema, dict) and not _takes_text(schema):
            value = parse_scalar(value)
        result[name] = value
    for name, schema in properties.items():
        if name not in result and isinstance(schema, dict) and "default" in schema:
            result[name] = copy.deepcopy(schema["default"])
    for name in whole.get("required") or ():
        if name not in result:
            about = properties.get(name, {}).get("description")
            raise InputError(f"missing required input '{name}'{f' ({about})' if about else ''}: "
                             f"pass {passing(name)}")
    # A copy: fastjsonschema fills in nested defaults as it checks, and only top-level defaults are promised.
    problems = [_explain(error) for error in _schema_errors(whole, copy.deepcopy(result))]
    if problems:
        raise InputError("; ".join(problems))
    return result


def _schema_errors(schema: dict, instance: dict) -> list:
    from wfexec.language.jsonschemas import SchemaCheck

    return sorted(SchemaCheck(schema).errors(instance), key=lambda e: [str(p) for p in e.absolute_path])


def _explain(error) -> str:
    path = tuple(error.absolute_path)
    if not path:
        return f"the inputs: {error.message}"
    return f"input '{format_yaml_path(path)}': {error.message}"


def input_schema_problems(input_schema: Any) -> list[tuple[tuple, str]]:
    """What is wrong with a workflow's `input_schema` as JSON Schema: (path under input_schema, message)."""
    from wfexec.language.jsonschemas import schema_error

    if not isinstance(input_schema, dict):
        return []
    if not is_object_schema(input_schema):
        odd = [(name,) for name, spec in input_schema.items() if not isinstance(spec, dict)]
        if odd:
            return [(at, f"input '{at[0]}' must be a mapping (its JSON Schema), e.g. {{type: string}}") for at in odd]
    whole = inputs_as_object_schema(input_schema)
    error = schema_error(whole)
    if error is not None:
        where = tuple(error.absolute_path)
        if not is_object_schema(input_schema) and where[:1] == ("properties",):
            where = where[1:]
        return [(where, f"not a valid JSON Schema: {error.message}")]
    problems = []
    for name, schema in (whole.get("properties") or {}).items():
        if isinstance(schema, dict) and "default" in schema:
            for misfit in _schema_errors(schema, schema["default"]):
                at = (("properties",) if is_object_schema(input_schema) else ()) + (name, "default")
                problems.append((at, f"the default of input '{name}' does not fit its schema: {misfit.message}"))
    return problems
