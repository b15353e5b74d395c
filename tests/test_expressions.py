"""The expression language: seed operators, name resolution, templates, and the sandbox."""

from __future__ import annotations

import pytest

from wfexec.language.expressions import Expression, ExpressionError, Scope, Template, compile_value, render_value

STATE = {
    "flags": {"ready": True, "shadowed": "flag"},
    "computed": {"count": 3, "items": ["a", "b"], "shadowed": "computed"},
    "user_responses": {"ask": {"id": "yes"}},
    "config": {"sources": [{"id": "docs"}]},
    "shadowed": "top",
}
SCOPE = Scope(STATE, {"imports": {"mapping": {"flags": ["x"]}}, "input": {"url": "u"}})


@pytest.mark.parametrize("source, expected", [
    ("computed.count > 2 && flags.ready", True),
    ("computed.count > 5 || !flags.ready", False),
    ("computed.count != 3", False),
    ("len(computed.items) == 2", True),
    ("contains(computed.items, 'a') and startswith('abc', 'ab') and endswith('abc', 'bc')", True),
    ("config.sources[0].id", "docs"),
    ("count", 3),                       # bare name falls back to computed
    ("ready", True),                    # then flags
    ("ask.id", "yes"),                  # then user_responses
    ("shadowed", "top"),                # top-level state wins over the fallbacks
    ("computed.shadowed", "computed"),  # an explicit namespace wins over everything
    ("imports.mapping.flags", ["x"]),
    ("input.url", "u"),
    ("'a && b'", "a && b"),             # operators inside strings are left alone
    ("null", None),
    ("x if computed.count > 1 else 'no'", "no"),
])
def test_expression_values(source, expected):
    scope = SCOPE.child(x="no") if source.startswith("x if") else SCOPE
    assert Expression(source).evaluate(scope) == expected


def test_locals_shadow_state_and_environment_names_fall_back(monkeypatch):
    monkeypatch.setenv("WFEXEC_TEST_HOME", "/home/test")
    assert Expression("item.name").evaluate(SCOPE.child(item={"name": "n"})) == "n"
    assert Template("${WFEXEC_TEST_HOME}/x").render(SCOPE) == "/home/test/x"
    assert Expression("env.WFEXEC_TEST_HOME").evaluate(SCOPE) == "/home/test"


def test_templates_keep_types_when_whole_and_stringify_inside_text():
    assert Template("${computed.items}").render(SCOPE) == ["a", "b"]
    assert Template("n=${computed.count}, ok=${flags.ready}, none=${null}").render(SCOPE) == "n=3, ok=true, none="
    assert Template("$${not a template} ${computed.count}").render(SCOPE) == "${not a template} 3"
    assert Template("${ {'a': 1}['a'] }").render(SCOPE) == 1      # braces inside the expression


def test_compile_value_is_deep_and_leaves_plain_strings_alone():
    compiled = compile_value({"a": ["${computed.count}", "plain"], "b": 1})
    assert isinstance(compiled["a"][0], Template) and compiled["a"][1] == "plain"
    assert render_value(compiled, SCOPE) == {"a": [3, "plain"], "b": 1}


@pytest.mark.parametrize("source, words", [
    ("items.map(x => x.id)", "arrow functions"),
    ("sources.filter(s => s.ok)", "arrow functions"),
    ("a.map(f)", "JavaScript array/string methods"),
    ("a === b", "`===`"),
    ("url.length > 0", "`.length` is JavaScript"),
    ("test(/\\.git$/)", "regular expression literals"),
    ("new Date().toISOString()", "JavaScript"),
    ("a ?? 'x'", "`??` is JavaScript"),
    ("ok ? 'yes' : 'no'", "conditional is JavaScript"),
    ("# Create a checkpoint\nconfig", "prose or a comment"),
    ("read the config file and pick the first source", "prose"),
])
def test_foreign_syntax_is_rejected_with_a_message_about_the_language(source, words):
    with pytest.raises(ExpressionError) as caught:
        Expression(source)
    assert words in caught.value.message
    assert "Jinja2 expressions" in caught.value.hint


def test_unknown_names_and_keys_are_errors_naming_them():
    with pytest.raises(ExpressionError, match="unknown name 'nope'"):
        Expression("nope + 1").evaluate(SCOPE)
    with pytest.raises(ExpressionError, match="no value 'missing'"):
        Template("${computed.missing}").render(SCOPE)
    assert Expression("computed.missing | default('d')").evaluate(SCOPE) == "d"
    assert Expression("computed.missing is defined").evaluate(SCOPE) is False


def test_syntax_errors_are_reported_at_compile_time():
    with pytest.raises(ExpressionError, match="invalid expression"):
        Expression("computed.count >")
    with pytest.raises(ExpressionError, match="unclosed"):
        Template("${computed.count")


@pytest.mark.parametrize("source", [
    "computed.__class__",
    "computed.items.__class__.__mro__",
    "''.__class__.__mro__[1].__subclasses__()",
    "cycler.__init__.__globals__",
    "len.__globals__",
    "lipsum.__globals__['os']",
    "'{0.__class__}'.format(computed)",
    "'%s' % computed.__class__",
    "computed.items.append('x')",
    "(computed.items).pop()",
    "range.__self__",
])
def test_sandbox_blocks_known_escapes(source):
    scope = SCOPE.child(cycler=None, lipsum=None)
    with pytest.raises(ExpressionError):
        result = Expression(source).evaluate(scope)
        # Anything that slipped through must not have reached Python internals.
        assert "class" not in str(result)
    assert STATE["computed"]["items"] == ["a", "b"]  # and state was not mutated
