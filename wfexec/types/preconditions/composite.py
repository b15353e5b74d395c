"""Composite preconditions: all_of, any_of, none_of, xor_of, and blueprint-lib's `composite` (operator + conditions)."""

from __future__ import annotations

from wfexec.types.registry import NESTED_PRECONDITIONS, ActionFailed, TypeList

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


_COMBINE = {"all": all_of, "any": any_of, "none": none_of, "xor": xor_of}


@TYPES.precondition("composite", {
    "operator": {"enum": list(_COMBINE), "description": "all, any, none or xor: how the conditions combine"},
    **_CONDITIONS,
}, ["operator", "conditions"], **_OPTIONS)
def composite(params, ctx):
    """blueprint-lib: combine `conditions` with `operator` all, any, none or xor (as all_of, any_of, none_of, xor_of)."""
    combine = _COMBINE.get(params["operator"])
    if combine is None:
        raise ActionFailed(f"composite `operator` is {params['operator']!r}; it must be one of {', '.join(_COMBINE)}")
    return combine(params, ctx)
