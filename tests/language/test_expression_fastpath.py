"""The Python fast path gives the JavaScript engine's answer, or steps aside.

Thousands of generated expressions over generated states: whenever the fast
path answers, the engine must answer the same value of the same type (and must
not throw). Values include the edges where Python and JavaScript differ:
undefined, null, booleans against numbers, NaN, infinities, -0, integers past
2**53 (BigInts in the engine), strings with NUL, non-ASCII strings, objects and arrays.
And every value the engine reads comes back from it unchanged.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from wfexec.language import javascript
from wfexec.language.expressions import MISSING, Expression, ExpressionError, Scope

NAMES = ("computed.a", "computed.b", "flags.x", "flags.y", "a", "b", "input.n", "computed.o.k", "missing")

scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-5, max_value=5), st.integers(min_value=-2 ** 60, max_value=2 ** 60),
    st.sampled_from([2 ** 53 - 1, 2 ** 53, 2 ** 53 + 1, -(2 ** 53), 12345678901234567890123]),
    st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.5, -1.5, 1e16, float("nan"), float("inf"), -float("inf")]),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.sampled_from(["", "a", "b", "0", "1", "true", "null", "é", "𝄞", "a b", "a\x00b", "\x00", "\x01x"]),
    st.text(max_size=4),
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
                     "9007199254740991", "9007199254740992", "12345678901234567890123",
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
        st.tuples(children, children, children).map(lambda t: f"{t[0]} ? {t[1]} : {t[2]}"),
    )


expressions = st.recursive(atoms, combine, max_leaves=6)


def _same(fast, engine) -> bool:
    if type(fast) is not type(engine):
        return False
    if isinstance(fast, float) and math.isnan(fast):
        return math.isnan(engine)
    return fast == engine


def _with_a_fast_path(source: str, refused: str) -> Expression | None:
    """The expression, when the fast path reads it; else None, and why as a hypothesis event."""
    try:
        expression = Expression(source)
    except ExpressionError:
        event(refused)
        return None
    if expression._fast_text is None:
        event("no fast path")
        return None
    return expression


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=expressions, scope=states())
def test_the_fast_path_agrees_with_the_engine(source, scope):
    expression = _with_a_fast_path(source, refused="not JavaScript (e.g. `--1`)")
    if expression is None:
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
    "len(computed.items) > 0", "count < input.limit ? 'tick' : 'done'", "a ? b ? 1 : 2 : (c ? 'x' : null)",
])
def test_common_shapes_take_the_fast_path(source):
    assert Expression(source)._fast is not None


# Names and keys at the edges of JavaScript's grammar: reserved only in strict mode, keywords as keys, characters
# past ASCII that are names (é) and that are not (× and an em space, which the tokenizer reads inside a name).
EDGE_ATOMS = st.sampled_from(["a.class", "a.null", "a.if", "a.é", "é", "a.b\u2003c", "x\u00d7y", "a.$b", "implements",
                              "interface", "package", "private", "protected", "public", "async", "of", "get",
                              "01", "1.", ".5", "0x1f", "--x", "a[0]", "'a\\nb'", "a /* c */", "a\n.b"])


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=st.recursive(st.one_of(atoms, EDGE_ATOMS), combine, max_leaves=6))
def test_a_source_the_fast_path_reads_is_one_the_engine_compiles(source):
    """Checking a workflow skips the engine's syntax check where the fast path read the whole source: that is
    only right while every such source is valid JavaScript."""
    expression = _with_a_fast_path(source, refused="refused")
    if expression is None:
        return
    event("fast path")
    javascript.current().function(expression.function_text(), expression.code)  # what a run compiles; raises if not


# Sources that break out of the wrapper around them: a `let` of a name read (a parameter, or destructured).
BREAKING_OUT = st.sampled_from(["1)); let a = 2; ((a", "1)); let __wfexec_args = 1; ((2", "a)); var b; ((b",
                                "1))}); (function(){ ((2", "a)) /* ((", "`${a}`", "a => { let a; }", "x×y"])


def _compiles(text: str, source: str) -> bool:
    try:
        javascript.current()._compile(text, source)
    except javascript.JavaScriptError:
        return False
    return True


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=st.recursive(st.one_of(atoms, EDGE_ATOMS, BREAKING_OUT), combine, max_leaves=4),
       names=st.lists(st.sampled_from(["a", "b", "computed", "x×y", "__wfexec_args"]), unique=True, max_size=3))
def test_the_lighter_wrapper_a_check_compiles_accepts_what_the_run_compiles(source, names):
    """Checking compiles a source the fast path cannot read in a wrapper lighter than the function a run compiles:
    the two must accept and refuse the same sources."""
    run_text = javascript.expression_function(source, tuple(names)).text
    assert _compiles(javascript.check_text(source, tuple(names)), source) == _compiles(run_text, source)


@pytest.mark.parametrize("source", ["a.b\u2003c", "computed.x\u00d7y + 1", "-a ** 2", "a.b c"])
def test_what_javascript_refuses_is_refused_although_the_fast_path_reads_most_of_it(source):
    with pytest.raises(ExpressionError, match="invalid JavaScript"):
        Expression(source)


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


def _as_json(value):
    """What a value is once it has been JSON: NaN and infinities null, a whole float a whole number."""
    if isinstance(value, float):
        return None if not math.isfinite(value) else \
            (int(value) if value.is_integer() and abs(value) < 2 ** 53 else value)
    if isinstance(value, list):
        return [_as_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_json(v) for k, v in value.items()}
    return value


def _exactly(got, expected) -> bool:
    if type(got) is not type(expected):
        return False
    if isinstance(expected, list):
        return len(got) == len(expected) and all(_exactly(g, e) for g, e in zip(got, expected))
    if isinstance(expected, dict):
        return got.keys() == expected.keys() and all(_exactly(got[k], expected[k]) for k in expected)
    return got == expected


big_values = st.recursive(
    st.one_of(scalars, st.integers(), st.text()),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(st.text(max_size=3), children,
                                                                                max_size=3)),
    max_leaves=8)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=big_values)
def test_a_value_read_by_the_engine_comes_back_exactly(value):
    """Both directions of the boundary: a state value into JavaScript and the same value out (integers of any
    size, strings with NUL, astral characters), where the fast path is not asked."""
    scope = Scope({"computed": {"a": value}, "flags": {}, "user_responses": {}}, {})
    for source in ("computed.a", "[computed.a][0]", "({v: computed.a}).v"):
        got = Expression(source).evaluate_in_engine(scope)
        assert _exactly(got, _as_json(value)), f"{source}: {value!r} came back as {got!r}"


@pytest.mark.parametrize("value", [2 ** 53 - 1, 2 ** 53, 2 ** 53 + 1, -(2 ** 53), 12345678901234567890123, 2.0 ** 60,
                                   "a\x00b"])
@pytest.mark.parametrize("source", ["a", "a - 1", "a + 1", "-a", "a === a", "a < 1", "a == 9007199254740992",
                                    "a + a", "len(a)", "a === 'a\\u0000b'"])
def test_the_fast_path_and_the_engine_agree_where_bigints_start(value, source):
    """At Number.MAX_SAFE_INTEGER the engine's integers become BigInts (`2**53 - 1` is a TypeError there): the fast
    path must step aside, not compute a Number."""
    scope = Scope({"computed": {"a": value}, "flags": {}, "user_responses": {}}, {})
    expression = Expression(source)
    fast = expression._fast(scope) if expression._fast is not None else MISSING
    if fast is MISSING:
        return
    assert _same(fast, expression.evaluate_in_engine(scope)), source
