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


BIG_OUTPUT = """
name: big
version: 1
start_node: make
nodes:
  make:
    type: action
    actions:
      - type: run_command
        command: ["{python}", -c, "print('a' * 300000)"]
        store_as: computed.big
    on_success: done
endings:
  done: {{type: success, message: made}}
"""


def _file_size_limit(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # as a shell's `ulimit -f` leaves it: writes fail with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_file_size_limit_stops_the_run_with_a_position_and_resume_finishes_it_once_lifted(tmp_path):
    (tmp_path / "workflow.yaml").write_text(BIG_OUTPUT.format(python=sys.executable))
    store = tmp_path / "runs.db"
    # No coverage in this process: its own data file would meet the limit too.
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_")}
    limited = subprocess.run([sys.executable, "-m", "wfexec.cli", "run", "workflow.yaml", "--store", str(store)],
                             cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env,
                             preexec_fn=_file_size_limit(200_000))
    assert limited.returncode == 4, limited.stderr
    assert "Traceback" not in limited.stderr
    assert "workflow.yaml:7:5: error: node 'make': the run store" in limited.stderr
    assert "could not be written" in limited.stderr and "ulimit -f" in limited.stderr
    [record] = json.loads(cli("runs", "--format", "json", "--store", store).stdout)
    assert record["status"] == "stopped"
    assert "in flight when it stopped: make" in cli("show", record["id"], "--store", store).stdout
    resumed = cli("resume", record["id"], "--rerun", "--store", store, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "made"
