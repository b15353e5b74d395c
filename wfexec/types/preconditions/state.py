"""Preconditions over the run state (seed names and v3 `state_check`)."""

from __future__ import annotations

from wfexec.language.expressions import Expression, ExpressionError, renderer, truthy
from wfexec.language.paths import get_path, written_path
from wfexec.types.registry import ActionFailed, TypeList

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping

    from wfexec.language.paths import StatePath

    DirectTest = Callable[[Any, Any], bool]

TYPES = TypeList()

FIELD = {"type": "string", "description": "a state path, e.g. computed.result or flags.ready"}
_MISSING = object()


# The common checks have a direct form (TypeSpec.direct) beside their handler: the answer, from the compiled
# parameters, with nothing rendered into a new mapping and no CallContext. A computed path takes the handler.

def _testing(path: StatePath | None, test: Callable[[Any], bool]) -> DirectTest | None:
    """The direct form answering `test(the value at path)` (a missing value reads as None, as `ctx.get` has it)."""
    if path is None:
        return None
    return lambda run, scope: test(get_path(run.state, path, None))


def _flag_path(params: Mapping[str, Any]) -> StatePath | None:
    flag = written_path(params, "flag")
    return ("flags",) + flag if flag is not None else None


def _state_equals_direct(params):
    path = written_path(params, "field")
    if path is None:
        return None
    value_of = renderer(params.get("value"))
    return lambda run, scope: get_path(run.state, path, None) == value_of(scope)


def _evaluate_expression_direct(params):
    expression = params.get("expression")
    if not isinstance(expression, Expression):
        return None  # prose: the LLM answers
    evaluate = expression.evaluator()

    def test(run, scope) -> bool:
        try:
            return truthy(evaluate(scope))
        except ExpressionError as exc:  # as the handler's ctx.evaluate reports it
            raise ActionFailed(exc.message, exc.hint) from None

    return test


def _sized(value) -> int:
    try:
        return len(value)
    except TypeError:
        return 0 if value is None else 1


@TYPES.precondition("flag_set", {"flag": {"type": "string"}}, ["flag"],
                    direct=lambda params: _testing(_flag_path(params), lambda value: value is True))
def flag_set(params, ctx):
    """True when `flags.<flag>` is true."""
    return ctx.get(("flags",) + ctx.path(params["flag"])) is True


@TYPES.precondition("flag_not_set", {"flag": {"type": "string"}}, ["flag"],
                    direct=lambda params: _testing(_flag_path(params), lambda value: value is not True))
def flag_not_set(params, ctx):
    """True when `flags.<flag>` is false or missing."""
    return ctx.get(("flags",) + ctx.path(params["flag"])) is not True


@TYPES.precondition("state_equals", {"field": FIELD, "value": {}}, ["field", "value"], paths=("field",),
                    direct=_state_equals_direct)
def state_equals(params, ctx):
    """True when the value at `field` equals `value`."""
    return ctx.get(params["field"]) == params["value"]


@TYPES.precondition("state_not_null", {"field": FIELD}, ["field"], paths=("field",),
                    direct=lambda params: _testing(written_path(params, "field"), lambda value: value is not None))
def state_not_null(params, ctx):
    """True when `field` holds a value (not null, not missing)."""
    return ctx.get(params["field"]) is not None


@TYPES.precondition("state_is_null", {"field": FIELD}, ["field"], paths=("field",),
                    direct=lambda params: _testing(written_path(params, "field"), lambda value: value is None))
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
                    ["expression"], expressions=("expression",), direct=_evaluate_expression_direct)
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
