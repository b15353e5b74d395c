"""One engine, many doors (DESIGN §1): the Python API says and does what the command line does for the same
thing asked (the states a workflow runs, a states folder, option values); MCP's side is tests/mcp/test_mcp_doors.py."""

from __future__ import annotations

import json

import pytest

import wfexec
from conftest import wfexec_in_process as cli

STATES_NODE = """\
name: statesbad
version: "1.0.0"
start_node: check
nodes:
  check: {type: states, folder: states, on_success: done, on_failure: done}
endings:
  done: {type: success, message: "ok"}
"""
BAD_START = '#!/bin/bash\necho "<goto>NOWHERE.sh</goto>"\n'


def states_node_workflow(tmp_path):
    """A workflow whose `states` node runs a folder with a lint error (a <goto> to no state)."""
    (tmp_path / "wf" / "states").mkdir(parents=True)
    (tmp_path / "wf" / "workflow.yaml").write_text(STATES_NODE)
    (tmp_path / "wf" / "states" / "START.sh").write_text(BAD_START)
    return tmp_path / "wf"


def states_folder(tmp_path, start=BAD_START, name="flow"):
    (tmp_path / name).mkdir()
    (tmp_path / name / "START.sh").write_text(start)
    return tmp_path / name


def _cli_diagnostics(path, cwd) -> list[dict]:
    done = cli("validate", path, "--format", "json", cwd=cwd)
    return json.loads(done.stdout)["diagnostics"]


@pytest.mark.parametrize("made", [states_node_workflow, states_folder], ids=["states-node", "states-folder"])
def test_validate_gives_what_the_command_line_reports(tmp_path, monkeypatch, made):
    """`wfexec.validate` once missed the lint of the states a `states` node runs (it returned []), and called a
    states folder `no such file: FOLDER/workflow.yaml`, where `wfexec validate` lints both."""
    monkeypatch.chdir(tmp_path)
    path = made(tmp_path).name
    given = [d.to_json() for d in wfexec.validate(path)]
    assert given == _cli_diagnostics(path, tmp_path)
    assert [(d["code"], d["line"], d["column"]) for d in given] == [("missing-target", 2, 7)]
