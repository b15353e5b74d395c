"""`run --format json`, `runs` and `show` agree on a run's status; reading commands never create a store."""

from __future__ import annotations

import json

import pytest

from conftest import wfexec_in_process as cli

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
                                  ["cancel", "0mwt6297ui2n"]])
def test_reading_commands_in_an_empty_folder_create_no_store(tmp_path, args):
    env = {"WFEXEC_STORE": ""}
    result = cli(*args, cwd=tmp_path, env=env)
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []
    if args[0] == "runs":
        assert result.returncode == 0 and result.stdout.strip() in ("no runs", "[]")
    else:
        assert result.returncode == 2 and "there is no run store at .wfexec/runs.db" in result.stderr
