"""Blueprint-lib v8's type catalogue (issue 16, point 5), run as a v8 file writes it: `mutate_state` increment,
`state_check` in, the `composite` precondition, `user_prompt` options in both of v8's forms (a list, or a mapping of
expressions over `options_from_state`), and the catalogue's other entries. Small workflows of our own, run through
the command line; bad input is a diagnostic at the line written."""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap

import pytest

from conftest import wfexec_cli, wfexec_in_process as cli


def workflow(nodes: str, *, initial_state: str = "", name: str = "v8-catalogue") -> str:
    """A v8 file: the nodes given, plus the endings every test routes to."""
    return textwrap.dedent(f"""\
        name: {name}
        version: "1.0.0"
        start_node: start
        default_error: failed
        """) + (textwrap.indent(textwrap.dedent(initial_state), "") if initial_state else "") + \
        "nodes:\n" + textwrap.indent(textwrap.dedent(nodes), "  ") + textwrap.indent(textwrap.dedent("""\
        done:
          type: ending
          outcome: success
          message: "done"
        other:
          type: ending
          outcome: failure
          message: "other"
        failed:
          type: ending
          outcome: error
          message: "failed: ${computed.last_error}"
        """), "  ")


def write(tmp_path, text, name="workflow.yaml"):
    (tmp_path / name).write_text(text)
    return tmp_path / name


def run_json(tmp_path, *args, name="workflow.yaml"):
    done = cli("run", name, "--ephemeral", "--format", "json", *args, cwd=tmp_path)
    return done, json.loads(done.stdout)


def errors_of(tmp_path, name="workflow.yaml"):
    done = cli("validate", name, "--format", "json", cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    return [d for d in json.loads(done.stdout)["diagnostics"] if d["severity"] == "error"]


def line_of(text, fragment):
    return next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)


# -- mutate_state ----------------------------------------------------------------------------------

COUNTER = """\
start:
  type: action
  consequences:
    - {type: mutate_state, operation: increment, field: computed.tries}
    - {type: mutate_state, operation: increment, field: computed.tries}
    - {type: mutate_state, operation: increment, field: computed.score, value: 2.5}
    - {type: mutate_state, operation: increment, field: computed.score, value: -1}
  on_success: loop
loop:
  type: action
  consequences:
    - {type: mutate_state, operation: increment, field: goal.iterations}
  on_success: enough
enough:
  type: conditional
  condition: "goal.iterations >= 3"
  on_true: done
  on_false: loop
"""


def test_increment_counts_from_zero_by_one_or_by_value_and_drives_a_loop(tmp_path):
    write(tmp_path, workflow(COUNTER))
    done, result = run_json(tmp_path)
    assert (done.returncode, result["ending"]) == (0, "done"), result
    assert result["state"]["computed"]["tries"] == 2
    assert result["state"]["computed"]["score"] == 1.5
    assert result["state"]["goal"]["iterations"] == 3  # a top-level key made by the increment itself


def test_increment_of_something_that_is_not_a_number_fails_to_default_error(tmp_path):
    write(tmp_path, workflow("""\
        start:
          type: action
          consequences:
            - {type: mutate_state, operation: set, field: computed.tries, value: "three"}
            - {type: mutate_state, operation: increment, field: computed.tries}
          on_success: done
        """))
    done, result = run_json(tmp_path)
    assert (done.returncode, result["ending"]) == (1, "failed")
    assert "`computed.tries` holds str 'three', not a number" in result["message"]


@pytest.mark.parametrize("call, words", [
    ("{type: mutate_state, operation: set, field: computed.x}", "missing required field 'value'"),
    ("{type: mutate_state, operation: merge, field: computed.x}", "missing required field 'value'"),
    ("{type: mutate_state, operation: increment, field: computed.x, value: one}", "must be a number"),
    ("{type: mutate_state, operation: multiply, field: computed.x, value: 2}", "'multiply'; allowed: set, append, "
                                                                                "clear, merge, increment"),
])
def test_a_mutate_state_the_catalogue_does_not_allow_is_an_error_at_its_line(tmp_path, call, words):
    text = workflow(f"""\
        start:
          type: action
          consequences:
            - {call}
          on_success: done
        """)
    write(tmp_path, text)
    errors = errors_of(tmp_path)
    assert any(words in e["message"] and e["line"] == line_of(text, "type: mutate_state") for e in errors), errors


# -- state_check and composite ------------------------------------------------------------------------

GATES = """\
start:
  type: action
  consequences:
    - {type: mutate_state, operation: set, field: goals.ready.status, value: ignored}
    - {type: mutate_state, operation: set, field: goals.config.status, value: "${input_status}"}
  on_success: all_settled
all_settled:
  type: conditional
  condition:
    all:
      - {type: state_check, field: goals.ready.status, operator: in, value: [satisfied, ignored]}
      - {type: state_check, field: goals.config.status, operator: in, value: [satisfied, ignored]}
  on_true: one_of_them
  on_false: other
one_of_them:
  type: conditional
  condition:
    type: composite
    operator: xor
    conditions:
      - {type: state_check, field: goals.ready.status, operator: equals, value: satisfied}
      - {type: state_check, field: goals.config.status, operator: equals, value: satisfied}
  on_true: done
  on_false: other
"""


@pytest.mark.parametrize("status, ending", [("satisfied", "done"), ("ignored", "other"), ("incomplete", "other")])
def test_state_check_in_and_the_composite_precondition(tmp_path, status, ending):
    write(tmp_path, workflow(GATES, initial_state=f"initial_state: {{input_status: {status}}}\n"))
    done, result = run_json(tmp_path)
    assert result["ending"] == ending, result


def test_in_against_a_list_from_state(tmp_path):
    write(tmp_path, workflow("""\
        start:
          type: conditional
          condition: {type: state_check, field: computed.pick, operator: in, value: "${computed.allowed}"}
          on_true: done
          on_false: other
        """, initial_state="initial_state:\n  computed: {pick: b, allowed: [a, b]}\n"))
    assert run_json(tmp_path)[1]["ending"] == "done"


def test_in_against_something_that_is_not_a_list_is_unknown(tmp_path):
    write(tmp_path, workflow("""\
        start:
          type: conditional
          condition: {type: state_check, field: computed.pick, operator: in, value: "${computed.allowed}"}
          on_true: done
          on_false: other
        """, initial_state="initial_state:\n  computed: {pick: b, allowed: b}\n"))
    done, result = run_json(tmp_path)
    assert result["ending"] == "failed"  # on_unknown defaults to default_error
    assert "state_check `in` needs a list as `value`, not str" in result["message"]


@pytest.mark.parametrize("condition, words", [
    ("{type: state_check, field: computed.x, operator: in}", "missing required field 'value'"),
    ("{type: state_check, field: computed.x, operator: equals}", "missing required field 'value'"),
    ("{type: state_check, field: computed.x, operator: in, value: a}", "must be a list"),
    ("{type: state_check, field: computed.x, operator: within, value: [a]}", "'within'; allowed:"),
    ("{type: composite, operator: most, conditions: [\"true\"]}", "'most'; allowed: all, any, none, xor"),
    ("{type: composite, operator: all}", "missing required field 'conditions'"),
])
def test_a_precondition_the_catalogue_does_not_allow_is_an_error_at_its_line(tmp_path, condition, words):
    text = workflow(f"""\
        start:
          type: conditional
          condition: {condition}
          on_true: done
          on_false: other
        """)
    write(tmp_path, text)
    errors = errors_of(tmp_path)
    assert any(words in e["message"] and e["line"] == line_of(text, "condition:") for e in errors), errors


# -- user_prompt options ------------------------------------------------------------------------------

CANDIDATES = """\
initial_state:
  computed:
    matches:
      top_candidates:
        - {rule: {name: build, description: Make a new skill}, action: build_it, score: 3}
        - {rule: {name: search, description: Find documentation}, action: search_it, score: 2}
"""
DYNAMIC = """\
start:
  type: user_prompt
  prompt:
    question: Which did you mean?
    header: Clarify
    options_from_state: computed.matches.top_candidates
    options:
      id: rule.name
      label: "candidate.rule.name + ' (' + score + ')'"
      description: rule.description
  on_response:
    selected: "${user_responses.start.action}"
    other:
      consequences:
        - {type: mutate_state, operation: set, field: computed.typed, value: "${user_responses.start.text}"}
      next_node: other
build_it:
  type: ending
  outcome: success
  message: "${user_responses.start.id}|${user_responses.start.raw.label}|${user_responses.start.selected.score}"
search_it:
  type: ending
  outcome: success
  message: "searching"
"""


def test_dynamic_options_are_expressions_over_each_item_and_the_answer_carries_the_item(tmp_path):
    write(tmp_path, workflow(DYNAMIC, initial_state=CANDIDATES))
    done, result = run_json(tmp_path, "--answer", "start=build")
    assert (done.returncode, result["ending"]) == (0, "build_it"), result
    assert result["message"] == "build|build (3)|3"
    answer = result["state"]["user_responses"]["start"]
    # the item's own fields beside id/raw/selected: `user_responses.start.action` routed the answer
    assert answer["action"] == "build_it" and answer["rule"]["name"] == "build"
    assert answer["id"] == "build" and answer["selected"]["score"] == 3
    done, result = run_json(tmp_path, "--answer", "start=search")
    assert result["ending"] == "search_it"


def test_dynamic_options_are_offered_with_their_labels_while_waiting(tmp_path):
    write(tmp_path, workflow(DYNAMIC, initial_state=CANDIDATES))
    done = cli("run", "workflow.yaml", "--ephemeral", "--format", "json", cwd=tmp_path)
    assert done.returncode == 3
    waiting = json.loads(done.stdout)
    assert (waiting["node"], waiting["allow_other"]) == ("start", True)
    assert [(o["id"], o["label"], o["description"]) for o in waiting["options"]] == [
        ("build", "build (3)", "Make a new skill"), ("search", "search (2)", "Find documentation")]


def test_free_text_to_a_dynamic_question_goes_to_other(tmp_path):
    write(tmp_path, workflow(DYNAMIC, initial_state=CANDIDATES))
    done, result = run_json(tmp_path, "--answer", "start=something else")
    assert result["ending"] == "other" and result["state"]["computed"]["typed"] == "something else"


def test_an_item_field_never_replaces_the_answers_own_keys(tmp_path):
    state = CANDIDATES.replace("action: build_it, score: 3}", "action: build_it, score: 3, id: clash, raw: x}")
    write(tmp_path, workflow(DYNAMIC, initial_state=state))
    done, result = run_json(tmp_path, "--answer", "start=build")
    answer = result["state"]["user_responses"]["start"]
    assert answer["id"] == "build" and answer["raw"] == {"label": "build (3)"}


def test_static_options_route_and_the_shorthand_handler(tmp_path):
    write(tmp_path, workflow("""\
        start:
          type: user_prompt
          prompt:
            question: Go?
            header: Go
            options:
              - {id: go, label: Go, description: Carry on}
              - {id: stop, label: Stop}
          on_response:
            go: done
            stop: other
        """))
    assert run_json(tmp_path, "--answer", "start=go")[1]["ending"] == "done"
    assert run_json(tmp_path, "--answer", "start=Stop")[1]["ending"] == "other"  # a label answers too


@pytest.mark.parametrize("change, at, words", [
    # a mapping of options with no list to build them from
    (lambda t: t.replace("    options_from_state: computed.matches.top_candidates\n", ""), "      options:",
     "`options` written as a mapping builds one option per item of a list, but this prompt has no "
     "`options_from_state`"),
    # an expression that does not parse, at its own line
    (lambda t: t.replace("description: rule.description", "description: rule.("), "description: rule.(",
     "invalid JavaScript in `rule.(`"),
    # options as a list of plain strings: v8 wants {id, label, description}
    (lambda t: t.replace("    options_from_state: computed.matches.top_candidates\n", "").replace(
        "    options:\n      id: rule.name\n      label: \"candidate.rule.name + ' (' + score + ')'\"\n"
        "      description: rule.description\n", "    options: [build, search]\n"), "      options: [build, search]",
     "must be a mapping, not a string"),
    # a field a v8 option mapping does not have
    (lambda t: t.replace("      description: rule.description", "      tooltip: rule.description"),
     "tooltip: rule.description", "unknown field 'tooltip'"),
])
def test_malformed_options_are_errors_at_the_line_written(tmp_path, change, at, words):
    text = workflow(change(DYNAMIC), initial_state=CANDIDATES)
    write(tmp_path, text)
    errors = errors_of(tmp_path)
    assert any(words in e["message"] and e["line"] == line_of(text, at) for e in errors), errors


def test_an_option_expression_that_fails_on_an_item_stops_the_run_naming_the_item(tmp_path):
    text = workflow(DYNAMIC, initial_state=CANDIDATES).replace("label: \"candidate.rule.name + ' (' + score + ')'\"",
                                                               "label: rule.name.toUpperCase()")
    text = text.replace("- {rule: {name: search, description: Find documentation}",
                        "- {rule: {description: Find documentation}")
    write(tmp_path, text)
    done = cli("run", "workflow.yaml", "--ephemeral", "--answer", "start=build", cwd=tmp_path)
    assert done.returncode == 1
    assert "option 2 of the list" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
