"""A durable run's store grows with what its steps change, not with the size of its state: appends journal the
items appended, a large state is not copied per commit, and the state rebuilt from snapshot + journal is the
state the run ended with. A store written by the previous schema still opens, shows and resumes."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from pathlib import Path

from conftest import wfexec_cli, wfexec_in_process as cli

from wfexec.durable.store import MIGRATIONS, SCHEMA_VERSION, Store

APPENDS = """
name: appends
version: 1
start_node: check
initial_state: {count: 0, items: []}
nodes:
  check:
    type: conditional
    condition: {type: evaluate_expression, expression: "count < %d"}
    branches: {true: step, false: done}
  step:
    type: action
    actions:
      - {type: append_state, field: items, value: {n: "${count}", text: "an item of about sixty bytes, all told"}}
      - {type: compute, expression: "count + 1", store_as: count}
    on_success: check
endings:
  done: {type: success, message: "${items.length} items"}
"""

LARGE_STATE_EFFECTS = """
name: large
version: 1
start_node: check
initial_state: {count: 0}
nodes:
  check:
    type: conditional
    condition: {type: evaluate_expression, expression: "count < 150"}
    branches: {true: step, false: done}
  step:
    type: action
    actions:
      - {type: write_file, path: tick.txt, content: "${count}"}
      - {type: compute, expression: "count + 1", store_as: count}
    on_success: check
endings:
  done: {type: success, message: "${count} steps"}
"""


def store_bytes(store: Path) -> int:
    with sqlite3.connect(store) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in store.parent.glob(store.name + "*"))


def only_run(store: Path) -> str:
    return json.loads(cli("runs", "--format", "json", "--store", store).stdout)[0]["id"]


def test_four_thousand_appends_journal_the_items_not_the_growing_list(tmp_path):
    (tmp_path / "workflow.yaml").write_text(APPENDS % 4000)
    store = tmp_path / "runs.db"
    done = cli("run", "workflow.yaml", "--store", store, "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["message"] == "4000 items"
    # Each append is about 100 bytes of JSON; the journal with its snapshots stays within a few times that.
    # Journaling the whole list each time, as before, took 90 MB for these 4,000.
    assert store_bytes(store) < 4000 * 600
    opened = Store(store, readonly=True)
    try:
        run_id = only_run(store)
        snapshot_step = opened.db.execute("SELECT step FROM snapshots").fetchone()[0]
        replayed = opened.replay(run_id)
    finally:
        opened.close()
    # The state is a snapshot plus rows replayed after it. Where the last snapshot falls depends on how the steps
    # were batched into commits, which is by time (a loaded machine can put it on the final commit).
    assert 0 < snapshot_step <= replayed.step == 8001
    assert replayed.state["items"] == [{"n": i, "text": "an item of about sixty bytes, all told"} for i in range(4000)]
    assert replayed.state == {k: v for k, v in result["state"].items() if k != "history"}


def test_a_megabyte_of_state_is_not_written_again_by_each_step(tmp_path):
    (tmp_path / "workflow.yaml").write_text(LARGE_STATE_EFFECTS)
    records = [{"id": i, "name": f"record {i}", "text": "x" * 80} for i in range(10_000)]  # about 1.1 MB
    (tmp_path / "inputs.json").write_text(json.dumps({"records": records}))  # an input is a key of the state
    store = tmp_path / "runs.db"
    done = cli("run", "workflow.yaml", "--store", store, "--input-file", "inputs.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "150 steps"
    # 150 commits with outside effects; a snapshot each would be 165 MB. The inputs are kept once, with the run.
    assert store_bytes(store) < 4 * 1024 * 1024
    _, state = Store(store, readonly=True).snapshot(only_run(store))
    assert state["records"] == records and state["count"] == 150


PARKED_AFTER_A_STEP = """
name: parked
version: 1
start_node: note
nodes:
  note:
    type: action
    actions: [{type: set_state, field: computed.before, value: kept}]
    on_success: ask
  ask:
    type: user_prompt
    prompt: {question: "Which?", header: Pick, options: [{id: a, label: A}, {id: b, label: B}]}
    on_response: {a: {next_node: done}, b: {next_node: done}}
endings:
  done: {type: success, message: "${computed.before} then ${user_responses.ask.id}"}
"""


@contextlib.contextmanager
def _older_store(store: Path, version: int):
    """A store as a wfexec of store schema `version` made it (its tables, its version), open to fill in."""
    with sqlite3.connect(store, isolation_level=None) as db:
        for number in range(1, version + 1):
            for statement in MIGRATIONS[number].split(";"):
                if statement.strip():
                    db.execute(statement)
        db.execute("CREATE TABLE wfexec_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO wfexec_meta VALUES ('schema_version', ?), ('app', 'wfexec')", (str(version),))
        yield db


def test_a_store_of_the_previous_schema_opens_shows_and_resumes(tmp_path):
    """A person upgrades wfexec with a run parked in their store: it goes on where it stopped."""
    (tmp_path / "workflow.yaml").write_text(PARKED_AFTER_A_STEP)
    store = tmp_path / "runs.db"
    with _older_store(store, 2) as db:  # what wfexec 0.2 left
        now = time.time()
        db.execute("INSERT INTO runs (id, workflow_path, workflow_name, workflow_hash, node_hashes, status, "
                   "current_node, pending_question, steps, created_at, updated_at) VALUES "
                   "('0old00000000000', ?, 'parked', 'x', '{}', 'waiting', 'ask', ?, 0, ?, ?)",
                   (str(tmp_path / "workflow.yaml"),
                    json.dumps({"node": "ask", "question": "Which?", "header": "Pick", "allow_other": False,
                                "options": [{"id": "a", "label": "A", "description": None},
                                            {"id": "b", "label": "B", "description": None}]}), now, now))
        db.execute("INSERT INTO snapshots VALUES ('0old00000000000', 0, ?)", (json.dumps(
            {"flags": {}, "computed": {"before": "kept"}, "user_responses": {}, "checkpoints": {}}),))
    shown = wfexec_cli("show", "0old00000000000", "--store", store)
    assert shown.returncode == 0 and "waiting: 'ask' asks: Which?" in shown.stdout, shown.stderr
    resumed = wfexec_cli("resume", "0old00000000000", "--answer", "ask=b", "--accept-changes", "--store", store)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "kept then b"
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT value FROM wfexec_meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
        assert db.execute("SELECT steps, status FROM runs").fetchone() == (1, "completed")


def _schema_6_store(store: Path, workflow: Path) -> None:
    """What wfexec left before journal rows were keyed by the run's number (store schema 6): a finished run whose
    journal is two rows, and a run waiting at a question after one step."""
    with _older_store(store, 6) as db:
        now = time.time()
        question = json.dumps({"node": "ask", "question": "Which?", "header": "Pick", "allow_other": False,
                               "options": [{"id": "a", "label": "A", "description": None},
                                           {"id": "b", "label": "B", "description": None}]})
        for run_id, status, current, pending in (("0done0000000000", "completed", None, None),
                                                  ("0wait0000000000", "waiting", "ask", question)):
            db.execute("INSERT INTO runs (id, workflow_path, workflow_name, workflow_hash, node_hashes, status, "
                       "current_node, pending_question, steps, created_at, updated_at) VALUES "
                       "(?, ?, 'parked', 'x', '{}', ?, ?, ?, 0, ?, ?)",
                       (run_id, str(workflow), status, current, pending, now, now))
            db.execute("INSERT INTO snapshots VALUES (?, 0, ?)", (run_id, json.dumps(
                {"flags": {}, "computed": {}, "user_responses": {}, "checkpoints": {}})))
        step = [1, "note", "action", {"success": True}, "ask", "2026-01-01T00:00:00.000Z",
                {"computed.before": "kept"}, 40]
        answered = [2, "ask", "user_prompt", {"answer": "a"}, "done", "2026-01-01T00:00:01.000Z",
                    {"user_responses.ask": {"id": "a"}}, 90]
        for run_id, first, last, steps, node in (("0done0000000000", 1, 1, [step], "ask"),
                                                  ("0done0000000000", 2, 2, [answered], "done"),
                                                  ("0wait0000000000", 1, 1, [step], "ask")):
            db.execute("INSERT INTO journal VALUES (?, ?, ?, ?, ?, ?)",
                       (run_id, first, last, json.dumps(steps), node, now))


def test_a_store_of_schema_6_is_read_as_it_is_then_upgraded_with_its_journals(tmp_path):
    """Reading an older store writes nothing to it; the first command that writes moves every run's journal to
    the new key, and the waiting run goes on from its journal."""
    workflow = tmp_path / "workflow.yaml"
    workflow.write_text(PARKED_AFTER_A_STEP)
    store = tmp_path / "runs.db"
    _schema_6_store(store, workflow)
    before = store.read_bytes()

    def journal(run_id: str) -> list:
        shown = cli("show", run_id, "--format", "json", "--store", store)
        assert shown.returncode == 0, shown.stderr
        return [(step["step"], step["node"], step["target"]) for step in json.loads(shown.stdout)["journal"]]

    assert journal("0done0000000000") == [(1, "note", "ask"), (2, "ask", "done")]
    listed = {r["id"]: (r["steps"], r["current_node"])
              for r in json.loads(cli("runs", "--format", "json", "--store", store).stdout)}
    assert listed == {"0done0000000000": (2, None), "0wait0000000000": (1, "ask")}
    assert store.read_bytes() == before  # read as it is: not even upgraded

    resumed = cli("resume", "0wait0000000000", "--answer", "ask=b", "--accept-changes", "--store", store)
    assert (resumed.returncode, resumed.stdout.strip()) == (0, "kept then b"), resumed.stderr
    assert journal("0wait0000000000") == [(1, "note", "ask"), (2, "ask", "done")]
    assert journal("0done0000000000") == [(1, "note", "ask"), (2, "ask", "done")]
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT value FROM wfexec_meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    # A run started after the upgrade takes the next number: its rows go after both older runs' rows.
    new = cli("run", workflow, "--answer", "ask=a", "--store", store, "--format", "json")
    assert new.returncode == 0, new.stderr
    assert journal(json.loads(new.stdout)["run_id"]) == [(1, "note", "ask"), (2, "ask", "done")]
    assert journal("0wait0000000000") == [(1, "note", "ask"), (2, "ask", "done")]


def test_a_killed_run_shows_the_progress_of_its_last_commit(tmp_path):
    """Committing steps writes only their journal row: `runs` and `show` read the run's progress from there."""
    import signal
    import subprocess
    import sys

    from conftest import ROOT

    (tmp_path / "workflow.yaml").write_text(LARGE_STATE_EFFECTS)
    store = tmp_path / "runs.db"
    killed = subprocess.run([sys.executable, str(ROOT / "tests" / "crashpoint.py"), "after-commit", "9", "--",
                             "run", "workflow.yaml", "--store", str(store)], cwd=tmp_path, capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    [listed] = json.loads(cli("runs", "--format", "json", "--store", store).stdout)
    journal = json.loads(cli("show", listed["id"], "--format", "json", "--store", store).stdout)["journal"]
    assert listed["status"] == "interrupted" and listed["in_flight"] is None
    assert (listed["steps"], listed["current_node"]) == (journal[-1]["step"], journal[-1]["target"])
    assert listed["steps"] >= 9
    resumed = cli("resume", listed["id"], "--store", store, cwd=tmp_path)
    assert (resumed.returncode, resumed.stdout.strip()) == (0, "150 steps"), resumed.stderr


def test_a_nodes_saved_state_grows_with_its_changes_and_reads_back_whole(tmp_path, monkeypatch):
    """A states node's agents are saved as the change of each state (a row each), merged back in order; once the
    changes outweigh the last whole copy a new copy replaces them, so neither the rows nor the reading grow without
    bound. Killed at any point, what reads back is the state as of the last change committed."""
    import wfexec.durable.store as store_module

    monkeypatch.setattr(store_module, "NODE_CHANGES_MIN_BYTES", 2000)
    store = Store(tmp_path / "runs.db")
    run_id = store.create_run(workflow_path="w.yaml", workflow_name="w", workflow_hash="h", node_hashes={},
                              inputs={}, state={}, start_node="agents")
    agents: dict = {}
    whole = lambda: {"agents": dict(agents), "ended": {}}  # noqa: E731
    rows_seen, copies = [], 0
    for step in range(300):
        agent = f"a{step % 40}"
        agents[agent] = {"id": agent, "steps": step}
        before = store.db.execute("SELECT data FROM node_states").fetchone()
        store.change_node_state(run_id, "agents", {"agents": {agent: agents[agent]}}, whole)
        copies += before != store.db.execute("SELECT data FROM node_states").fetchone()
        assert Store(tmp_path / "runs.db", readonly=True).node_state(run_id, "agents") == whole()
        rows_seen.append(store.db.execute("SELECT count(*) FROM node_state_changes").fetchone()[0])
    assert 5 < copies < 60 and max(rows_seen) < 80  # saved whole now and then, never a row per agent per step
    store.save_node_state(run_id, "agents", None)
    assert store.node_state(run_id, "agents") is None
    assert store.db.execute("SELECT count(*) FROM node_state_changes").fetchone()[0] == 0
