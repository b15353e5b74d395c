"""Run inputs: `--input key=value`, `--input-file FILE`, `--set path=value`,
checked against the workflow's `input_schema`."""

from __future__ import annotations

from typing import Any

from wfexec.errors import WfexecError
from wfexec.language.diagnostics import did_you_mean

_JSON_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "array": list, "object": dict}


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


def check_inputs(given: dict[str, Any], input_schema: dict | None, *, from_text: set[str] = frozenset()) -> dict:
    """Apply defaults, coerce command-line text to declared types, and reject what does not fit."""
    if not input_schema:
        return dict(given)
    result: dict[str, Any] = {}
    for name, value in given.items():
        if name not in input_schema:
            hint = did_you_mean(name, input_schema) or "declared inputs: " + ", ".join(input_schema)
            raise InputError(f"unknown input '{name}' ({hint})")
        declared = (input_schema[name] or {}).get("type")
        if name in from_text and declared not in (None, "string"):
            value = parse_scalar(value)
        expected = _JSON_TYPES.get(declared)
        if expected is not None and (not isinstance(value, expected) or
                                     (declared in ("integer", "number") and isinstance(value, bool))):
            raise InputError(f"input '{name}' must be {declared}, got {value!r}")
        result[name] = value
    for name, spec in input_schema.items():
        spec = spec or {}
        if name in result:
            continue
        if "default" in spec:
            result[name] = spec["default"]
        elif spec.get("required"):
            about = f" ({spec['description']})" if spec.get("description") else ""
            raise InputError(f"missing required input '{name}'{about}: pass --input {name}=VALUE")
    return result
