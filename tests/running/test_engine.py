"""The run loop and the five node types of the seed, through real workflows."""

from __future__ import annotations

from textwrap import dedent

import pytest

import wfexec

from wfexec.exit_codes import exit_code_for
from wfexec.running.engine import EntryGateFailed, RunError, RunStopped
from wfexec.running.prompts import NeedsAnswer

ENDINGS = """
endings:
  done: {type: success, message: "done"}
  failed: {type: error, message: "failed: ${computed.last_error}"}
"""


def test_action_runs_in_order_and_first_failure_skips_the_rest(run_yaml):
    result, _ = run_yaml(dedent("""
        name: t
        version: 1
        start_node: work
        nodes:
          work:
            type: action
            actions:
              - {type: set_state, field: computed.a, value: 1}
              - {type: append_state, field: computed.a, value: 2}
              - {type: set_state, field: computed.never, value: true}
            on_success: done
            on_failure: failed
    """) + ENDINGS)
    assert result.ending == "failed"
    assert result.state["computed"]["a"] == 1          # partial mutations persist
    assert "never" not in result.state["computed"]
    assert "not a list" in result.state["computed"]["last_error"]
    entry = result.state["history"][0]
    assert entry["node"] == "work" and entry["type"] == "action" and entry["target"] == "failed"
    assert entry["outcome"]["success"] is False and entry["outcome"]["failed_action"] == 1
    assert result.message.startswith("failed: append_state failed")


@pytest.mark.parametrize("trace", [False, True])  # traced, each call takes its handler instead of its direct form
def test_an_action_whose_expression_fails_goes_to_on_failure_after_the_actions_before_it(run_yaml, trace):
    result, _ = run_yaml(dedent("""
        name: t
        version: 1
        start_node: work
        nodes:
          work:
            type: action
            actions:
              - {type: compute, expression: "1 + 1", store_as: computed.a}
              - {type: compute, expression: "nothing.here.at_all", store_as: computed.b}
              - {type: set_state, field: computed.never, value: "${computed.a}"}
            on_success: done
            on_failure: failed
    """) + ENDINGS, trace=trace)
    assert result.ending == "failed" and result.state["computed"]["a"] == 2
    assert "b" not in result.state["computed"] and "never" not in result.state["computed"]
    assert result.state["computed"]["last_error"].startswith("compute failed: `nothing.here.at_all` failed")
    assert result.state["history"][0]["outcome"] == {
        "success": False, "error": result.state["computed"]["last_error"], "failed_action": 1}


def test_action_without_on_failure_is_a_run_error_naming_the_node(run_yaml):
    with pytest.raises(RunError) as caught:
        run_yaml(dedent("""
            name: t
            version: 1
            start_node: work
            nodes:
              work:
                type: action
                actions:
                  - {type: rollback_checkpoint, name: nope}
                on_success: done
        """) + ENDINGS.replace("  failed:", "  unused:"))
    assert caught.value.node == "work"
    assert "no on_failure" in caught.value.message
    assert "workflow.yaml:" in caught.value.format()


@pytest.mark.parametrize("branches", ["{true: yes_end, false: no_end}", "{on_true: yes_end, on_false: no_end}"])
def test_conditional_accepts_seed_and_v3_branch_names(run_yaml, branches):
    workflow = f"""
        name: t
        version: 1
        start_node: check
        initial_state: {{flags: {{ready: true}}}}
        nodes:
          check:
            type: conditional
            condition: {{type: flag_set, flag: ready}}
            branches: {branches}
        endings:
          yes_end: {{type: success, message: "yes"}}
          no_end: {{type: success, message: "no"}}
    """
    result, _ = run_yaml(workflow)
    assert result.ending == "yes_end"
    assert result.state["history"][0]["outcome"] == {"branch": "true"}


def test_conditional_audit_evaluates_every_condition_without_short_circuit(run_yaml):
    result, _ = run_yaml(dedent("""
        name: t
        version: 1
        start_node: check
        initial_state: {count: 3}
        nodes:
          check:
            type: conditional
            condition:
              type: all_of
              conditions:
                - {type: evaluate_expression, expression: "count > 5", error_message: "count is only ${count}"}
                - {type: state_not_null, field: count}
                - {type: flag_set, flag: missing}
            audit: {enabled: true, output: computed.audit, messages: {flag_set: "flag missing"}}
            branches: {on_true: done, on_false: done}
    """) + ENDINGS)
    audit = result.state["computed"]["audit"]
    assert audit["passed"] is False
    assert (audit["total"], audit["passed_count"], audit["failed_count"]) == (3, 1, 2)
    assert [r["passed"] for r in audit["results"]] == [False, True, False]
    assert audit["results"][0]["message"] == "count is only 3"
    assert audit["results"][2]["message"] == "flag missing"


def test_validation_gate_evaluates_all_and_collects_messages(run_yaml):
    result, _ = run_yaml(dedent("""
        name: t
        version: 1
        start_node: gate
        initial_state: {source_id: docs, name: ""}
        nodes:
          gate:
            type: validation_gate
            validations:
              - {type: evaluate_expression, expression: "len(name) > 0", error_message: "name is empty"}
              - {type: state_not_null, field: source_id, error_message: "no source"}
              - {type: state_equals, field: source_id, value: other, error_message: "Source '${source_id}' exists"}
            on_valid: done
            on_invalid: invalid
        endings:
          done: {type: success, message: "valid"}
          invalid: {type: failure, message: "${computed.validation_errors.join('; ')}"}
    """))
    assert result.ending == "invalid"
    assert result.message == "name is empty; Source 'docs' exists"
    assert result.state["computed"]["validation_errors"] == ["name is empty", "Source 'docs' exists"]


PROMPT = """
name: t
version: 1
start_node: ask
nodes:
  ask:
    type: user_prompt
    prompt:
      question: "Proceed?"
      header: Confirm
      options:
        - {id: yes, label: "Yes, go", description: "do it"}
        - {id: no, label: "No", description: "stop"}
    on_response:
      yes:
        consequence:
          - {type: set_flag, flag: go, value: true}
        next_node: done
      no: {next_node: stopped}
      other:
        consequences:
          - {type: set_state, field: computed.note, value: "${user_responses.ask.raw.text}"}
        next_node: done
endings:
  done: {type: success, message: "go=${flags.go ?? false}"}
  stopped: {type: cancelled, message: "stopped"}
"""


@pytest.mark.parametrize("given, ending, stored", [
    ("yes", "done", {"id": "yes", "raw": {"label": "Yes, go"}}),
    ("Yes, go", "done", {"id": "yes", "raw": {"label": "Yes, go"}}),   # a label answers too
    ("no", "stopped", {"id": "no", "raw": {"label": "No"}}),
    ("later, maybe", "done", {"id": "other", "raw": {"text": "later, maybe"}, "text": "later, maybe"}),
])
def test_user_prompt_answers_route_and_are_stored(run_yaml, given, ending, stored):
    result, _ = run_yaml(PROMPT, answers={"ask": given})
    assert result.ending == ending
    assert result.state["user_responses"]["ask"] == stored
    if stored["id"] == "other":
        assert result.state["computed"]["note"] == "later, maybe"
    if stored["id"] == "yes":
        assert result.state["flags"]["go"] is True


def test_user_prompt_without_answer_raises_needs_answer_with_the_options(run_yaml):
    with pytest.raises(NeedsAnswer) as caught:
        run_yaml(PROMPT)
    question = caught.value.question
    assert question.node == "ask"
    assert [c.id for c in question.choices] == ["yes", "no"]
    assert question.allow_other


def test_user_prompt_options_from_state_route_selected(run_yaml):
    result, _ = run_yaml("""
        name: t
        version: 1
        start_node: pick
        initial_state:
          corpora:
            - {name: react, title: "React docs"}
            - {name: vue, title: "Vue docs"}
        nodes:
          pick:
            type: user_prompt
            prompt:
              question: Which corpus?
              options_from_state: corpora
              option_mapping: {id: name, label: "${item.title} (#${index})"}
            on_response:
              selected:
                consequences:
                  - {type: set_state, field: computed.chosen, value: "${user_responses.pick.selected.name}"}
                next_node: done
        endings:
          done: {type: success, message: "${computed.chosen}"}
    """, answers={"pick": "Vue docs (#1)"})
    assert result.message == "vue"
    assert result.state["user_responses"]["pick"]["selected"] == {"name": "vue", "title": "Vue docs"}


def test_a_list_of_answers_answers_a_question_each_time_the_loop_returns(run_yaml):
    result, _ = run_yaml("""
        name: t
        version: 1
        start_node: ask
        initial_state: {picks: []}
        nodes:
          ask:
            type: user_prompt
            prompt:
              question: Another?
              options: [{id: more, label: More}, {id: stop, label: Stop}]
            on_response:
              more:
                consequence: [{type: append_state, field: picks, value: x}]
                next_node: ask
              stop: {next_node: done}
        endings:
          done: {type: success, message: "${len(picks)}"}
    """, answers={"ask": ["more", "more", "stop"]})
    assert result.message == "2"


def test_step_budget_stops_an_endless_loop_naming_the_node(run_yaml):
    with pytest.raises(RunStopped) as caught:
        run_yaml(dedent("""
            name: t
            version: 1
            start_node: spin
            nodes:
              spin:
                type: action
                actions: [{type: set_flag, flag: x}]
                on_success: spin
        """) + ENDINGS, max_steps=50)
    assert "more than 50 steps" in caught.value.message
    assert caught.value.node == "spin"
    assert exit_code_for(caught.value) == 4


def test_max_visits_stops_the_loop(run_yaml):
    with pytest.raises(RunStopped) as caught:
        run_yaml(dedent("""
            name: t
            version: 1
            start_node: spin
            nodes:
              spin:
                type: action
                max_visits: 3
                actions: [{type: set_flag, flag: x}]
                on_success: spin
        """) + ENDINGS)
    assert "max_visits (3)" in caught.value.message


def test_dynamic_target_is_rendered_and_checked_at_run_time(run_yaml):
    result, _ = run_yaml(dedent("""
        name: t
        version: 1
        start_node: route
        initial_state: {goal: second}
        nodes:
          route:
            type: action
            actions: [{type: set_state, field: computed.next, value: "${goal}"}]
            on_success: "${computed.next}"
          second:
            type: action
            actions: []
            on_success: done
    """) + ENDINGS)
    assert [h["node"] for h in result.state["history"]] == ["route", "second"]

    with pytest.raises(RunError) as caught:
        run_yaml(dedent("""
            name: t
            version: 1
            start_node: route
            initial_state: {goal: nowhere}
            nodes:
              route:
                type: action
                actions: []
                on_success: "${goal}"
        """) + ENDINGS)
    assert "'nowhere' is neither a node nor an ending" in caught.value.message


def test_entry_preconditions_fail_before_any_node_runs(run_yaml, tmp_path):
    with pytest.raises(EntryGateFailed) as caught:
        run_yaml(dedent("""
            name: t
            version: 1
            start_node: work
            entry_preconditions:
              - {type: file_exists, path: config.yaml, error_message: "No config.yaml here; run init first"}
            nodes:
              work: {type: action, actions: [], on_success: done}
        """) + ENDINGS)
    assert caught.value.message == "Entry gate failed: No config.yaml here; run init first"
    (tmp_path / "config.yaml").write_text("a: 1\n")
    result, _ = run_yaml(dedent("""
        name: t
        version: 1
        start_node: work
        entry_preconditions: [{type: file_exists, path: config.yaml}]
        nodes:
          work: {type: action, actions: [], on_success: done}
    """) + ENDINGS)
    assert result.ending == "done"


def test_inputs_are_checked_against_input_schema_and_placed_in_state(run_yaml):
    workflow = """
        name: t
        version: 1
        start_node: work
        input_schema:
          url: {type: string, required: true}
          depth: {type: integer, default: 1}
        nodes:
          work:
            type: action
            actions: [{type: compute, expression: "url + '#' + input.depth", store_as: computed.r}]
            on_success: done
        endings:
          done: {type: success, message: "${computed.r}"}
    """
    result, _ = run_yaml(workflow, inputs={"url": "https://x"})
    assert result.message == "https://x#1"
    from wfexec.language.inputs import InputError

    with pytest.raises(InputError, match="missing required input 'url'"):
        run_yaml(workflow)
    with pytest.raises(InputError, match="unknown input 'ulr'.*did you mean 'url'"):
        run_yaml(workflow, inputs={"ulr": "x"})


def test_checkpoint_rollback_restores_state_but_keeps_history(run_yaml):
    result, _ = run_yaml("""
        name: t
        version: 1
        start_node: work
        initial_state: {count: 1}
        nodes:
          work:
            type: action
            actions:
              - {type: create_checkpoint, name: before}
              - {type: set_state, field: count, value: 99}
              - {type: set_flag, flag: dirty}
              - {type: rollback_checkpoint, name: before}
            on_success: done
        endings:
          done: {type: success, message: "${count} ${flags.dirty ?? 'clean'}"}
    """)
    assert result.message == "1 clean"
    assert "before" in result.state["checkpoints"]
    assert "history" not in result.state["checkpoints"]["before"]


def test_ending_output_summary_and_templates_keep_types(run_yaml):
    result, _ = run_yaml("""
        name: t
        version: 1
        start_node: work
        initial_state: {items: [a, b]}
        nodes:
          work: {type: action, actions: [], on_success: done}
        endings:
          done:
            type: success
            message: "${len(items)} items"
            summary: {first: "${items[0]}", all: "${items}"}
            output: {items: "${items}", count: "${len(items)}"}
    """)
    assert result.message == "2 items"
    assert result.summary == {"first": "a", "all": ["a", "b"]}
    assert result.output == {"items": ["a", "b"], "count": 2}


def test_a_template_that_throws_routes_on_failure(run_yaml):
    result, _ = run_yaml(dedent("""
        name: t
        version: 1
        start_node: work
        nodes:
          work:
            type: action
            actions: [{type: set_state, field: computed.x, value: "${computed.not_there.below}"}]
            on_success: done
            on_failure: failed
    """) + ENDINGS)
    assert result.ending == "failed"
    assert "TypeError" in result.state["computed"]["last_error"]
    assert "computed.not_there.below" in result.state["computed"]["last_error"]


def test_a_missing_name_is_undefined_as_in_javascript(run_yaml):
    result, _ = run_yaml(dedent("""
        name: t
        version: 1
        start_node: work
        nodes:
          work:
            type: action
            actions: [{type: set_state, field: computed.x, value: "${computed.not_there || 'fallback'}"}]
            on_success: done
            on_failure: failed
    """) + ENDINGS)
    assert result.ending == "done" and result.state["computed"]["x"] == "fallback"


def test_a_condition_that_throws_is_a_one_line_error_with_the_line(run_yaml):
    with pytest.raises(RunError) as caught:
        run_yaml(dedent("""
            name: t
            version: 1
            start_node: check
            nodes:
              check:
                type: conditional
                condition: {type: evaluate_expression, expression: "undefined_thing.size > 1"}
                branches: {true: done, false: done}
        """) + ENDINGS)
    text = caught.value.format()
    assert "TypeError" in text and "undefined_thing" in text
    assert "workflow.yaml:8:" in text and "node 'check'" in text


def test_effects_include_calls_nested_in_foreach_and_composites(write_workflow):
    path = write_workflow("""
        name: t
        version: 1
        start_node: work
        entry_preconditions: [{type: tool_available, tool: git}]
        nodes:
          work:
            type: action
            actions:
              - type: foreach
                items: [a, b]
                actions:
                  - {type: run_command, command: [echo, "${item}"]}
            on_success: check
            on_failure: done
          check:
            type: conditional
            condition:
              type: any_of
              conditions: [{type: file_exists, path: x}, {type: flag_set, flag: y}]
            branches: {true: done, false: done}
        endings:
          done: {type: success, message: ok}
    """)
    effects = wfexec.load(path).effects()
    assert effects["process"] == {"run_command"}
    assert effects["files"] == {"file_exists", "tool_available"}  # a PATH lookup reads folders, starts nothing


def test_a_failing_consequence_in_an_answer_handler_stops_with_a_one_line_error(run_yaml):
    with pytest.raises(RunError) as caught:
        run_yaml("""
            name: t
            version: 1
            start_node: ask
            nodes:
              ask:
                type: user_prompt
                prompt:
                  question: Go?
                  options: [{id: go, label: Go}, {id: stop, label: Stop}]
                on_response:
                  go:
                    consequence: [{type: read_file, path: missing.txt, store_as: computed.text}]
                    next_node: done
                  stop: {next_node: done}
            endings:
              done: {type: success, message: ok}
        """, answers={"ask": "go"})
    assert caught.value.node == "ask"
    assert "the answer's read_file failed" in caught.value.message
    assert "workflow.yaml:13:23:" in caught.value.format()


def test_effects_include_sub_workflows(tmp_path):
    (tmp_path / "child.yaml").write_text(dedent("""
        name: child
        version: 1
        start_node: run
        nodes:
          run: {type: action, actions: [{type: run_command, command: [echo, hi]}], on_success: done}
        endings:
          done: {type: success, message: ok}
    """))
    (tmp_path / "workflow.yaml").write_text(dedent("""
        name: parent
        version: 1
        start_node: call
        nodes:
          call: {type: reference, workflow: child.yaml, next_node: done}
        endings:
          done: {type: success, message: ok}
    """))
    assert wfexec.load(tmp_path / "workflow.yaml").effects() == {"process": {"run_command"}}


def test_an_older_files_delegate_on_an_ending_hands_over_as_v8s_behavior_does(tmp_path):
    # hiivmind-corpus init's `success_with_source` ending: `delegate: {skill, context}` beside its message.
    (tmp_path / "workflow.yaml").write_text(dedent("""\
        name: init
        version: "1"
        start_node: scaffold
        initial_state: {source_url: "https://example.com/docs"}
        nodes:
          scaffold:
            type: action
            actions: [{type: set_state, field: computed.skill_root, value: "corpus"}]
            on_success: success_with_source
        endings:
          success_with_source:
            type: success
            message: "Delegating to add-source with ${source_url}"
            delegate:
              skill: hiivmind-corpus-add-source
              context: {source_url: "${source_url}", working_directory: "${computed.skill_root}"}
        """))
    assert wfexec.validate(tmp_path / "workflow.yaml") == []
    result = wfexec.run(tmp_path / "workflow.yaml")
    assert result.delegate == {"skill": "hiivmind-corpus-add-source",
                               "context": {"source_url": "https://example.com/docs", "working_directory": "corpus"}}
    from conftest import wfexec_in_process as cli

    shown = cli("run", "workflow.yaml", "--ephemeral", cwd=tmp_path)
    assert shown.stdout == "Delegating to add-source with https://example.com/docs\nNext: /hiivmind-corpus-add-source\n"
