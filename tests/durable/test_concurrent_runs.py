"""Runs that meet in one store: two resumes of one run at once, many runs started together, a `states` node
killed between saving its agents and journaling its step, and files changed between `plan` and `run`."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import ROOT, wfexec_cli

WAITS_THEN_WORKS = """\
name: waits-then-works
version: "1"
start_node: ask
nodes:
  ask:
    type: user_prompt
    prompt: {question: "Go?", header: Go, options: [{id: go, label: Go}, {id: stop, label: Stop}]}
    on_response: {go: {next_node: work}, stop: {next_node: done}}
  work:
    type: action
    actions:
      - type: run_command
        command: [bash, -c, 'touch started; while [ ! -e release ]; do sleep 0.05; done; echo ran >> effects.txt']
    on_success: done
endings:
  done: {type: success, message: worked}
"""


def wait_for(path: Path, bound: float = 60) -> None:
    deadline = time.monotonic() + bound
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def test_a_second_resume_of_a_run_being_resumed_is_refused_and_the_step_runs_once(tmp_path):
    (tmp_path / "workflow.yaml").write_text(WAITS_THEN_WORKS)
    store = tmp_path / "runs.db"
    parked = wfexec_cli("run", "workflow.yaml", "--store", store, "--non-interactive", "--format", "json",
                        cwd=tmp_path)
    run_id = json.loads(parked.stdout)["run_id"]
    first = subprocess.Popen([sys.executable, "-m", "wfexec", "resume", run_id, "--answer", "ask=go", "--store",
                              str(store)], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(tmp_path / "started")  # the first resume holds the run, inside its step
        second = wfexec_cli("resume", run_id, "--answer", "ask=go", "--store", store, cwd=tmp_path)
        assert second.returncode == 2, second.stdout + second.stderr
        assert f"run {run_id} is being driven by process {first.pid}@" in second.stderr
    finally:
        (tmp_path / "release").touch()
        out, err = first.communicate(timeout=60)
    assert first.returncode == 0, out + err
    assert (tmp_path / "effects.txt").read_text() == "ran\n"  # the step ran once, in the first resume
    shown = wfexec_cli("show", run_id, "--store", store, "--format", "json", cwd=tmp_path)
    assert json.loads(shown.stdout)["status"] == "completed"


def test_many_runs_started_together_into_one_store_all_end(tmp_path):
    store = tmp_path / "runs.db"
    quickstart = ROOT / "skills" / "quickstart"
    runs = [subprocess.Popen([sys.executable, "-m", "wfexec", "run", str(quickstart), "--answer",
                              "ask_mood=plain", "--input", f"name=run{index}", "--store", str(store), "--format",
                              "json"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for index in range(12)]
    results = []
    for process in runs:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, out + err
        results.append(json.loads(out))
    assert sorted(r["message"] for r in results) == sorted(f"Hello, run{i}" for i in range(12))
    listed = json.loads(wfexec_cli("runs", "--store", store, "--format", "json", cwd=tmp_path).stdout)
    assert len(listed) == 12 and {r["status"] for r in listed} == {"completed"}
    assert {r["id"] for r in listed} == {r["run_id"] for r in results}


STATES_FIRST = """\
name: states-first
version: "1"
start_node: agents
nodes:
  agents:
    type: states
    folder: flow
    store_as: computed.agents
    on_success: done
endings:
  done: {type: success, message: "${computed.agents}"}
"""


def test_a_states_node_killed_between_saving_its_agents_and_journaling_its_step_runs_no_state_twice(tmp_path):
    (tmp_path / "workflow.yaml").write_text(STATES_FIRST)
    flow = tmp_path / "flow"
    flow.mkdir()
    (flow / "START.sh").write_text("echo START >> executions.log\necho '<goto>S1.sh</goto>'\n")
    (flow / "S1.sh").write_text("echo S1 >> executions.log\necho '<goto>S2.sh</goto>'\n")
    (flow / "S2.sh").write_text("echo S2 >> executions.log\necho '<result>agents done</result>'\n")
    store = tmp_path / "runs.db"
    # The node's only journal row is written once its agents have ended and were saved: die just before it.
    killed = subprocess.run([sys.executable, str(ROOT / "tests" / "crashpoint.py"), "before-statement",
                             r"^INSERT OR REPLACE INTO journal", "1", "--", "run", "workflow.yaml", "--store",
                             str(store)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert (tmp_path / "executions.log").read_text().split() == ["START", "S1", "S2"]
    listed = json.loads(wfexec_cli("runs", "--store", store, "--format", "json", cwd=tmp_path).stdout)
    resumed = wfexec_cli("resume", listed[0]["id"], "--rerun", "--store", store, "--format", "json", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert json.loads(resumed.stdout)["message"] == "agents done"
    assert (tmp_path / "executions.log").read_text().split() == ["START", "S1", "S2"]  # no state ran again


CHANGES = """\
name: changes
version: "1"
start_node: say
imports: {words: words.yaml}
nodes:
  say:
    type: action
    actions:
      - {type: write_file, path: said.txt, content: "WORD ${imports.words.word}"}
    on_success: done
endings:
  done: {type: success, message: said}
"""


def test_a_run_after_plan_uses_the_files_as_they_are_then(tmp_path):
    """`plan` compiles (and caches) the workflow; files edited afterwards are what the run reads."""
    (tmp_path / "workflow.yaml").write_text(CHANGES.replace("WORD", "first"))
    (tmp_path / "words.yaml").write_text("word: one\n")
    planned = wfexec_cli("plan", "workflow.yaml", cwd=tmp_path)
    assert planned.returncode == 0 and "write said.txt" in planned.stdout, planned.stdout + planned.stderr
    (tmp_path / "workflow.yaml").write_text(CHANGES.replace("WORD", "second"))
    (tmp_path / "words.yaml").write_text("word: two\n")
    ran = wfexec_cli("run", "workflow.yaml", "--ephemeral", cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert (tmp_path / "said.txt").read_text() == "second two"
