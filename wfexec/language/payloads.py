"""Blueprint-lib v8 `payload_types`: workflow-scoped shapes that an `mcp_tool_call` names as `params_type`.

    payload_types:
      shake_params@1:
        question: "string (min_length=1)"
        context: "string (optional)"
        tags: {type: "array<string>", max_length: 5, required: false}

A field is a type — `string`, `integer`, `boolean`, `object`, `array<T>` (T one of those four), `enum{a, b}` —
with optional constraints in parentheses (`min_length=N`, `max_length=N` for strings and arrays, `min=N`,
`max=N` for integers, `pattern="regex"` for strings, searched as JSON Schema does, `required`/`optional`), or
the same written as a mapping (`type`, `required`, `default`, `min`, `max`, `min_length`, `max_length`,
`pattern`, `enum`, `items`). Fields are required unless marked optional. A value whose field the type does not
declare is refused (a misspelt field would otherwise reach the tool unchecked); a missing optional field with a
`default` is sent with that default.

Parsed once per type; `check` says what is wrong with a mapping of values, one message per field. The values
are checked by jsonschema against each field's JSON Schema (`Field.schema`); this module only reads the
descriptors and words jsonschema's errors as the rest of wfexec words its messages.
"""

from __future__ import annotations

import re
from wfexec.records import dataclass, field
from wfexec.system.patterns import lazy
from functools import lru_cache
from typing import Any, Mapping

SCALARS = ("string", "integer", "boolean", "object")
INT64 = (-(2 ** 63), 2 ** 63 - 1)
_TYPE = lazy(r"^\s*(string|integer|boolean|object|array<\s*([A-Za-z_][A-Za-z0-9_]*)\s*>|enum\{([^}]*)\})\s*"
             r"(?:\((.*)\))?\s*$", re.S)
_CONSTRAINT = lazy(r"\s*([A-Za-z_]+)\s*(?:=\s*(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|[^,]*?))?\s*(?:,|$)")
_NUMERIC = ("min", "max", "min_length", "max_length")
_MAPPING_KEYS = ("type", "required", "default", "min", "max", "min_length", "max_length", "pattern", "enum", "items")
_NO_DEFAULT = object()


class PayloadError(ValueError):
    """A field descriptor that cannot be read."""


@dataclass(frozen=True)
class Field:
    kind: str                       # string, integer, boolean, object, array, enum
    written: str                    # as the author wrote it, for messages
    required: bool = True
    items: "Field | None" = None
    options: tuple = ()
    min: int | None = None
    max: int | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    default: Any = field(default=_NO_DEFAULT, compare=False)

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT

    def schema(self) -> dict:
        """The field as JSON Schema: its type first, so the first error for a value is about its type."""
        kind = self.kind
        if kind == "enum":
            return {"enum": list(self.options)}
        schema: dict[str, Any] = {"type": {"object": "object", "array": "array"}.get(kind, kind)}
        bounds: dict[str, Any]
        if kind == "integer":
            schema.update(minimum=INT64[0], maximum=INT64[1])
            bounds = {"minimum": self.min, "maximum": self.max}
        elif kind == "string":
            bounds = {"minLength": self.min_length, "maxLength": self.max_length, "pattern": self.pattern}
        else:
            bounds = {"minItems": self.min_length, "maxItems": self.max_length}
        # The field's own bounds go under allOf: a message can then tell them from the 64-bit range.
        own: dict[str, Any] = {k: v for k, v in bounds.items() if v is not None}
        if self.items is not None:
            own["items"] = self.items.schema()
        if own:
            schema["allOf"] = [own]
        return schema

    def problem(self, value: Any) -> str | None:
        """What is wrong with `value` for this field (jsonschema decides), or None."""
        error = next(iter(_validator(self).iter_errors(value)), None)
        return None if error is None else _said(error)


@lru_cache(maxsize=512)
def _validator(spec: "Field"):
    """One validator per field (building one costs more than using it): a call's params are checked each run."""
    import jsonschema

    return jsonschema.Draft202012Validator(spec.schema())


def _said(error) -> str:
    """A jsonschema error about one field's value, as this module words it."""
    value, keyword, limit = error.instance, error.validator, error.validator_value
    where = "".join(f"item {p} " for p in error.absolute_path if isinstance(p, int))
    if keyword == "type":
        wanted = {"string": "a string", "integer": "an integer", "object": "a mapping", "array": "a list"}
        return where + ("must be true or false" if limit == "boolean" else f"must be {wanted.get(limit, limit)}") \
            + f", not {_kind_of(value)}"
    if keyword == "enum":
        return where + f"is {value!r}, not one of {', '.join(map(str, limit))}"
    if keyword in ("minimum", "maximum") and list(error.absolute_schema_path)[-3:-1] != ["allOf", 0]:
        return where + "is outside the 64-bit integer range"
    said = {"minLength": f"must be at least {limit} characters long (it has {len(value) if isinstance(value, str) else 0})",
            "maxLength": f"must be at most {limit} characters long (it has {len(value) if isinstance(value, str) else 0})",
            "pattern": f"{value!r} does not match the pattern {limit!r}",
            "minimum": f"must be at least {limit} (it is {value})",
            "maximum": f"must be at most {limit} (it is {value})",
            "minItems": f"must have at least {limit} items (it has {len(value) if isinstance(value, list) else 0})",
            "maxItems": f"must have at most {limit} items (it has {len(value) if isinstance(value, list) else 0})"}
    return where + said.get(keyword, error.message)


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return re.sub(r"\\(.)", r"\1", text[1:-1])
    return text


def _base(kind_text: str, item: str | None, options: str | None) -> dict:
    if kind_text.startswith("array"):
        assert item is not None
        if item not in SCALARS:
            raise PayloadError(f"array<{item}>: the item type must be one of {', '.join(SCALARS)}")
        return {"kind": "array", "items": Field(kind=item, written=item)}
    if kind_text.startswith("enum"):
        assert options is not None
        values = tuple(_unquote(v) for v in options.split(",") if v.strip())
        if not values:
            raise PayloadError("enum{} lists no values")
        return {"kind": "enum", "options": values}
    return {"kind": kind_text}


def _constraints(kind: str, values: Mapping[str, Any]) -> dict:
    out: dict[str, Any] = {}
    for name, value in values.items():
        if name in _NUMERIC:
            if isinstance(value, bool) or not isinstance(value, int):
                raise PayloadError(f"`{name}` must be a whole number, not {value!r}")
            fits = kind in ("string", "array") if name.endswith("_length") else kind == "integer"
            if not fits:
                applies = "strings and arrays" if name.endswith("_length") else "integers"
                raise PayloadError(f"`{name}` applies to {applies}, not to {kind}")
            out[name] = value
        elif name == "pattern":
            if kind != "string":
                raise PayloadError(f"`pattern` applies to strings, not to {kind}")
            try:
                re.compile(str(value))
            except re.error as exc:
                raise PayloadError(f"`pattern` {value!r} is not a regular expression: {exc}") from None
            out["pattern"] = str(value)
        elif name == "required":
            if not isinstance(value, bool):
                raise PayloadError(f"`required` must be true or false, not {value!r}")
            out["required"] = value
        else:
            raise PayloadError(f"unknown constraint `{name}`")
    return out


def parse_field(descriptor: Any) -> Field:
    """A field descriptor as written (a string or a mapping); raises PayloadError saying what is wrong."""
    if isinstance(descriptor, str):
        match = _TYPE.match(descriptor)
        if match is None:
            raise PayloadError(f"{descriptor!r} is not a type: write string, integer, boolean, object, array<T> or "
                               "enum{a, b}, optionally followed by constraints in parentheses")
        kind_text, item, options, constraints = match.groups()
        base = _base(kind_text, item, options)
        found: dict[str, Any] = {}
        for part in _CONSTRAINT.finditer(constraints or ""):
            name, raw = part.group(1), part.group(2)
            if not name:
                continue
            if raw is None:
                if name not in ("required", "optional"):
                    raise PayloadError(f"constraint `{name}` needs a value (`{name}=...`)")
                found["required"] = name == "required"
            elif name in _NUMERIC:
                try:
                    found[name] = int(raw.strip())
                except ValueError:
                    raise PayloadError(f"`{name}` must be a whole number, not {raw.strip()!r}") from None
            else:
                found[name] = _unquote(raw)
        if constraints and constraints.strip() and not found:
            raise PayloadError(f"cannot read the constraints ({constraints.strip()})")
        return Field(written=descriptor, **base, **_constraints(base["kind"], found))
    if isinstance(descriptor, dict):
        unknown = [k for k in descriptor if k not in _MAPPING_KEYS]
        if unknown:
            raise PayloadError(f"unknown key `{unknown[0]}` (a field mapping has {', '.join(_MAPPING_KEYS)})")
        type_text = descriptor.get("type")
        if not isinstance(type_text, str):
            raise PayloadError("a field written as a mapping needs `type:` (string, integer, boolean, object, "
                               "array<T>, enum{...})")
        inner = parse_field(type_text)
        extra = {k: v for k, v in descriptor.items() if k in _NUMERIC + ("pattern", "required")}
        changes = _constraints(inner.kind, extra)
        kwargs: dict[str, Any] = {f: getattr(inner, f) for f in ("kind", "required", "items", "options", "min", "max",
                                                                  "min_length", "max_length", "pattern")}
        kwargs.update(changes)
        if "enum" in descriptor:
            if not isinstance(descriptor["enum"], list) or not descriptor["enum"]:
                raise PayloadError("`enum` must be a non-empty list")
            kwargs["kind"], kwargs["options"] = "enum", tuple(descriptor["enum"])
        if "items" in descriptor:
            if inner.kind != "array":
                raise PayloadError("`items` applies to arrays")
            kwargs["items"] = parse_field(descriptor["items"])
        written = type_text
        built = Field(written=written, **kwargs)
        if "default" in descriptor:
            wrong = built.problem(descriptor["default"])
            if wrong:
                raise PayloadError(f"`default` {wrong}")
            built = Field(written=written, default=descriptor["default"], **kwargs)
        return built
    raise PayloadError(f"a field is a type written as text or as a mapping, not {_kind_of(descriptor)}")


@dataclass(frozen=True)
class PayloadType:
    name: str
    fields: Mapping[str, Field]

    def check(self, values: Any, complete: bool = True) -> list[tuple[str | None, str]]:
        """(field or None, what is wrong) for each problem. `complete`: `values` holds every field it will
        have (else only the ones given are checked, and missing ones are not reported)."""
        if not isinstance(values, dict):
            return [(None, f"params must be a mapping of fields for {self.name}, not {_kind_of(values)}")]
        problems: list[tuple[str | None, str]] = []
        for key, value in values.items():
            spec = self.fields.get(key)
            if spec is None:
                problems.append((key, f"`{key}` is not a field of {self.name} (its fields: "
                                      f"{', '.join(self.fields) or 'none'})"))
                continue
            wrong = spec.problem(value)
            if wrong:
                problems.append((key, f"`{key}` {wrong} ({self.name} declares it `{spec.written}`)"))
        if complete:
            for key, spec in self.fields.items():
                if key not in values and spec.required and not spec.has_default:
                    problems.append((None, f"`{key}` is missing: {self.name} requires it (`{spec.written}`)"))
        return problems

    def with_defaults(self, values: dict) -> dict:
        missing = {k: f.default for k, f in self.fields.items() if k not in values and f.has_default}
        return {**values, **missing} if missing else values


def parse_type(name: str, raw: Any) -> tuple[PayloadType, list[tuple[str, str]]]:
    """The payload type, and (field, problem) for each field that cannot be read (left out of the type)."""
    fields: dict[str, Field] = {}
    problems: list[tuple[str, str]] = []
    for key, descriptor in (raw or {}).items() if isinstance(raw, dict) else ():
        try:
            fields[str(key)] = parse_field(descriptor)
        except PayloadError as exc:
            problems.append((str(key), str(exc)))
    return PayloadType(name, fields), problems


def payload_type(name: str, raw: Any) -> PayloadType:
    """The parsed type (parsing a few fields costs microseconds: done where a call runs)."""
    return parse_type(name, raw)[0]
