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

Parsed once per type; `check` says what is wrong with a mapping of values, one message per field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

SCALARS = ("string", "integer", "boolean", "object")
INT64 = (-(2 ** 63), 2 ** 63 - 1)
_TYPE = re.compile(r"^\s*(string|integer|boolean|object|array<\s*([A-Za-z_][A-Za-z0-9_]*)\s*>|enum\{([^}]*)\})\s*"
                   r"(?:\((.*)\))?\s*$", re.S)
_CONSTRAINT = re.compile(r"\s*([A-Za-z_]+)\s*(?:=\s*(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|[^,]*?))?\s*(?:,|$)")
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

    def problem(self, value: Any) -> str | None:
        """What is wrong with `value` for this field, or None."""
        kind = self.kind
        if kind == "enum":
            return None if value in self.options else f"is {value!r}, not one of {', '.join(map(str, self.options))}"
        if kind == "string":
            if not isinstance(value, str):
                return f"must be a string, not {_kind_of(value)}"
            if self.min_length is not None and len(value) < self.min_length:
                return f"must be at least {self.min_length} characters long (it has {len(value)})"
            if self.max_length is not None and len(value) > self.max_length:
                return f"must be at most {self.max_length} characters long (it has {len(value)})"
            if self.pattern is not None and re.search(self.pattern, value) is None:
                return f"{value!r} does not match the pattern {self.pattern!r}"
            return None
        if kind == "integer":
            if isinstance(value, bool) or not isinstance(value, int):
                if isinstance(value, float) and value.is_integer():
                    value = int(value)
                else:
                    return f"must be an integer, not {_kind_of(value)}"
            if not INT64[0] <= value <= INT64[1]:
                return "is outside the 64-bit integer range"
            if self.min is not None and value < self.min:
                return f"must be at least {self.min} (it is {value})"
            if self.max is not None and value > self.max:
                return f"must be at most {self.max} (it is {value})"
            return None
        if kind == "boolean":
            return None if isinstance(value, bool) else f"must be true or false, not {_kind_of(value)}"
        if kind == "object":
            return None if isinstance(value, dict) else f"must be a mapping, not {_kind_of(value)}"
        # array
        if not isinstance(value, (list, tuple)):
            return f"must be a list, not {_kind_of(value)}"
        if self.min_length is not None and len(value) < self.min_length:
            return f"must have at least {self.min_length} items (it has {len(value)})"
        if self.max_length is not None and len(value) > self.max_length:
            return f"must have at most {self.max_length} items (it has {len(value)})"
        if self.items is not None:
            for index, item in enumerate(value):
                wrong = self.items.problem(item)
                if wrong:
                    return f"item {index} {wrong}"
        return None


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
