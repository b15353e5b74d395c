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
    (tmp_path / "bad").mkdir()  # no first state: a run has nowhere to start
    (tmp_path / "bad" / "OTHER.sh").write_text('#!/bin/bash\necho "<result>x</result>"\n')

    async def body(session):
        calls = [("validate", {"path": "flow"}), ("run", {"path": "flow", "inputs": {"input": "abc"}}),
                 ("run", {"path": "bad"}), ("runs", {})]
        return [(await session.call_tool(tool, arguments)).structured_content for tool, arguments in calls]

    validated, ran, refused, listed = with_server(tmp_path, body)
    assert validated["valid"] and validated["states"]
    assert (ran["status"], ran["ending"], ran["message"]) == ("completed", "done", "done-abc"), ran
    assert refused["status"] == "invalid" and [d["code"] for d in refused["diagnostics"]] == ["no-entry-point"]
    assert [(r["id"], r["status"], r["workflow"]) for r in listed["runs"]] == [(ran["run_id"], "completed", "flow")]
    # the command line sees the run in the same store, as one of its own
    shown = json.loads(cli("show", ran["run_id"], "--format", "json", "--store", tmp_path / ".wfexec" / "runs.db").stdout)
    assert shown["status"] == "completed"


NAMED = """\
name: named
version: "1"
start_node: greet
input_schema:
  name: {type: string, required: true, description: who}
nodes:
  greet:
    type: action
    actions: [{type: set_state, field: computed.who, value: "${input.name}"}]
    on_success: done
endings:
  done: {type: success, message: "hi ${computed.who}"}
"""

SLOW = """\
name: slow
version: "1"
start_node: wait
nodes:
  wait:
    type: action
    actions: [{type: run_command, command: [sleep, "30"]}]
    on_success: done
endings:
  done: {type: success, message: "finished"}
"""


def _killed_in_its_step(tmp_path) -> str:
    """The id of a run of slow.yaml (in the store an MCP server started in tmp_path uses) whose process was killed
    while its step ran: resuming it needs the decision to run the step again or skip it."""
    import signal
    import subprocess
    import sys
    import time

    from wfexec.durable.store import open_store

    (tmp_path / "slow.yaml").write_text(SLOW)
    store = tmp_path / ".wfexec" / "runs.db"
    child = subprocess.Popen([sys.executable, "-c", "import sys, wfexec; wfexec.run(sys.argv[1], store=sys.argv[2])",
                              str(tmp_path / "slow.yaml"), str(store)])
    try:
        for _ in range(600):
            if store.exists():
                opened = open_store(store)
                try:
                    runs = [run for run in opened.list() if run.in_flight]
                finally:
                    opened.close()
                if runs:
                    return runs[0].id
            time.sleep(0.05)
        raise AssertionError("the run never reached its step")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()


def test_a_remedy_is_said_in_the_tools_terms(tmp_path):
    """MCP's errors told a model to `pass --input name=VALUE` and to `resume with --rerun … or --skip`, flags of
    the command line; the tools take `inputs`, `rerun` and `skip`."""
    (tmp_path / "named.yaml").write_text(NAMED)
    run_id = _killed_in_its_step(tmp_path)

    async def body(session):
        return [(await session.call_tool(tool, arguments)).structured_content for tool, arguments in
                (("run", {"path": "named.yaml"}), ("resume", {"run_id": run_id}),
                 ("resume", {"run_id": run_id, "skip": True}))]

    missing, undecided, skipped = with_server(tmp_path, body)
    assert missing == {"status": "invalid",
                       "error": "missing required input 'name' (who): pass `inputs: {\"name\": VALUE}`"}, missing
    assert undecided["status"] == "waiting" and "it may or may not have finished" in undecided["error"], undecided
    assert undecided["hint"] == ("check its effects, then resume with `rerun: true` to run it again or `skip: true` "
                                 "to go on as if it succeeded"), undecided
    assert (skipped["status"], skipped["message"]) == ("completed", "finished"), skipped
    # the command line keeps its own words for the same remedies
    said = cli("run", "named.yaml", cwd=tmp_path)
    assert "pass --input name=VALUE" in said.stderr, said.stderr
