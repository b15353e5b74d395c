"""Values cross the JavaScript boundary exactly, or the run stops with a located error.

Each case runs the real `wfexec run` in a subprocess: a string with NUL and an integer beyond 2**53 must reach
the state (and come back into an expression) unchanged; a result that cannot be stored (cyclic, a throwing
`toJSON` or Proxy, too deep, a lone surrogate, a function, a symbol) must be a run error at the action, exit 1,
never an internal error; a promise job left queued by one evaluation must not hold its memory into the next.
"""

from __future__ import annotations

import json

import pytest

from conftest import wfexec_cli

WORKFLOW = """\
name: boundary
version: "1.0"
start_node: act
initial_state:
  big: 12345678901234567890123
  nul: "a\\0b"
nodes:
  act:
    type: action
    actions:
      - type: compute
        expression: {expression}
        store_as: computed.value
{more}    on_success: done
endings:
  done: {{type: success, message: ok}}
"""
ACTION_AT = "workflow.yaml:11:9: error: node 'act': action 1 (compute) failed:"


def _run(tmp_path, expression: str, more: str = ""):
    (tmp_path / "workflow.yaml").write_text(WORKFLOW.format(expression=json.dumps(expression), more=more))
    result = wfexec_cli("run", "workflow.yaml", "--ephemeral", "--state-out", "state.json", cwd=tmp_path,
                        timeout=120)
    state = json.loads((tmp_path / "state.json").read_text()) if result.returncode == 0 else None
    return result, state


@pytest.mark.parametrize("expression,expected", [
    ("'a\\u0000b'", "a\x00b"),
    ("nul.toUpperCase()", "A\x00B"),
    ("12345678901234567890123", 12345678901234567890123),
    ("big", 12345678901234567890123),
    ("big + 1n", 12345678901234567890124),
    ("big === 12345678901234567890124", False),
    ("typeof big", "bigint"),
    ("({a: 1n, b: [big, -(2n ** 70n)]})", {"a": 1, "b": [12345678901234567890123, -(2 ** 70)]}),
    ("5n", 5),
    ("'a'.repeat(3000) + 'b'.repeat(3000)", "a" * 3000 + "b" * 3000),
], ids=["nul-literal", "nul-from-state", "big-literal", "big-from-state", "big-arithmetic", "big-equality",
        "big-typeof", "bigint-nested", "small-bigint", "long-concatenation"])
def test_values_cross_exactly_both_ways(tmp_path, expression, expected):
    result, state = _run(tmp_path, expression)
    assert result.returncode == 0, result.stdout + result.stderr
    value = state["computed"]["value"]
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize("expression,words", [
    ("(() => { const o = {}; o.self = o; return o })()", "circular"),
    ("({a: 1, toJSON() { throw new Error('no JSON for you') }})", "no JSON for you"),
    ("new Proxy({}, {ownKeys() { throw new Error('trap') }})", "trap"),
    ("(() => { let a = []; for (let i = 0; i < 100000; i++) a = [a]; return a })()", "too deep"),
    ("(() => { let a = []; for (let i = 0; i < 500; i++) a = [a]; return a })()", "deeper than 200 levels"),
    ("'\\uD800'", "lone UTF-16 surrogate"),
    ("({k: ['x\\uDC00']})", "lone UTF-16 surrogate"),
    ("(() => 1)", "it is a function"),
    ("Symbol('s')", "it is a symbol"),
], ids=["cyclic", "throwing-toJSON", "throwing-proxy", "100000-deep", "500-deep", "lone-surrogate",
        "nested-lone-surrogate", "function", "symbol"])
def test_a_value_that_cannot_be_stored_is_a_located_run_error(tmp_path, expression, words):
    result, _ = _run(tmp_path, expression)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith(ACTION_AT), errors[0]
    assert "the value cannot be stored" in errors[0] and words in errors[0], errors[0]


def test_a_promise_job_left_queued_does_not_keep_its_memory_for_the_next_evaluation(tmp_path):
    """Each evaluation may use most of the 256 MB limit; a queued job holding 150 MB must not count against the
    next one."""
    hold = "(() => { const big = new Uint8Array(150 * 1024 * 1024); Promise.resolve().then(() => big[0]); " \
           "return 1 })()"
    more = ("      - type: compute\n"
            "        expression: \"new Uint8Array(150 * 1024 * 1024).length\"\n"
            "        store_as: computed.second\n")
    result, state = _run(tmp_path, hold, more)
    assert result.returncode == 0, result.stdout + result.stderr
    assert state["computed"] == {"value": 1, "second": 150 * 1024 * 1024}



def test_an_engine_is_made_through_the_quickjs_package_when_its_extension_is_named_otherwise(monkeypatch):
    import sys

    import quickjs  # noqa: F401 - the package as installed, before its extension's name is taken away

    from wfexec.language.javascript import Engine

    monkeypatch.setitem(sys.modules, "_quickjs", None)  # `import _quickjs` now raises ImportError
    engine = Engine()
    function = engine.function("(function(args){return JSON.parse(args).n + 1;})", "n + 1")
    assert engine.call(function, '{"n": 41}', 0) == 42
