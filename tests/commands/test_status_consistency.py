"""`run --format json`, `runs` and `show` agree on a run's status; commands that read or resume never create a
store."""

from __future__ import annotations

import json

import pytest

from conftest import wfexec_cli, wfexec_in_process as cli

FAILING = json.dumps({"name": "x", "version": "1.0", "start_node": "a",
                      "nodes": {"a": {"type": "action", "on_success": "bad", "on_failure": "bad",
                                      "actions": [{"type": "set_state", "field": "computed.x", "value": 1}]}},
                      "endings": {"bad": {"type": "failure", "message": "it failed"}}})


@pytest.mark.parametrize("ending,status", [("failure", "failed"), ("success", "completed")])
def test_json_runs_and_show_report_the_same_status(tmp_path, ending, status):
    (tmp_path / "workflow.yaml").write_text(FAILING.replace('"type": "failure"', f'"type": "{ending}"'))
    store = tmp_path / "runs.db"
    ran = cli("run", "workflow.yaml", "--format", "json", "--store", store, cwd=tmp_path)
    reported = json.loads(ran.stdout)
    listed = json.loads(cli("runs", "--format", "json", "--store", store, cwd=tmp_path).stdout)
    shown = json.loads(cli("show", reported["run_id"], "--format", "json", "--store", store,
                                  cwd=tmp_path).stdout)
    assert reported["status"] == listed[0]["status"] == shown["status"] == status


@pytest.mark.parametrize("args", [["runs"], ["runs", "--format", "json"], ["show", "0mwt6297ui2n"],
                                  ["cancel", "0mwt6297ui2n"], ["resume", "0mwt6297ui2n"]])
def test_reading_commands_in_an_empty_folder_create_no_store(tmp_path, args):
    env = {"WFEXEC_STORE": ""}
    result = cli(*args, cwd=tmp_path, env=env)
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []
    if args[0] == "runs":
        assert result.returncode == 0 and result.stdout.strip() in ("no runs", "[]")
    else:
        assert result.returncode == 2 and "there is no run store at .wfexec/runs.db" in result.stderr


@pytest.mark.parametrize("args", [["resume", "0mwt6297ui2n"], ["resume", "0mwt6297ui2n", "--answer", "a=b"],
                                  ["cancel", "0mwt6297ui2n"], ["show", "0mwt6297ui2n"],
                                  ["show", "0mwt6297ui2n", "--output"], ["runs"], ["runs", "--format", "json"]])
def test_a_store_named_with_store_that_is_not_there_is_refused_and_not_made(tmp_path, args):
    """A mistyped --store used to become a new, empty store (resume), which then did not know the run."""
    result = wfexec_cli(*args, "--store", "typo.db", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "there is no run store at typo.db" in result.stderr and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_run_makes_the_store_that_resume_then_finds(tmp_path):
    (tmp_path / "workflow.yaml").write_text(FAILING)
    ran = json.loads(wfexec_cli("run", "workflow.yaml", "--format", "json", "--store", "new.db", cwd=tmp_path).stdout)
    resumed = wfexec_cli("resume", ran["run_id"], "--store", "new.db", cwd=tmp_path)
    assert resumed.returncode == 2 and "has already finished" in resumed.stderr, resumed.stderr
