"""Every rule of `wfexec validate`, each proved with the diagnostic's code, exact line and column, and words.

Positions are computed from the workflow text itself (`pos(text, "needle")` is
the 1-based line and column where the needle starts), so a test reads as
"the error points at the second `name:`" rather than as a bare number.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import wfexec
from conftest import wfexec_cli
from wfexec.language.loader import load_text

# --------------------------------------------------------------------------- #
# Helpers.


def pos(text: str, needle: str, nth: int = 1) -> tuple[int, int]:
    """1-based (line, column) where the nth occurrence of `needle` starts in `text`."""
    index = -1
    for _ in range(nth):
        index = text.index(needle, index + 1)
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return line, column


@pytest.fixture
def validate(tmp_path):
    """validate(yaml_text, *more_text, name=...) -> (the text written, diagnostics); yaml_text is dedented."""

    def run(text: str, *more: str, name: str = "workflow.yaml"):
        text = textwrap.dedent(text) + "".join(more)
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return text, wfexec.validate(path)

    return run


def one(diagnostics, code: str):
    """The single diagnostic with this code."""
    found = [d for d in diagnostics if d.code == code]
    assert len(found) == 1, f"expected one {code}, got: " + "\n".join(d.format() for d in diagnostics)
    return found[0]


def errors(diagnostics):
    return [d for d in diagnostics if d.severity == "error"]


def assert_diagnostic(d, at: tuple[int, int], *words: str, severity: str = "error"):
    assert (d.line, d.column) == at, d.format()
    assert d.severity == severity, d.format()
    text = f"{d.message} {d.hint}"
    for word in words:
        assert word in text, f"{word!r} not in {text!r}"


ENDINGS = """\
endings:
  done:
    type: success
    message: finished
"""


# --------------------------------------------------------------------------- #
# Rule 1: YAML syntax errors, at the position ruamel reports.

def ruamel_problem_mark(text: str) -> tuple[int, int]:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError

    try:
        YAML(typ="safe", pure=False).compose(text)
    except MarkedYAMLError as exc:
        return exc.problem_mark.line + 1, exc.problem_mark.column + 1
    raise AssertionError("expected a syntax error")


def test_unclosed_flow_sequence_points_where_ruamel_gives_up(validate):
    text, diagnostics = validate("""\
        name: broken
        version: 1
        start_node: a
        nodes:
          a:
            type: action
            actions: [
        endings:
          done: {type: success, message: ok}
        """)
    d = one(diagnostics, "yaml-syntax")
    assert len(diagnostics) == 1  # no schema noise about a document that does not exist
    assert_diagnostic(d, (9, 7), "YAML syntax error", "did not find expected ',' or ']'",
                      "flow sequence that starts at line 7, column 14")
    assert (d.line, d.column) == ruamel_problem_mark(text)


def test_bad_indentation_is_a_syntax_error_at_the_offending_colon(validate):
    text, diagnostics = validate("""\
        name: broken
        version: 1
        nodes:
          a:
            type: action
             actions: []
        """)
    d = one(diagnostics, "yaml-syntax")
    assert_diagnostic(d, (6, 13), "mapping values are not allowed", "indentation")
    assert (d.line, d.column) == ruamel_problem_mark(text)


def test_tab_indentation_says_tabs(validate):
    text, diagnostics = validate("name: x\nnodes:\n\ta: 1\n")
    assert_diagnostic(one(diagnostics, "yaml-syntax"), (3, 1), "cannot start any token", "spaces, not tabs")


def test_unterminated_quote_names_where_the_string_started(validate):
    text, diagnostics = validate('name: "broken\nversion: 1\n')
    assert_diagnostic(one(diagnostics, "yaml-syntax"), ruamel_problem_mark(text), "unexpected end of stream",
                      "quoted scalar that starts at line 1, column 7")


def test_undefined_alias(validate):
    text, diagnostics = validate("name: &n x\nversion: *v\n")
    assert_diagnostic(one(diagnostics, "yaml-syntax"), pos(text, "*v"), "undefined alias", "anchor `&name`")


def test_a_second_document_is_an_error_at_its_separator(validate):
    text, diagnostics = validate("name: x\n---\nname: y\n")
    assert_diagnostic(one(diagnostics, "yaml-syntax"), (2, 1), "second YAML document", "exactly one")


def test_syntax_error_at_end_of_file_without_newline_stays_inside_the_file(validate):
    text, diagnostics = validate("name: x\nversion")
    d = one(diagnostics, "yaml-syntax")
    # ruamel's C parser points at line 3, which does not exist; the last line's end does.
    assert (d.line, d.column) == (2, 8)
    assert "could not find expected ':'" in d.message


def test_an_explicit_tag_that_does_not_fit_its_value(validate):
    text, diagnostics = validate("name: x\nversion: !!int one\n")
    assert_diagnostic(one(diagnostics, "yaml-tag"), pos(text, "!!int"), "'one' is tagged !!int", "number")


def test_recursive_anchor_is_reported_not_followed(validate):
    text, diagnostics = validate("name: x\nversion: 1\nx-loop: &a [*a]\n")
    # The alias is the anchored node itself, so the anchor is where it points.
    assert_diagnostic(one(diagnostics, "yaml-recursive"), pos(text, "&a"), "refers to itself")


# --------------------------------------------------------------------------- #
# Rule 2: duplicate keys anywhere, at the second key.

def test_duplicate_top_level_key(validate):
    text, diagnostics = validate("""\
        name: first
        version: 1
        name: second
        start_node: a
        nodes:
          a: {type: action, actions: [], on_success: done}
        """, ENDINGS)
    d = one(diagnostics, "duplicate-key")
    assert_diagnostic(d, pos(text, "name:", 2), "duplicate key 'name'", "already defined at line 1, column 1")
    assert d.yaml_path == "name"


def test_duplicate_key_inside_a_node(validate):
    text, diagnostics = validate("""\
        name: x
        version: 1
        start_node: a
        nodes:
          a:
            type: action
            actions: []
            on_success: done
            on_success: elsewhere
        """, ENDINGS)
    d = one(diagnostics, "duplicate-key")
    assert_diagnostic(d, pos(text, "on_success:", 2), "duplicate key 'on_success'", "line 8")
    assert d.yaml_path == "nodes.a.on_success"


def test_duplicate_parameter_inside_an_action_like_the_seed_refresh_bug(validate):
    # The hiivmind refresh workflow had `type: log_source_status` and a parameter `type: "git"`.
    text, diagnostics = validate("""\
        name: x
        version: 1
        start_node: a
        nodes:
          a:
            type: action
            actions:
              - type: set_state
                field: computed.kind
                type: "git"
            on_success: done
        """, ENDINGS)
    d = one(diagnostics, "duplicate-key")
    assert_diagnostic(d, pos(text, 'type: "git"'), "duplicate key 'type'", "line 8")
    assert d.yaml_path == "nodes.a.actions[0].type"


def test_duplicate_node_ids_and_handler_keys(validate):
    text, diagnostics = validate("""\
        name: x
        version: 1
        start_node: a
        nodes:
          a:
            type: user_prompt
            prompt: {question: Go, options: [{id: yes, label: Y}, {id: no, label: N}]}
            on_response:
              yes: {next_node: done}
              no: {next_node: done}
              yes: {next_node: a}
          a:
            type: action
        """, ENDINGS)
    found = [(d.line, d.column, d.message) for d in diagnostics if d.code == "duplicate-key"]
    second_a = (pos(text, "  a:\n    type: action")[0] + 0, 3)
    assert sorted(found) == [
        (*pos(text, "yes: {next_node: a}"), "duplicate key 'yes': already defined at line 9, column 7"),
        (*second_a, "duplicate key 'a': already defined at line 5, column 3"),
    ]


# --------------------------------------------------------------------------- #
# Rule 3: schema.

def test_missing_top_level_keys_each_reported_once_at_the_document_start(validate):
    text, diagnostics = validate("""\
        # a comment before the document
        description: nothing else
        """)
    missing = [d for d in diagnostics if d.code == "missing-field"]
    assert sorted(d.message.split("'")[1] for d in missing) == ["endings", "name", "nodes", "start_node",
                                                                 "version"]
    for d in missing:
        assert_diagnostic(d, pos(text, "description"), "workflow is missing required field")


def test_a_file_that_is_not_a_mapping(validate):
    text, diagnostics = validate("- just\n- a list\n")
    assert_diagnostic(one(diagnostics, "not-a-mapping"), (1, 1), "must be a YAML mapping", "name, version")


def test_unknown_top_level_key_suggests_the_close_one(validate):
    text, diagnostics = validate("""\
        name: x
        version: 1
        start_nod: a
        nodes:
          a: {type: action, actions: [], on_success: done}
        """, ENDINGS)
    d = one(diagnostics, "unknown-field")
    assert_diagnostic(d, pos(text, "start_nod:"), "unknown field 'start_nod' in workflow", "did you mean 'start_node'?")


def test_unknown_node_key_suggests_on_success(validate):
    text, diagnostics = validate("""\
        name: x
        version: 1
        start_node: a
        nodes:
          a:
            type: action
            actions: []
            on_success: done
            on_sucess: done
        """, ENDINGS)
    d = one(diagnostics, "unknown-field")
    assert_diagnostic(d, pos(text, "on_sucess"), "unknown field 'on_sucess' in action node 'a'",
                      "did you mean 'on_success'?")
    assert d.yaml_path == "nodes.a.on_sucess"


def test_unknown_key_in_a_nested_mapping_names_where_it_is(validate):
    text, diagnostics = validate("""\
        name: x
        version: 1
        start_node: a
        nodes:
          a: {type: action, actions: [], on_success: done}
        endings:
          done:
            type: error
            message: failed
            recovery: {suggestion: retry, retry: a}
        """)
    d = one(diagnostics, "unknown-field")
    # `recovery` is a string or a mapping: the mapping branch is the one meant, not "must be a string".
    assert_diagnostic(d, pos(text, "retry: a"), "unknown field 'retry' in `recovery` of ending 'done'",
                      "did you mean 'retry_node'?")


def test_x_keys_are_allowed_in_every_mapping(validate):
    text, diagnostics = validate("""\
        name: x
        version: 1
        start_node: a
        x-top: {anything: [1, 2]}
        input_schema:
          who: {type: string, x-widget: text}
        nodes:
          a:
            type: conditional
            x-node: 1
            condition: {type: flag_set, flag: ready, x-call: 2}
            branches: {true: b, false: b, x-branches: 3}
            audit: {enabled: true, x-audit: 4}
          b:
            type: user_prompt
            prompt:
              question: Which?
              x-prompt: 5
              options:
                - {id: one, label: One, x-option: 6}
                - {id: two, label: Two}
            on_response:
              one: {next_node: done, x-handler: 7}
              two: {next_node: done}
        endings:
          done: {type: success, message: ok, x-ending: 8, recovery: {suggestion: s, x-recovery: 9}}
        """)
    assert [d.code for d in diagnostics] == ["branch-yaml11"]  # the editor-friendly spelling is suggested


@pytest.mark.parametrize("node, code, needle, words", [
    ("a: {type: action, actions: []}", "missing-field", "a:", ("action node 'a'", "required field 'on_success'")),
    ("a: {type: action, actions: {}, on_success: done}", "wrong-type", "{}, on_success",
     ("`actions` in action node 'a' must be a list, not a mapping",)),
    ("a: {type: action, actions: [], on_success: done, max_visits: 0}", "out-of-range", "0}",
     ("`max_visits`", "at least 1, not 0")),
    ("a: {type: conditional, branches: {true: done, false: done}}", "missing-field", "a:",
     ("conditional node 'a'", "required field 'condition'")),
    ("a: {type: conditional, condition: {type: flag_set, flag: f}, branches: {true: done}}", "one-of",
     "{true: done}", ("`branches` in conditional node 'a' needs exactly one of: true + false | on_true + on_false",)),
    ("a: {type: user_prompt, prompt: {header: Hi}, on_response: {other: {next_node: done}}}", "missing-field",
     "prompt:", ("`prompt` in user_prompt node 'a'", "required field 'question'")),
    ("a: {type: user_prompt, prompt: {question: q, options: [{id: x}]}, on_response: {x: {next_node: done}}}",
     "missing-field", "{id: x}", ("`prompt.options[0]` in user_prompt node 'a'", "required field 'label'")),
    ("a: {type: user_prompt, prompt: {question: q}, on_response: {other: {consequences: []}}}", "missing-field",
     "other:", ("`on_response.other`", "required field 'next_node'")),
    ("a: {type: validation_gate, validations: [], on_valid: done, on_invalid: done}", "too-few", "[]",
     ("`validations` in validation_gate node 'a' needs at least 1",)),
    ("a: {type: validation_gate, validations: [{type: flag_set, flag: f}], on_valid: done}", "missing-field", "a:",
     ("validation_gate node 'a'", "required field 'on_invalid'")),
    ("a: {type: reference, next_node: done}", "one-of", "{type: reference",
     ("reference node 'a' needs exactly one of: doc | workflow",)),
    ("a: {type: reference, doc: d.md, workflow: w.yaml, next_node: done}", "one-of", "{type: reference",
     ("reference node 'a' has both `doc` and `workflow`", "keep one")),
    ("a: {type: reference, doc: d.md}", "any-of", "{type: reference",
     ("reference node 'a' needs one of: next_node | on_success",)),
    ("a: {type: states, on_success: done}", "one-of", "{type: states",
     ("states node 'a' needs exactly one of: folder | states",)),
    ("a: {type: states, states: {start.md: hi}, on_success: done, budget_usd: -1}", "out-of-range", "-1",
     ("`budget_usd` in states node 'a' must be at least 0",)),
    ("a: {type: acton}", "node-type-unknown", "acton", ("unknown type 'acton'", "did you mean 'action'?")),
    ("a: {actions: []}", "node-type-missing", "a:", ("node 'a' has no `type`", "action, conditional")),
    ("a: [1, 2]", "node-shape", "[1, 2]", ("node 'a' must be a mapping",)),
])
def test_node_fields_per_type(validate, node, code, needle, words):
    text, diagnostics = validate(f"""\
        name: x
        version: 1
        start_node: done
        nodes:
          {node}
        """, ENDINGS)
    assert_diagnostic(one(diagnostics, code), pos(text, needle, 1 if needle != "a:" else 1), *words)


@pytest.mark.parametrize("ending, code, needle, words", [
    ("done: {type: success}", "missing-field", "done:", ("ending 'done' is missing required field 'message'",)),
    ("done: {type: sucess, message: m}", "bad-value", "sucess",
     ("`type` in ending 'done' is 'sucess'", "success, failure, error, cancelled", "did you mean 'success'?")),
    ("done: {type: success, message: [m]}", "wrong-type", "[m]", ("`message` in ending 'done' must be a string",)),
    ("done: {type: success, message: m, summary: [1]}", "wrong-type", "[1]",
     ("`summary` in ending 'done' must be a mapping, not a list",)),
    ("done: {type: success, message: m, recovery: 3}", "wrong-type", "3}", ("`recovery`", "string")),
    ("done: {type: success, mesage: m}", "unknown-field", "mesage",
     ("unknown field 'mesage' in ending 'done'", "did you mean 'message'?")),
    ("done: finished", "ending-shape", "finished", ("ending 'done' must be a mapping with `type` and `message`",)),
])
def test_ending_fields_and_types(validate, ending, code, needle, words):
    text, diagnostics = validate(f"""\
        name: x
        version: 1
        start_node: a
        nodes:
          a: {{type: action, actions: [], on_success: done}}
        endings:
          {ending}
        """)
    assert_diagnostic(one(diagnostics, code), pos(text, needle), *words)


def test_top_level_value_types(validate):
    text, diagnostics = validate("""\
        name: ""
        version: [1]
        start_node: a
        nodes: []
        endings: {}
        """)
    assert_diagnostic(one([d for d in diagnostics if d.yaml_path == "nodes"], "wrong-type"), pos(text, "[]"),
                      "`nodes` in workflow must be a mapping, not a list")
    assert_diagnostic(one([d for d in diagnostics if d.yaml_path == "version"], "wrong-type"), pos(text, "[1]"),
                      "`version` in workflow must be a string or a number, not a list")
    assert_diagnostic(one(diagnostics, "too-few"), pos(text, "{}"), "`endings`", "at least 1")


# --------------------------------------------------------------------------- #
# Rule 4: start_node and every transition target.

ALL_TARGETS = """\
name: targets
version: 1
start_node: {start_node}
nodes:
  act:
    type: action
    actions: []
    on_success: {on_success}
    on_failure: {on_failure}
  cond:
    type: conditional
    condition: {{type: flag_set, flag: f}}
    branches:
      true: {branches_true}
      false: {branches_false}
  cond3:
    type: conditional
    condition: {{type: flag_set, flag: f}}
    branches: {{on_true: {branches_on_true}, on_false: {branches_on_false}}}
  ask:
    type: user_prompt
    prompt: {{question: q, options: [{{id: go, label: Go}}, {{id: stop, label: Stop}}]}}
    on_response:
      go: {{next_node: {on_response}}}
      stop: {{next_node: finish}}
  gate:
    type: validation_gate
    validations: [{{type: flag_set, flag: f}}]
    on_valid: {on_valid}
    on_invalid: {on_invalid}
  ref:
    type: reference
    doc: doc.md
    next_node: {next_node}
  agents:
    type: states
    states: {{start.md: "say <result>ok</result>"}}
    on_success: finish
    on_result: {{ok: {on_result}}}
endings:
  finish:
    type: success
    message: done
    recovery: {{retry_node: {retry_node}}}
"""
TARGET_FIELDS = {
    "start_node": ("act", "start_node", "start_node"),
    "on_success": ("cond", "nodes.act.on_success", "`on_success`"),
    "on_failure": ("finish", "nodes.act.on_failure", "`on_failure`"),
    "branches_true": ("cond3", "nodes.cond.branches.true", "`branches.true`"),
    "branches_false": ("finish", "nodes.cond.branches.false", "`branches.false`"),
    "branches_on_true": ("ask", "nodes.cond3.branches.on_true", "`branches.on_true`"),
    "branches_on_false": ("finish", "nodes.cond3.branches.on_false", "`branches.on_false`"),
    "on_response": ("gate", "nodes.ask.on_response.go.next_node", "`on_response.go.next_node`"),
    "on_valid": ("ref", "nodes.gate.on_valid", "`on_valid`"),
    "on_invalid": ("finish", "nodes.gate.on_invalid", "`on_invalid`"),
    "next_node": ("agents", "nodes.ref.next_node", "`next_node`"),
    "on_result": ("finish", "nodes.agents.on_result.ok", "`on_result.ok`"),
    "retry_node": ("act", "endings.finish.recovery.retry_node", "`recovery.retry_node`"),
}


def targets_workflow(**overrides) -> str:
    return ALL_TARGETS.format(**{name: overrides.get(name, good) for name, (good, _, _) in TARGET_FIELDS.items()})


@pytest.fixture
def validate_targets(validate, tmp_path):
    (tmp_path / "doc.md").write_text("# Doc\n", encoding="utf-8")

    def run(**overrides):
        return validate(targets_workflow(**overrides))

    return run


def test_the_all_targets_workflow_is_valid(validate_targets):
    _text, diagnostics = validate_targets()
    assert errors(diagnostics) == []


@pytest.mark.parametrize("field", list(TARGET_FIELDS))
def test_every_target_field_must_name_a_node_or_ending_with_a_suggestion(validate_targets, field):
    text, diagnostics = validate_targets(**{field: "fnish"})
    d = one(diagnostics, "unknown-target")
    _good, yaml_path, shown = TARGET_FIELDS[field]
    assert_diagnostic(d, pos(text, "fnish"), shown, "names 'fnish', which is neither a node nor an ending",
                      "did you mean 'finish'?")
    assert d.yaml_path == yaml_path


def test_a_target_far_from_every_name_says_where_names_come_from(validate_targets):
    text, diagnostics = validate_targets(on_success="zzzzzz")
    assert_diagnostic(one(diagnostics, "unknown-target"), pos(text, "zzzzzz"), "names 'zzzzzz'",
                      "name a node under `nodes:` or an ending under `endings:`")


@pytest.mark.parametrize("field", ["on_success", "branches_true", "on_response", "on_valid", "next_node",
                                   "on_result"])
def test_template_targets_are_not_checked_statically(validate_targets, field):
    _text, diagnostics = validate_targets(**{field: '"${computed.nowhere}"'})
    assert errors(diagnostics) == []


def test_a_template_target_must_still_compile(validate_targets):
    text, diagnostics = validate_targets(on_success='"${computed.x =>}"')
    line, column = pos(text, '"${computed')
    assert_diagnostic(one(diagnostics, "expression"), (line, column + len('"${computed.x ')), "SyntaxError",
                      "JavaScript")


def test_a_name_that_is_both_a_node_and_an_ending(validate):
    text, diagnostics = validate("""\
        name: x
        version: 1
        start_node: done
        nodes:
          done: {type: action, actions: [], on_success: done}
        """, ENDINGS)
    ending_key = (pos(text, "done:\n    type: success")[0], 3)
    assert_diagnostic(one(diagnostics, "id-clash"), ending_key, "'done' is both a node and an ending", "rename one")


# --------------------------------------------------------------------------- #
# Rule 5: registry types and their parameters.

def action_workflow(actions: str) -> str:
    return "name: x\nversion: 1\nstart_node: a\nnodes:\n  a:\n    type: action\n    actions:\n" + \
        textwrap.indent(textwrap.dedent(actions), "      ") + "    on_success: done\n" + ENDINGS


def gate_workflow(validations: str) -> str:
    return "name: x\nversion: 1\nstart_node: a\nnodes:\n  a:\n    type: validation_gate\n    validations:\n" + \
        textwrap.indent(textwrap.dedent(validations), "      ") + "    on_valid: done\n    on_invalid: done\n" + \
        ENDINGS


def test_unknown_consequence_lists_the_closest_names(validate):
    text, diagnostics = validate(action_workflow("- {type: set_stat, field: computed.x, value: 1}\n"))
    assert_diagnostic(one(diagnostics, "unknown-consequence"), pos(text, "set_stat"),
                      "unknown consequence type 'set_stat'", "did you mean 'set_state'")


def test_unknown_precondition_lists_the_closest_names(validate):
    text, diagnostics = validate(gate_workflow("- {type: flag_sett, flag: ready}\n"))
    assert_diagnostic(one(diagnostics, "unknown-precondition"), pos(text, "flag_sett"),
                      "unknown precondition type 'flag_sett'", "'flag_set'", "'flag_not_set'")


def test_a_precondition_used_as_a_consequence_says_so(validate):
    text, diagnostics = validate(action_workflow("- {type: file_exists, path: x}\n"))
    assert_diagnostic(one(diagnostics, "unknown-consequence"), pos(text, "file_exists"),
                      "unknown consequence type 'file_exists'", "'file_exists' is a precondition, not a consequence")


def test_a_type_nothing_resembles_points_at_wfexec_types(validate):
    text, diagnostics = validate(action_workflow("- {type: qqqqqqq}\n"))
    assert_diagnostic(one(diagnostics, "unknown-consequence"), pos(text, "qqqqqqq"), "`wfexec types`")


def test_unknown_type_inside_a_composite_precondition(validate):
    text, diagnostics = validate(gate_workflow("- type: all_of\n  conditions:\n    - {type: flag_st, flag: a}\n"))
    d = one(diagnostics, "unknown-precondition")
    assert_diagnostic(d, pos(text, "flag_st"), "unknown precondition type 'flag_st'", "did you mean 'flag_set'")
    assert d.yaml_path == "nodes.a.validations[0].conditions[0].type"


def test_call_without_a_type_or_not_a_mapping(validate):
    text, diagnostics = validate(action_workflow("- {field: computed.x}\n- just text\n- {type: [set_state]}\n"))
    assert_diagnostic(one(diagnostics, "consequence-shape"), pos(text, "just text"), "must be a mapping")
    missing = [d for d in diagnostics if d.code == "consequence-type-missing"]
    assert [(d.line, d.column) for d in missing] == [pos(text, "{field"), pos(text, "[set_state]")]
    assert "has no `type`" in missing[0].message
    assert "must be the name of a consequence type, not a list" in missing[1].message


def test_missing_required_parameter(validate):
    text, diagnostics = validate(gate_workflow("- {type: count_above, field: items}\n"))
    assert_diagnostic(one(diagnostics, "missing-field"), pos(text, "{type: count_above"),
                      "precondition 'count_above' is missing required field 'min'")


def test_unknown_parameter_suggests_the_close_one(validate):
    text, diagnostics = validate(action_workflow("- {type: set_state, field: computed.x, value: 1, vaule: 2}\n"))
    assert_diagnostic(one(diagnostics, "unknown-field"), pos(text, "vaule"),
                      "unknown field 'vaule' in consequence 'set_state'", "did you mean 'value'?")


def test_wrong_parameter_type(validate):
    text, diagnostics = validate(gate_workflow("- {type: count_above, field: items, min: many}\n"))
    assert_diagnostic(one(diagnostics, "wrong-type"), pos(text, "many"),
                      "`min` in precondition 'count_above' must be a whole number, not a string")


def test_parameter_outside_its_enum(validate):
    text, diagnostics = validate(gate_workflow("- {type: state_check, field: x, operator: equal}\n"))
    assert_diagnostic(one(diagnostics, "bad-value"), pos(text, "equal}"), "`operator`", "'equal'",
                      "did you mean 'equals'")


@pytest.mark.parametrize("validation", [
    "- {type: count_above, field: items, min: \"${computed.n}\"}\n",
    "- {type: count_equals, field: items, count: \"${ len(other) }\"}\n",
    "- {type: state_check, field: x, operator: \"${computed.op}\"}\n",
])
def test_a_template_is_accepted_for_a_non_string_parameter(validate, validation):
    _text, diagnostics = validate(gate_workflow(validation))
    assert errors(diagnostics) == []


def test_a_template_mixed_with_text_is_still_the_wrong_type(validate):
    text, diagnostics = validate(gate_workflow("- {type: count_above, field: items, min: \"at least ${n}\"}\n"))
    assert_diagnostic(one(diagnostics, "wrong-type"), pos(text, '"at least'), "`min`", "whole number")


def test_state_path_parameters_are_checked(validate):
    text, diagnostics = validate(action_workflow("- {type: set_state, field: computed..x, value: 1}\n"))
    assert_diagnostic(one(diagnostics, "state-path"), pos(text, "computed..x"), "invalid state path", "empty segment")


def test_entry_preconditions_are_checked_like_any_call(validate):
    text, diagnostics = validate("""\
        name: x
        version: 1
        start_node: a
        entry_preconditions:
          - {type: tool_availble, tool: git}
          - 42
        nodes:
          a: {type: action, actions: [], on_success: done}
        """, ENDINGS)
    assert_diagnostic(one(diagnostics, "unknown-precondition"), pos(text, "tool_availble"),
                      "did you mean 'tool_available'")
    assert_diagnostic(one(diagnostics, "precondition-shape"), pos(text, "42"), "must be a mapping with a `type`")
    assert len(errors(diagnostics)) == 2  # each reported once, not again by the top-level schema


# --------------------------------------------------------------------------- #
# Rule 6: templates and expressions.

SYNTAX_ERRORS = [
    # (expression, the text the error points at, words in the message)
    ("items.map(x => x.id) +* 2", "* 2", "SyntaxError"),
    ("len(items) >", None, "ends too soon"),
    ("a b", "b", "Unexpected identifier 'b'"),
    ("/\\.git$/.test(url) && (", None, "ends too soon"),
    ("x | default('none')", "default", "SyntaxError"),
    ("len(x) > 0 and y", "and y", "SyntaxError"),
]


@pytest.mark.parametrize("source, at, words", SYNTAX_ERRORS)
def test_expression_syntax_errors_point_inside_the_expression(validate, source, at, words):
    quoted = source.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    text, diagnostics = validate(action_workflow(f'- {{type: compute, expression: "{quoted}", store_as: computed.x}}\n'))
    d = one(diagnostics, "expression")
    line, column = pos(text, f'"{quoted}"')
    if at is None:
        expected = (line, column + 1 + len(quoted))     # just after the last character
    else:
        expected = (line, column + 1 + quoted.index(at.replace("\\", "\\\\")))
    assert_diagnostic(d, expected, words, "wfexec expressions are JavaScript")
    assert d.yaml_path == "nodes.a.actions[0].expression"


def test_a_syntax_error_in_a_block_scalar_points_at_its_line_and_column(validate):
    text, diagnostics = validate(action_workflow(
        "- type: compute\n  expression: |\n    # the total\n    const n = items.length;\n    n +* 2\n"
        "  store_as: computed.x\n"))
    d = one(diagnostics, "expression")
    line, column = pos(text, "n +* 2")
    assert (d.line, d.column) == (line, column + 3) and "SyntaxError" in d.message


@pytest.mark.parametrize("actions, at", [
    ('- {type: set_state, field: computed.x, value: "${\'😀😀\' + ; }"}\n', "; }"),        # a template
    ("- type: compute\n  expression: |\n    const s = '日本 😀';\n    s +* 2\n  store_as: computed.x\n", "* 2"),
    ("- type: compute\n  expression: |\n    const s = 'é😀中';  s +* 2\n  store_as: computed.x\n", "* 2"),
], ids=["emoji-in-template", "next-line-unaffected", "each-width"])
def test_a_syntax_error_past_characters_beyond_ascii_points_at_its_own_column(tmp_path, actions, at):
    """QuickJS counts columns in UTF-8 bytes: each `😀` before the error once put the column 3 too far right."""
    text = action_workflow(actions)
    (tmp_path / "workflow.yaml").write_text(text, encoding="utf-8")
    checked = wfexec_cli("validate", "workflow.yaml", cwd=tmp_path)
    assert checked.returncode == 2, checked.stdout
    line, column = pos(text, at)
    assert f"workflow.yaml:{line}:{column}: error: invalid JavaScript" in checked.stdout, checked.stdout


DOUBLED = "- type: compute\n  expression: |\n    'https://docs.x.dev/a'.replace(/^https?:\\\\/\\\\//, '').split('/')[0]\n" \
          "  store_as: computed.host\n"


def test_an_expression_that_parses_only_with_its_doubled_backslashes_halved_runs_so_with_a_warning(tmp_path,
                                                                                                  run_yaml):
    """hiivmind-corpus's init writes `/^https?:\\/\\//` in a block scalar, where YAML keeps both backslashes: as
    written the regex ends at the second `/`. Read as a double-quoted string would give it, it is what was meant."""
    (tmp_path / "workflow.yaml").write_text(action_workflow(DOUBLED), encoding="utf-8")
    checked = wfexec_cli("validate", "workflow.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout
    assert "workflow.yaml:10:51: warning: this expression is not JavaScript as written" in checked.stdout
    assert wfexec_cli("validate", "--strict", "workflow.yaml", cwd=tmp_path).returncode == 2
    result, _ = run_yaml(action_workflow(DOUBLED))
    assert result.state["computed"]["host"] == "docs.x.dev"


@pytest.mark.parametrize("expression, meaning", [
    ("'a\\\\\\\\b'.length", "valid as written: the string has one backslash, and stays so"),
    ("'a\\\\\\\\b'.length +", "broken either way: the error is the one as written"),
])
def test_doubled_backslashes_are_halved_only_where_that_alone_makes_javascript(validate, expression, meaning):
    text, diagnostics = validate(action_workflow(
        f"- type: compute\n  expression: |\n    {expression}\n  store_as: computed.x\n"))
    assert not [d for d in diagnostics if d.code == "doubled-backslashes"], meaning
    assert bool(errors(diagnostics)) == expression.endswith("+"), meaning


def test_calling_an_unknown_function_is_an_error_at_the_call(validate):
    text, diagnostics = validate(action_workflow(
        '- {type: compute, expression: "items.length > 0 && lenght(items)", store_as: computed.x}\n'))
    d = one(diagnostics, "expression")
    assert (d.line, d.column) == pos(text, "lenght(")
    assert "unknown function 'lenght'" in d.message and "len" in d.hint


@pytest.mark.parametrize("source, at", [("a ==* b", "* b"), ("x ? y", None), ("items.map(i =>)", ")")])
def test_templates_point_inside_too(validate, source, at):
    template = "Found ${" + source + "} things"
    text, diagnostics = validate(action_workflow(
        f'- type: set_state\n  field: computed.x\n  value: "{template}"\n'))
    d = one(diagnostics, "expression")
    line, column = pos(text, '"Found')
    inside = len('"Found ${') + (len(source) if at is None else source.index(at))
    assert (d.line, d.column) == (line, column + inside)
    assert "JavaScript" in d.hint


@pytest.mark.parametrize("where, needle", [
    ("ending", '"Total: ${'),
    ("question", '"Pick ${'),
    ("precondition", '"${a =='),
])
def test_templates_compile_everywhere(validate, where, needle):
    text = {
        "ending": action_workflow("- {type: set_flag, flag: f}\n").replace(
            "message: finished", 'message: "Total: ${len(items) +}"'),
        "question": "name: x\nversion: 1\nstart_node: a\nnodes:\n  a:\n    type: user_prompt\n    prompt:\n"
                    '      question: "Pick ${a ==}"\n      options: [{id: x, label: X}, {id: y, label: Y}]\n'
                    "    on_response: {x: {next_node: done}, y: {next_node: done}}\n" + ENDINGS,
        "precondition": gate_workflow('- {type: state_equals, field: computed.a, value: "${a == }"}\n'),
    }[where]
    text, diagnostics = validate(text)
    d = one(diagnostics, "expression")
    line, column = pos(text, needle)
    assert d.line == line and d.column > column
    assert "invalid JavaScript" in d.message and "ends too soon" in d.message and "JavaScript" in d.hint


def test_an_unclosed_template(validate):
    text, diagnostics = validate(action_workflow('- {type: set_state, field: computed.x, value: "${len(items)"}\n'))
    assert_diagnostic(one(diagnostics, "expression"), pos(text, '${len'), "unclosed `${`", "`$${`")


@pytest.mark.parametrize("source", [
    "len(items) > 0 && !flags.done || computed.force",
    "contains(items, 'a') && startswith(name, 'x') && endswith(name, '.git')",
    "items.map(item => item.id)",
    "flags.ready ? x : 'later'",
    "name ?? 'none'",
    "'a => b' + 'x.map(y)'",
    "/\\\\.git$/.test(url)",
    "total / 2",
    "null",
    "# a comment line\\nconst n = 2;\\nn * total",
])
def test_valid_expressions_pass(validate, source):
    quoted = source.replace('"', '\\"')
    _text, diagnostics = validate(action_workflow(f'- {{type: compute, expression: "{quoted}", store_as: computed.x}}\n'))
    assert errors(diagnostics) == []


def test_a_literal_dollar_brace_is_not_a_template(validate):
    _text, diagnostics = validate(action_workflow('- {type: set_state, field: computed.x, value: "cost: $${x =>"}\n'))
    assert errors(diagnostics) == []


# --------------------------------------------------------------------------- #
# Rule 7: user_prompt coverage, header and option count.

def prompt_workflow(options: str, handlers: str, header: str = "Pick") -> str:
    return (f"name: x\nversion: 1\nstart_node: ask\nnodes:\n  ask:\n    type: user_prompt\n    prompt:\n"
            f"      question: Which one?\n      header: {header}\n      options:\n"
            + textwrap.indent(textwrap.dedent(options), "        ")
            + "    on_response:\n" + textwrap.indent(textwrap.dedent(handlers), "      ") + ENDINGS)


def test_every_option_needs_a_handler(validate):
    text, diagnostics = validate(prompt_workflow(
        "- {id: keep, label: Keep}\n- {id: drop, label: Drop}\n", "keep: {next_node: done}\n"))
    d = one(diagnostics, "prompt-unhandled")
    assert_diagnostic(d, pos(text, "drop,"), "option 'drop' of 'ask' has no handler in on_response",
                      "add `drop: {next_node: ...}`")


def test_every_handler_key_must_be_an_option_or_other(validate):
    text, diagnostics = validate(prompt_workflow(
        "- {id: keep, label: Keep}\n- {id: drop, label: Drop}\n",
        "keep: {next_node: done}\ndrop: {next_node: done}\ndorp: {next_node: done}\nother: {next_node: ask}\n"))
    d = one(diagnostics, "prompt-stray-handler")
    assert_diagnostic(d, pos(text, "dorp:"), "handles 'dorp', which is not an option", "did you mean 'drop'?")


def test_selected_is_only_for_options_from_state(validate):
    text, diagnostics = validate(prompt_workflow(
        "- {id: keep, label: Keep}\n- {id: drop, label: Drop}\n",
        "keep: {next_node: done}\ndrop: {next_node: done}\nselected: {next_node: done}\n"))
    assert_diagnostic(one(diagnostics, "prompt-stray-handler"), pos(text, "selected:"), "'selected'",
                      "for options from state, `selected`")


def test_options_from_state_take_selected_and_other(validate):
    _text, diagnostics = validate("""\
        name: x
        version: 1
        start_node: ask
        nodes:
          ask:
            type: user_prompt
            prompt:
              question: Which source?
              options_from_state: computed.sources
              option_mapping: {id: id, label: name}
            on_response:
              selected: {next_node: done}
              other: {next_node: done}
        """, ENDINGS)
    assert diagnostics == []


def test_duplicate_option_ids(validate):
    text, diagnostics = validate(prompt_workflow(
        "- {id: keep, label: Keep}\n- {id: keep, label: Again}\n", "keep: {next_node: done}\n"))
    assert_diagnostic(one(diagnostics, "prompt-duplicate-option"), pos(text, "keep, label: Again"),
                      "option id 'keep' appears twice")


def test_header_over_12_characters_is_a_warning(validate):
    text, diagnostics = validate(prompt_workflow(
        "- {id: a, label: A}\n- {id: b, label: B}\n", "a: {next_node: done}\nb: {next_node: done}\n",
        header="Choose a strategy"))
    assert_diagnostic(one(diagnostics, "prompt-header-long"), pos(text, "Choose"), "17 characters", "at most 12",
                      severity="warning")
    assert errors(diagnostics) == []


def test_header_of_exactly_12_characters_is_fine(validate):
    _text, diagnostics = validate(prompt_workflow(
        "- {id: a, label: A}\n- {id: b, label: B}\n", "a: {next_node: done}\nb: {next_node: done}\n",
        header="Twelve chars"))
    assert diagnostics == []


@pytest.mark.parametrize("count", [1, 5])
def test_option_counts_outside_2_to_4_are_warnings(validate, count):
    ids = [f"o{i}" for i in range(count)]
    text, diagnostics = validate(prompt_workflow(
        "".join(f"- {{id: {i}, label: L{i}}}\n" for i in ids), "".join(f"{i}: {{next_node: done}}\n" for i in ids)))
    d = one(diagnostics, "prompt-option-count")
    assert_diagnostic(d, pos(text, "- {id: o0"), f"offers {count} option(s)", "2 to 4", severity="warning")
    assert errors(diagnostics) == []


@pytest.mark.parametrize("count", [2, 4])
def test_two_to_four_options_are_fine(validate, count):
    ids = [f"o{i}" for i in range(count)]
    _text, diagnostics = validate(prompt_workflow(
        "".join(f"- {{id: {i}, label: L{i}}}\n" for i in ids), "".join(f"{i}: {{next_node: done}}\n" for i in ids)))
    assert diagnostics == []


def test_one_option_with_an_other_handler_is_a_free_text_question(validate):
    _text, diagnostics = validate(prompt_workflow(
        "- {id: example, label: 'e.g. owner/repo'}\n", "example: {next_node: done}\nother: {next_node: done}\n"))
    assert diagnostics == []


# --------------------------------------------------------------------------- #
# Rule 8: the graph.

def test_unreachable_node_and_ending_and_dead_end_are_warnings(validate):
    text, diagnostics = validate("""\
        name: x
        version: 1
        start_node: start
        nodes:
          start:
            type: action
            actions: []
            on_success: done
            on_failure: spin
          spin:
            type: action
            actions: []
            on_success: spin
          island:
            type: action
            actions: []
            on_success: done
        endings:
          done: {type: success, message: ok}
          never: {type: error, message: unused}
        """)
    assert errors(diagnostics) == []
    assert_diagnostic(one(diagnostics, "unreachable-node"), pos(text, "island:"),
                      "node 'island' cannot be reached from start_node 'start'", severity="warning")
    assert_diagnostic(one(diagnostics, "no-way-out"), pos(text, "spin:"),
                      "from node 'spin' no path leads to an ending", "step budget", severity="warning")
    assert_diagnostic(one(diagnostics, "unreachable-ending"), pos(text, "never:"), "ending 'never' is never reached",
                      severity="warning")


def test_a_node_that_fails_its_checks_still_leads_to_its_targets(validate):
    text, diagnostics = validate("""\
        name: x
        version: 1
        start_node: start
        nodes:
          start: {type: action, actions: [], on_success: broken}
          broken:
            type: conditional
            condition: {type: flag_set, flag: ready}
            branches: {true: after, false: done}
            colour: blue
          after: {type: action, actions: [], on_success: done}
        endings:
          done: {type: success, message: ok}
        """)
    assert [d.code for d in diagnostics] == ["unknown-field"], [d.format() for d in diagnostics]
    assert_diagnostic(diagnostics[0], pos(text, "colour"), "colour")


def test_a_node_that_fails_its_checks_in_a_real_workflow_hides_no_node_after_it(validate):
    from conftest import compat_root

    real = (compat_root() / "hiivmind-corpus/856e42a/commands/hiivmind-corpus/workflow.yaml").read_text()
    # `discover_corpora` is the only way into the corpus-selection half of the gateway.
    broken = real.replace("  discover_corpora:\n", "  discover_corpora:\n    colour: blue\n", 1)
    assert broken != real
    text, diagnostics = validate(broken)
    assert_diagnostic(one(diagnostics, "unknown-field"), pos(text, "colour"), "colour")
    unreachable = [d.message for d in diagnostics if d.code == "unreachable-node"]
    assert unreachable == []


def test_a_template_target_may_reach_anything(validate):
    _text, diagnostics = validate("""\
        name: x
        version: 1
        start_node: start
        initial_state: {computed: {next: later}}
        nodes:
          start: {type: action, actions: [], on_success: "${computed.next}"}
          later: {type: action, actions: [], on_success: done}
        endings:
          done: {type: success, message: ok}
          other: {type: error, message: no}
        """)
    assert diagnostics == []


def test_a_retry_node_is_an_edge_from_its_ending(validate):
    _text, diagnostics = validate("""\
        name: x
        version: 1
        start_node: start
        nodes:
          start: {type: action, actions: [], on_success: failed}
          again: {type: action, actions: [], on_success: done}
        endings:
          failed: {type: error, message: no, recovery: {retry_node: again}}
          done: {type: success, message: ok}
        """)
    assert diagnostics == []


def test_the_graph_is_not_judged_while_targets_are_wrong(validate):
    _text, diagnostics = validate("""\
        name: x
        version: 1
        start_node: start
        nodes:
          start: {type: action, actions: [], on_success: dnoe}
        """, ENDINGS)
    assert [d.code for d in diagnostics] == ["unknown-target"]


# --------------------------------------------------------------------------- #
# Rule 9: seed compatibility.

def test_seed_keys_load_as_strings():
    doc = load_text("branches: {true: a, false: b}\nyes: 1\nno: 2\n1: x\n~: y\n")
    assert doc.diagnostics == []
    assert doc.data == {"branches": {"true": "a", "false": "b"}, "yes": 1, "no": 2, "1": "x", "~": "y"}



def test_composing_a_file_calls_python_only_to_resolve_and_make_each_node():
    """PyYAML's C composer asks its subclass about each node it makes (its tag, and around it the path-dependent
    resolution YAML 1.2 has none of): only the tag is worked out in Python, so a big file costs no more calls than
    that, and the data is as before."""
    import sys

    from wfexec.language.fast_composer import c_composer

    compose = c_composer()
    text = "nodes:\n" + "".join(f"  n{i}:\n    type: action\n    actions: [{{type: compute, expression: 'a + {i}'}}]\n"
                                for i in range(200))
    calls = []
    sys.setprofile(lambda frame, event, arg: calls.append(frame.f_code.co_name) if event == "call" else None)
    try:
        root = compose(text)
    finally:
        sys.setprofile(None)
    made = calls.count("resolve")  # one per key and value of the file
    assert made > 2_000
    assert len(calls) < 2.5 * made  # resolving and making each node, and a few words' tags worked out once
    assert root.value[0][1].value[199][1].value[1][1].value[0].value[1][1].value == "a + 199"


def test_seed_workflow_with_true_false_branches_and_yes_no_options(validate):
    _text, diagnostics = validate("""\
        name: seed
        version: "1.0.0"
        description: The shapes real hiivmind workflows used.
        start_node: check
        definitions:
          source: hiivmind/hiivmind-blueprint-lib@v2.0.0
        initial_state:
          flags: {indexed: false}
        nodes:
          check:
            type: conditional
            condition: {type: flag_set, flag: indexed}
            branches:
              true: done
              false: ask_index_now
          ask_index_now:
            type: user_prompt
            prompt:
              question: Index now?
              header: Index
              options:
                - {id: yes, label: "Yes", description: Build the index}
                - {id: no, label: "No", description: Later}
                - {id: true, label: "True", description: Also a string}
            on_response:
              yes: {next_node: v3_branch}
              no: {next_node: done}
              true: {next_node: done}
          v3_branch:
            type: conditional
            condition: {type: flag_not_set, flag: indexed}
            branches: {on_true: done, on_false: done}
        """, ENDINGS)
    # Valid as written; only the spelling YAML 1.1 tools read as booleans is pointed out.
    assert [(d.severity, d.code) for d in diagnostics] == [("warning", "branch-yaml11")]


def test_mixing_seed_and_v3_branch_names_is_an_error(validate):
    text, diagnostics = validate("""\
        name: x
        version: 1
        start_node: a
        nodes:
          a:
            type: conditional
            condition: {type: flag_set, flag: f}
            branches: {true: done, false: done, on_true: done}
        """, ENDINGS)
    assert_diagnostic(one(diagnostics, "branch-spelling"), pos(text, "on_true"), "mixes `true`/`false` with `on_true`",
                      "either true/false (seed) or on_true/on_false (v3)")


def test_definitions_is_accepted_in_any_shape(validate):
    _text, diagnostics = validate("""\
        name: x
        version: 1
        start_node: a
        definitions: hiivmind/hiivmind-blueprint-lib@v3.0.0
        nodes:
          a: {type: action, actions: [], on_success: done}
        """, ENDINGS)
    assert diagnostics == []


# --------------------------------------------------------------------------- #
# Rule 10: files named by reference and states nodes.

def reference_workflow(field: str, value: str) -> str:
    return (f"name: x\nversion: 1\nstart_node: a\nnodes:\n  a:\n    type: reference\n    {field}: {value}\n"
            "    next_node: done\n" + ENDINGS)


def test_missing_reference_document(validate):
    text, diagnostics = validate(reference_workflow("doc", "docs/missing.md"))
    assert_diagnostic(one(diagnostics, "file-missing"), pos(text, "docs/missing.md"),
                      "document 'docs/missing.md' does not exist", "then from the workflow's folder")


def test_missing_sub_workflow(validate):
    text, diagnostics = validate(reference_workflow("workflow", "sub/none.yaml"))
    assert_diagnostic(one(diagnostics, "file-missing"), pos(text, "sub/none.yaml"),
                      "sub-workflow 'sub/none.yaml' does not exist")


def test_missing_states_folder(validate):
    text, diagnostics = validate("name: x\nversion: 1\nstart_node: a\nnodes:\n  a:\n    type: states\n"
                                 "    folder: agents\n    on_success: done\n" + ENDINGS)
    assert_diagnostic(one(diagnostics, "file-missing"), pos(text, "agents"), "states folder 'agents' does not exist")


def test_files_resolve_relative_to_the_workflow_not_the_cwd(validate, tmp_path, monkeypatch):
    skill = tmp_path / "skill"
    (skill / "docs").mkdir(parents=True)
    (skill / "docs" / "guide.md").write_text("# Guide\n", encoding="utf-8")
    (skill / "agents").mkdir()
    (skill / "agents" / "start.md").write_text("go, then <result>done</result>\n", encoding="utf-8")
    (skill / "sub.yaml").write_text("name: s\nversion: 1\nstart_node: s\nnodes:\n"
                                    "  s: {type: action, actions: [], on_success: ok}\n"
                                    "endings:\n  ok: {type: success, message: ok}\n", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    _text, diagnostics = validate("""\
        name: x
        version: 1
        start_node: read
        nodes:
          read: {type: reference, doc: docs/guide.md, next_node: sub}
          sub: {type: reference, workflow: sub.yaml, on_success: agents}
          agents: {type: states, folder: agents, on_success: done}
        """, ENDINGS, name="skill/workflow.yaml")
    assert diagnostics == []


def test_a_directory_is_not_a_document(validate, tmp_path):
    (tmp_path / "docs").mkdir()
    text, diagnostics = validate(reference_workflow("doc", "docs"))
    assert_diagnostic(one(diagnostics, "file-missing"), pos(text, "docs\n"), "document 'docs' is a folder, not a file")


def test_a_path_too_long_for_the_file_system_is_missing_not_a_crash(validate):
    long_name = "x" * 5000
    text, diagnostics = validate(reference_workflow("doc", long_name))
    assert_diagnostic(one(diagnostics, "file-missing"), pos(text, long_name), "does not exist")


def test_an_invalid_sub_workflow_reports_its_own_errors_in_its_own_file(validate, tmp_path):
    (tmp_path / "sub.yaml").write_text("name: s\nversion: 1\nstart_node: s\nnodes:\n"
                                       "  s: {type: action, actions: [], on_success: nowhere}\n"
                                       "endings:\n  ok: {type: success, message: ok}\n", encoding="utf-8")
    text, diagnostics = validate(reference_workflow("workflow", "sub.yaml"))
    assert_diagnostic(one(diagnostics, "sub-workflow-invalid"), pos(text, "sub.yaml"), "sub-workflow 'sub.yaml' has errors")
    inner = one(diagnostics, "unknown-target")
    assert Path(inner.file).name == "sub.yaml"
    assert (inner.line, inner.column) == (5, 46)


def test_a_workflow_that_runs_itself(validate):
    text, diagnostics = validate(reference_workflow("workflow", "workflow.yaml"))
    assert_diagnostic(one(diagnostics, "workflow-cycle"), pos(text, "workflow.yaml"), "includes itself")


def test_a_computed_file_path_is_refused(validate):
    text, diagnostics = validate(reference_workflow("doc", '"${computed.doc}"'))
    assert_diagnostic(one(diagnostics, "dynamic-file"), pos(text, '"${'), "must be written out")


def test_missing_import(validate):
    text, diagnostics = validate("""\
        name: x
        version: 1
        start_node: a
        imports:
          table: intent-mapping.yaml
        nodes:
          a: {type: action, actions: [], on_success: done}
        """, ENDINGS)
    assert_diagnostic(one(diagnostics, "file-missing"), pos(text, "intent-mapping.yaml"),
                      "import 'intent-mapping.yaml' does not exist")


# --------------------------------------------------------------------------- #
# Files that cannot be read.

def test_a_missing_file_is_a_diagnostic(tmp_path):
    [d] = wfexec.validate(tmp_path / "nope.yaml")
    assert (d.code, d.line, d.column, d.severity) == ("file-missing", 1, 1, "error")
    assert "no such file" in d.message and "nope.yaml" in d.message


def test_a_folder_without_workflow_yaml(tmp_path):
    [d] = wfexec.validate(tmp_path)
    assert (d.code, d.line, d.column) == ("file-missing", 1, 1)
    assert "workflow.yaml" in d.message


def test_a_file_that_is_not_utf8(tmp_path):
    path = tmp_path / "workflow.yaml"
    path.write_bytes(b"name: x\nversion: 1\ndescription: caf\xe9\n")
    [d] = wfexec.validate(path)
    assert (d.code, d.line, d.column) == ("encoding", 3, 1)
    assert "not valid UTF-8" in d.message


def test_the_fixture_files_behave_as_their_folders_say():
    root = Path(__file__).resolve().parents[1] / "workflows"
    for path in sorted((root / "valid").rglob("*.yaml")):
        if path.name == "workflow.yaml" or path.parent.name == "valid":
            assert errors(wfexec.validate(path)) == [], path
    for path in sorted((root / "invalid").glob("*.yaml")):
        assert errors(wfexec.validate(path)), path


# --------------------------------------------------------------------------- #
# Blueprint v3 spellings.

def test_store_in_is_read_as_store_as_with_a_warning_to_rename_it(validate, tmp_path):
    text, diagnostics = validate("""\
        name: x
        version: 1
        start_node: act
        nodes:
          act:
            type: action
            actions:
              - {type: run_command, command: [echo, hello], store_in: computed.out}
            on_success: done
        endings:
          done: {type: success, message: "${computed.out.stdout}"}
        """)
    assert_diagnostic(one(diagnostics, "store-in"), pos(text, "store_in"), "`store_in` is read as `store_as`",
                      "rename it to `store_as`", severity="warning")
    assert errors(diagnostics) == []
    result = wfexec.run(tmp_path / "workflow.yaml", cwd=tmp_path)
    assert result.message.strip() == "hello"


@pytest.mark.parametrize("path, written", [
    (("nodes", "ask", "actions", 0, "store_as"), "nodes.ask.actions[0].store_as"),
    ((0, "type"), "[0].type"),                  # a top-level list
    (("nodes", "a", True), "nodes.a[True]"),    # a `true:` key: YAML reads it as a bool, and a bool is an int
    (("x", 1.5, "y"), "x.1.5.y"),               # a float key, as str() writes it
    (("cases", 2, 0), "cases[2][0]"),
    ((), ""),
])
def test_a_diagnostic_names_its_place_as_a_dotted_yaml_path(path, written):
    from wfexec.language.diagnostics import format_yaml_path

    assert format_yaml_path(path) == written
