"""Durable in every corner (issue 12, point 8): one transaction for a states node's agents and its step, a full
disk or a file-size limit, a store the user may only read, edits to scripts noticed on resume."""

from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, with_coverage, wfexec_in_process as cli

STATES_WORKFLOW = """
name: agents
version: 1
start_node: work
nodes:
  work:
    type: states
    folder: flow
    store_as: computed.result
    on_success: done
endings:
  done: {type: success, message: "${computed.result}"}
"""


def _states_folder(folder: Path) -> None:
    flow = folder / "flow"
    flow.mkdir(parents=True)
    (flow / "START.sh").write_text('echo START >> visited.log\necho "<call return=\\"AFTER.sh\\">SLOW.sh</call>"\n')
    (flow / "SLOW.sh").write_text('echo SLOW >> visited.log\necho "<result>slow done</result>"\n')
    (flow / "AFTER.sh").write_text('echo AFTER >> visited.log\necho "<result>after: $RAYMOND_RESULT</result>"\n')
    (folder / "workflow.yaml").write_text(STATES_WORKFLOW)


def test_a_kill_as_a_states_node_step_commits_reruns_none_of_its_finished_agents(tmp_path):
    _states_folder(tmp_path)
    store = tmp_path / "runs.db"
    # SIGKILL as the transaction journaling step 1 (the states node) issues COMMIT: that transaction is lost.
    killed = subprocess.run([sys.executable, str(ROOT / "tests" / "crashpoint.py"), "mid-commit", "1", "--",
                             "run", "workflow.yaml", "--store", str(store)], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert (tmp_path / "visited.log").read_text().split() == ["START", "SLOW", "AFTER"]
    [record] = json.loads(cli("runs", "--format", "json", "--store", store).stdout)
    resumed = cli("resume", record["id"], "--rerun", "--store", store, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "after: slow done"
    # The agents' saved state survived with the lost step: the node finished from it, running no script again.
    assert (tmp_path / "visited.log").read_text().split() == ["START", "SLOW", "AFTER"]
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT count(*) FROM node_states").fetchone()[0] == 0
