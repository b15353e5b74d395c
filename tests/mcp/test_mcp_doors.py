"""One engine, many doors (DESIGN §1): over MCP, with the SDK's own client, the tools say and do what the command
line does for the same thing asked; the API's side is tests/api/test_doors.py."""

from __future__ import annotations

import json

import pytest

from conftest import wfexec_in_process as cli

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'wfexec[mcp]')")
from test_mcp import with_server  # noqa: E402


def test_a_missing_path_is_named_as_the_command_line_names_it(tmp_path):
    """It was `not-a-workflow: … is not a workflow` over MCP, `file-missing: no such file: wf/typo` elsewhere."""
    (tmp_path / "wf").mkdir()

    async def body(session):
        return [(await session.call_tool(tool, {"path": "wf/typo"})).structured_content for tool in ("validate", "run")]

    validated, ran = with_server(tmp_path, body)
    said = json.loads(cli("validate", "wf/typo", "--format", "json", cwd=tmp_path).stdout)["diagnostics"]
    assert [(d["code"], d["message"]) for d in said] == [("file-missing", "no such file: wf/typo")]
    assert validated["diagnostics"] == said and not validated["valid"]
    assert ran["status"] == "invalid" and ran["diagnostics"] == said


def test_a_states_folder_runs_over_mcp_as_wfexec_run_runs_it(tmp_path):
    """MCP's `validate` accepted a states folder, but its `run` said `no such file: FOLDER/workflow.yaml`."""
    (tmp_path / "flow").mkdir()
    (tmp_path / "flow" / "START.sh").write_text('#!/bin/bash\necho "<result>done-$RAYMOND_INPUT</result>"\n')
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "START.sh").write_text('#!/bin/bash\necho "<goto>NOWHERE.sh</goto>"\n')

    async def body(session):
        calls = [("validate", {"path": "flow"}), ("run", {"path": "flow", "inputs": {"input": "abc"}}),
                 ("run", {"path": "bad"}), ("runs", {})]
        return [(await session.call_tool(tool, arguments)).structured_content for tool, arguments in calls]

    validated, ran, refused, listed = with_server(tmp_path, body)
    assert validated["valid"] and validated["states"]
    assert (ran["status"], ran["ending"], ran["message"]) == ("completed", "done", "done-abc"), ran
    assert refused["status"] == "invalid" and [d["code"] for d in refused["diagnostics"]] == ["missing-target"]
    assert [(r["id"], r["status"], r["workflow"]) for r in listed["runs"]] == [(ran["run_id"], "completed", "flow")]
    # the command line sees the run in the same store, as one of its own
    shown = json.loads(cli("show", ran["run_id"], "--format", "json", "--store", tmp_path / ".wfexec" / "runs.db").stdout)
    assert shown["status"] == "completed"
