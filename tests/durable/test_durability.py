"""`--durability` (env WFEXEC_DURABILITY): how each commit of the run store reaches the disk. `normal` (SQLite's
synchronous=NORMAL in WAL mode, the default) survives a kill; `full` (synchronous=FULL) flushes the WAL at every
commit and survives a power cut too. Checked on SQLite's own connection, as the real command opens it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from wfexec.durable.store import Store, StoreError

# The real `wfexec`, every SQLite connection it opens tracing its statements to stderr.
TRACED = """
import _sqlite3, sqlite3, sys
connect = sqlite3.connect
def traced(*args, **kwargs):
    db = connect(*args, **kwargs)
    db.set_trace_callback(lambda statement: sys.stderr.write("SQL " + statement + "\\n"))
    return db
sqlite3.connect = _sqlite3.connect = traced  # the run store connects through the C module (wfexec.durable.store)
sys.argv = ["wfexec", *sys.argv[1:]]
from wfexec.cli import main
main()
"""

WORKFLOW = """
name: two
version: 1
start_node: write
nodes:
  write:
    type: action
    actions: [{type: write_file, path: out.txt, content: "hello"}]
    on_success: done
endings:
  done: {type: success, message: written}
"""


def traced_wfexec(*args, cwd, env=None):
    environment = {k: v for k, v in os.environ.items() if k not in ("WFEXEC_STORE", "WFEXEC_DURABILITY")}
    return subprocess.run([sys.executable, "-c", TRACED, *map(str, args)], cwd=cwd, env={**environment, **(env or {})},
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def synchronous_pragmas(stderr: str) -> set[str]:
    return {line[4:] for line in stderr.splitlines() if line.startswith("SQL PRAGMA synchronous")}


@pytest.mark.parametrize("given, pragma", [((), "PRAGMA synchronous=NORMAL"),
                                           (("--durability", "full"), "PRAGMA synchronous=FULL"),
                                           (("--durability", "normal"), "PRAGMA synchronous=NORMAL")])
def test_run_opens_its_store_with_the_durability_asked_for(tmp_path, given, pragma):
    (tmp_path / "workflow.yaml").write_text(WORKFLOW)
    done = traced_wfexec("run", "workflow.yaml", *given, cwd=tmp_path)
    assert (done.returncode, done.stdout.strip()) == (0, "written"), done.stderr[-2000:]
    assert synchronous_pragmas(done.stderr) == {pragma}


def test_the_environment_sets_it_for_states_and_resume_too(tmp_path):
    flow = tmp_path / "flow"
    flow.mkdir()
    (flow / "START.sh").write_text("echo '<ask next=\"END\">Go?</ask>'\n")
    (flow / "END.sh").write_text("echo \"<result>$RAYMOND_INPUT</result>\"\n")
    parked = traced_wfexec("states", "flow", "--non-interactive", "--format", "json", cwd=tmp_path,
                           env={"WFEXEC_DURABILITY": "full"})
    assert parked.returncode == 3, parked.stderr[-2000:]
    assert synchronous_pragmas(parked.stderr) == {"PRAGMA synchronous=FULL"}
    import json

    run_id = json.loads(parked.stdout)["run_id"]
    resumed = traced_wfexec("resume", run_id, "--answer", "main=yes", cwd=tmp_path, env={"WFEXEC_DURABILITY": "full"})
    assert (resumed.returncode, resumed.stdout.strip()) == (0, "yes"), resumed.stderr[-2000:]
    assert synchronous_pragmas(resumed.stderr) == {"PRAGMA synchronous=FULL"}


def test_a_durability_that_is_none_is_refused_with_the_choices(tmp_path):
    (tmp_path / "workflow.yaml").write_text(WORKFLOW)
    done = traced_wfexec("run", "workflow.yaml", "--durability", "paranoid", cwd=tmp_path)
    assert done.returncode == 2 and "paranoid" in done.stderr and "full" in done.stderr, done.stderr[-2000:]
    assert not (tmp_path / "out.txt").exists()


def test_sqlite_holds_the_setting_and_the_api_refuses_a_bad_one(tmp_path, monkeypatch):
    full = Store(tmp_path / "runs.db", durability="full")
    assert full.db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert full.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    full.close()
    monkeypatch.setenv("WFEXEC_DURABILITY", "FULL")
    assert Store(tmp_path / "runs.db").db.execute("PRAGMA synchronous").fetchone()[0] == 2
    monkeypatch.setenv("WFEXEC_DURABILITY", "sometimes")
    with pytest.raises(StoreError) as refused:
        Store(tmp_path / "runs.db")
    assert "WFEXEC_DURABILITY" in refused.value.message and "full" in refused.value.hint
    assert Store(tmp_path / "runs.db", readonly=True).readonly  # a reader commits nothing: not its concern
