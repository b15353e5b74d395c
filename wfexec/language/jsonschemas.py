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
                pass
        if self._explain is None:
            from jsonschema import Draft202012Validator

            self._explain = Draft202012Validator(self.schema)
        return self._explain.iter_errors(instance)


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

