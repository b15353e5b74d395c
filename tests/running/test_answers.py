"""Answers are checked before they are used, the same at every door (this file: the command line and the API;
tests/mcp/test_mcp.py and tests/temporal/test_temporal.py the others): an answer that fits no option of its question is
refused and the run keeps waiting, untouched; an answer key that names no question of the workflow is refused
before the run starts; a scripted answer is used once unless it says it repeats.

The command line door is the `wfexec` command run in this process (`cli`: the same parsing, exit codes and output);
the command as a process is tests/commands/."""

from __future__ import annotations

import json
import sqlite3

import pytest

import wfexec
from conftest import ROOT, wfexec_in_process as cli

TAG = ROOT / "tests" / "workflows" / "answers" / "tag_release.yaml"


def store_dump(db) -> dict:
    """Every row of every table of a run store: what "the run is unchanged" compares."""
    with sqlite3.connect(db) as connection:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {table: sorted(map(repr, connection.execute(f"SELECT * FROM {table}"))) for table in tables}


def run_id_from(stderr: str) -> str:
    for line in stderr.splitlines():
        if "wfexec resume " in line:
            return line.split("wfexec resume ", 1)[1].split()[0]
    raise AssertionError(f"no run id in: {stderr}")


def parked(db, *args) -> str:
    started = cli("run", TAG, "--store", db, *args)
    assert started.returncode == 3, started.stderr
    return run_id_from(started.stderr)


# -- the command line ---------------------------------------------------------------------------------------

def test_cli_a_wrong_answer_is_refused_and_the_run_keeps_waiting_unchanged(tmp_path):
    db = tmp_path / "runs.db"
    run_id = parked(db)
    before = store_dump(db)
    refused = cli("resume", run_id, "--store", db, "--answer", "ask_tag=yes-tag")
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert "'yes-tag' is not an option of 'ask_tag'" in refused.stderr
    assert "did you mean 'yes_tag'?" in refused.stderr and "yes_tag, no_tag, later" in refused.stderr
    assert store_dump(db) == before
    # the hint the parked run gave can still be followed
    done = cli("resume", run_id, "--store", db, "--answer", "ask_tag=yes_tag", "--answer",
                      "pick_branch=release")
    assert (done.returncode, done.stdout) == (0, "tagged release after 0 deferrals\n"), done.stderr


def test_cli_a_dynamic_option_is_checked_against_the_options_as_asked(tmp_path):
    db = tmp_path / "runs.db"
    run_id = parked(db, "--answer", "ask_tag=yes_tag")
    before = store_dump(db)
    refused = cli("resume", run_id, "--store", db, "--answer", "pick_branch=relase")
    assert refused.returncode == 2, refused.stderr
    assert "'relase' is not an option of 'pick_branch'" in refused.stderr and "did you mean 'release'?" in \
        refused.stderr, refused.stderr
    assert store_dump(db) == before


def test_cli_a_wrong_answer_given_with_run_parks_at_its_question_with_exit_2(tmp_path):
    db = tmp_path / "runs.db"
    refused = cli("run", TAG, "--store", db, "--answer", "ask_tag=yes_tag", "--answer", "pick_branch=dev")
    assert refused.returncode == 2, refused.stderr
    assert "'dev' is not an option of 'pick_branch'" in refused.stderr and "main, release" in refused.stderr
    run_id = run_id_from(refused.stderr)
    shown = json.loads(cli("show", run_id, "--store", db, "--format", "json").stdout)
    assert (shown["status"], shown["current_node"]) == ("waiting", "pick_branch")
    done = cli("resume", run_id, "--store", db, "--answer", "pick_branch=main")
    assert (done.returncode, done.stdout) == (0, "tagged main after 0 deferrals\n"), done.stderr


def test_cli_an_answer_key_that_names_no_question_is_refused_before_the_run_starts(tmp_path):
    db = tmp_path / "runs.db"
    refused = cli("run", TAG, "--store", db, "--answer", "ask_tga=yes_tag")
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert "'ask_tga' names no question of" in refused.stderr and "did you mean 'ask_tag'?" in refused.stderr
    assert not db.exists() or store_dump(db)["runs"] == []
    ephemeral = cli("run", TAG, "--ephemeral", "--answer", "ask_tga=yes_tag")
    assert ephemeral.returncode == 2 and "did you mean 'ask_tag'?" in ephemeral.stderr, ephemeral.stderr
    # and on resume: nothing of the waiting run changes
    run_id = parked(db)
    before = store_dump(db)
    again = cli("resume", run_id, "--store", db, "--answer", "ask_tga=yes_tag")
    assert again.returncode == 2 and "did you mean 'ask_tag'?" in again.stderr, again.stderr
    assert store_dump(db) == before


def test_cli_a_self_looping_question_answered_once_parks_the_second_time(tmp_path):
    db = tmp_path / "runs.db"
    looped = cli("run", TAG, "--store", db, "--answer", "ask_tag=later", "--max-steps", "50")
    assert looped.returncode == 3, looped.stderr  # before: the answer was taken again and again, exit 4
    assert "waiting: node 'ask_tag' asks" in looped.stderr
    run_id = run_id_from(looped.stderr)
    shown = json.loads(cli("show", run_id, "--store", db, "--format", "json").stdout)
    assert shown["steps"] == 1


def test_cli_successive_answers_are_used_in_turn_and_a_starred_key_repeats(tmp_path):
    answers = tmp_path / "answers.yaml"
    answers.write_text("ask_tag: [later, later, yes_tag]\npick_branch: main\n")
    listed = cli("run", TAG, "--ephemeral", "--answers", answers)
    assert (listed.returncode, listed.stdout) == (0, "tagged main after 2 deferrals\n"), listed.stderr
    pairs = cli("run", TAG, "--ephemeral", "--answer", "ask_tag=later", "--answer", "ask_tag=yes_tag",
                       "--answer", "pick_branch=main")
    assert (pairs.returncode, pairs.stdout) == (0, "tagged main after 1 deferrals\n"), pairs.stderr
    repeated = cli("run", TAG, "--ephemeral", "--answer", "ask_tag*=later", "--max-steps", "20")
    assert repeated.returncode == 4 and "more than 20 steps" in repeated.stderr, repeated.stderr


# -- the API ------------------------------------------------------------------------------------------------

def test_api_a_wrong_answer_raises_answer_refused_and_the_run_keeps_waiting_unchanged(tmp_path):
    db = tmp_path / "runs.db"
    with pytest.raises(wfexec.NeedsAnswer) as waiting:
        wfexec.run(TAG, store=db)
    run_id = waiting.value.run_id
    before = store_dump(db)
    with pytest.raises(wfexec.AnswerRefused) as refused:
        wfexec.resume(run_id, answers={"ask_tag": "yes-tag"}, store=db)
    assert "'yes-tag' is not an option of 'ask_tag'" in refused.value.message
    assert "did you mean 'yes_tag'?" in refused.value.message
    assert refused.value.run_id == run_id and refused.value.key == "ask_tag"
    assert store_dump(db) == before
    result = wfexec.resume(run_id, answers={"ask_tag": "yes_tag", "pick_branch": "release"}, store=db)
    assert result.message == "tagged release after 0 deferrals"


def test_api_an_answer_key_that_names_no_question_is_refused_before_the_run_starts(tmp_path):
    db = tmp_path / "runs.db"
    with pytest.raises(wfexec.AnswerRefused) as refused:
        wfexec.run(TAG, answers={"ask_tga": "yes_tag"}, store=db)
    assert "did you mean 'ask_tag'?" in refused.value.message and refused.value.run_id is None
    assert not db.exists() or store_dump(db)["runs"] == []
    with pytest.raises(wfexec.AnswerRefused):
        wfexec.run(TAG, answers={"ask_tga": "yes_tag"})
    with pytest.raises(wfexec.NeedsAnswer) as waiting:
        wfexec.run(TAG, store=db)
    before = store_dump(db)
    with pytest.raises(wfexec.AnswerRefused):
        wfexec.resume(waiting.value.run_id, answers={"ask_tga": "yes_tag"}, store=db)
    assert store_dump(db) == before


def test_api_a_self_looping_question_answered_once_parks_the_second_time():
    with pytest.raises(wfexec.NeedsAnswer) as waiting:
        wfexec.run(TAG, answers={"ask_tag": "later"}, max_steps=50)
    assert waiting.value.question.node == "ask_tag"
