"""Blueprint-lib v8 composites (issue 16, point 2): `confirm`, `gated_action` and `goal_seek` expand at load into
ordinary nodes, exactly as the walker contract says; `wfexec expand` prints the expansion; a goal whose
sub-process leaves the loop is rejected. Our own fixtures (tests/fixtures/v8_composites) for the behaviours of
blueprint-lib's composite fixtures: input.yaml → expected.yaml, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import wfexec_in_process as cli

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "v8_composites"
EXPANSIONS = sorted(p.parent for p in FIXTURES.glob("*/*/expected.yaml") if not p.parts[-3].startswith("_"))


@pytest.mark.parametrize("case", EXPANSIONS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_expand_prints_the_walker_contract_byte_for_byte(case):
    done = cli("expand", case / "input.yaml")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (case / "expected.yaml").read_text()


def test_every_composite_has_fixtures():
    kinds = {case.parent.name for case in EXPANSIONS}
    assert kinds == {"confirm", "gated_action", "goal_seek"} and len(EXPANSIONS) >= 10


INVALID = {  # case → (line, what the message says)
    "confirm_without_store_as": (1, "confirm node 'ask_first' is missing required field 'store_as'"),
    "confirm_route_without_next_node": (5, "`on_confirmed` in confirm node 'ask_first' is missing required field "
                                           "'next_node'"),
    "gated_action_no_cases": (3, "`when` in gated_action node 'route' needs at least 1 item"),
    "gated_action_without_else": (1, "gated_action node 'route' is missing required field 'else'"),
    "gated_action_case_without_next_node": (4, "`when[0]` in gated_action node 'route' is missing required field "
                                               "'next_node'"),
    "goal_seek_no_goals_list": (1, "goal_seek node 'loop' is missing required field 'goals'"),
    "goal_seek_empty_goals": (3, "`goals` in goal_seek node 'loop' needs at least 1 item"),
    "goal_seek_goal_without_name": (4, "`goals[0]` in goal_seek node 'loop' is missing required field 'name'"),
    "goal_seek_goal_without_starting_node": (4, "is missing required field 'starting_node'"),
    "goal_seek_without_max_iterations": (1, "goal_seek node 'loop' is missing required field 'max_iterations'"),
    "goal_seek_zero_max_iterations": (5, "`max_iterations` in goal_seek node 'loop' must be at least 1, not 0"),
    "goal_seek_without_on_complete": (1, "goal_seek node 'loop' is missing required field 'on_complete'"),
    "composite_with_unknown_field": (7, "unknown field 'on_timeout' in confirm node 'ask_first'"),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_a_composite_written_wrong_is_refused_at_its_line(case):
    assert {p.name for p in (FIXTURES / "_invalid").iterdir()} == set(INVALID)
    done = cli("expand", FIXTURES / "_invalid" / case / "input.yaml")
    line, message = INVALID[case]
    assert done.returncode == 2 and done.stdout == ""
    assert f"input.yaml:{line}:" in done.stderr and message in done.stderr, done.stderr


WORKFLOW = """\
name: composites
version: "1.0.0"
start_node: route
default_error: failed
input_schema:
  size: {type: integer, required: true}
nodes:
  route:
    type: gated_action
    when:
      - condition: "input.size > 10"
        consequences:
          - {type: mutate_state, operation: set, field: computed.big, value: true}
        next_node: ask_delete
      - condition: {any: ["input.size == 0", "input.size < 0"]}
        next_node: nothing
    else: ask_delete
  ask_delete:
    type: confirm
    prompt: "Delete ${input.size} files?"
    store_as: confirmations.delete
    on_confirmed:
      consequences:
        - {type: mutate_state, operation: set, field: computed.deleted, value: "${input.size}"}
      next_node: deleted
    on_declined:
      label: Keep them
      next_node: kept
  deleted: {type: ending, outcome: success, message: "deleted ${computed.deleted}"}
  kept: {type: ending, outcome: cancelled, message: kept}
  nothing: {type: ending, outcome: success, message: nothing to do}
  failed: {type: ending, outcome: error, message: failed}
"""


def run_json(folder: Path, *args: str):
    done = cli("run", "workflow.yaml", "--ephemeral", "--format", "json", *args, cwd=folder)
    return done, json.loads(done.stdout)


@pytest.mark.parametrize("size, answer, ending, state", [
    ("20", "yes", "deleted", {"big": True, "deleted": 20}),
    ("3", "yes", "deleted", {"deleted": 3}),
    ("3", "no", "kept", {}),
    ("0", None, "nothing", {}),
])
def test_confirm_and_gated_action_run_to_their_endings(tmp_path, size, answer, ending, state):
    (tmp_path / "workflow.yaml").write_text(WORKFLOW)
    answers = ["--answer", f"ask_delete__ask={answer}"] if answer else []
    done, result = run_json(tmp_path, "--input", f"size={size}", *answers)
    assert result["ending"] == ending, done.stderr
    assert {k: v for k, v in result["state"]["computed"].items() if k in ("big", "deleted")} == state
    if answer:
        assert result["state"]["confirmations"]["delete"] is (answer == "yes")


def test_a_confirm_asks_at_its_own_node_and_parks_there(tmp_path):
    (tmp_path / "workflow.yaml").write_text(WORKFLOW)
    done = cli("run", "workflow.yaml", "--ephemeral", "--input", "size=4", "--non-interactive", cwd=tmp_path)
    assert done.returncode == 3
    assert "Delete 4 files?" in done.stdout + done.stderr and "ask_delete__ask" in done.stdout + done.stderr


def test_a_mistake_inside_a_composite_is_reported_where_the_author_wrote_it(tmp_path):
    text = WORKFLOW.replace('"input.size > 10"', '"input.size >> > 10"').replace("next_node: deleted",
                                                                                 "next_node: delted")
    (tmp_path / "workflow.yaml").write_text(text)
    done = cli("validate", "workflow.yaml", cwd=tmp_path)
    lines = text.splitlines()
    condition_line = next(i for i, line in enumerate(lines, 1) if ">> >" in line)
    target_line = next(i for i, line in enumerate(lines, 1) if "delted" in line)
    assert done.returncode == 2
    assert f"workflow.yaml:{condition_line}:" in done.stdout and "invalid JavaScript" in done.stdout
    assert f"workflow.yaml:{target_line}:" in done.stdout and "'delted'" in done.stdout
    assert "(in confirm 'ask_delete', as its node 'ask_delete__act')" in done.stdout
    as_json = json.loads(cli("validate", "workflow.yaml", "--format", "json", cwd=tmp_path).stdout)
    assert {d["yaml_path"] for d in as_json["diagnostics"] if d["severity"] == "error"} == {"nodes.route",
                                                                                            "nodes.ask_delete"}


@pytest.mark.parametrize("wrong, right, what", [
    ("field: computed.big", "field: 7", "must be a string"),   # a field of a consequence the expansion moved twice
    ("type: mutate_state, operation: set, field: computed.big", "type: mutate_stat, operation: set, "
                                                                  "field: computed.big", "unknown consequence"),
])
def test_a_wrong_field_inside_a_composites_consequence_is_reported_at_that_field(tmp_path, wrong, right, what):
    # The consequence moves into a generated node's `consequences`, then its `actions`: the diagnostic still
    # points at the value the author wrote, not at the list around it.
    text = WORKFLOW.replace(wrong, right, 1)
    (tmp_path / "workflow.yaml").write_text(text)
    as_json = json.loads(cli("validate", "workflow.yaml", "--format", "json", cwd=tmp_path).stdout)
    [found] = [d for d in as_json["diagnostics"] if what in d["message"]]
    line = next(i for i, written in enumerate(text.splitlines(), 1) if right in written)
    value = right.split(": ", 1)[1] if what == "must be a string" else "mutate_stat"
    assert (found["line"], found["column"]) == (line, text.splitlines()[line - 1].index(value) + 1), found


GOALS = """\
name: goals
version: "1"
start_node: intro
default_error: failed
nodes:
  intro:
    type: action
    consequences: [{type: mutate_state, operation: set, field: computed.rounds, value: 0}]
    on_success: profile
  profile:
    type: goal_seek
    goals:
      - name: name
        starting_node: ask_name
      - name: email
        starting_node: ask_email
        success_condition: "computed.email.includes('@')"
    max_iterations: 6
    on_complete: done
    on_budget_exceeded: gave_up
  ask_name:
    type: user_prompt
    prompt:
      question: Your name?
      header: Name
      options: [{id: ann, label: Ann}, {id: bob, label: Bob}]
    on_response:
      ann: {consequences: [{type: mutate_state, operation: set, field: computed.name, value: Ann}], next_node: profile}
      bob: {consequences: [{type: mutate_state, operation: set, field: computed.name, value: Bob}], next_node: profile}
  ask_email:
    type: user_prompt
    prompt:
      question: Your email?
      header: Email
      options: [{id: good, label: ann@example.org}, {id: bad, label: not an email}]
    on_response:
      good: {consequences: [{type: mutate_state, operation: set, field: computed.email, value: ann@example.org}],
             next_node: profile}
      bad: {consequences: [{type: mutate_state, operation: set, field: computed.email, value: nope}],
            next_node: profile}
  done: {type: ending, outcome: success, message: "${computed.name} <${computed.email}>"}
  gave_up: {type: ending, outcome: failure, message: too many rounds}
  failed: {type: ending, outcome: error, message: failed}
"""


def test_expanding_a_workflow_reroutes_edges_into_the_composite(tmp_path):
    (tmp_path / "workflow.yaml").write_text(GOALS)
    done = cli("expand", "workflow.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    from ruamel.yaml import YAML

    nodes = YAML(typ="safe").load(done.stdout)["nodes"]
    assert "profile" not in nodes
    assert nodes["intro"]["on_success"] == "profile__entry"  # into the composite: its first node
    # back from a goal without a success_condition: that goal's return node, which marks it satisfied
    assert {h["next_node"] for h in nodes["ask_name"]["on_response"].values()} == {"profile__return_name"}
    # back from a goal with one: the loop's entry, where the condition is checked every round
    assert {h["next_node"] for h in nodes["ask_email"]["on_response"].values()} == {"profile__entry"}
    assert "profile__return_email" not in nodes and nodes["profile__check_email"]["on_true"] == "profile__mark_email"


@pytest.mark.parametrize("body, message, line_of", [
    ("      ann: {next_node: done}", "goal 'name' of goal_seek 'profile' leaves the loop: node 'ask_name' goes on to "
     "'done', which is an ending", "ann: {next_node: done}"),
    ("      ann: {next_node: nowhere}", "goal 'name' of goal_seek 'profile' leaves the loop: node 'ask_name' goes on "
     "to 'nowhere', which is not a node", "nowhere"),
    ("      ann: {next_node: ask_name}", "goal 'name' of goal_seek 'profile' never routes back to 'profile'",
     "starting_node: ask_name"),
])
def test_a_goal_that_leaves_the_loop_is_refused_naming_the_goal_and_the_node(tmp_path, body, message, line_of):
    text = GOALS.replace(
        "      ann: {consequences: [{type: mutate_state, operation: set, field: computed.name, value: Ann}], "
        "next_node: profile}", body)
    if "never" in message:
        text = text.replace("next_node: profile}\n  ask_email", "next_node: ask_name}\n  ask_email")
    (tmp_path / "workflow.yaml").write_text(text)
    done = cli("validate", "workflow.yaml", cwd=tmp_path)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if line_of in row)
    assert done.returncode == 2
    assert f"workflow.yaml:{line}:" in done.stdout and message in done.stdout, done.stdout


def test_a_route_to_default_error_needs_a_default_error(tmp_path):
    (tmp_path / "workflow.yaml").write_text(GOALS.replace("default_error: failed\n", ""))
    done = cli("validate", "workflow.yaml", cwd=tmp_path)
    assert done.returncode == 2 and "routes to default_error, and the workflow has no `default_error`" in done.stdout


def test_graph_draws_a_composite_as_one_box_or_expanded(tmp_path):
    (tmp_path / "workflow.yaml").write_text(WORKFLOW)
    drawn = cli("graph", "workflow.yaml", cwd=tmp_path)
    assert drawn.returncode == 0, drawn.stderr
    assert 'route[/"route"\\]' in drawn.stdout and 'ask_delete[/"ask_delete"\\]' in drawn.stdout
    assert "route__" not in drawn.stdout and "ask_delete__" not in drawn.stdout  # no generated node shows
    assert "_start --> route\n" in drawn.stdout
    # labelled by the generated node the route leaves from: the first case's action, or the last case's false
    assert 'route -->|"case_0__act: on_success, case_1: on_false"| ask_delete' in drawn.stdout
    assert 'ask_delete -->|"gate: on_false"| kept' in drawn.stdout
    expanded = cli("graph", "workflow.yaml", "--expand", cwd=tmp_path)
    assert 'ask_delete__gate{"ask_delete__gate"}' in expanded.stdout and "ask_delete[/" not in expanded.stdout


def test_the_by_hand_rules_of_a_skill_name_the_composites_and_their_nodes(tmp_path):
    folder = tmp_path / "composites"
    folder.mkdir()
    (folder / "workflow.yaml").write_text(WORKFLOW.replace('version: "1.0.0"\n',
                                                           'version: "1.0.0"\ndescription: Deletes files.\n'))
    done = cli("skill", folder)
    assert done.returncode == 0, done.stderr
    rules = (folder / "without-wfexec.md").read_text()
    assert "- `ask_delete` (confirm): `ask_delete__ask`, `ask_delete__gate`, `ask_delete__act`" in rules
    assert "- `route` (gated_action): `route__case_0`, `route__case_0__act`, `route__case_1`" in rules
    assert "| `ask_delete__ask` | Delete ${input.size} files? |" in (folder / "SKILL.md").read_text()


def test_a_validation_gate_and_a_states_result_route_into_a_composite(tmp_path):
    (tmp_path / "flow").mkdir()
    (tmp_path / "flow" / "START.sh").write_text('echo "<result>DIRTY</result>"\n')
    text = WORKFLOW.replace("start_node: route\n", "start_node: gate\n").replace("nodes:\n", """nodes:
  gate:
    type: validation_gate
    validations:
      - {type: evaluate_expression, expression: "input.size >= 0"}
    on_valid: scan
    on_invalid: route
  scan:
    type: states
    folder: flow
    on_result: {DIRTY: ask_delete}
    on_success: nothing
""", 1)
    (tmp_path / "workflow.yaml").write_text(text)
    checked = cli("validate", "workflow.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout
    done, result = run_json(tmp_path, "--input", "size=2", "--answer", "ask_delete__ask=yes")
    assert result["ending"] == "deleted", done.stdout + done.stderr
    # the invalid branch goes into the gated_action composite, whose else asks as well
    done, result = run_json(tmp_path, "--input", "size=-1", "--answer", "ask_delete__ask=no")
    assert [h["node"] for h in result["state"]["history"]][:2] == ["gate", "route__case_0"]
    assert result["ending"] == "nothing"
