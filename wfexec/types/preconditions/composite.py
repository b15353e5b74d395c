"""Composite preconditions: all_of, any_of, none_of, xor_of."""

from __future__ import annotations

from wfexec.types.registry import NESTED_PRECONDITIONS, TypeList

TYPES = TypeList()

_CONDITIONS = {"conditions": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/precondition"}}}
_OPTIONS = {"nested": {"conditions": NESTED_PRECONDITIONS}, "raw": ("conditions",)}


@TYPES.precondition("all_of", _CONDITIONS, ["conditions"], **_OPTIONS)
def all_of(params, ctx):
    """True when every condition is true (stops at the first false)."""
    return all(ctx.check(c) for c in params["conditions"])


@TYPES.precondition("any_of", _CONDITIONS, ["conditions"], **_OPTIONS)
def any_of(params, ctx):
    """True when at least one condition is true (stops at the first true)."""
    return any(ctx.check(c) for c in params["conditions"])


@TYPES.precondition("none_of", _CONDITIONS, ["conditions"], **_OPTIONS)
def none_of(params, ctx):
    """True when no condition is true."""
    return not any(ctx.check(c) for c in params["conditions"])


@TYPES.precondition("xor_of", _CONDITIONS, ["conditions"], **_OPTIONS)
def xor_of(params, ctx):
    """True when exactly one condition is true (evaluates all of them)."""
    return sum(1 for c in params["conditions"] if ctx.check(c)) == 1
