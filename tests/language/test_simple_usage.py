"""The names of a simple source (no template, escape, comment, block or blank beside a dot), found in place
without the tokenizer, are exactly what the tokenizer's reading finds; whatever needs the tokens goes to it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from wfexec.language.expression_fastpath import fast_source
from wfexec.language.expressions import Expression, ExpressionError
from wfexec.language.javascript import JavaScriptError, compile_source
from wfexec.language.js_source import simple_usage, usage

from conftest import compat_root


def same_reading(source: str) -> bool:
    """Whether `simple_usage` read `source` (False: it left it to the tokens), failing when what it read differs
    from `usage`: a call is named by a different index, but the same calls in the same order."""
    light = simple_usage(source)
    if light is None:
        return False
    full = usage(source)
    assert (light.reads, light.declared, list(light.calls)) == (full.reads, full.declared, list(full.calls)), source
    return True


# Valid JavaScript of names, numbers and punctuation, never a blank beside a dot: what `simple_usage` must read.
_NAMES = st.sampled_from(["a", "b", "x", "items", "$v", "_w", "computed", "len", "Math", "e", "n", "get", "of"])
_KEYS = st.sampled_from(["b", "e0", "max", "map", "length", "default", "in", "$k"])
_NUMBERS = st.sampled_from(["0", "12", "1.5", ".5", "1e5", "2E-3", "0x1f", "10n", "1_000", "1.5e3"])
_BLANK = st.sampled_from(["", " ", "\n  ", "\t"])
_STRINGS = st.sampled_from(["'a.b, c'", '"x\'y"', "'{ k: v }'", '"// no comment"', "''", "'a /b/ `c`'"])


def _with_blanks(template: str, draw_blank) -> str:
    return template.replace("~", draw_blank())


@st.composite
def _atoms(draw):
    name = draw(_NAMES)
    return draw(st.sampled_from([
        name, f"{name}.{draw(_KEYS)}", f"{name}.{draw(_KEYS)}.{draw(_KEYS)}", draw(_NUMBERS), f"{name}?.{draw(_KEYS)}",
        f"{name}?.[{draw(_NUMBERS)}]", f"this.{draw(_KEYS)}", "1.5.toFixed(1)", "(12).toString()",
        draw(_STRINGS), f"{draw(_STRINGS)}.length", f"{name}[{draw(_STRINGS)}]",
    ]))


def _expressions():
    def extend(inner):
        blank = _BLANK
        pair = st.tuples(inner, inner, blank, blank)
        arguments = st.lists(st.one_of(inner, _NAMES.map(lambda name: f"...{name}")), max_size=3)
        return st.one_of(
            st.tuples(pair, st.sampled_from(["+", "-", "*", "%", "<", ">=", "===", "!==", "&&", "||", "??", ",",
                                             "in", "instanceof"])).map(
                lambda p: f"({p[0][0]}{p[0][2] or ' '}{p[1]}{p[0][3] or ' '}{p[0][1]})" if p[1].isalpha() else
                f"({p[0][0]}{p[0][2]}{p[1]}{p[0][3]}{p[0][1]})"),
            inner.map(lambda e: f"!{e}"),
            inner.map(lambda e: f"(typeof {e})"),
            st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} ? {t[1]} : {t[2]})"),
            st.tuples(_NAMES, arguments, blank).map(lambda t: f"{t[0]}({(',' + t[2]).join(t[1])})"),
            st.tuples(inner, _KEYS, arguments).map(lambda t: f"({t[0]}).{t[1]}({', '.join(t[2])})"),
            st.tuples(_NAMES, _KEYS, _NAMES, inner).map(lambda t: f"{t[0]}.{t[1]}({t[2]} => {t[3]})"),
            st.tuples(_NAMES, _KEYS, st.lists(_NAMES, max_size=3, unique=True), inner, st.sampled_from(["", " "])).map(
                lambda t: f"{t[0]}.{t[1]}(({', '.join(t[2])}){t[4]}=> {t[3]})"),
            st.lists(st.one_of(inner, _NAMES.map(lambda name: f"...{name}")), max_size=3).map(
                lambda items: f"[{', '.join(items)}]"),
            st.tuples(_NAMES, inner).map(lambda t: f"{t[0]}[{t[1]}]"),
            st.tuples(_NAMES, _KEYS).map(lambda t: f"new {t[0]}.{t[1]}(1)"),
        )
    return st.recursive(_atoms(), extend, max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(_expressions(), _expressions())
def test_a_simple_source_is_read_in_place_as_the_tokens_read_it(first, second):
    source = f"[{first}, {second}]"
    compile_source(source, ())  # the premise: it is JavaScript
    assert same_reading(source)
    assert fast_source(source) is None  # a source that holds `,`, `[` or `=>` is never the fast path's


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", ".", "...", "?.", " ", "\n", "(", ")", "[", "]", ",", "=>", "1", ".5",
                                 "e5", "x1", "0x", "|", "||", ":", "?", "const", "let", "var", "this", "=", "+"]),
                max_size=14))
def test_any_source_read_in_place_is_read_as_the_tokens_read_it(pieces):
    """Where the in-place reading takes a source that is JavaScript, it agrees. (On one that is not, the engine's
    syntax error is what is said, whatever names were found: `0x` reads as `0` and `x` to the tokenizer.)"""
    source = "".join(pieces)
    try:
        compile_source(source, ())
    except JavaScriptError:
        return
    same_reading(source)


@pytest.mark.parametrize("source", [
    "a\n  .map(f), b",          # a member on the next line: a blank before the dot
    "a. b, c",                  # a blank after it
    "[1..toString(), a]",       # two dots
    "[....a]",
    "const a = [1]; a",         # a declaration
    "(a = 1) => a",             # a default
    "[(a = f(x)) => a]",        # a default that calls: `x` is not the parameters' only name
    "(...rest) => rest",        # a rest parameter
    "([a, b]) => a",            # a pattern
    "x | y, z",                 # a jq pipe, which Expression looks for among the tokens
    "[a, 'b\\'c']",              # a string with an escape
    "[a, 'b' + `c`]",           # a template literal
    "[a / b]",                  # a division or a regular expression
    "[{a: 1}]",                 # an object
    "[é, a]",                   # past ASCII
    "a + b",                    # no `,`, `[` or `=>`: it may be the fast path's
    "x == 'a, [b] => c'",       # only inside a string: the same
])
def test_what_only_the_tokens_read_is_left_to_them(source):
    assert simple_usage(source) is None


def test_the_real_hiivmind_expressions_read_in_place_read_as_the_tokens_read_them():
    from wfexec.language.loader import load_file

    root = compat_root()
    sources = set()

    def collect(value):
        if isinstance(value, dict):
            for key, inner in value.items():
                if key == "expression" and isinstance(inner, str):
                    sources.add(inner)
                else:
                    collect(inner)
        elif isinstance(value, list):
            for inner in value:
                collect(inner)

    for path in sorted(root.glob("hiivmind-corpus/*/**/workflow.yaml")):
        collect(load_file(path).data)
    read_in_place = [source for source in sorted(sources) if same_reading(source)]
    assert sources and read_in_place, "no real expression was read in place: the test would prove nothing"


def test_an_unknown_call_in_a_simple_source_is_placed_by_its_token():
    with pytest.raises(ExpressionError, match="unknown function 'frob'") as error:
        Expression("[1,\n  2].map(x => frob(x))")
    assert (error.value.line, error.value.column) == (2, 15)


def test_an_expression_read_in_place_gives_what_the_tokens_gave(monkeypatch):
    from wfexec.language import expressions, js_source

    source = "(computed.e1 || 0) + items.map(x => x * 2).reduce((a, b) => a + b, 0) + Math.max(...items)"
    expressions._analysed.clear()
    light = Expression(source)
    monkeypatch.setattr(js_source, "simple_usage", lambda _source: None)
    expressions._analysed.clear()
    tokens = Expression(source)
    assert light.__reduce__() == tokens.__reduce__()
    assert light.names == ("computed", "items") and light.reads == {"computed": ("e1",), "items": None}
