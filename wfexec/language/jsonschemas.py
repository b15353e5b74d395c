"""Checking data against JSON Schemas: fast when valid, explained when not.

Most documents are valid, and jsonschema spends about 20x longer than
fastjsonschema's generated code to say so. So: fastjsonschema answers "valid?";
only when it says no does jsonschema walk the instance again to produce the
errors (with paths) that become diagnostics.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator


def inline_refs(schema: Any, defs: dict) -> Any:
    """Replace `{"$ref": "#/$defs/name"}` by the definition itself: resolving a $ref
    costs more than the check it leads to."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs:
            return defs[ref[8:]]
        return {k: inline_refs(v, defs) for k, v in schema.items()}
    if isinstance(schema, list):
        return [inline_refs(v, defs) for v in schema]
    return schema


class SchemaCheck:
    """One compiled schema; `errors(instance)` yields jsonschema errors (none when valid)."""

    def __init__(self, schema: dict):
        from jsonschema import Draft202012Validator

        self.schema = schema
        self._explain = Draft202012Validator(schema)
        self._fast: Callable[[Any], Any] | None
        try:
            import fastjsonschema

            self._fast = fastjsonschema.compile(schema)
            self._fast_error = fastjsonschema.JsonSchemaException
        except Exception:  # a construct fastjsonschema does not support: jsonschema alone
            self._fast = None

    def errors(self, instance: Any) -> Iterator:
        if self._fast is not None:
            try:
                self._fast(instance)
                return iter(())
            except self._fast_error:
                pass
        return self._explain.iter_errors(instance)
