"""Durable runs: the store, parking and resuming, changed workflows, and a crash test with SIGKILL."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path


from conftest import ROOT, wfexec_cli

QUICKSTART = ROOT / "skills" / "quickstart"


def runs(store) -> list[dict]:
    done = wfexec_cli("runs", "--format", "json", "--store", store)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_question_parks_the_run_and_resume_answers_it(private_run_store):
    parked = wfexec_cli("run", QUICKSTART, "--input", "name=Ada")
    assert parked.returncode == 3
    [record] = runs(private_run_store)
    assert record["status"] == "waiting" and record["current_node"] == "ask_mood"
    assert f"wfexec resume {record['id']} --answer ask_mood=" in parked.stderr

    shown = wfexec_cli("show", record["id"])
    assert "waiting: 'ask_mood' asks: How should I greet Ada? (cheerful, plain)" in shown.stdout

    resumed = wfexec_cli("resume", record["id"][:6], "--answer", "ask_mood=cheerful")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines()[0] == "Hello, Ada!"
    [record] = runs(private_run_store)
    assert (record["status"], record["ending"], record["steps"]) == ("completed", "done", 4)

    again = wfexec_cli("resume", record["id"])
    assert again.returncode == 2
    assert "has already finished (completed, ending 'done')" in again.stderr


def test_show_lists_history_with_changes_and_state(private_run_store):
    wfexec_cli("run", QUICKSTART, "--answer", "ask_mood=plain")
    [record] = runs(private_run_store)
    shown = wfexec_cli("show", record["id"], "--state").stdout
    assert "count_letters (action) → pick_style" in shown and "[computed.letters, computed.greeting]" in shown
    assert "greeting: Hello, world" in shown
    data = json.loads(wfexec_cli("show", record["id"], "--format", "json", "--state").stdout)
    assert [row["node"] for row in data["journal"]] == ["ask_mood", "count_letters", "pick_style"]
    assert data["journal"][1]["changes"] == {"computed.letters": 5, "computed.greeting": "Hello, world"}
    assert data["state"]["computed"]["letters"] == 5


def test_ephemeral_runs_leave_no_store(tmp_path, private_run_store):
    done = wfexec_cli("run", QUICKSTART, "--answer", "ask_mood=plain", "--ephemeral")
    assert done.returncode == 0
    assert not private_run_store.exists()


def test_cancel_a_waiting_run(private_run_store):
    wfexec_cli("run", QUICKSTART)
    [record] = runs(private_run_store)
    assert wfexec_cli("cancel", record["id"]).returncode == 0
    assert runs(private_run_store)[0]["status"] == "cancelled"
    refused = wfexec_cli("resume", record["id"], "--answer", "ask_mood=plain")
    assert refused.returncode == 2 and "already finished (cancelled" in refused.stderr


CHANGING = """
name: changing
version: 1
start_node: first
nodes:
  first:
    type: action
    actions: [{type: set_state, field: computed.a, value: FIRST}]
    on_success: ask
  ask:
    type: user_prompt
    prompt:
      question: Go on?
      options: [{id: go, label: Go}, {id: stop, label: Stop}]
    on_response:
      go: {next_node: last}
      stop: {next_node: done}
  last:
    type: action
    actions: [{type: set_state, field: computed.b, value: LAST}]
    on_success: done
endings:
  done: {type: success, message: "${computed.a} ${computed.b ?? '-'}"}
"""


def test_resume_after_the_workflow_changed(tmp_path, private_run_store):
    path = tmp_path / "workflow.yaml"
    path.write_text(CHANGING)
    assert wfexec_cli("run", path).returncode == 3
    [record] = runs(private_run_store)

    # A future node changed: resume goes on with the new version and says so.
    path.write_text(CHANGING.replace("value: LAST", "value: NEW-LAST"))
    first = wfexec_cli("resume", record["id"], "--answer", "ask=go")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "FIRST NEW-LAST"
    assert "future nodes changed: last" in first.stderr

    # A completed node changed: resume refuses unless told to accept it.
    path.write_text(CHANGING)
    assert wfexec_cli("run", path).returncode == 3
    record = runs(private_run_store)[0]
    path.write_text(CHANGING.replace("value: FIRST", "value: CHANGED"))
    refused = wfexec_cli("resume", record["id"], "--answer", "ask=go")
    assert refused.returncode == 2
    assert "completed nodes changed: first" in refused.stderr and "--accept-changes" in refused.stderr
    assert runs(private_run_store)[0]["status"] == "waiting"
    accepted = wfexec_cli("resume", record["id"], "--answer", "ask=go", "--accept-changes")
    assert accepted.returncode == 0
    assert accepted.stdout.strip() == "FIRST LAST"  # what already ran is not run again


def test_a_foreign_or_corrupt_store_is_refused_and_left_untouched(tmp_path):
    not_sqlite = tmp_path / "notes.db"
    not_sqlite.write_bytes(b"my precious notes\n" * 10)
    done = wfexec_cli("run", QUICKSTART, "--store", not_sqlite)
    assert done.returncode == 2
    assert "is not a wfexec run store" in done.stderr and "Traceback" not in done.stderr
    assert not_sqlite.read_bytes() == b"my precious notes\n" * 10

    foreign = tmp_path / "app.db"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE users (name TEXT)")
    before = foreign.read_bytes()
    done = wfexec_cli("runs", "--store", foreign)
    assert done.returncode == 2 and "database of something else (tables: users)" in done.stderr
    assert foreign.read_bytes() == before


def test_two_processes_cannot_drive_one_run(private_run_store):
    wfexec_cli("run", QUICKSTART)
    [record] = runs(private_run_store)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with sqlite3.connect(private_run_store) as db:
            db.execute("UPDATE runs SET lease = ? WHERE id = ?", (f"{holder.pid}@{os.uname().nodename}", record["id"]))
        refused = wfexec_cli("resume", record["id"], "--answer", "ask_mood=plain")
        assert refused.returncode == 2
        assert f"is being driven by process {holder.pid}@" in refused.stderr
    finally:
        holder.kill()
        holder.wait()
    # Once that process is gone, its lease is stale and the run can be resumed.
    assert wfexec_cli("resume", record["id"], "--answer", "ask_mood=plain").returncode == 0


ONCE_SLOW = """
name: once-slow
version: 1
start_node: deploy
nodes:
  deploy:
    type: action
    actions:
      - type: run_command
        command: ["{python}", "-c", "import pathlib, time; p = pathlib.Path('started'); first = not p.exists(); p.write_text('x'); time.sleep(30 if first else 0)"]
    on_success: done
endings:
  done: {{type: success, message: deployed}}
"""


def run_until_killed(folder: Path, workflow: str, marker: str) -> None:
    """Start `wfexec run workflow.yaml` in `folder` and SIGKILL it once the file `marker` appears."""
    process = subprocess.Popen([sys.executable, "-m", "wfexec.cli", "run", workflow], cwd=folder,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 20
    while not (folder / marker).exists() and time.time() < deadline:
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()


def test_an_in_flight_step_that_is_not_idempotent_is_not_rerun_without_asking(tmp_path, private_run_store):
    path = tmp_path / "workflow.yaml"
    path.write_text(ONCE_SLOW.format(python=sys.executable))
    run_until_killed(tmp_path, str(path), "started")
    [record] = runs(private_run_store)
    assert record["status"] == "running" and record["in_flight"]["node"] == "deploy"

    asked = wfexec_cli("resume", record["id"])
    assert asked.returncode == 3
    assert "node 'deploy' was running" in asked.stderr and "not safe to run twice (process)" in asked.stderr
    skipped = wfexec_cli("resume", record["id"], "--skip")
    assert skipped.returncode == 0 and skipped.stdout.strip() == "deployed"
    assert "skipped 'deploy'" in skipped.stderr


def test_the_store_of_a_10000_step_run_stays_small(tmp_path, private_run_store):
    path = tmp_path / "workflow.yaml"
    path.write_text("""
name: long
version: 1
start_node: load
initial_state: {count: 0, big: {}}
nodes:
  load:
    type: action
    actions: [{type: read_file, path: big.txt, store_as: big.blob}]
    on_success: check
  check:
    type: conditional
    condition: {type: evaluate_expression, expression: "count < 5000"}
    branches: {true: step, false: done}
  step:
    type: action
    actions:
      - {type: compute, expression: "count + 1", store_as: count}
      - {type: set_state, field: "computed.last", value: "step ${count}"}
    on_success: check
endings:
  done: {type: success, message: "${count}"}
""")
    # Half a megabyte of state that never changes: it must not be copied into every journal row.
    (tmp_path / "big.txt").write_text("x" * 500_000)
    done = wfexec_cli("run", path, "--max-steps", "20000", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [record] = runs(private_run_store)
    assert record["steps"] == 10002
    size = sum(f.stat().st_size for f in private_run_store.parent.iterdir())
    assert size < 10 * 1024 * 1024, f"store is {size} bytes"


# --------------------------------------------------------------------------- #
# The crash test: kill a run with side effects at random points, resume, compare.

CRASHY = """
name: crashy
version: 1
start_node: check
initial_state: {count: 0}
nodes:
  check:
    type: conditional
    condition: {type: evaluate_expression, expression: "count < 100"}
    branches: {true: step, false: done}
  step:
    type: action
    actions:
      - {type: write_file, path: "executions.log", content: "${count}\\n", append: true}
      - {type: write_file, path: "out/${count}.txt", content: "step ${count}"}
      - {type: compute, expression: "count + 1", store_as: count}
    on_success: check
endings:
  done: {type: success, message: "${count}"}
"""


def _run_to_completion(folder: Path, store: Path, kill_after: float | None) -> None:
    command = [sys.executable, "-m", "wfexec.cli", "run", "workflow.yaml", "--store", str(store)]
    process = subprocess.Popen(command, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if kill_after is not None:
        try:
            process.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
    process.wait()
    listed = _records(store)
    if not listed:  # killed before the run was recorded: start it again
        return _run_to_completion(folder, store, None)
    if listed[0].status != "completed":
        resumed = wfexec_cli("resume", listed[0].id, "--store", store, cwd=folder)
        assert resumed.returncode == 0, resumed.stderr


def _records(store: Path) -> list:
    from wfexec.durable.store import Store

    if not store.exists():
        return []
    opened = Store(store)
    try:
        return opened.list()
    finally:
        opened.close()


def _outcome(folder: Path, store: Path) -> tuple:
    """What a finished run left: its state, the nodes it journaled, its files, its side-effect log."""
    from wfexec.durable.store import Store

    opened = Store(store)
    try:
        [record] = opened.list()
        _, state = opened.snapshot(record.id)
        nodes = [row["node"] for row in opened.journal(record.id)]
    finally:
        opened.close()
    files = {p.name: p.read_text() for p in sorted((folder / "out").iterdir())}
    executions = (folder / "executions.log").read_text().split()
    return state, nodes, files, executions


def test_killed_at_random_points_a_run_resumes_to_the_same_result(tmp_path):
    rng = random.Random(20261123)
    baseline_dir = tmp_path / "baseline"
    baseline_dir.mkdir()
    (baseline_dir / "workflow.yaml").write_text(CRASHY)
    started = time.perf_counter()
    _run_to_completion(baseline_dir, baseline_dir / "runs.db", None)
    duration = time.perf_counter() - started
    expected_state, expected_nodes, expected_files, expected_runs = _outcome(baseline_dir, baseline_dir / "runs.db")
    assert len(expected_nodes) == 201 and expected_runs == [str(i) for i in range(100)]

    for trial in range(50):
        folder = tmp_path / f"trial{trial}"
        folder.mkdir()
        (folder / "workflow.yaml").write_text(CRASHY)
        _run_to_completion(folder, folder / "runs.db", rng.uniform(0.05, duration))
        state, nodes, files, executions = _outcome(folder, folder / "runs.db")
        assert state == expected_state, f"trial {trial}"
        assert nodes == expected_nodes, f"trial {trial}: the journal differs"
        assert files == expected_files, f"trial {trial}"
        # Every step ran; only the one in flight at the kill may have run twice.
        assert sorted(set(executions), key=int) == expected_runs, f"trial {trial}"
        repeated = len(executions) - len(set(executions))
        assert repeated <= 1, f"trial {trial}: {repeated} steps ran twice: {executions}"


def test_at_a_terminal_resume_asks_whether_to_rerun_the_step_in_flight(tmp_path, private_run_store):
    import pexpect

    path = tmp_path / "workflow.yaml"
    path.write_text(ONCE_SLOW.format(python=sys.executable))
    run_until_killed(tmp_path, str(path), "started")
    [record] = runs(private_run_store)
    child = pexpect.spawn(sys.executable, ["-m", "wfexec.cli", "resume", record["id"]], cwd=str(tmp_path),
                          encoding="utf-8", timeout=20, dimensions=(40, 120),
                          env={"TERM": "xterm", "PATH": "/usr/bin:/bin", "WFEXEC_STORE": str(private_run_store)})
    child.expect("'deploy' was running when the run stopped")
    child.expect("Run it again")
    child.send("\r")
    child.expect("deployed")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert runs(private_run_store)[0]["status"] == "completed"


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


def test_a_states_node_killed_mid_protocol_resumes_with_the_same_agents(tmp_path, private_run_store):
    flow = tmp_path / "flow"
    flow.mkdir()
    (flow / "START.sh").write_text('echo START >> visited.log\necho "<call return=\\"AFTER.sh\\">SLOW.sh</call>"\n')
    (flow / "SLOW.sh").write_text(
        'echo SLOW >> visited.log\n'
        'if [ ! -e slow.marker ]; then touch slow.marker; sleep 30; fi\n'
        'echo "<result>slow done</result>"\n')
    (flow / "AFTER.sh").write_text('echo AFTER >> visited.log\necho "<result>after: $RAYMOND_RESULT</result>"\n')
    (tmp_path / "workflow.yaml").write_text(STATES_WORKFLOW)
    run_until_killed(tmp_path, "workflow.yaml", "slow.marker")
    [record] = runs(private_run_store)
    assert record["status"] == "running" and record["in_flight"]["node"] == "work"

    resumed = wfexec_cli("resume", record["id"], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    # The return stack survived: SLOW's result went back to AFTER, and START did not run again.
    assert resumed.stdout.strip() == "after: slow done"
    assert (tmp_path / "visited.log").read_text().split() == ["START", "SLOW", "SLOW", "AFTER"]
    with sqlite3.connect(private_run_store) as db:
        assert db.execute("SELECT count(*) FROM node_states").fetchone()[0] == 0  # cleared once the node ended
