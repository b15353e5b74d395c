"""The run store is out of a workflow's reach (issue #24, "Safe at every door").

No file consequence may write, delete, replace or create anything at wfexec's run store, its SQLite companions
(-wal, -shm, -journal) or anything in `.wfexec/`, however the path is spelled and wherever it comes from (`--set`,
`--input`, state, the workflow itself). Each case runs the real `wfexec` in a subprocess on a real store, then
checks that the store still answers `wfexec runs` (that check, and the first run that makes the store, are
`wfexec` in this process: they are not what is guarded).
"""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from conftest import wfexec_cli, wfexec_in_process

RULE = "a workflow may not write, move or delete the run store or anything in .wfexec/"


def action_workflow(action: dict, on_failure: bool = True) -> str:
    node = {"type": "action", "actions": [action], "on_success": "done"}
    if on_failure:
        node["on_failure"] = "failed"
    return json.dumps({"name": "guard", "version": "1.0", "start_node": "act", "nodes": {"act": node},
                       "endings": {"done": {"type": "success", "message": "ok"},
                                   "failed": {"type": "failure", "message": "handled: ${computed.last_error}"}}},
                      indent=2)


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A working directory whose store is the default `.wfexec/runs.db`, with one finished run in it."""
    monkeypatch.delenv("WFEXEC_STORE")
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "first.yaml").write_text(action_workflow({"type": "set_state", "field": "computed.x", "value": 1}))
    assert wfexec_in_process("run", "first.yaml", cwd=folder).returncode == 0
    assert (folder / ".wfexec" / "runs.db").is_file()
    return folder


def store_still_works(folder, store=".wfexec/runs.db") -> list[dict]:
    listed = wfexec_in_process("runs", "--format", "json", "--store", store, cwd=folder)
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)
    with sqlite3.connect(folder / store) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    return runs


def assert_refused(result, *words):
    """Exit 1, one located error line naming the node and the rule; no traceback; the on_failure ending unused."""
    output = result.stdout + result.stderr
    assert result.returncode == 1, (result.returncode, output)
    assert "Traceback" not in output and "handled:" not in output
    errors = [line for line in output.splitlines() if ": error: " in line]
    assert len(errors) == 1, output
    assert errors[0].startswith("workflow.yaml:") and "node 'act'" in errors[0], errors[0]
    assert RULE in errors[0] and "wfexec's run store" in errors[0], errors[0]
    for word in words:
        assert word in errors[0], errors[0]


WRITE = {"type": "write_file", "path": "${target}", "content": "not a database"}


@pytest.mark.parametrize("target", [
    ".wfexec/runs.db",
    "./sub/../.wfexec/runs.db",
    "{cwd}/.wfexec/runs.db",
    ".wfexec/runs.db-wal",
    ".wfexec/runs.db-shm",
    ".wfexec/runs.db-journal",
    ".wfexec/states/planted.yaml",
    ".WFEXEC/RUNS.DB",
    "store-link/runs.db",
    "db-link",
], ids=["relative", "dot-dot", "absolute", "wal", "shm", "journal", "in-the-folder", "case-variant",
        "symlink-to-folder", "symlink-to-store"])
def test_write_file_cannot_reach_the_store_by_any_spelling(work, target):
    os.symlink(".wfexec", work / "store-link")
    os.symlink(".wfexec/runs.db", work / "db-link")
    (work / "workflow.yaml").write_text(action_workflow(WRITE))
    before = (work / ".wfexec" / "runs.db").read_bytes()[:16]
    result = wfexec_cli("run", "workflow.yaml", "--set", f"target={target.format(cwd=work)}", cwd=work)
    assert_refused(result, "write_file: refused to write")
    assert (work / ".wfexec" / "runs.db").read_bytes()[:16] == before == b"SQLite format 3\x00"
    assert not (work / ".wfexec" / "states" / "planted.yaml").exists()
    runs = store_still_works(work)
    assert [r["status"] for r in runs] == ["failed", "completed"]


@pytest.mark.parametrize("action", [
    {"type": "delete_file", "path": "${target}"},
    {"type": "local_file_ops", "operation": "delete", "path": "${target}"},
    {"type": "local_file_ops", "operation": "write", "path": "${target}", "content": "x"},
    {"type": "write_file", "path": "${target}", "content": "x", "append": True},
    {"type": "create_directory", "path": "${target}"},
    {"type": "local_file_ops", "operation": "mkdir", "path": "${target}"},
    {"type": "cache_web_content", "from": "computed.page", "dest": "${target}"},
    {"type": "write_log", "path": "${target}"},
    {"type": "apply_log_retention", "strategy": "count", "count": 0, "location": "${target}", "pattern": "*"},
    {"type": "clone_repo", "url": "https://example.invalid/x.git", "dest": "${target}"},
], ids=lambda action: action["type"] + ("-" + action["operation"] if "operation" in action else "")
   + ("-append" if action.get("append") else ""))
def test_every_file_consequence_is_refused_at_the_store(work, action):
    target = ".wfexec" if action["type"] in ("apply_log_retention", "clone_repo") else ".wfexec/runs.db"
    workflow = json.loads(action_workflow(action))
    if action["type"] == "write_log":  # a run log to write
        workflow["nodes"]["act"]["actions"].insert(0, {"type": "init_log", "workflow_name": "guard"})
    (work / "workflow.yaml").write_text(json.dumps(workflow, indent=2))
    result = wfexec_cli("run", "workflow.yaml", "--set", f"target={target}", "--set", "computed.page=junk",
                        cwd=work)
    assert_refused(result, f"{action['type']}: refused to")
    assert (work / ".wfexec" / "runs.db").read_bytes()[:16] == b"SQLite format 3\x00"
    assert len(store_still_works(work)) == 2


def test_a_literal_absolute_path_to_the_store_is_refused_too(work):
    """The working-directory guard lets a workflow write an absolute path it spells out; not the store's."""
    (work / "workflow.yaml").write_text(action_workflow(
        {"type": "delete_file", "path": str(work / ".wfexec" / "runs.db")}))
    assert_refused(wfexec_cli("run", "workflow.yaml", cwd=work), "delete_file: refused to delete")
    assert len(store_still_works(work)) == 2


def test_a_path_from_an_input_or_from_state_is_refused(work):
    (work / "workflow.yaml").write_text(action_workflow({"type": "write_file", "path": "${input.where}",
                                                         "content": "x"}))
    assert_refused(wfexec_cli("run", "workflow.yaml", "--input", "where=.wfexec/runs.db", cwd=work))
    (work / "workflow.yaml").write_text(action_workflow({"type": "write_file", "path": "${computed.where}",
                                                         "content": "x"}).replace(
        '"start_node": "act"', '"start_node": "act", "initial_state": {"computed": {"where": ".wfexec/x.db"}}'))
    assert_refused(wfexec_cli("run", "workflow.yaml", cwd=work))
    assert not (work / ".wfexec" / "x.db").exists()
    assert len(store_still_works(work)) == 3


def test_an_ephemeral_run_may_not_touch_an_existing_wfexec_folder(work):
    (work / "workflow.yaml").write_text(action_workflow(WRITE))
    result = wfexec_cli("run", "workflow.yaml", "--ephemeral", "--set", "target=.wfexec/runs.db", cwd=work)
    assert_refused(result)
    assert len(store_still_works(work)) == 1  # the ephemeral run is not recorded; the first one still is
    beside = wfexec_cli("run", "workflow.yaml", "--ephemeral", "--set", "target=wfexec-notes/runs.db", cwd=work)
    assert beside.returncode == 0, beside.stderr
    assert (work / "wfexec-notes" / "runs.db").read_text() == "not a database"


def test_a_store_chosen_with_store_is_guarded_with_its_companions_and_its_neighbours_are_not(tmp_path, monkeypatch):
    monkeypatch.delenv("WFEXEC_STORE")
    (tmp_path / "workflow.yaml").write_text(action_workflow(WRITE))
    for target in ("data/my.db", "data/my.db-wal", "./data/../data/my.db-journal", "data/my.db-states/x.yaml"):
        result = wfexec_cli("run", "workflow.yaml", "--store", "data/my.db", "--set", f"target={target}",
                            cwd=tmp_path)
        assert_refused(result)
    written = wfexec_cli("run", "workflow.yaml", "--store", "data/my.db", "--set", "target=data/report.txt",
                         cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert (tmp_path / "data" / "report.txt").read_text() == "not a database"
    assert len(store_still_works(tmp_path, "data/my.db")) == 5


def test_state_out_over_the_store_is_a_command_line_error(work):
    (work / "workflow.yaml").write_text(action_workflow({"type": "set_state", "field": "computed.x", "value": 2}))
    result = wfexec_cli("run", "workflow.yaml", "--state-out", ".wfexec/runs.db", cwd=work)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: --state-out .wfexec/runs.db is wfexec's run store"), result.stderr
    assert len(store_still_works(work)) == 1  # refused before the run started



@pytest.mark.parametrize("store", ["/d/runs.db", "/d/..s.db", "/runs.db"], ids=["plain", "dot-dot-name", "at-root"])
def test_a_store_s_companions_are_its_files_and_only_those_beside_it(store):
    from wfexec.system.run_store import store_conflict

    folder = store.rsplit("/", 1)[0]
    for companion in (f"{store}-wal", f"{store}-states/agents-1.yaml"):
        assert store_conflict(companion, "/elsewhere", store) == f"is a file of wfexec's run store ({store})"
    for neighbour in (f"{store}2", f"{folder}/sub/{store.rsplit('/', 1)[1]}-wal", f"{folder}x/runs.db-wal"):
        assert store_conflict(neighbour, "/elsewhere", store) is None, neighbour
