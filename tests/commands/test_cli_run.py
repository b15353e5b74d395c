"""`wfexec run` through the real command: exit codes, output formats, answers, state files."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT, wfexec_cli

QUICKSTART = ROOT / "skills" / "quickstart"

LOOP = """
name: loop
version: 1
start_node: spin
nodes:
  spin:
    type: action
    actions: [{type: set_flag, flag: x}]
    on_success: spin
endings:
  never: {type: success, message: never}
"""


def test_success_ending_prints_message_and_summary_and_exits_0():
    done = wfexec_cli("run", QUICKSTART, "--answer", "ask_mood=cheerful", "--input", "name=Ada")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Hello, Ada!", "  letters: 3"]


def test_unanswered_question_without_terminal_exits_3_naming_node_and_options():
    done = wfexec_cli("run", QUICKSTART)
    assert done.returncode == 3
    assert "node 'ask_mood'" in done.stderr
    assert "options: cheerful, plain" in done.stderr
    assert "--answer ask_mood=" in done.stderr
    assert "Traceback" not in done.stderr


def test_answers_file_and_json_output(cli, tmp_path):
    answers = tmp_path / "answers.yaml"
    answers.write_text("ask_mood: Plainly\n")
    done = cli("run", QUICKSTART, "--answers", answers, "--format", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "completed"
    assert result["ending"] == "done" and result["type"] == "success"
    assert result["message"] == "Hello, world"
    assert result["state"]["user_responses"]["ask_mood"]["id"] == "plain"


def test_an_answer_that_is_not_an_option_is_an_error_listing_options(cli):
    done = cli("run", QUICKSTART, "--answer", "ask_mood=grumpy")
    assert done.returncode == 2  # refused, not used: the run waits on the question (tests/running/test_answers.py)
    assert "'grumpy' is not an option of 'ask_mood' (options: cheerful, plain)" in done.stderr


def test_step_budget_exits_4(cli, tmp_path):
    path = tmp_path / "loop.yaml"
    path.write_text(LOOP)
    done = cli("run", path, "--max-steps", "25")
    assert done.returncode == 4
    assert "more than 25 steps" in done.stderr and "node 'spin'" in done.stderr


def test_invalid_workflow_is_not_run_and_exits_2(cli, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(LOOP.replace("on_success: spin", "on_success: spinn"))
    done = cli("run", path)
    assert done.returncode == 2
    assert "did you mean 'spin'?" in done.stderr
    assert "not run" in done.stderr


def test_error_ending_exits_1_with_recovery(cli, tmp_path):
    path = tmp_path / "fail.yaml"
    path.write_text("""
name: fail
version: 1
start_node: boom
nodes:
  boom:
    type: action
    actions: [{type: rollback_checkpoint, name: missing}]
    on_success: ok
    on_failure: broken
endings:
  ok: {type: success, message: fine}
  broken:
    type: error
    message: "it broke"
    details: "${computed.last_error}"
    recovery: {suggestion: "create the checkpoint first", related_skill: setup}
""")
    done = cli("run", path)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0] == "Error: it broke"
    assert "no checkpoint named 'missing'" in lines[1]
    assert "Suggestion: create the checkpoint first" in lines
    assert "Try running: /setup" in lines


def test_state_out_trace_and_set(cli, tmp_path):
    state_file = tmp_path / "out" / "state.json"
    done = cli("run", QUICKSTART, "--answer", "ask_mood=plain", "--set", "name=Grace", "--trace",
               "--state-out", state_file)
    assert done.returncode == 0, done.stderr
    state = json.loads(state_file.read_text())
    assert state["computed"]["greeting"] == "Hello, Grace"
    assert [h["node"] for h in state["history"]] == ["ask_mood", "count_letters", "pick_style"]
    assert "[WORKFLOW] Node: count_letters (action)" in done.stderr
    assert "[WORKFLOW] Condition: flag_set(flag=cheerful) = false" in done.stderr
    assert "[WORKFLOW] → on_false: done" in done.stderr


def test_bad_command_line_values_exit_2(cli):
    assert cli("run", QUICKSTART, "--input", "novalue").returncode == 2
    assert cli("run", QUICKSTART, "--max-steps", "0").returncode == 2
    assert cli("run", ROOT / "does-not-exist.yaml").returncode == 2


def test_version_and_help_work():
    assert wfexec_cli("--version").stdout.startswith("wfexec ")
    help_text = wfexec_cli("--help").stdout
    for command in ("validate", "run", "schema", "types"):
        assert command in help_text


def test_inputs_from_a_file_and_the_command_line_together(cli, tmp_path):
    (tmp_path / "inputs.yaml").write_text("name: Grace\n")
    done = cli("run", QUICKSTART, "--input-file", tmp_path / "inputs.yaml", "--answer", "ask_mood=cheerful")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "Hello, Grace!"
    overridden = cli("run", QUICKSTART, "--input-file", tmp_path / "inputs.yaml", "--input", "name=Ada",
                     "--answer", "ask_mood=cheerful")
    assert overridden.stdout.splitlines()[0] == "Hello, Ada!"


@pytest.mark.parametrize("content, message", [
    ("- just\n- a list\n", "an input file must map input names to values"),
    ("name: [unclosed\n", "inputs.yaml:"),
])
def test_an_unusable_input_file_exits_2_saying_why(cli, tmp_path, content, message):
    (tmp_path / "inputs.yaml").write_text(content)
    done = cli("run", QUICKSTART, "--input-file", tmp_path / "inputs.yaml", "--answer", "ask_mood=plain")
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_an_ephemeral_run_waits_fails_and_stops_with_the_usual_exit_codes(cli, tmp_path, private_run_store):
    assert cli("run", QUICKSTART, "--ephemeral").returncode == 3
    path = tmp_path / "loop.yaml"
    path.write_text(LOOP)
    stopped = cli("run", path, "--ephemeral", "--max-steps", "5")
    assert stopped.returncode == 4 and "more than 5 steps" in stopped.stderr
    assert not private_run_store.exists()  # none of them was recorded


def test_every_way_a_run_ends_traces_its_ending(cli, tmp_path):
    """`Ending: …` closes the trace of an ephemeral run, a durable one and a resumed one alike."""
    store = tmp_path / "runs.db"
    for how in (("--ephemeral",), ("--store", store)):
        done = cli("run", QUICKSTART, "--answer", "ask_mood=plain", "--trace", *how)
        assert done.returncode == 0 and "[WORKFLOW] Ending: done (success) after 3 steps in " in done.stderr, how
    parked = cli("run", QUICKSTART, "--non-interactive", "--store", store, "--format", "json")
    run_id = json.loads(parked.stdout)["run_id"]
    resumed = cli("resume", run_id, "--answer", "ask_mood=plain", "--store", store, "--trace")
    assert resumed.returncode == 0, resumed.stderr
    assert "[WORKFLOW] Ending: done (success) after 3 steps in " in resumed.stderr


@pytest.mark.parametrize("how", [("--ephemeral",), ("--store", "runs.db")])
def test_state_out_is_written_when_a_run_waits_or_fails(cli, tmp_path, how):
    how = tuple(str(tmp_path / part) if part.endswith(".db") else part for part in how)
    waiting = tmp_path / "waiting.json"
    parked = cli("run", QUICKSTART, "--non-interactive", "--set", "name=Ada", "--state-out", waiting, *how)
    assert parked.returncode == 3
    assert json.loads(waiting.read_text())["name"] == "Ada"
    failed_state = tmp_path / "failed.json"
    path = tmp_path / "loop.yaml"
    path.write_text(LOOP)
    failed = cli("run", path, "--max-steps", "5", "--state-out", failed_state, *how)
    assert failed.returncode == 4
    assert json.loads(failed_state.read_text())["flags"] == {"x": True}


@pytest.mark.parametrize("answer", ["cheerful", "Cheerfully", "cheerfully", "  CHEERFULLY  "])
def test_an_answer_names_an_option_by_id_or_by_label_whatever_its_case_and_spaces(cli, answer):
    done = cli("run", QUICKSTART, "--ephemeral", "--answer", f"ask_mood={answer}")
    assert done.returncode == 0 and done.stdout.startswith("Hello, world!"), done.stdout + done.stderr


@pytest.mark.parametrize("where, why", [("folder", "is a folder"), ("", ". is a folder"),
                                        ("note.txt/state.json", "which is a file")])
def test_a_state_out_that_cannot_be_written_is_refused_before_the_run_starts(cli, tmp_path, where, why):
    (tmp_path / "folder").mkdir()
    (tmp_path / "note.txt").write_text("a file\n")
    store = tmp_path / "runs.db"
    done = cli("run", QUICKSTART, "--answer", "ask_mood=plain", "--store", store, "--state-out",
               str(tmp_path / where) if where else "", cwd=tmp_path)
    assert done.returncode == 2 and why in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.stdout == "" and not store.exists()  # nothing ran
