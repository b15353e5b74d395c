"""The expression language: JavaScript in a sandboxed engine, name resolution, templates, limits."""

from __future__ import annotations

import pytest
from ruamel.yaml import YAML

from wfexec.language.expressions import (MISSING, Expression, ExpressionError, Scope, Template, compile_value,
                                         fast_path, is_prose, render_value, truthy)

STATE = {
    "flags": {"ready": True, "shadowed": "flag"},
    "computed": {"count": 3, "items": ["a", "b"], "shadowed": "computed", "ratio": 0.5},
    "user_responses": {"ask": {"id": "yes"}},
    "config": {"sources": [{"id": "docs"}]},
    "shadowed": "top",
    "only_top": "top",
}
SCOPE = Scope(STATE, {"imports": {"mapping": {"flags": ["x"]}}, "input": {"url": "u"}})


@pytest.fixture(params=["fast path", "engine"])
def both_paths(request):
    """Each rule twice: as runs evaluate (the Python fast path first, for the shapes it handles) and with the
    fast path off, so the JavaScript engine's side (its name lookup, Scope.lookup) answers every case too."""
    with fast_path(request.param == "fast path"):
        yield request.param


VALUE_CASES = [
    ("computed.count > 2 && flags.ready", True),
    ("computed.count > 5 || !flags.ready", False),
    ("computed.count !== 3", False),
    ("computed.items.length === 2", True),
    ("len(computed.items) == 2 && len(config) === 1 && len(computed.nothing) === 0", True),
    ("contains(computed.items, 'a') && startswith('abc', 'ab') && endswith('abc', 'bc')", True),
    ("contains(config.sources, {id: 'docs'}) && contains(config, 'sources') && !contains(null, 1)", True),
    ("config.sources[0].id", "docs"),
    ("count", 3),                       # a bare name looks in computed,
    ("ready", True),                    # then flags,
    ("ask.id", "yes"),                  # then user_responses,
    ("only_top", "top"),                # then the top-level state
    ("shadowed", "computed"),           # computed comes before flags and the top level
    ("flags.shadowed", "flag"),         # an explicit namespace wins over everything
    ("imports.mapping.flags", ["x"]),
    ("input.url", "u"),
    ("'a && b'", "a && b"),
    ("null", None),
    ("computed.count > 1 ? 'many' : 'few'", "many"),
    ("computed.items.map(item => item.toUpperCase())", ["A", "B"]),
    ("computed.items.filter(x => x !== 'a').concat(['c'])", ["b", "c"]),
    ("`n=${computed.count}`", "n=3"),
    ("({a: 1, b: [1.5, 2.0, 6 / 2]})", {"a": 1, "b": [1.5, 2, 3]}),
    ("Math.max(computed.count, 10) / 2", 5),
    ("JSON.stringify({b: computed.count})", '{"b":3}'),
    ("computed.ratio * 2", 1),
    ("0.1 + 0.2", 0.30000000000000004),
    ("1 / 0", None),                    # JSON has no infinity: null, as JSON.stringify writes it
]
# The name rules, which both the fast path (its own lookup, written out) and the engine (Scope.lookup) implement.
NAME_RULES = ["count", "ready", "ask.id", "only_top", "shadowed", "flags.shadowed", "input.url"]


@pytest.mark.parametrize("source, expected", VALUE_CASES)
def test_expression_values(source, expected, both_paths):
    result = Expression(source).evaluate(SCOPE)
    assert result == expected
    assert type(result) is type(expected)  # 3 stays an int, 1.0 reads as 1


@pytest.mark.parametrize("source", NAME_RULES)
def test_the_fast_path_answers_the_name_rules_so_both_paths_are_tested(source):
    expression = Expression(source)
    assert expression._fast is not None and expression._fast(SCOPE) is not MISSING
    assert expression.evaluate_in_engine(SCOPE) == expression._fast(SCOPE) == dict(VALUE_CASES)[source]


def test_a_bare_name_falls_back_to_user_responses_in_the_engine_too():
    scope = Scope({"computed": {}, "flags": {}, "user_responses": {"pick": {"id": "b"}}}, {})
    assert Expression("pick.id").evaluate_in_engine(scope) == "b"
    with fast_path(False):
        assert Expression("pick.id === 'b' && pick.id").evaluate(scope) == "b"


def test_a_missing_value_is_undefined_as_in_javascript(both_paths):
    assert Expression("computed.missing || 'default'").evaluate(SCOPE) == "default"
    assert Expression("computed.missing ?? 'default'").evaluate(SCOPE) == "default"
    assert Expression("nowhere == null && typeof nowhere === 'undefined'").evaluate(SCOPE) is True
    assert Expression("!flags.not_set").evaluate(SCOPE) is True
    assert Expression("computed.missing").evaluate(SCOPE) is None
    assert Template("[${computed.missing}]").render(SCOPE) == "[]"
    with pytest.raises(ExpressionError, match="TypeError"):  # reading below undefined is JavaScript's error
        Expression("computed.missing.deeper").evaluate(SCOPE)


def test_locals_come_first_and_upper_case_names_fall_back_to_the_environment(monkeypatch, both_paths):
    monkeypatch.setenv("WFEXEC_TEST_HOME", "/home/test")
    assert Expression("item.name").evaluate(SCOPE.child(item={"name": "n"})) == "n"
    assert Expression("count").evaluate(SCOPE.child(count=7)) == 7
    assert Template("${WFEXEC_TEST_HOME}/x").render(SCOPE) == "/home/test/x"
    assert Expression("env.WFEXEC_TEST_HOME").evaluate(SCOPE) == "/home/test"


def test_an_expression_receives_only_the_names_and_keys_it_reads():
    expression = Expression("computed.count + flags.ready + other.length")
    assert expression.names == ("computed", "flags", "other")
    assert expression.arguments(SCOPE) == '{"computed": {"count": 3}, "flags": {"ready": true}}'
    # A namespace used as a whole (not only `.key`) crosses whole.
    assert '"items"' in Expression("Object.keys(computed).length").arguments(SCOPE)
    # Names a function declares are not read from the state.
    assert Expression("computed.items.map(item => item + suffix)").names == ("computed", "suffix")


def test_templates_keep_types_when_whole_and_stringify_inside_text():
    assert Template("${computed.items}").render(SCOPE) == ["a", "b"]
    assert Template("n=${computed.count}, ok=${flags.ready}, none=${null}").render(SCOPE) == "n=3, ok=true, none="
    assert Template("$${not a template} ${computed.count}").render(SCOPE) == "${not a template} 3"
    assert Template("${ {'a': 1}['a'] }").render(SCOPE) == 1      # braces inside the expression
    assert Template("${ `${computed.count}}` }!").render(SCOPE) == "3}!"  # a template literal inside


def test_a_text_then_one_expression_renders_as_every_other_template_does():
    # Such a template (`step ${count}`) has its own short way to render; each kind of value reads as it would
    # inside any longer text.
    for expression, text in (("computed.count", "3"), ("flags.ready", "true"), ("null", ""),
                             ("computed.items", '["a", "b"]'), ("1.5", "1.5"), ("'x'", "x")):
        assert Template(f"v=${{{expression}}}").render(SCOPE) == f"v={text}"
        assert Template(f"v=${{{expression}}}!").render(SCOPE) == f"v={text}!"


# A number's text inside a string, as JavaScript writes it (`String(x)`); Python's `str` writes each otherwise.
NUMBER_TEXTS = [(2.0 ** 60, "1152921504606847000"), (1e21, "1e+21"), (1e-7, "1e-7"), (1e-6, "0.000001"),
                (-0.0, "0"), (1e16, "10000000000000000"), (-2.5e-8, "-2.5e-8"), (1.5e300, "1.5e+300"),
                (0.1, "0.1"), (123.456, "123.456"), (5e-324, "5e-324")]


@pytest.mark.parametrize("value, text", NUMBER_TEXTS, ids=repr)
def test_a_number_reads_inside_a_text_as_javascript_writes_it_on_either_path(value, text, both_paths):
    scope = Scope({**STATE, "computed": {"x": value}}, {})
    assert Template("v=${computed.x}").render(scope) == f"v={text}"
    assert Template("v=${computed.x}!").render(scope) == f"v={text}!"
    assert Expression("String(computed.x)").evaluate(scope) == text  # the engine's own words


def test_compile_value_is_deep_and_leaves_plain_strings_alone():
    compiled = compile_value({"a": ["${computed.count}", "plain"], "b": 1})
    assert isinstance(compiled["a"][0], Template) and compiled["a"][1] == "plain"
    assert render_value(compiled, SCOPE) == {"a": [3, "plain"], "b": 1}


def test_a_program_is_worth_its_completion_value_and_hash_lines_are_comments():
    program = Expression("# the number of sources, doubled\nconst n = config.sources.length;\n"
                         "if (n > 0) { n * 2 } else { 0 }")
    assert program.program and program.evaluate(SCOPE) == 2
    assert Expression("let total = 0;\nfor (const x of [1, 2, 3]) total += x;\ntotal").evaluate(SCOPE) == 6


def test_an_expression_changes_the_state_only_through_what_it_returns():
    Expression("computed.items.push('x'); computed.count = 99; config.sources.pop()").evaluate(SCOPE)
    result = Expression("computed.items").evaluate(SCOPE)
    result.append("y")
    assert STATE["computed"] == {"count": 3, "items": ["a", "b"], "shadowed": "computed", "ratio": 0.5}
    assert STATE["config"] == {"sources": [{"id": "docs"}]}


def test_yaml_helpers_write_yaml_that_yaml_reads_back():
    value = {"name": "corpus", "sources": [{"id": "docs", "url": "https://x.y/z: w", "tags": []},
                                           {"id": "true", "n": 1.5, "none": None}], "empty": {}}
    text = Expression("serializeYaml(config)").evaluate(Scope({"config": value}, {}))
    assert YAML(typ="safe").load(text) == value
    assert Expression("parseYaml(text)").evaluate(Scope({"text": text}, {})) == value
    assert Expression("parseYaml('a: 1\\nb:\\n  - x\\n  - {\"c\": 2}\\n')").evaluate(SCOPE) == \
        {"a": 1, "b": ["x", {"c": 2}]}


def test_parse_yaml_reads_the_yaml_real_config_files_use():
    """Comments, anchors and aliases, block scalars, YAML 1.2 booleans: the corpus config.yaml shapes."""
    text = ("# corpus config\ncorpus:\n  name: demo  # the name\ndefaults: &d {branch: main}\n"
            "sources:\n  - id: docs\n    <<: *d\n    notes: |\n      line one\n      line two\n"
            "  - {id: blog, enabled: yes, on: true}\n")
    assert Expression("parseYaml(text)").evaluate(Scope({"text": text}, {})) == {
        "corpus": {"name": "demo"}, "defaults": {"branch": "main"},
        "sources": [{"id": "docs", "branch": "main", "notes": "line one\nline two\n"},
                    {"id": "blog", "enabled": "yes", "on": True}]}


def test_the_clock_is_the_one_the_scope_supplies():
    recorded = Scope(STATE, {}, clock=lambda: 1_700_000_000_000)
    first = Expression("[Date.now(), new Date().toISOString(), performance.now()]").evaluate(recorded)
    again = Expression("[Date.now(), new Date().toISOString(), performance.now()]").evaluate(recorded)
    assert first == again == [1_700_000_000_000, "2023-11-14T22:13:20.000Z", 1_700_000_000_000]
    assert Expression("new Date('2020-01-02T00:00:00Z').getUTCDate()").evaluate(recorded) == 2
    assert Expression("new Date() instanceof Date").evaluate(recorded) is True


def test_syntax_errors_point_inside_the_expression():
    with pytest.raises(ExpressionError) as caught:
        Expression("computed.count >")
    assert "ends too soon" in caught.value.message and (caught.value.line, caught.value.column) == (1, 17)
    with pytest.raises(ExpressionError) as caught:
        Expression("const a = 1;\nconst b = a +* 2;\nb")
    assert "SyntaxError" in caught.value.message and (caught.value.line, caught.value.column) == (2, 14)
    with pytest.raises(ExpressionError) as caught:
        Template("one ${computed.count} two ${a b}")
    assert (caught.value.line, caught.value.column) == (1, 31)
    with pytest.raises(ExpressionError, match="unclosed"):
        Template("${computed.count")


def test_calling_a_function_that_does_not_exist_is_an_error_but_methods_are_fine():
    with pytest.raises(ExpressionError) as caught:
        Expression("x && foo(x)")
    assert "unknown function 'foo'" in caught.value.message and caught.value.column == 6
    with pytest.raises(ExpressionError, match="unknown function 'lenn'") as caught:
        Expression("lenn(x)")
    assert "len" in caught.value.hint
    Expression("x.foo(1) && Math.abs(-1) && parseInt('3') && len(x) && (y => y)(1)")
    Expression("const f = (y) => y * 2;\nf(3)")


def test_prose_is_recognised_for_the_caller_to_hand_to_an_llm():
    assert is_prose("# Read the config and pick the first source\n# then store it")
    assert is_prose("Read the config file and pick the first source")
    assert not is_prose("computed.count > 2 && flags.ready")
    assert not is_prose("a +")                        # broken code, not prose
    assert not is_prose("# a comment\ncomputed.count")


@pytest.mark.parametrize("value, expected", [
    ([], True), ({}, True), ("", False), ("0", True), (0, False), (0.0, False), (float("nan"), False),
    (None, False), (False, False), (2, True),
])
def test_truthiness_is_javascripts(value, expected, both_paths):
    assert truthy(value) is expected
    assert Expression("!!v").evaluate(Scope({"v": value}, {})) is expected or value != value


# --------------------------------------------------------------------------- #
# Limits and the sandbox.

def test_an_endless_loop_is_stopped_by_the_time_limit_and_the_engine_keeps_working():
    with pytest.raises(ExpressionError, match="ran longer than") as caught:
        Expression("while (true) {}").evaluate(SCOPE)
    assert "loop" in caught.value.hint
    assert Expression("computed.count + 1").evaluate_in_engine(SCOPE) == 4


@pytest.mark.parametrize("source", [
    "let s = 'x'; while (true) s = s + s;",
    "'x'.repeat(2 ** 29)",
    "const a = []; while (true) a.push({x: [1, 2, 3]});",
    "function f(n) { return f(n + 1) + 1 }; f(0)",
])
def test_huge_values_and_deep_recursion_are_stopped_by_the_memory_limits(source):
    with pytest.raises(ExpressionError, match="used more than|too much recursion|too long"):
        Expression(source).evaluate(SCOPE)
    assert Expression("computed.items.join('-')").evaluate(SCOPE) == "a-b"


@pytest.mark.parametrize("source", [
    "constructor.constructor('return this')()",
    "(() => 0).constructor('return globalThis')()",
    "Function('return this')()",
    "Object.keys(globalThis)",
])
def test_the_global_object_reachable_from_code_holds_nothing_outside_javascript(source):
    result = Expression(source).evaluate(SCOPE)
    assert result in ({}, [], None)


@pytest.mark.parametrize("source", [
    "typeof require", "typeof process", "typeof os", "typeof std", "typeof fetch", "typeof XMLHttpRequest",
    "typeof import.meta", "typeof __import__", "typeof open",
])
def test_no_file_network_process_or_python_access_exists(source):
    try:
        assert Expression(source).evaluate(SCOPE) == "undefined"
    except ExpressionError as error:  # `import.meta` outside a module is a syntax error: also fine
        assert "SyntaxError" in error.message


def test_dynamic_import_loads_nothing():
    assert Expression("import('os')").evaluate(SCOPE) == {}  # a promise that never gives a module


@pytest.mark.parametrize("pollute, check", [
    ("Object.prototype.polluted = 1; Array.prototype.polluted = 1; 0", "({}).polluted ?? [].polluted"),
    ("Array.prototype.map = () => 'hacked'; 0", "[1].map(x => x + 1)[0] === 2 ? undefined : 'hacked'"),
    ("JSON.parse = () => 'hacked'; Math.max = () => 0; 0", "Math.max(1, 2) === 2 ? undefined : 'hacked'"),
    ("globalThis.leak = 1; 0", "typeof leak === 'undefined' ? undefined : 'leaked'"),
    ("Object.defineProperty(Object.prototype, 'p', {value: 1}); 0", "({}).p"),
    ("Object.getPrototypeOf(function* () {}).x = 1; 0", "Object.getPrototypeOf(function* () {}).x"),
    ("Date.now = () => 5; 0", "Date.now() === 5 ? 'leaked' : undefined"),
    ("len = () => 0; 0", "len([1])  === 0 ? 'leaked' : undefined"),
])
def test_what_one_evaluation_does_to_the_intrinsics_does_not_reach_the_next(pollute, check):
    try:
        Expression(pollute).evaluate(SCOPE)
    except ExpressionError:
        pass  # refusing the change outright is fine too
    assert Expression(check).evaluate(SCOPE) is None


def test_threads_evaluate_the_same_expression_each_in_its_own_engine():
    import threading

    expression = Expression("computed.items.map(x => x + computed.count).join()")
    results = []

    def work():
        results.extend(expression.evaluate(SCOPE) for _ in range(200))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    work()
    for thread in threads:
        thread.join()
    assert results == ["a3,b3"] * 800


def test_a_program_ending_in_an_object_literal_returns_the_object():
    """As the Node REPL reads it, and the real refresh workflow's apply_retention step writes it."""
    program = Expression("# what to keep\nconst strategy = computed.count > 2 ? 'count' : 'none';\n"
                         "{ strategy, applied: strategy !== 'none' }\n")
    assert program.evaluate(SCOPE) == {"strategy": "count", "applied": True}
    assert Expression("const a = 1; { b: a, c: 2 }").evaluate(SCOPE) == {"b": 1, "c": 2}
    assert Expression("const a = 1; { a }").evaluate(SCOPE) == 1  # valid JavaScript keeps its meaning: a block
    with pytest.raises(ExpressionError, match="SyntaxError"):
        Expression("const a = 1;\n{ a: }")  # still JavaScript: a broken literal stays an error


def test_a_quoted_string_holding_a_placeholder_is_interpolated_as_hiivmind_does(monkeypatch):
    monkeypatch.setenv("HOME", "/home/ada")
    assert Expression("'${HOME}/.claude/skills'").evaluate(SCOPE) == "/home/ada/.claude/skills"
    assert Expression("\"n=${computed.count}, it's \\\"3\\\"\"").evaluate(SCOPE) == 'n=3, it\'s "3"'
    assert Expression("'no placeholder: $ {x}'").evaluate(SCOPE) == "no placeholder: $ {x}"


def test_a_template_renders_the_same_after_pickling_and_copying():
    """The compiled-workflow cache pickles templates; a template that is one `${...}` renders through its
    expression's own evaluator, which must be the unpickled expression's."""
    import copy
    import pickle

    scope = Scope({"n": 2, "computed": {}, "flags": {}, "user_responses": {}}, {})
    for source, expected in (("${n + 1}", 3), ("n is ${n}, twice ${n * 2}", "n is 2, twice 4")):
        template = Template(source)
        for again in (pickle.loads(pickle.dumps(template)), copy.deepcopy(template)):
            assert again.render(scope) == template.render(scope) == expected
            assert again.whole == template.whole and again.source == source
            if again.whole:
                assert again.render is again.parts[0].evaluator() is not template.parts[0].evaluator()



def test_a_pickled_expression_leaves_its_function_out_and_runs_the_same_in_the_engine():
    """The compiled-workflow cache keeps an expression without the JavaScript function the engine runs (a third of
    the entry): it is made again from what is kept, the same function, the v8 reading of a missing path and a
    program's completion value included."""
    import pickle

    from wfexec.language.expressions import missing_reads_null

    scope = Scope({"a": {"b": 2}, "items": [1, 2, 3], "computed": {}, "flags": {}, "user_responses": {}}, {})
    cases = [("items.map(x => x * a.b).reduce((s, v) => s + v, 0)", False, 12),
             ("a.missing.deeper == null", True, True),  # v8: `a?.missing?.deeper`
             ("const n = items.length;\nn * a.b", False, 6)]  # a program, kept whole
    with fast_path(False):
        for source, v8, expected in cases:
            with missing_reads_null(v8):
                expression = Expression(source)
            kept = pickle.dumps(expression)
            assert (b"__wfexec_args" in kept) == expression.program, source
            again = pickle.loads(kept)
            assert again.function_text() == expression.function_text()
            assert again.evaluate(scope) == expression.evaluate(scope) == expected


def test_only_a_source_with_a_long_number_is_searched_for_integers_beyond_the_safe_range(monkeypatch):
    """A literal beyond Number.MAX_SAFE_INTEGER is read as a BigInt, keeping its digits; a source without 16
    digits in a row is not searched for one with a regex (over the whole source, a twentieth of checking it)."""
    from wfexec.language import expressions

    expressions._analysed.clear()
    big = Expression("x == 12345678901234567890123")
    assert big.code == "x == 12345678901234567890123n"
    assert big.evaluate(Scope({"x": 12345678901234567890123}, {})) is True
    assert Expression("x + 1_000_000_000_000_000").code == "x + 1_000_000_000_000_000"  # separators: as before

    class Refused:
        def search(self, *_):
            raise AssertionError("searched a source without a long number")

    monkeypatch.setattr(expressions, "_LONG_DIGITS", Refused())
    assert Expression("items.map(x => x * 123456789012345).length + '１２３４５６７８９０１２３４５６７８'.length").code == \
        "items.map(x => x * 123456789012345).length + '１２３４５６７８９０１２３４５６７８'.length"  # 15; not ASCII digits
