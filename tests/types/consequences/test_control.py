"""foreach and dynamic_route, run for real through workflows."""

from __future__ import annotations


import pytest

import wfexec
from wfexec.language.diagnostics import WorkflowError
from conftest import one_action


SOURCES = [{"name": "alpha", "url": "https://a"}, {"name": "beta", "url": "https://b"}]


# --------------------------------------------------------------------------- #
# foreach

def test_foreach_item_and_index_reach_nested_templates(run_yaml):
    result, _ = run_yaml("""
        name: loop
        version: "1.0"
        start_node: each
        initial_state:
          computed:
            sources:
              - {name: alpha, url: "https://a"}
              - {name: beta, url: "https://b"}
        nodes:
          each:
            type: action
            actions:
              - type: foreach
                items: ${computed.sources}
                actions:
                  - type: append_state
                    field: computed.labels
                    value: "${index}:${item.name}"
                  - type: set_state
                    field: computed.urls.${item.name}
                    value: ${item.url}
                  - type: set_state
                    field: computed.last
                    value: ${item}
            on_success: done
        endings:
          done: {type: success, message: "labels ${computed.labels}"}
    """)
    assert result.type == "success"
    computed = result.state["computed"]
    assert computed["labels"] == ["0:alpha", "1:beta"]
    assert computed["urls"] == {"alpha": "https://a", "beta": "https://b"}
    assert computed["last"] == {"name": "beta", "url": "https://b"}  # a whole `${item}` keeps its type
    assert "item" not in result.state and "index" not in result.state  # locals never leak into state


def test_foreach_as_and_index_as_rename_the_locals(run_yaml):
    result, _ = run_yaml(one_action(
        {"type": "foreach", "items": "${computed.sources}", "as": "source", "index_as": "n",
         "actions": [{"type": "append_state", "field": "computed.out", "value": "${n + 1}. ${source.url}"}]},
        initial_state={"computed": {"sources": SOURCES}}))
    assert result.type == "success"
    assert result.state["computed"]["out"] == ["1. https://a", "2. https://b"]


def test_nested_foreach_sees_both_loops(run_yaml):
    groups = [{"name": "docs", "files": ["a.md", "b.md"]}, {"name": "src", "files": ["c.py"]}]
    result, _ = run_yaml(one_action(
        {"type": "foreach", "items": "${computed.groups}", "as": "group", "index_as": "g",
         "actions": [{"type": "foreach", "items": "${group.files}", "as": "file",
                      "actions": [{"type": "append_state", "field": "computed.paths",
                                   "value": "${g}.${index} ${group.name}/${file}"}]}]},
        initial_state={"computed": {"groups": groups}}))
    assert result.type == "success"
    assert result.state["computed"]["paths"] == ["0.0 docs/a.md", "0.1 docs/b.md", "1.0 src/c.py"]


def test_foreach_over_a_mapping_gives_key_value_pairs(run_yaml):
    result, _ = run_yaml(one_action(
        {"type": "foreach", "items": "${computed.versions}",
         "actions": [{"type": "append_state", "field": "computed.out", "value": "${item.key}=${item.value}"}]},
        initial_state={"computed": {"versions": {"python": "3.11", "node": "20"}}}))
    assert result.type == "success"
    assert result.state["computed"]["out"] == ["python=3.11", "node=20"]


def test_foreach_over_an_empty_list_runs_nothing(run_yaml):
    result, _ = run_yaml(one_action(
        {"type": "foreach", "items": "${computed.none}",
         "actions": [{"type": "set_state", "field": "computed.touched", "value": True}]},
        initial_state={"computed": {"none": []}}))
    assert result.type == "success"
    assert "touched" not in result.state["computed"]


def test_foreach_walks_the_list_as_it_was_when_it_started(run_yaml):
    result, _ = run_yaml(one_action(
        {"type": "foreach", "items": "${computed.things}",
         "actions": [{"type": "append_state", "field": "computed.things", "value": "${item}!"}]},
        initial_state={"computed": {"things": ["a", "b"]}}))
    assert result.type == "success"
    assert result.state["computed"]["things"] == ["a", "b", "a!", "b!"]


@pytest.mark.parametrize("items, shown", [("a string", "a str"), (None, "got null"), (7, "a int")])
def test_foreach_over_a_non_list_fails(run_yaml, items, shown):
    result, _ = run_yaml(one_action(
        {"type": "foreach", "items": "${computed.items}",
         "actions": [{"type": "set_state", "field": "computed.touched", "value": True}]},
        initial_state={"computed": {"items": items}}))
    assert result.type == "failure"
    assert result.message.startswith("foreach failed: foreach needs a list")
    assert shown in result.message
    assert "touched" not in result.state["computed"]


def test_first_nested_failure_stops_the_loop_and_names_the_item(run_yaml):
    result, _ = run_yaml(one_action(
        {"type": "foreach", "items": ["done", "nowhere", "done"],
         "actions": [{"type": "append_state", "field": "computed.seen", "value": "${item}"},
                     {"type": "dynamic_route", "action": "${item}"}]}))
    assert result.type == "failure"
    assert result.message == ("foreach failed: item 1 (nowhere): dynamic_route failed: "
                               "'nowhere' is neither a node nor an ending")
    # mutations before the failure persist; the third item never ran
    assert result.state["computed"]["seen"] == ["done", "nowhere"]


def test_unknown_name_in_a_nested_template_fails_with_the_name(run_yaml):
    result, _ = run_yaml(one_action(
        {"type": "foreach", "items": [{"name": "x"}],
         "actions": [{"type": "append_state", "field": "computed.out", "value": "${itme.name}"}]}))
    assert result.type == "failure"
    assert "item 0" in result.message and "itme" in result.message


def test_nested_actions_are_checked_at_load(write_workflow):
    path = write_workflow(one_action(
        {"type": "foreach", "items": [1], "actions": [{"type": "set_stat", "field": "computed.x", "value": 1}]}))
    errors = [d for d in wfexec.validate(path) if d.severity == "error"]
    assert [d.code for d in errors] == ["unknown-consequence"]
    assert "set_state" in errors[0].hint


@pytest.mark.parametrize("extra", [{"as": "not a name"}, {"actions": []}, {"actions": "${computed.calls}"}])
def test_foreach_parameters_are_checked_at_load(run_yaml, extra):
    call = {"type": "foreach", "items": [1], "actions": [{"type": "set_state", "field": "computed.x",
                                                          "value": 1}], **extra}
    with pytest.raises(WorkflowError):
        run_yaml(one_action(call))


def test_foreach_as_equal_to_index_as_fails(run_yaml):
    result, _ = run_yaml(one_action(
        {"type": "foreach", "items": [1], "as": "x", "index_as": "x",
         "actions": [{"type": "set_state", "field": "computed.x", "value": 1}]}))
    assert result.type == "failure"
    assert "both 'x'" in result.message


# --------------------------------------------------------------------------- #
# dynamic_route

ROUTER = """
    name: router
    version: "1.0"
    start_node: route
    nodes:
      route:
        type: action
        actions:
          - type: dynamic_route
            action: ${computed.choice}
        on_success: ${computed.dynamic_target}
        on_failure: bad_route
      refresh:
        type: action
        actions:
          - type: set_state
            field: computed.did
            value: refresh
        on_success: done
      add_source:
        type: action
        actions:
          - type: set_state
            field: computed.did
            value: add
        on_success: done
    endings:
      done: {type: success, message: "did ${computed.did}"}
      cancelled: {type: cancelled, message: "nothing done"}
      bad_route: {type: error, message: "${computed.last_error}"}
"""


@pytest.mark.parametrize("choice, did", [("refresh", "refresh"), ("add_source", "add")])
def test_dynamic_route_routes_through_on_success_template(run_yaml, choice, did):
    result, _ = run_yaml(ROUTER, overrides={"computed.choice": choice})
    assert result.ending == "done"
    assert result.message == f"did {did}"
    assert result.state["computed"]["dynamic_target"] == choice
    assert [(h["node"], h["target"]) for h in result.state["history"]] == [("route", choice), (choice, "done")]


def test_dynamic_route_may_name_an_ending(run_yaml):
    result, _ = run_yaml(ROUTER, overrides={"computed.choice": "cancelled"})
    assert result.ending == "cancelled" and result.type == "cancelled"


def test_dynamic_route_to_an_unknown_node_fails_the_action(run_yaml):
    result, _ = run_yaml(ROUTER, overrides={"computed.choice": "refrsh"})
    assert result.ending == "bad_route"
    assert result.message == "dynamic_route failed: 'refrsh' is neither a node nor an ending"
    assert "dynamic_target" not in result.state["computed"]


def test_dynamic_route_to_an_empty_name_fails(run_yaml):
    result, _ = run_yaml(ROUTER, overrides={"computed.choice": "  "})
    assert result.ending == "bad_route"
    assert "`action` is empty" in result.message
