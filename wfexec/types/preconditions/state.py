"""Preconditions over the run state (seed names and v3 `state_check`)."""

from __future__ import annotations

from wfexec.language.expressions import truthy
from wfexec.types.registry import ActionFailed, TypeList

TYPES = TypeList()

FIELD = {"type": "string", "description": "a state path, e.g. computed.result or flags.ready"}
_MISSING = object()


def _sized(value) -> int:
    try:
        return len(value)
    except TypeError:
        return 0 if value is None else 1


@TYPES.precondition("flag_set", {"flag": {"type": "string"}}, ["flag"])
def flag_set(params, ctx):
    """True when `flags.<flag>` is true."""
    return ctx.get(("flags",) + ctx.path(params["flag"])) is True


@TYPES.precondition("flag_not_set", {"flag": {"type": "string"}}, ["flag"])
def flag_not_set(params, ctx):
    """True when `flags.<flag>` is false or missing."""
    return ctx.get(("flags",) + ctx.path(params["flag"])) is not True


@TYPES.precondition("state_equals", {"field": FIELD, "value": {}}, ["field", "value"], paths=("field",))
def state_equals(params, ctx):
    """True when the value at `field` equals `value`."""
    return ctx.get(params["field"]) == params["value"]


@TYPES.precondition("state_not_null", {"field": FIELD}, ["field"], paths=("field",))
def state_not_null(params, ctx):
    """True when `field` holds a value (not null, not missing)."""
    return ctx.get(params["field"]) is not None


@TYPES.precondition("state_is_null", {"field": FIELD}, ["field"], paths=("field",))
def state_is_null(params, ctx):
    """True when `field` is null or missing."""
    return ctx.get(params["field"]) is None


@TYPES.precondition("count_equals", {"field": FIELD, "count": {"type": "integer", "minimum": 0}},
                    ["field", "count"], paths=("field",))
def count_equals(params, ctx):
    """True when the list, mapping or string at `field` has exactly `count` items."""
    return _sized(ctx.get(params["field"])) == params["count"]


@TYPES.precondition("count_above", {"field": FIELD, "min": {"type": "integer"}}, ["field", "min"], paths=("field",))
def count_above(params, ctx):
    """True when `field` has more than `min` items."""
    return _sized(ctx.get(params["field"])) > params["min"]


@TYPES.precondition("count_below", {"field": FIELD, "max": {"type": "integer"}}, ["field", "max"], paths=("field",))
def count_below(params, ctx):
    """True when `field` has fewer than `max` items."""
    return _sized(ctx.get(params["field"])) < params["max"]


@TYPES.precondition("evaluate_expression", {"expression": {"type": ["string", "boolean"],
                                                            "description": "a JavaScript expression over the state"}},
                    ["expression"], expressions=("expression",))
def evaluate_expression(params, ctx):
    """True when the JavaScript expression is truthy."""
    return truthy(ctx.evaluate(params["expression"]))


# state_check's operators that compare with `value`, which they need (blueprint-lib: "value required for
# equals / not_equals"; `in` takes the list the value must be in, as blueprint-lib's goal_seek expansion writes it).
COMPARING = ("equals", "not_equals", "in")
_LIST_OR_TEMPLATE = {"anyOf": [{"type": "array"}, {"type": "string", "pattern": r"^\s*\$\{.*\}\s*$"}],
                     "description": "for `in`: the list of values the field's value must be one of"}


@TYPES.precondition("state_check", {
    "field": FIELD,
    # `true`/`false` unquoted are YAML booleans: accepted as the operators they spell.
    "operator": {"enum": ["equals", "not_equals", "null", "not_null", "true", "false", "in", True, False],
                 "description": "equals, not_equals, in (value is a list), null, not_null, true or false"},
    "value": {"description": "what equals/not_equals compare with; for `in`, a list"},
}, ["field", "operator"], paths=("field",), rules=(
    {"if": {"properties": {"operator": {"enum": list(COMPARING)}}, "required": ["operator"]},
     "then": {"required": ["value"],
              "properties": {"value": {"description": "equals, not_equals and in compare with it"}}}},
    {"if": {"properties": {"operator": {"const": "in"}}, "required": ["operator"]},
     "then": {"properties": {"value": _LIST_OR_TEMPLATE}}},
))
def state_check(params, ctx):
    """v3/v8: compare the value at `field` (equals, not_equals, in, null, not_null, true, false)."""
    value = ctx.get(params["field"])
    operator = params["operator"]
    if isinstance(operator, bool):
        operator = "true" if operator else "false"
    if operator == "equals":
        return value == params.get("value")
    if operator == "not_equals":
        return value != params.get("value")
    if operator == "in":
        choices = params.get("value")
        if not isinstance(choices, (list, tuple)):
            raise ActionFailed(f"state_check `in` needs a list as `value`, not {type(choices).__name__}",
                               "write value: [a, b] (or a `${...}` that gives a list)")
        return any(value == choice for choice in choices)
    if operator == "null":
        return value is None
    if operator == "not_null":
        return value is not None
    if operator == "true":
        return value is True
    return value is not True  # "false": missing counts as false
