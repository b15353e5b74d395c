"""Durable runs: the store, parking and resuming, changed workflows, and crash tests with SIGKILL at chosen points."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, wfexec_cli, wfexec_in_process as cli, with_coverage

QUICKSTART = ROOT / "skills" / "quickstart"


def runs(store) -> list[dict]:
    done = cli("runs", "--format", "json", "--store", store)
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


def test_show_counts_one_step_as_one_step(private_run_store, tmp_path):
    (tmp_path / "one.yaml").write_text(
        "name: one\nversion: 1\nstart_node: set\nnodes:\n  set:\n    type: action\n    actions:\n"
        "      - {type: set_state, field: computed.x, value: 1}\n    on_success: done\n"
        "endings:\n  done: {type: success, message: ok}\n")
    assert cli("run", tmp_path / "one.yaml").returncode == 0
    [record] = runs(private_run_store)
    assert ", 1 step, " in cli("show", record["id"]).stdout


def test_show_lists_history_with_changes_and_state(private_run_store):
    cli("run", QUICKSTART, "--answer", "ask_mood=plain")
    [record] = runs(private_run_store)
    shown = cli("show", record["id"], "--state").stdout
    assert "count_letters (action) → pick_style" in shown and "[computed.letters, computed.greeting]" in shown
    assert "greeting: Hello, world" in shown
    assert ", 3 steps, " in shown
    data = json.loads(cli("show", record["id"], "--format", "json", "--state").stdout)
    assert [row["node"] for row in data["journal"]] == ["ask_mood", "count_letters", "pick_style"]
    assert data["journal"][1]["changes"] == {"computed.letters": 5, "computed.greeting": "Hello, world"}
    assert data["state"]["computed"]["letters"] == 5


def test_ephemeral_runs_leave_no_store(tmp_path, private_run_store):
    done = cli("run", QUICKSTART, "--answer", "ask_mood=plain", "--ephemeral")
    assert done.returncode == 0
    assert not private_run_store.exists()


def test_cancel_a_waiting_run(private_run_store):
    cli("run", QUICKSTART)
    [record] = runs(private_run_store)
    assert cli("cancel", record["id"]).returncode == 0
    assert runs(private_run_store)[0]["status"] == "cancelled"
    refused = cli("resume", record["id"], "--answer", "ask_mood=plain")
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
    assert cli("run", path).returncode == 3
    [record] = runs(private_run_store)

    # A future node changed: resume goes on with the new version and says so.
    path.write_text(CHANGING.replace("value: LAST", "value: NEW-LAST"))
    first = cli("resume", record["id"], "--answer", "ask=go")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "FIRST NEW-LAST"
    assert "future nodes changed: last" in first.stderr

    # A completed node changed: resume refuses unless told to accept it.
    path.write_text(CHANGING)
    assert cli("run", path).returncode == 3
    record = runs(private_run_store)[0]
    path.write_text(CHANGING.replace("value: FIRST", "value: CHANGED"))
    refused = cli("resume", record["id"], "--answer", "ask=go")
    assert refused.returncode == 2
    assert "completed nodes changed: first" in refused.stderr and "--accept-changes" in refused.stderr
    assert runs(private_run_store)[0]["status"] == "waiting"
    accepted = cli("resume", record["id"], "--answer", "ask=go", "--accept-changes")
    assert accepted.returncode == 0
    assert accepted.stdout.strip() == "FIRST LAST"  # what already ran is not run again


def test_a_foreign_or_corrupt_store_is_refused_and_left_untouched(tmp_path):
    not_sqlite = tmp_path / "notes.db"
    not_sqlite.write_bytes(b"my precious notes\n" * 10)
    done = cli("run", QUICKSTART, "--store", not_sqlite)
    assert done.returncode == 2
    assert "is not a wfexec run store" in done.stderr and "Traceback" not in done.stderr
    assert not_sqlite.read_bytes() == b"my precious notes\n" * 10

    foreign = tmp_path / "app.db"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE users (name TEXT)")
    before = foreign.read_bytes()
    done = cli("runs", "--store", foreign)
    assert done.returncode == 2 and "database of something else (tables: users)" in done.stderr
    assert foreign.read_bytes() == before


def test_two_processes_cannot_drive_one_run(private_run_store):
    cli("run", QUICKSTART)
    [record] = runs(private_run_store)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with sqlite3.connect(private_run_store) as db:
            db.execute("UPDATE runs SET lease = ? WHERE id = ?", (f"{holder.pid}@{os.uname().nodename}", record["id"]))
        refused = cli("resume", record["id"], "--answer", "ask_mood=plain")
        assert refused.returncode == 2
        assert f"is being driven by process {holder.pid}@" in refused.stderr
    finally:
        holder.kill()
        holder.wait()
    # Once that process is gone, its lease is stale and the run can be resumed.
    assert cli("resume", record["id"], "--answer", "ask_mood=plain").returncode == 0


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
    process = subprocess.Popen([sys.executable, "-m", "wfexec", "run", workflow], cwd=folder,
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
    assert record["status"] == "interrupted" and record["in_flight"]["node"] == "deploy"

    asked = cli("resume", record["id"])
    assert asked.returncode == 3
    assert "node 'deploy' was running" in asked.stderr and "not safe to run twice (process)" in asked.stderr
    skipped = cli("resume", record["id"], "--skip")
    assert skipped.returncode == 0 and skipped.stdout.strip() == "deployed"
    assert "skipped 'deploy'" in skipped.stderr
    [step] = json.loads(cli("show", record["id"], "--format", "json").stdout)["journal"]
    assert step["outcome"] == {"skipped": True}  # recorded by the step loop, in its one timestamp format
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", step["at"]), step


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
    done = cli("run", path, "--max-steps", "20000", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [record] = runs(private_run_store)
    assert record["steps"] == 10002
    size = sum(f.stat().st_size for f in private_run_store.parent.iterdir())
    assert size < 10 * 1024 * 1024, f"store is {size} bytes"


# --------------------------------------------------------------------------- #
# Crash tests: kill the real process with SIGKILL at chosen points, resume, and compare with a run that was never
# interrupted: same state, same journal, same files, and no step run twice but the one in flight.

# A step with outside effects: it logs each execution, writes a file, and runs a program. The program holds still
# (and says so in the file `in-flight`, with its pid) when the test left a `hold-COUNT` file for it: that is how a
# test kills the run while an effect is in flight, at an exact step, without anything in wfexec knowing about it.
HOLD = 'if [ -e "hold-$1" ]; then rm "hold-$1"; echo $$ > in-flight.tmp; mv in-flight.tmp in-flight; exec sleep 60; fi'
CRASHY = """
name: crashy
version: 1
start_node: check
initial_state: {count: 0}
nodes:
  check:
    type: conditional
    condition: {type: evaluate_expression, expression: "count < LOOPS"}
    branches: {true: step, false: done}
  step:
    type: action
    actions:
      - {type: write_file, path: "executions.log", content: "${count}\\n", append: true}
      - {type: write_file, path: "out/${count}.txt", content: "step ${count}"}
      - {type: run_command, command: [sh, -c, 'HOLD', sh, "${count}"]}
      - {type: compute, expression: "count + 1", store_as: count}
    on_success: check
endings:
  done: {type: success, message: "${count}"}
""".replace("HOLD", HOLD)
LOOPS = 4  # steps 1, 3, ... 9 are `check`; step 2 + 2k is `step` with count k


def crashy(folder: Path, loops: int = LOOPS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "workflow.yaml").write_text(CRASHY.replace("LOOPS", str(loops)))
    return folder


def _outcome(folder: Path, store: Path) -> dict:
    """What a finished run left: status, state, journal (without times), files, and which steps executed."""
    from wfexec.durable.store import Store

    opened = Store(store)
    try:
        [record] = opened.list()
        _, state = opened.snapshot(record.id)
        journal = [{k: row[k] for k in ("step", "node", "type", "outcome", "target", "changes")}
                   for row in opened.journal(record.id)]
    finally:
        opened.close()
    return {"status": (record.status, record.ending, record.steps), "state": state, "journal": journal,
            "files": {p.name: p.read_text() for p in sorted((folder / "out").iterdir())},
            "executions": (folder / "executions.log").read_text().split()}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> dict:
    folder = crashy(tmp_path_factory.mktemp("uninterrupted"))
    done = cli("run", "workflow.yaml", "--store", folder / "runs.db", cwd=folder)
    assert done.returncode == 0, done.stderr
    outcome = _outcome(folder, folder / "runs.db")
    assert outcome["executions"] == [str(i) for i in range(LOOPS)] and len(outcome["journal"]) == 2 * LOOPS + 1
    return outcome


def _killed_then_resumed(folder: Path, command: list, wait_for_kill=None) -> dict:
    store = folder / "runs.db"
    process = subprocess.Popen([*command, "run", "workflow.yaml", "--store", str(store)], cwd=folder,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if wait_for_kill is not None:
        wait_for_kill(process)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL, f"not killed (exit {process.returncode}): {stderr.decode()}"
    [record] = _records(store)
    assert record.status == "running"  # the kill interrupted it: resume has work to do
    resumed = cli("resume", record.id, "--rerun", "--store", store, cwd=folder)
    assert resumed.returncode == 0, resumed.stderr
    return _outcome(folder, store)


def _assert_same_as_uninterrupted(outcome: dict, expected: dict, ran_twice: str | None) -> None:
    assert outcome["status"] == expected["status"]
    assert outcome["state"] == expected["state"]
    assert outcome["journal"] == expected["journal"]
    assert outcome["files"] == expected["files"]
    repeated = sorted(outcome["executions"], key=int)
    for once in expected["executions"]:
        repeated.remove(once)
    assert repeated == ([ran_twice] if ran_twice else []), outcome["executions"]


CRASH_POINTS = [  # (point, step, the count whose step runs twice: the one in flight at the kill)
    ("after-commit", 1, None),      # the first check is durable, the first effect not started
    ("after-commit", 4, None),      # a step with effects is durable, the next check not
    ("after-commit", 2 * LOOPS + 1, None),  # every step is durable, the run not yet marked completed
    ("mid-commit", 3, None),        # a state-only step's commit is lost: it runs again from the snapshot
    ("mid-commit", 6, "2"),         # an effect step's commit is lost: it is still in flight, so it runs again
]


@pytest.mark.parametrize("point, step, ran_twice", CRASH_POINTS)
def test_killed_at_a_commit_point_a_run_resumes_to_the_same_result(tmp_path, uninterrupted, point, step, ran_twice):
    folder = crashy(tmp_path)
    outcome = _killed_then_resumed(folder, [sys.executable, str(ROOT / "tests" / "crashpoint.py"), point,
                                            str(step), "--"])
    _assert_same_as_uninterrupted(outcome, uninterrupted, ran_twice)


def test_killed_while_an_effect_is_in_flight_a_run_resumes_to_the_same_result(tmp_path, uninterrupted):
    folder = crashy(tmp_path)
    (folder / "hold-2").touch()

    def when_the_effect_holds(process):
        deadline = time.monotonic() + 30
        while not (folder / "in-flight").exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        process.kill()
        assert (folder / "in-flight").exists(), "the run never reached the effect at count 2"
        effect = int((folder / "in-flight").read_text())
        with contextlib.suppress(ProcessLookupError):
            os.kill(effect, signal.SIGKILL)  # the machine went down: its program too

    outcome = _killed_then_resumed(folder, [sys.executable, "-m", "wfexec"], when_the_effect_holds)
    _assert_same_as_uninterrupted(outcome, uninterrupted, ran_twice="2")


def _records(store: Path) -> list:
    from wfexec.durable.store import Store

    if not store.exists():
        return []
    opened = Store(store)
    try:
        return opened.list()
    finally:
        opened.close()


def _start_run(folder: Path) -> subprocess.Popen:
    """`wfexec run` in a subprocess, returned once it opened its store: kills are timed from then, not from the
    interpreter's start."""
    store = folder / "runs.db"
    process = subprocess.Popen([sys.executable, "-m", "wfexec", "run", "workflow.yaml", "--store", str(store)],
                               cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not store.exists() and process.poll() is None:
        time.sleep(0.002)
    return process


@pytest.mark.slow
def test_killed_at_random_times_a_run_resumes_to_the_same_result(tmp_path):
    """The soak: kills at random times rather than chosen points, over a longer run."""
    loops = 20
    rng = random.Random(20261123)
    baseline = crashy(tmp_path / "baseline", loops)
    process = _start_run(baseline)
    assert process.wait() == 0
    [record] = _records(baseline / "runs.db")
    duration = record.finished_at - record.created_at  # the run itself, not the process's exit
    expected = _outcome(baseline, baseline / "runs.db")
    interrupted = 0
    for trial in range(10):
        folder = crashy(tmp_path / f"trial{trial}", loops)
        store = folder / "runs.db"
        process = _start_run(folder)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=rng.uniform(0, duration))
        process.kill()
        process.wait()
        listed = _records(store)
        if not listed:  # killed before the run was recorded: start it again
            assert cli("run", "workflow.yaml", "--store", store, cwd=folder).returncode == 0
        elif listed[0].status != "completed":
            interrupted += 1
            resumed = cli("resume", listed[0].id, "--rerun", "--store", store, cwd=folder)
            assert resumed.returncode == 0, f"trial {trial}: {resumed.stderr}"
        outcome = _outcome(folder, store)
        for key in ("status", "state", "journal", "files"):
            assert outcome[key] == expected[key], f"trial {trial}: {key} differs"
        # Every step ran; only the one in flight at the kill may have run twice.
        assert sorted(set(outcome["executions"]), key=int) == expected["executions"], f"trial {trial}"
        repeated = len(outcome["executions"]) - len(set(outcome["executions"]))
        assert repeated <= 1, f"trial {trial}: {repeated} steps ran twice: {outcome['executions']}"
    assert interrupted, "no kill landed inside a run: the soak tested nothing"


def test_at_a_terminal_resume_asks_whether_to_rerun_the_step_in_flight(tmp_path, private_run_store):
    import pexpect

    path = tmp_path / "workflow.yaml"
    path.write_text(ONCE_SLOW.format(python=sys.executable))
    run_until_killed(tmp_path, str(path), "started")
    [record] = runs(private_run_store)
    child = pexpect.spawn(sys.executable, ["-m", "wfexec", "resume", record["id"]], cwd=str(tmp_path),
                          encoding="utf-8", timeout=20, dimensions=(40, 120),
                          env=with_coverage({"TERM": "xterm", "PATH": "/usr/bin:/bin",
                                             "WFEXEC_STORE": str(private_run_store)}))
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
    assert record["status"] == "interrupted" and record["in_flight"]["node"] == "work"

    resumed = cli("resume", record["id"], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    # The return stack survived: SLOW's result went back to AFTER, and START did not run again.
    assert resumed.stdout.strip() == "after: slow done"
    assert (tmp_path / "visited.log").read_text().split() == ["START", "SLOW", "SLOW", "AFTER"]
    with sqlite3.connect(private_run_store) as db:
        assert db.execute("SELECT count(*) FROM node_states").fetchone()[0] == 0  # cleared once the node ended


def test_runs_lists_each_run_with_its_status_and_filters_by_status(tmp_path, private_run_store):
    # $WFEXEC_STORE names the test's store, which no run has made yet: a named store that is not there
    assert "there is no run store at" in cli("runs").stderr
    cli("run", QUICKSTART)  # waits at its question
    finished = cli("run", QUICKSTART, "--answer", "ask_mood=plain")
    assert finished.returncode == 0
    waiting, completed = sorted(runs(private_run_store), key=lambda r: r["status"], reverse=True)
    table = cli("runs").stdout.splitlines()
    assert table[0].split() == ["id", "workflow", "status", "node", "steps", "started", "duration"]
    rows = {line.split()[0]: line.split() for line in table[1:]}
    assert rows[waiting["id"]][1:4] == ["quickstart", "waiting", "ask_mood"]
    assert rows[completed["id"]][1:5] == ["quickstart", "completed", "→", "done"]
    only_waiting = cli("runs", "--status", "waiting").stdout
    assert waiting["id"] in only_waiting and completed["id"] not in only_waiting
    assert "no runs with status failed" in cli("runs", "--status", "failed").stdout


def test_show_says_what_was_in_flight_and_the_last_error(tmp_path, private_run_store):
    path = tmp_path / "workflow.yaml"
    path.write_text(ONCE_SLOW.format(python=sys.executable))
    run_until_killed(tmp_path, str(path), "started")
    [record] = runs(private_run_store)
    shown = cli("show", record["id"]).stdout
    assert "status: interrupted" in shown and "in flight when it stopped: deploy (step 1)" in shown
    spinning = tmp_path / "spin.yaml"
    spinning.write_text("name: spin\nversion: 1\nstart_node: spin\nnodes:\n  spin:\n    type: action\n"
                        "    actions: [{type: set_state, field: computed.x, value: 1}]\n    on_success: spin\n"
                        "endings:\n  never: {type: success, message: never}\n")
    assert cli("run", spinning, "--max-steps", "5").returncode == 4
    stopped = next(r for r in runs(private_run_store) if r["workflow_name"] == "spin")
    shown = cli("show", stopped["id"]).stdout
    assert "status: stopped" in shown and "last error: " in shown and "more than 5 steps" in shown


def test_ten_thousand_runs_created_back_to_back_get_distinct_ids(tmp_path):
    from wfexec.durable.store import Store

    store = Store(tmp_path / "runs.db")
    try:
        with store.transaction():  # as fast as a store can be filled: many runs share each millisecond
            ids = [store.create_run(workflow_path="w.yaml", workflow_name="w", workflow_hash="0", node_hashes={},
                                    inputs={}, state={}, start_node="a") for _ in range(10_000)]
        assert len(set(ids)) == 10_000
        assert len(store.list(limit=20_000)) == 10_000
    finally:
        store.close()


COUNTER_LOOP = ROOT / "tests" / "workflows" / "running" / "counter_loop.yaml"


def test_a_long_durable_run_keeps_a_window_of_its_history_and_the_journal_keeps_all(tmp_path):
    """Memory stays flat: the state holds the latest steps, the store every one, and resume reads only the tail."""
    import wfexec
    from wfexec.durable.journal import HISTORY_WINDOW

    result = wfexec.run(COUNTER_LOOP, inputs={"limit": 1500}, store=tmp_path / "runs.db", max_steps=10_000)
    assert result.message == "1500" and result.steps == 3001
    history = result.state["history"]
    assert len(history) == HISTORY_WINDOW and history[-1]["target"] == "done"
    shown = json.loads(cli("show", result.run_id, "--format", "json", "--store", tmp_path / "runs.db").stdout)
    assert len(shown["journal"]) == 3001 and [h["node"] for h in shown["journal"][:3]] == ["check", "step", "check"]


def test_runs_lists_the_newest_fifty_and_says_how_many_more_there_are(tmp_path):
    from wfexec.durable.store import Store

    store = Store(tmp_path / "runs.db")
    with store.transaction():
        ids = [store.create_run(workflow_path="w.yaml", workflow_name="w", workflow_hash="0", node_hashes={},
                                inputs={}, state={}, start_node="a") for _ in range(60)]
    store.close()
    listed = cli("runs", "--store", tmp_path / "runs.db")
    rows = listed.stdout.splitlines()[1:]
    assert len(rows) == 50 and rows[0].split()[0] == max(ids)
    assert "the newest 50 of 60 runs; --limit N lists more (0: all)" in listed.stderr
    every = cli("runs", "--store", tmp_path / "runs.db", "--limit", "0")
    assert len(every.stdout.splitlines()) == 61 and every.stderr == ""
    few = cli("runs", "--store", tmp_path / "runs.db", "--limit", "5", "--format", "json")
    assert [r["id"] for r in json.loads(few.stdout)] == sorted(ids, reverse=True)[:5]
    assert few.stderr == ""  # JSON is read by a program (`$(wfexec runs --format json ...)`): no hint for people


# -- run ids are exact (issue #24) -------------------------------------------------------------------------------
# In this process (`cli`): the rule is what the commands say and do with an id; a process does not change it.

@pytest.mark.parametrize("command", [["show"], ["cancel"], ["resume"], ["show", "--state"]])
def test_a_run_id_is_exact_or_a_literal_prefix_of_four_characters(private_run_store, command):
    """`%`, `_` and '' once matched every run through LIKE: `wfexec cancel %` cancelled the only run."""
    assert cli("run", QUICKSTART).returncode == 3
    [record] = runs(private_run_store)
    run_id = record["id"]
    for given in ("%", "_", "", " ", "%%%%", "____", run_id[:3] + "_", run_id[:5] + "%", run_id[:3],
                  run_id[:4].upper()):
        refused = cli(*command, given)
        assert refused.returncode == 2, (given, refused.stdout, refused.stderr)
        assert "Traceback" not in refused.stderr and refused.stderr.startswith("error: "), refused.stderr
        assert len(refused.stderr.splitlines()) == 1, refused.stderr
        expected = "the run id is empty" if not given.strip() else f"no run '{given}'"
        assert expected in refused.stderr, (given, refused.stderr)
    assert "at least 4 of its first characters" in cli(*command, run_id[:3]).stderr
    assert runs(private_run_store)[0]["status"] == "waiting"
    shown = cli("show", run_id[:4])
    assert shown.returncode == 0 and run_id in shown.stdout


def test_an_ambiguous_prefix_lists_the_runs_it_could_mean(private_run_store):
    for _ in range(2):
        assert cli("run", QUICKSTART).returncode == 3
    first, second = (r["id"] for r in runs(private_run_store))
    common = os.path.commonprefix([first, second])
    assert len(common) >= 4  # ids start with the time in milliseconds
    for command in ("show", "cancel", "resume"):
        refused = cli(command, common)
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.startswith(f"error: '{common}' is the start of several runs' ids: {first}, {second} — "
                                         "give more characters of the id"), refused.stderr
    assert [r["status"] for r in runs(private_run_store)] == ["waiting", "waiting"]


def test_the_api_looks_runs_up_by_the_same_rule(private_run_store):
    import wfexec
    from wfexec.durable.store import StoreError

    assert wfexec_cli("run", QUICKSTART).returncode == 3
    for given in ("%", "", "____"):
        with pytest.raises(StoreError):
            wfexec.resume(given, answers={"ask_mood": "plain"}, store=private_run_store)
    assert runs(private_run_store)[0]["status"] == "waiting"
