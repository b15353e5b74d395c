"""Prompt (`.md`) states: checklist items 33–43, 57, 73 and 78 of reference/raymond-state-protocol.md §4,
and the hybrid md → sh → md fixture through the replay backend (issue 4).

Changed or skipped, with the reason:
- 37 (budget): DESIGN §4 checks the budget *before* each LLM call and stops the whole node, instead of
  overriding the reply with a made-up `<result>`. Tested: the call after the overspend never starts, and
  the run stops with spent vs budget (exit 4 for `wfexec states`; `on_failure` in a workflow, see
  test_protocol_node.py).
- 38 (model precedence): frontmatter > node `model` > backend default (`sonnet` for claude); the command
  line part is the lead's (`--backend claude:model=…`). Tested here and with the fake claude executable.
- 41: `{{workflow_id}}`, `{{agent_id}}` and `{{task_folder}}` are tested here; `{{ask_id}}` in
  test_protocol_faults.py.
- 43: a failed backend call names the state and, after three attempts, pauses its agent (here); an unreadable
  prompt file and usage limits in test_protocol_faults.py, limit detection with the fake claude in
  test_protocol_backends.py.
"""

from __future__ import annotations

import pytest
from protocol_support import FIXTURES, ScriptedBackend, run_folder, write_states

from wfexec.backends import create_backend
from wfexec.protocol.templates import render

POLICY_GOTO_NEXT = "---\nallowed_transitions:\n  - {tag: goto, target: NEXT}\n  - {tag: result}\n---\n"


def folder_of(tmp_path, **states):
    return write_states(tmp_path / "states", {name.replace("_md", ".md").replace("_sh", ".sh"): text
                                              for name, text in states.items()})


def test_item33_no_tag_then_a_tag_after_one_reminder(tmp_path):
    folder = folder_of(tmp_path, START_md=POLICY_GOTO_NEXT + "Do the thing.", NEXT_sh="echo '<result>n</result>'")
    backend = ScriptedBackend("I did it, no tag.", "<goto>NEXT</goto>")
    result, quiet = run_folder(folder, backend=backend, trace=True)
    assert result.result == "n"
    assert [r.attempt for r in backend.requests] == [1, 2]
    # Raymond's GenerateReminderPrompt, appended to the body as it is
    assert backend.requests[1].prompt == (
        "Do the thing.\n---\nREMINDER: Emit exactly one of these tags (target names are literal, not placeholders):"
        "\n\n1. <goto>NEXT</goto>\n2. <result>...</result>\n\nEmit exactly one of the above tags.\n---")
    assert "<goto>NEXT</goto>" in backend.requests[1].prompt
    assert backend.requests[1].session_id == "s1"  # the reminder resumes the session the failed turn made
    assert "re-prompting with a reminder (1/3)" in quiet.errors


def test_item21_frontmatter_whose_delimiters_end_in_blanks_is_the_policy_for_the_run_and_for_lint(tmp_path):
    from conftest import wfexec_in_process as cli

    front = "---  \nallowed_transitions:\n  - {tag: goto, target: NEXT}\n---\t\n"
    folder = folder_of(tmp_path, START_md=front + "Work.", NEXT_sh="echo '<result>n</result>'")
    backend = ScriptedBackend("Done, no tag.")
    result, _ = run_folder(folder, backend=backend)
    assert result.result == "n", result.error  # the implicit transition: the policy was read
    assert backend.requests[0].prompt == "Work."  # and the YAML was not sent as prompt text
    linted = cli("validate", "states", cwd=tmp_path)
    assert linted.returncode == 0 and linted.stdout == "", linted.stdout  # NEXT is reached, START no dead end
    assert "states: valid states" in linted.stderr


def test_item34_never_a_tag_fails_after_three_invocations(tmp_path):
    folder = folder_of(tmp_path, START_md=POLICY_GOTO_NEXT + "Go.", NEXT_sh="echo '<result>n</result>'")
    backend = ScriptedBackend("no", "still no", "nope", "never asked")
    result, _ = run_folder(folder, backend=backend)
    assert len(backend.requests) == 3
    assert result.error.startswith("main: START.md: no valid transition after 3 reminder attempts")


def test_item35_third_turn_is_accepted(tmp_path):
    folder = folder_of(tmp_path, START_md=POLICY_GOTO_NEXT + "Go.", NEXT_sh="echo '<result>n</result>'")
    backend = ScriptedBackend("<goto>NEXT</goto><goto>NEXT</goto>", "<reset>NEXT</reset>", "<goto>NEXT</goto>")
    result, _ = run_folder(folder, backend=backend)
    assert (result.result, len(backend.requests)) == ("n", 3)


def test_item36_cost_adds_up_across_reminders(tmp_path):
    folder = folder_of(tmp_path, START_md=POLICY_GOTO_NEXT + "Go.", NEXT_sh="echo '<result>n</result>'")
    backend = ScriptedBackend({"text": "none", "cost_usd": 0.10}, {"text": "<goto>NEXT</goto>", "cost_usd": 0.20})
    result, _ = run_folder(folder, backend=backend)
    assert result.cost_usd == pytest.approx(0.30)
    assert sum(r["cost_usd"] for r in result.outcome.records if r["kind"] == "markdown") == pytest.approx(0.30)


def test_item37_budget_is_checked_before_each_call_and_stops_the_run(tmp_path):
    folder = folder_of(tmp_path, START_md="Think.", AGAIN_md="Think more.")
    backend = ScriptedBackend({"text": "<goto>AGAIN</goto>", "cost_usd": 0.05}, "<result>never</result>")
    result, _ = run_folder(folder, backend=backend, budget_usd=0.01)
    assert (result.status, result.exit_code) == ("stopped", 4)
    assert len(backend.requests) == 1
    assert result.error == ("main: cost budget exceeded before the LLM call for AGAIN.md: spent $0.0500 of a "
                            "$0.0100 budget")
    # A zero budget allows scripts only.
    scripts = folder_of(tmp_path / "z", START_sh="echo '<result>free</result>'")
    assert run_folder(scripts, budget_usd=0)[0].result == "free"


def test_item38_model_and_effort_precedence(tmp_path):
    folder = folder_of(tmp_path, START_md="---\nmodel: OPUS\n---\nA <goto>NEXT</goto>", NEXT_md="B")
    backend = ScriptedBackend("<goto>NEXT</goto>", "<result>x</result>")
    run_folder(folder, backend=backend, model="haiku", effort="low")
    assert [(r.model, r.effort) for r in backend.requests] == [("opus", "low"), ("haiku", "low")]


def test_item39_implicit_transition_renders_its_input(tmp_path):
    folder = folder_of(
        tmp_path,
        START_md='---\nallowed_transitions: [{tag: goto, target: NEXT, input: "wf={{workflow_id}} in={{input}}"}]\n'
                 "---\nGo.",
        NEXT_sh='echo "<goto input=\\"fixed {{input}}\\">LAST</goto>"',
        LAST_sh='echo "<result>$RAYMOND_INPUT</result>"')
    backend = ScriptedBackend("Done, no tag needed.")
    result, _ = run_folder(folder, backend=backend, input="seed")
    assert result.outcome.records[0]["kind"] == "markdown"
    assert result.result == "fixed {{input}}"  # an explicit input is taken literally
    assert result.outcome.state.agent("main").steps == 3


def test_item39_implicit_input_chain(tmp_path):
    """Item 78: START → MIDDLE ("step1") → END ("step2") through implicit inputs."""
    def state(target, value):
        return f'---\nallowed_transitions: [{{tag: goto, target: {target}, input: "{value}"}}]\n---\nInput: {{{{input}}}}'

    folder = folder_of(tmp_path, START_md=state("MIDDLE", "step1"), MIDDLE_md=state("END", "{{input}}+step2"),
                       END_md="Input: {{input}}")
    backend = ScriptedBackend("ok", "ok", "<result>end</result>")
    run_folder(folder, backend=backend)
    assert [r.prompt for r in backend.requests] == ["Input: {{input}}", "Input: step1", "Input: step1+step2"]


def test_item40_force_implicit_ignores_the_reply(tmp_path):
    folder = folder_of(
        tmp_path,
        START_md='---\nallowed_transitions: [{tag: goto, target: NEXT, input: "{{agent_id}}"}]\nforce_implicit: true\n'
                 "---\nExplain the <reset> tag.",
        NEXT_sh='echo "<result>$RAYMOND_INPUT</result>"')
    backend = ScriptedBackend("Use <reset>SOMEWHERE_ELSE</reset> or <goto>A</goto><goto>B</goto>.")
    result, _ = run_folder(folder, backend=backend)
    assert (result.result, len(backend.requests)) == ("main", 1)


def test_item41_template_values(tmp_path):
    folder = folder_of(tmp_path, START_md="wf={{workflow_id}} agent={{agent_id}} in={{input}} old={{result}} "
                                          "task={{task_folder}} ask={{ask_id}}")
    backend = ScriptedBackend("<result>x</result>")
    result, _ = run_folder(folder, backend=backend, input="I")
    assert backend.requests[0].prompt == (f"wf={result.workflow_id} agent=main in=I old=I "
                                          f"task={folder.resolve()}/.wfexec/tasks/{result.workflow_id}/main "
                                          "ask={{ask_id}}")


def test_item42_unknown_frontmatter_field_warns_and_runs(tmp_path):
    folder = folder_of(tmp_path, START_md="---\ncolour: blue\n---\nGo.")
    result, quiet = run_folder(folder, backend=ScriptedBackend("<result>ran</result>"))
    assert result.result == "ran"
    assert "warning: START.md: unknown frontmatter field colour" in quiet.errors


def test_item43_a_backend_failure_names_the_state_and_pauses_its_agent_after_three_attempts(tmp_path):
    folder = folder_of(tmp_path, START_md="Go.")
    backend = create_backend("command:false")
    result, _ = run_folder(folder, backend=backend)
    assert result.error == ("main paused at START.md: main: START.md: the LLM backend failed: `false` exited with "
                            "status 1 (failed 3 times in a row)")
    assert result.exit_code == 4  # stopped: resume runs the state again


def test_item57_render_prompt():
    values = {"input": "x", "json": '{"a": [1, 2]}', "sneaky": "{{input}}"}
    assert render("{{status}} stays", values) == "{{status}} stays"
    assert render("{{input}} and {{input}}", values) == "x and x"
    assert render("{{json}}", values) == '{"a": [1, 2]}'
    assert render("{{sneaky}}", values) == "{{input}}"  # one pass (DESIGN §4)


def test_parse_errors_are_never_re_prompted(tmp_path):
    folder = folder_of(tmp_path, START_md=POLICY_GOTO_NEXT + "Go.", NEXT_sh="echo '<result>n</result>'")
    backend = ScriptedBackend("<goto>../NEXT</goto>", "<goto>NEXT</goto>")
    result, _ = run_folder(folder, backend=backend)
    assert len(backend.requests) == 1 and "contains a path separator" in result.error


def test_without_a_policy_mistakes_are_fatal(tmp_path):
    folder = folder_of(tmp_path, START_md="Go.", NEXT_sh="echo '<result>n</result>'")
    for reply, message in (("no tag", "has no transition tag"),
                           ("<goto>NOPE</goto>", "holds <goto>NOPE</goto>: state 'NOPE' not found"),
                           ("<goto>NEXT</goto><result>x</result>", "holds 2 transition tags")):
        result, _ = run_folder(folder, backend=ScriptedBackend(reply))
        assert result.error.startswith(f"main: START.md: the reply {message}"), result.error
        assert "allowed_transitions" in result.hint


def test_policy_violation_and_unresolvable_target_are_re_prompted(tmp_path):
    folder = folder_of(tmp_path, START_md=POLICY_GOTO_NEXT + "Go.", NEXT_sh="echo '<result>n</result>'",
                       OTHER_sh="echo '<result>o</result>'")
    backend = ScriptedBackend("<goto>OTHER</goto>", "<goto>MISSING</goto>", "<result>  fine  </result>")
    result, _ = run_folder(folder, backend=backend)
    assert result.result == "fine"  # a prompt's result payload is trimmed


def test_a_tag_inside_a_result_or_a_print_of_the_reply_is_a_second_tag(tmp_path):
    """Raymond parses the reply whole: `<result>done <goto>NEXT</goto></result>` holds two tags (a reminder with a
    policy, fatal without one), as does a <print> holding a tag beside the real one."""
    folder = folder_of(tmp_path, START_md=POLICY_GOTO_NEXT + "Go.", NEXT_sh="echo '<result>n</result>'")
    backend = ScriptedBackend("<result>done <goto>NEXT</goto></result>", "<print>off to <goto>NEXT</goto></print>"
                              "<result>x</result>", "<result>ok</result>")
    result, quiet = run_folder(folder, backend=backend, trace=True)
    assert (result.result, len(backend.requests)) == ("ok", 3)
    assert "holds 2 transition tags" in quiet.errors
    bare = folder_of(tmp_path / "bare", START_md="Go.", NEXT_sh="echo '<result>n</result>'")
    result, _ = run_folder(bare, backend=ScriptedBackend("<result>done <goto>NEXT</goto></result>"))
    assert result.error.startswith("main: START.md: the reply holds 2 transition tags"), result.error


def test_an_ask_with_a_cd_asks_as_in_raymond(tmp_path):
    """HandleAsk reads no `cd` (lint calls it unsupported-cd-attribute): the agent asks, where it is."""
    folder = folder_of(tmp_path, START_md="Ask.", NEXT_sh='echo "<result>got $RAYMOND_INPUT</result>"')
    backend = ScriptedBackend('<ask next="NEXT" cd="/">Which?</ask>')
    result, _ = run_folder(folder, backend=backend, answers={"main": "this"})
    assert result.result == "got this", result.error


def test_item73_call_branches_the_caller_session_and_result_restores_it(tmp_path):
    folder = folder_of(tmp_path, CALLER_md='Plan. <call return="RETURN">CHILD</call>', CHILD_md="Refine.",
                       RETURN_md="Continue with {{input}}.")
    backend = ScriptedBackend({"text": '<call return="RETURN">CHILD</call>', "session_id": "caller-session-xyz"},
                              {"text": "<result>plan.md</result>", "session_id": "child-session-abc"},
                              {"text": "<result>done</result>", "session_id": "caller-session-xyz"})
    result, _ = run_folder(folder, backend=backend, start="CALLER")
    child, back = backend.requests[1], backend.requests[2]
    assert (child.session_id, child.fork_session) == ("caller-session-xyz", True)
    assert (back.session_id, back.fork_session, back.prompt) == ("caller-session-xyz", False,
                                                                 "Continue with plan.md.")
    assert result.result == "done"


def test_call_to_a_script_callee_still_branches_at_the_first_prompt(tmp_path):
    """Raymond resumes the caller's own session here (reference §1.15); wfexec keeps the branch marker."""
    folder = folder_of(tmp_path, CALLER_md="c", CHILD_sh="echo '<goto>CHILD_PROMPT</goto>'", CHILD_PROMPT_md="p",
                       RETURN_md="r")
    backend = ScriptedBackend({"text": '<call return="RETURN">CHILD</call>', "session_id": "S-caller"},
                              {"text": "<result>x</result>", "session_id": "S-branch"},
                              {"text": "<result>end</result>", "session_id": "S-caller"})
    run_folder(folder, backend=backend, start="CALLER")
    assert [(r.state, r.session_id, r.fork_session) for r in backend.requests] == [
        ("CALLER.md", None, False), ("CHILD_PROMPT.md", "S-caller", True), ("RETURN.md", "S-caller", False)]


def test_function_and_reset_start_fresh_sessions(tmp_path):
    folder = folder_of(tmp_path, A_md="a", F_md="f", B_md="b", C_md="c")
    backend = ScriptedBackend({"text": '<function return="B">F</function>', "session_id": "S1"},
                              {"text": "<result>r</result>", "session_id": "S2"},
                              {"text": "<reset>C</reset>", "session_id": "S1"},
                              {"text": "<result>end</result>", "session_id": "S3"})
    run_folder(folder, backend=backend, start="A")
    assert [r.session_id for r in backend.requests] == [None, None, "S1", None]


def test_md_forks_run_workers_with_their_attributes(tmp_path):
    folder = folder_of(tmp_path, START_md="Split.", WORK_md="Handle {{item}} as {{agent_id}} with {{input}}.",
                       DONE_sh="echo '<result>dispatched</result>'")
    backend = ScriptedBackend('<fork next="DONE" item="a" input="i1">WORK</fork>'
                              '<fork next="DONE" item="b">WORK</fork>',
                              "<result>A</result>", "<result>B</result>")
    result, _ = run_folder(folder, backend=backend)
    prompts = sorted(r.prompt for r in backend.requests[1:])
    assert prompts == ["Handle a as main_work1 with i1.", "Handle b as main_work2 with {{input}}."]
    assert result.result == "dispatched" and len(result.forks) == 2


def test_no_backend_stops_with_exit_4(tmp_path):
    folder = folder_of(tmp_path, START_md="Go.")
    result, _ = run_folder(folder)
    assert (result.status, result.exit_code) == ("stopped", 4)
    assert "START.md is an LLM state, and no LLM backend is configured" in result.error


def test_a_plain_object_with_complete_works_as_a_backend(tmp_path):
    class Completer:
        def complete(self, prompt):
            return "<result>from complete</result>"

    folder = folder_of(tmp_path, START_md="Go.")
    assert run_folder(folder, backend=Completer())[0].result == "from complete"


def test_hybrid_md_sh_md_through_the_replay_backend(tmp_path):
    backend = create_backend(None, replay=FIXTURES / "hybrid.cassette.yaml")
    result, _ = run_folder(FIXTURES / "hybrid", backend=backend, input="the app", cwd=tmp_path)
    assert (result.status, result.result) == ("completed", "APPROVED"), result.error
    assert result.cost_usd == pytest.approx(0.03)
    kinds = [(r["state"], r["kind"]) for r in result.outcome.records]
    assert kinds == [("START.md", "markdown"), ("BUILD.sh", "script"), ("REPORT.md", "markdown")]
    assert backend.unused() == []


def test_hybrid_replay_reports_where_the_run_diverges(tmp_path):
    backend = create_backend(None, replay=FIXTURES / "hybrid.cassette.yaml")
    result, _ = run_folder(FIXTURES / "hybrid", backend=backend, input="another app", cwd=tmp_path)
    assert (result.status, result.exit_code) == ("stopped", 4)
    assert ("the run diverged from the recording" in result.error and "interaction #1 (agent main at START.md)"
            in result.error and "recorded 'Plan the build for the app (agent main).', now 'Plan the build for "
            "another app (agent main).'" in result.error), result.error
