"""The published schema of blueprint-lib v8 files (`wfexec schema --v8`, schemas/workflow-v8.schema.json) as
check-jsonschema uses it: it accepts the v8 workflows wfexec accepts (a tour of every node type and composite, the
workflows of the v8 tests, the composite fixtures) and refuses the mistakes wfexec refuses, each where it is written.

All files are checked in one check-jsonschema run (its JSON output names the file of each error)."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml

import test_v8_catalogue as catalogue
import test_v8_composites as composites
import test_v8_format as v8_format
from conftest import ROOT, wfexec_in_process as cli
from test_editor_schema import CHECK

V8_SCHEMA = ROOT / "schemas" / "workflow-v8.schema.json"
FIXTURES = ROOT / "tests" / "fixtures" / "v8_composites"

TOUR = """\
name: v8-tour
version: "1.0.0"
description: Every v8 node type and composite once.
trust_mode: stateless
start_node: setup
default_error: failed
x-owner: tests
data_mcps:
  tools: "eightball-tools@^1"
payload_types:
  ask_params@1:
    question: "string (min_length=1)"
declared_effects:
  tools: {tools: [shake], max_call_count: 2}
  network: forbidden
entry_preconditions:
  - {type: python_module_available, module: json}
input_schema:
  size: {type: integer, required: true}
output_schema:
  size: {type: integer, description: the size given}
initial_state:
  computed: {items: [{name: a}, {name: b}]}
nodes:
  setup:
    type: action
    description: count and ask the MCP tool
    consequences:
      - {type: mutate_state, operation: increment, field: computed.rounds}
      - type: mcp_tool_call
        tool: tools.shake
        params: {question: "Ready?"}
        params_type: ask_params@1
        store_as: computed.answer
      - {type: log_node, node: setup, outcome: counted}
    on_success: by_string
    on_failure: failed
  by_string:
    type: conditional
    condition: "input.size > 3"
    on_true: by_combinator
    on_false: by_precondition
    on_unknown: failed
  by_combinator:
    type: conditional
    condition:
      any:
        - "input.size > 100"
        - {all: ["input.size > 3", {type: state_check, field: computed.rounds, operator: equals, value: 1}]}
    on_true: by_precondition
    on_false: failed
  by_precondition:
    type: conditional
    condition:
      type: all_of
      conditions: ["input.size > 0", {type: state_check, field: computed.rounds, operator: not_null}]
    on_true: pick
    on_false: failed
  pick:
    type: user_prompt
    prompt:
      question: Which one?
      header: Pick
      options:
        - {id: doc, label: Read the notes, description: a document step}
        - {id: more, label: Choose from state}
    on_response:
      doc: read_notes
      more:
        consequences: [{type: mutate_state, operation: set, field: computed.more, value: true}]
        next_node: pick_item
  pick_item:
    type: user_prompt
    prompt:
      question: Which item?
      header: Item
      options_from_state: computed.items
      options: {id: item.name, label: "'Item ' + item.name"}
    on_response:
      selected: scripted
  read_notes:
    type: reference
    doc: notes.md
    store_as: computed.notes
    next_node: scripted
  scripted:
    type: states
    states:
      1_START.sh: "echo '<result>done</result>'"
    on_success: gate
    on_failure: failed
  gate:
    type: validation_gate
    validations:
      - {type: state_check, field: computed.rounds, operator: not_null, error_message: no rounds}
    on_valid: validated
    on_invalid: failed
  validated:
    type: action
    consequences: [{type: set_flag, flag: validated, value: true}]
    on_success: route
  route:
    type: gated_action
    when:
      - condition: "input.size > 10"
        consequences: [{type: mutate_state, operation: set, field: computed.big, value: true}]
        next_node: go_ahead
      - condition: {none: ["input.size > 5"]}
        next_node: go_ahead
    else: go_ahead
    on_unknown: failed
  go_ahead:
    type: confirm
    prompt: "Build ${input.size} things?"
    header: Build
    store_as: computed.approved
    on_confirmed:
      label: Build them
      consequences: [{type: mutate_state, operation: set, field: computed.building, value: true}]
      next_node: build
    on_declined: {label: Not now, next_node: declined}
  build:
    type: goal_seek
    description: two goals
    goals:
      - {name: first, starting_node: make_first, run_as: subagent}
      - name: second
        starting_node: make_second
        success_condition: {all: ["computed.second == true"]}
    max_iterations: 4
    on_complete: done
    on_abort: declined
    on_budget_exceeded: again
  make_first:
    type: action
    consequences: [{type: mutate_state, operation: set, field: computed.first, value: true}]
    on_success: build
  make_second:
    type: action
    consequences: [{type: mutate_state, operation: set, field: computed.second, value: true}]
    on_success: build
  done:
    type: ending
    outcome: success
    message: "Built ${input.size}"
    summary: {size: "${input.size}"}
    details: both goals met
    consequences: [{type: display, content: finished}]
    behavior: {type: delegate, skill: next-skill, args: "${input.size}", context: {size: "${input.size}"}}
  declined:
    type: ending
    outcome: cancelled
    behavior: {type: silent}
  again:
    type: ending
    outcome: indeterminate
    message: Over budget; starting again.
    behavior: {type: restart, target_node: setup, max_restarts: 2, reset_state: true}
  failed:
    type: ending
    outcome: error
    message: "Failed at ${current_node}: ${computed.last_error}"
    recovery: {suggestion: try again, retry_node: setup}
"""

# The workflows the v8 tests run, as they write them.
TESTS_WORKFLOWS = {
    "v8_format.V8": v8_format.V8,
    "v8_format.RESTART": v8_format.RESTART,
    "v8_format.FAILS": v8_format.FAILS,
    "v8_composites.WORKFLOW": composites.WORKFLOW,
    "v8_composites.GOALS": composites.GOALS,
    "v8_catalogue.INTENT": catalogue.INTENT,
    "v8_catalogue.DYNAMIC": catalogue.workflow(catalogue.DYNAMIC, initial_state=catalogue.CANDIDATES),
    **{f"v8_catalogue.{name}": catalogue.workflow(getattr(catalogue, name))
       for name in ("COUNTER", "GATES", "SCRIPTED", "INSTALL", "SOURCES", "INLINE", "TOUR")},
}


def as_workflow(nodes_file: Path) -> str:
    """A composite fixture (nodes only, as blueprint-lib writes them) as a whole v8 file."""
    nodes = yaml.safe_load(nodes_file.read_text(encoding="utf-8"))
    return yaml.safe_dump({"name": "fixture", "version": "1", "start_node": next(iter(nodes)),
                           "default_error": "failed", "nodes": nodes}, sort_keys=False)


def fixture_id(path: Path) -> str:
    return "/".join(path.relative_to(FIXTURES).parts).removesuffix(".yaml")


FIXTURE_WORKFLOWS = {fixture_id(p): as_workflow(p) for p in sorted(FIXTURES.glob("[!_]*/*/*.yaml"))}
INVALID_FIXTURES = {fixture_id(p): as_workflow(p) for p in sorted(FIXTURES.glob("_invalid/*/input.yaml"))}
# Written for its expansion: its `state_check` compares with `greater_than`, an operator wfexec refuses too.
REFUSED_FIXTURES = {"gated_action/consequences_and_shorthands/" + kind: "condition.operator"
                    for kind in ("input", "expected")}

# name → (the change to TOUR, where the error is reported, words of its message: an unknown field's own name)
MISTAKES = {
    "an endings block": (lambda t: t + "endings:\n  other: {type: success, message: x}\n",
                         "$", "'endings'"),
    "an unknown node type": (lambda t: t.replace("    type: validation_gate", "    type: validation_step"),
                             "$.nodes.gate.type", "'validation_step' is not one of"),
    "a conditional without on_true": (lambda t: t.replace("    on_true: by_combinator\n", ""),
                                      "$.nodes.by_string", "'on_true' is a required property"),
    "a consequence with an unknown field": (
        lambda t: t.replace("field: computed.rounds}", "field: computed.rounds, by: 2}"),
        "$.nodes.setup.consequences[0]", "'by'"),
    "no default_error": (lambda t: t.replace("default_error: failed\n", ""),
                         "$", "'default_error' is a required property"),
    "an ending without an outcome": (lambda t: t.replace("    outcome: cancelled\n", ""),
                                     "$.nodes.declined", "'outcome' is a required property"),
    "an outcome v8 does not have": (lambda t: t.replace("outcome: cancelled", "outcome: postponed"),
                                    "$.nodes.declined.outcome", "'postponed' is not one of"),
    "a route on an ending": (lambda t: t.replace("    behavior: {type: silent}", "    on_success: done"),
                             "$.nodes.declined", "'on_success'"),
    "an unknown field in a composite": (lambda t: t.replace("    store_as: computed.approved\n",
                                                            "    store_as: computed.approved\n    timeout: 5\n"),
                                        "$.nodes.go_ahead", "'timeout'"),
    "an unknown consequence type": (lambda t: t.replace("{type: set_flag,", "{type: raise_flag,"),
                                    "$.nodes.validated.consequences[0].type", "'raise_flag' is not one of"),
}

# The classic spellings, which wfexec still reads in a v8 file; the v8 schema teaches v8's own.
CLASSIC_SPELLINGS = {
    "actions: on an action": (lambda t: t.replace("    description: count and ask the MCP tool\n    consequences:",
                                                  "    description: count and ask the MCP tool\n    actions:"),
                              "$.nodes.setup", "'actions'"),
    "branches: on a conditional": (lambda t: t.replace("    on_true: by_combinator\n    on_false: by_precondition\n",
                                                       "    branches: {on_true: by_combinator, "
                                                       "on_false: by_precondition}\n"),
                                   "$.nodes.by_string", "'branches'"),
}


def deepest(error: dict) -> tuple[str, str]:
    """(path, message) of the error check-jsonschema finds most specific: for a value no branch of a `oneOf`
    accepts, the error inside the branch meant."""
    error = error.get("best_deep_match", error)
    return error["path"], error["message"]


def reported(errors: list[dict], path: str, words: str) -> bool:
    return any(deepest(e)[0] == path and words in deepest(e)[1] for e in errors)


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> dict[str, list[dict]]:
    """Every workflow of this module checked against the v8 schema: name → the errors check-jsonschema reports."""
    if not Path(CHECK).exists():
        pytest.skip("check-jsonschema is not installed (pip install -e '.[test]')")
    folder = tmp_path_factory.mktemp("v8")
    workflows = {"tour": TOUR, **TESTS_WORKFLOWS, **FIXTURE_WORKFLOWS, **INVALID_FIXTURES,
                 **{name: change(TOUR) for name, (change, _, _) in {**MISTAKES, **CLASSIC_SPELLINGS}.items()}}
    files = {}
    for index, (name, text) in enumerate(workflows.items()):
        files[f"{index}.yaml"] = name
        (folder / f"{index}.yaml").write_text(textwrap.dedent(text), encoding="utf-8")
    done = subprocess.run([CHECK, "--output-format", "json", "--schemafile", str(V8_SCHEMA), *files], cwd=folder,
                          capture_output=True, text=True, timeout=300)
    report = json.loads(done.stdout)
    assert report["parse_errors"] == [], report["parse_errors"]
    errors: dict[str, list[dict]] = {name: [] for name in workflows}
    for error in report["errors"]:
        errors[files[error["filename"]]].append(error)
    return errors


def test_the_tour_is_a_workflow_wfexec_accepts(tmp_path):
    (tmp_path / "workflow.yaml").write_text(TOUR, encoding="utf-8")
    (tmp_path / "notes.md").write_text("# Notes\n", encoding="utf-8")
    done = cli("validate", "--strict", "workflow.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_tour_covers_every_node_type_composite_and_ending_behavior():
    nodes = yaml.safe_load(TOUR)["nodes"].values()
    schema = json.loads(V8_SCHEMA.read_text(encoding="utf-8"))
    assert {node["type"] for node in nodes} == set(schema["$defs"]["node"]["properties"]["type"]["enum"])
    assert {node["behavior"]["type"] for node in nodes if "behavior" in node} == {"silent", "delegate", "restart"}


@pytest.mark.parametrize("name", ["tour", *TESTS_WORKFLOWS, *FIXTURE_WORKFLOWS])
def test_check_jsonschema_accepts_the_v8_workflows_wfexec_accepts(verdicts, name):
    if name in REFUSED_FIXTURES:
        assert verdicts[name] and all(deepest(e)[0].endswith(REFUSED_FIXTURES[name]) for e in verdicts[name]), \
            verdicts[name]
    else:
        assert verdicts[name] == []


@pytest.mark.parametrize("name", INVALID_FIXTURES)
def test_check_jsonschema_refuses_the_composites_wfexec_refuses(verdicts, name):
    assert verdicts[name] != []
    assert all(e["path"].startswith("$.nodes.") for e in verdicts[name]), verdicts[name]


@pytest.mark.parametrize("mistake", MISTAKES)
def test_check_jsonschema_refuses_a_mistake_where_it_is_written(verdicts, mistake, tmp_path):
    change, path, words = MISTAKES[mistake]
    assert reported(verdicts[mistake], path, words), verdicts[mistake]
    (tmp_path / "workflow.yaml").write_text(change(TOUR), encoding="utf-8")
    (tmp_path / "notes.md").write_text("# Notes\n", encoding="utf-8")
    assert cli("validate", "workflow.yaml", cwd=tmp_path).returncode == 2  # wfexec refuses it too


@pytest.mark.parametrize("spelling", CLASSIC_SPELLINGS)
def test_the_v8_schema_teaches_the_v8_spelling(verdicts, spelling):
    _, path, words = CLASSIC_SPELLINGS[spelling]
    assert reported(verdicts[spelling], path, words), verdicts[spelling]
