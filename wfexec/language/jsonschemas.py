"""Checking data against JSON Schemas: fast when valid, explained when not.

Most documents are valid, and jsonschema spends about 20x longer than
fastjsonschema's generated code to say so. So: fastjsonschema answers "valid?";
only when it says no does jsonschema walk the instance again to produce the
errors (with paths) that become diagnostics.
"""

from __future__ import annotations

import re
from collections import deque
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
        self.schema = schema
        self._explain: Any = None  # jsonschema, built the first time something is invalid
        self._fast: Callable[[Any], Any] | None
        try:
            import fastjsonschema

            self._fast = _fast_validator(schema)
            self._fast_error = fastjsonschema.JsonSchemaException
        except Exception:  # a construct fastjsonschema does not support: jsonschema alone
            self._fast = None

    def errors(self, instance: Any) -> Iterator:
        if self._fast is not None:
            try:
                self._fast(instance)
                return iter(())
            except self._fast_error:
                only_unknown = self._only_unknown_fields(instance)
                if only_unknown is not None:
                    return iter((only_unknown,))
        if self._explain is None:
            from jsonschema import Draft202012Validator

            self._explain = Draft202012Validator(self.schema)
        return self._explain.iter_errors(instance)


    def _only_unknown_fields(self, instance: Any) -> "UnknownFields | None":
        """The error when the only thing wrong is fields a closed object schema does not name — the most common
        mistake (a misspelt or misplaced key) — found without importing jsonschema (about 20 ms a process)."""
        schema = self.schema
        if not (isinstance(instance, dict) and schema.get("additionalProperties") is False
                and schema.get("type") == "object"):
            return None
        known = schema.get("properties") or {}
        patterns = [re.compile(p) for p in schema.get("patternProperties") or {}]
        unknown = [k for k in instance if k not in known and not any(p.search(str(k)) for p in patterns)]
        if not unknown:
            return None
        try:
            self._fast({k: v for k, v in instance.items() if k not in unknown})  # type: ignore[misc]
        except self._fast_error:
            return None  # something else is wrong too: jsonschema explains all of it
        return UnknownFields(schema, instance)


class UnknownFields:
    """What jsonschema's additionalProperties error carries, for the diagnostics (`schema.report_errors`)."""

    validator = "additionalProperties"
    validator_value = False
    context: list = []

    def __init__(self, schema: dict, instance: dict):
        self.schema = schema
        self.instance = instance
        self.absolute_path: deque = deque()
        self.relative_schema_path: deque = deque(["additionalProperties"])
        self.path = self.absolute_path
        self.message = "Additional properties are not allowed"


def _fast_validator(schema: dict) -> Callable[[Any], Any]:
    """fastjsonschema's validator for `schema`. Generating its code, and compiling that, costs more than loading
    a cached workflow, so the compiled code is kept in the user's cache, keyed by the schema, the fastjsonschema
    version and the Python bytecode it is in."""
    import json
    import marshal
    import re
    import sys

    import fastjsonschema

    from wfexec.system import cache

    key = (f"fastjsonschema {fastjsonschema.VERSION} {sys.implementation.cache_tag}\0"
           f"{json.dumps(schema, sort_keys=True, default=repr)}").encode()
    cached = cache.load("validators", key)
    if cached is not None:
        root_name, _, compiled = cached.partition(b"\0")
        code = marshal.loads(compiled)
        name = root_name.decode()
    else:
        source = fastjsonschema.compile_to_code(schema)
        root = re.search(r"^def (\w+)\(data", source, re.MULTILINE)  # the schema's own function comes first
        if root is None:
            return fastjsonschema.compile(schema)
        name = root.group(1)
        code = compile(source, "<fastjsonschema validator>", "exec")
        cache.store("validators", key, name.encode() + b"\0" + marshal.dumps(code))
    namespace: dict[str, Any] = {}
    exec(code, namespace)  # noqa: S102 - fastjsonschema's code
    return namespace[name]


def schema_error(schema: Any) -> Any:
    """jsonschema's SchemaError saying why `schema` is not JSON Schema, or None. A schema found valid once is
    remembered in the user's cache (by its content and the jsonschema metaschema's draft), so the valid schemas
    of a workflow or a plugin are not checked again by every command."""
    import json

    from wfexec.system import cache

    key = b"valid-json-schema 2020-12\0" + json.dumps(schema, sort_keys=True, default=repr).encode()
    if cache.load("schemas", key) is not None:
        return None
    from jsonschema import Draft202012Validator, SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return exc
    cache.store("schemas", key, b"")
    return None

