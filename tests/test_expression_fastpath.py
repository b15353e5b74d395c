"""The Python fast path gives the JavaScript engine's answer, or steps aside.

Thousands of generated expressions over generated states: whenever the fast
path answers, the engine must answer the same value of the same type (and must
not throw). Values include the edges where Python and JavaScript differ:
undefined, null, booleans against numbers, NaN, infinities, -0, integers past
2**53, non-ASCII strings, objects and arrays.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from wfexec.language.expressions import MISSING, Expression, ExpressionError, Scope

NAMES = ("computed.a", "computed.b", "flags.x", "flags.y", "a", "b", "input.n", "computed.o.k", "missing")

scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-5, max_value=5), st.integers(min_value=-2 ** 60, max_value=2 ** 60),
    st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.5, -1.5, 1e16, float("nan"), float("inf"), -float("inf")]),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.sampled_from(["", "a", "b", "0", "1", "true", "null", "é", "𝄞", "a b"]), st.text(max_size=4),
)
values = st.one_of(scalars, st.lists(scalars, max_size=2), st.dictionaries(st.sampled_from(["k", "a"]), scalars,
                                                                             max_size=2))
maybe = st.one_of(st.just(MISSING), values)


@st.composite
def states(draw):
    def put(space: dict, key: str):
        value = draw(maybe)
        if value is not MISSING:
            space[key] = value

    computed, flags, inputs, state = {}, {}, {}, {}
    put(computed, "a"), put(computed, "b"), put(computed, "o"), put(flags, "x"), put(flags, "y")
    put(inputs, "n"), put(state, "a"), put(state, "b")
    if draw(st.booleans()):
        computed["o"] = {"k": draw(scalars)}
    state.update(computed=computed, flags=flags, user_responses={})
    return Scope(state, {"input": inputs, "imports": {}})


literals = st.one_of(
    st.sampled_from(["true", "false", "null", "0", "1", "2", "10", "0.5", "1.5", "9007199254740993",
                     "''", "'a'", "\"b\"", "'0'", "'true'", "'é'"]),
    st.integers(min_value=0, max_value=100).map(str),
)
atoms = st.one_of(literals, st.sampled_from(NAMES))


def combine(children):
    binary = st.tuples(children, st.sampled_from(["&&", "||", "===", "!==", "==", "!=", "<", "<=", ">", ">=", "+",
                                                  "-"]), children)
    return st.one_of(
        binary.map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
        children.map(lambda c: f"!{c}"),
        children.map(lambda c: f"-{c}"),
        children.map(lambda c: f"({c})"),
        children.map(lambda c: f"len({c})"),
    )


expressions = st.recursive(atoms, combine, max_leaves=6)


def _same(fast, engine) -> bool:
    if type(fast) is not type(engine):
        return False
    if isinstance(fast, float) and math.isnan(fast):
        return math.isnan(engine)
    return fast == engine


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=expressions, scope=states())
def test_the_fast_path_agrees_with_the_engine(source, scope):
    try:
        expression = Expression(source)
    except ExpressionError:
        event("not JavaScript (e.g. `- -x`)")
        return
    if expression._fast is None:
        event("no fast path")
        return
    fast = expression._fast(scope)
    if fast is MISSING:
        event("fast path stepped aside")
        return
    event("fast path answered")
    engine = expression.evaluate_in_engine(scope)
    assert _same(fast, engine), f"{source!r}: fast path {fast!r}, engine {engine!r}"


@pytest.mark.parametrize("source", [
    "count < input.limit", "count + 1", "computed.count < 10", "flags.ready && !flags.done", "a === 'b'",
    "computed.user.name", "(x > 1 || y <= 2) && !z", "'step ' + n", "-n", "a !== null", "len(name)",
    "len(computed.items) > 0",
])
def test_common_shapes_take_the_fast_path(source):
    assert Expression(source)._fast is not None


def test_the_fast_path_answers_for_ordinary_values():
    scope = Scope({"computed": {"count": 3, "user": {"name": "n"}}, "flags": {"ready": True, "done": False}},
                  {"input": {"limit": 10}})
    for source, expected in [("computed.count < input.limit", True), ("computed.count + 1", 4),
                             ("flags.ready && !flags.done", True), ("computed.user.name", "n"),
                             ("computed.count / 1", 3)]:
        expression = Expression(source)
        fast = expression._fast(scope) if expression._fast else MISSING
        assert expression.evaluate(scope) == expected
        if source != "computed.count / 1":  # division is left to the engine
            assert fast == expected
