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
import time
from pathlib import Path

import pytest

from conftest import ROOT, with_coverage, wfexec_in_process as cli
from test_durable import STATES_WORKFLOW



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
    limited = subprocess.run([sys.executable, "-m", "wfexec", "run", "workflow.yaml", "--store", str(store)],
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


SCRIPTED = """
name: scripted
version: 1
start_node: first
nodes:
  first:
    type: states
    folder: flow
    store_as: computed.a
    on_success: ask
  ask:
    type: user_prompt
    prompt:
      question: Go on?
      options: [{id: go, label: Go}]
    on_response:
      go: {next_node: done}
endings:
  done: {type: success, message: "${computed.a}"}
"""


def test_resume_notices_an_edited_state_script_of_a_completed_node(tmp_path, private_run_store):
    (tmp_path / "flow").mkdir()
    script = tmp_path / "flow" / "START.sh"
    script.write_text('echo "<result>v1</result>"\n')
    (tmp_path / "workflow.yaml").write_text(SCRIPTED)
    assert cli("run", "workflow.yaml", cwd=tmp_path).returncode == 3
    [record] = json.loads(cli("runs", "--format", "json").stdout)
    script.write_text('echo "<result>v2</result>"\n')
    refused = cli("resume", record["id"], "--answer", "ask=go", cwd=tmp_path)
    assert refused.returncode == 2
    assert "completed nodes changed: first" in refused.stderr and "--accept-changes" in refused.stderr
    accepted = cli("resume", record["id"], "--answer", "ask=go", "--accept-changes", cwd=tmp_path)
    assert accepted.returncode == 0 and accepted.stdout.strip() == "v1"  # what ran is not run again


IN_FLIGHT_THEN_MORE = """
name: in-flight
version: 1
start_node: deploy
nodes:
  deploy:
    type: action
    actions:
      - type: run_command
        command: ["{python}", "-c", "import pathlib, time; p = pathlib.Path('started'); first = not p.exists(); p.write_text('x'); time.sleep(30 if first else 0)"]
    on_success: after
  after:
    type: action
    actions: [{{type: set_state, field: computed.b, value: AFTER}}]
    on_success: done
endings:
  done: {{type: success, message: "${{computed.b}}"}}
"""


def test_a_refused_resume_keeps_the_change_report_for_the_next_attempt(tmp_path, private_run_store):
    workflow = tmp_path / "workflow.yaml"
    workflow.write_text(IN_FLIGHT_THEN_MORE.format(python=sys.executable))
    process = subprocess.Popen([sys.executable, "-m", "wfexec", "run", "workflow.yaml"], cwd=tmp_path,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not (tmp_path / "started").exists():
        assert process.poll() is None
    process.kill()
    process.wait()
    workflow.write_text(IN_FLIGHT_THEN_MORE.format(python=sys.executable).replace("value: AFTER", "value: NEW"))
    [record] = json.loads(cli("runs", "--format", "json").stdout)
    for _ in range(2):  # refused (the step in flight needs a decision), and the report is there both times
        refused = cli("resume", record["id"], cwd=tmp_path)
        assert refused.returncode == 3, refused.stderr
        assert "note: the workflow (or a file its nodes name) changed" in refused.stderr
        assert "future nodes changed: after" in refused.stderr
    resumed = cli("resume", record["id"], "--rerun", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "NEW" and "future nodes changed: after" in resumed.stderr


def _read_only_mount_works(folder: Path) -> bool:
    probe = subprocess.run(["unshare", "-m", "sh", "-c", f"mount --bind {folder} {folder} && "
                            f"mount -o remount,bind,ro {folder} && ! touch {folder}/probe"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


def test_runs_and_show_read_a_store_that_cannot_be_written(tmp_path, private_run_store):
    """On a read-only mount even root cannot write: `runs` and `show` must open the store without writing."""
    import shutil

    folder = private_run_store.parent
    (tmp_path / "workflow.yaml").write_text(STATES_WORKFLOW)
    (tmp_path / "flow").mkdir()
    (tmp_path / "flow" / "START.sh").write_text('echo "<result>done</result>"\n')
    assert cli("run", "workflow.yaml", cwd=tmp_path).returncode == 0
    if shutil.which("unshare") is None or not _read_only_mount_works(folder):
        pytest.skip("needs `unshare -m` and bind mounts (root in a container that allows them)")
    db = sqlite3.connect(private_run_store)
    [record] = [{"id": row[0]} for row in db.execute("SELECT id FROM runs")]
    db.close()  # the last connection to close removes the WAL files, which a read-only open cannot make
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert sorted(before) == ["runs.db"]
    command = (f"mount --bind {folder} {folder} && mount -o remount,bind,ro {folder} && "
               f"{sys.executable} -m wfexec runs && {sys.executable} -m wfexec show {record['id']}")
    shown = subprocess.run(["unshare", "-m", "sh", "-c", command], capture_output=True, text=True, timeout=60,
                           env=with_coverage({**os.environ}))
    assert shown.returncode == 0, shown.stderr
    assert [record["id"], "agents", "completed"] in [line.split()[:3] for line in shown.stdout.splitlines()]
    assert "status: completed, ending 'done'" in shown.stdout
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


ALTERNATING = """\
name: alternating
version: "1"
start_node: a
initial_state: {log: []}
nodes:
  a: {type: action, actions: [{type: append_state, field: log, value: a}], on_success: b}
  b: {type: action, actions: [{type: append_state, field: log, value: b}], on_success: check}
  check:
    type: conditional
    condition: {type: evaluate_expression, expression: "log.length >= 1600"}
    branches: {on_true: done, on_false: a}
endings:
  done: {type: success, message: "${log.join('')}"}
"""

# A Ctrl-C that lands just after a commit, before the step loop takes the next node: the commit's own SIGINT,
# sent by the process to itself once the journal row of step N is in the store (a real signal, so Python raises
# KeyboardInterrupt where it would for a person's Ctrl-C).
INTERRUPTED_AFTER_A_COMMIT = """\
import os, signal, sys
from wfexec.durable import store

commits, interrupted_at = [0], int(sys.argv[2])
append_steps = store.Store.append_steps


def append_then_interrupt(self, *args, **kwargs):
    written = append_steps(self, *args, **kwargs)
    commits[0] += 1
    if commits[0] == interrupted_at:
        os.kill(os.getpid(), signal.SIGINT)
    return written


store.Store.append_steps = append_then_interrupt
from wfexec.launcher import main
sys.argv = ["wfexec", "run", sys.argv[1], "--store", "runs.db"]
main()
"""


@pytest.mark.parametrize("commit", [1, 2])  # a commit every 1,024 steps: 2,400 steps make two before the end
def test_a_ctrl_c_just_after_a_commit_runs_no_finished_step_again(tmp_path, commit):
    (tmp_path / "workflow.yaml").write_text(ALTERNATING)
    (tmp_path / "interrupted.py").write_text(INTERRUPTED_AFTER_A_COMMIT)
    stopped = subprocess.run([sys.executable, "interrupted.py", "workflow.yaml", str(commit)], cwd=tmp_path,
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (stopped.returncode, stopped.stderr.splitlines()[0]) == (4, "interrupted"), stopped.stderr
    run_id = json.loads(cli("runs", "--store", "runs.db", "--format", "json", cwd=tmp_path).stdout)[0]["id"]
    resumed = cli("resume", run_id, "--store", "runs.db", cwd=tmp_path)
    assert (resumed.returncode, resumed.stdout.strip()) == (0, "ab" * 800), resumed.stderr


def test_a_store_locked_by_another_process_is_reported_as_locked_not_as_a_full_disk(tmp_path, monkeypatch):
    from wfexec.durable import store as store_module

    store = tmp_path / "runs.db"
    assert cli("run", ROOT / "skills" / "quickstart", "--answer", "ask_mood=plain", "--store", store).returncode == 0
    holder = subprocess.Popen([sys.executable, "-c", "import sqlite3, sys, time\n"
                               "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                               "db.execute('BEGIN EXCLUSIVE'); print('held', flush=True); time.sleep(60)", str(store)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(store_module, "LOCK_WAIT_SECONDS", 0.2)
        done = cli("run", ROOT / "skills" / "quickstart", "--answer", "ask_mood=plain", "--store", store)
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 4, done.stderr
    assert "is locked by another process" in done.stderr and "make room on the disk" not in done.stderr
    assert "Traceback" not in done.stderr


TWO_QUESTIONS = """\
name: two-questions
version: "1"
start_node: kind
nodes:
  kind:
    type: user_prompt
    prompt:
      question: "Which kind?"
      header: Kind
      options: [{id: git, label: Git}, {id: web, label: Web}]
    on_response: {git: {next_node: name}, web: {next_node: name}}
  name:
    type: user_prompt
    prompt:
      question: "Which name?"
      header: Name
      options: [{id: polars, label: Polars}, {id: pandas, label: Pandas}]
    on_response: {polars: {next_node: done}, pandas: {next_node: done}}
endings:
  done: {type: success, message: "${user_responses.kind.id} ${user_responses.name.id}"}
"""


def test_answers_given_to_run_outlive_the_process_until_a_question_takes_them(tmp_path):
    (tmp_path / "workflow.yaml").write_text(TWO_QUESTIONS)
    # The later question is answered up front; the run parks at the first, and another process answers it.
    parked = cli("run", "workflow.yaml", "--store", "runs.db", "--non-interactive", "--answer", "name=pandas",
                 cwd=tmp_path)
    assert parked.returncode == 3, parked.stderr
    run_id = json.loads(cli("runs", "--store", "runs.db", "--format", "json", cwd=tmp_path).stdout)[0]["id"]

    def kept() -> dict | None:
        with sqlite3.connect(tmp_path / "runs.db") as db:
            (answers,) = db.execute("SELECT answers FROM runs WHERE id = ?", (run_id,)).fetchone()
        return json.loads(answers) if answers else None

    assert kept() == {"name": ["pandas"]}
    done = cli("resume", run_id, "--store", "runs.db", "--non-interactive", "--answer", "kind=web", cwd=tmp_path)
    assert (done.returncode, done.stdout.strip()) == (0, "web pandas"), done.stderr
    assert kept() is None  # each taken, in the commit of the step that took it
    # An answer given to resume for the same question replaces the one given before.
    parked = cli("run", "workflow.yaml", "--store", "runs.db", "--non-interactive", "--answer", "name=pandas",
                 cwd=tmp_path)
    run_id = json.loads(cli("runs", "--store", "runs.db", "--format", "json", cwd=tmp_path).stdout)[0]["id"]
    done = cli("resume", run_id, "--store", "runs.db", "--non-interactive", "--answer", "kind=git",
               "--answer", "name=polars", cwd=tmp_path)
    assert (done.returncode, done.stdout.strip()) == (0, "git polars"), done.stderr


SLOW_LOOP = """\
name: slow
version: "1"
start_node: wait
initial_state: {n: 0}
nodes:
  wait:
    type: action
    actions:
      - {type: run_command, command: [sleep, "0.2"]}
      - {type: compute, expression: "n + 1", store_as: n}
    on_success: check
  check:
    type: conditional
    condition: {type: evaluate_expression, expression: "n >= 3"}
    branches: {on_true: done, on_false: wait}
endings:
  done: {type: success, message: "${n}"}
"""


def test_a_killed_runs_lease_held_by_a_reused_pid_does_not_keep_it_running_for_ever(tmp_path):
    (tmp_path / "workflow.yaml").write_text(SLOW_LOOP)
    process = subprocess.Popen([sys.executable, "-m", "wfexec", "run", "workflow.yaml", "--store", "runs.db"],
                               cwd=tmp_path, env=with_coverage(dict(os.environ)), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    store = tmp_path / "runs.db"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.1)
        try:
            with sqlite3.connect(store) as db:
                if db.execute("SELECT 1 FROM journal").fetchone():
                    break
        except sqlite3.Error:
            continue
    process.kill()
    process.wait()
    # The pid comes back as another process (a reboot, a container's next pid 1): here, this test's own pid.
    with sqlite3.connect(store) as db:
        (lease,) = db.execute("SELECT lease FROM runs").fetchone()
        assert "#" in lease  # the killed process's start is in its lease
        reused = f"{os.getpid()}@{lease.split('@', 1)[1]}"
        db.execute("UPDATE runs SET lease = ?", (reused,))
    listed = json.loads(cli("runs", "--store", store, "--format", "json").stdout)
    assert listed[0]["status"] == "interrupted"
    resumed = cli("resume", listed[0]["id"], "--store", store, "--rerun", cwd=tmp_path)
    assert (resumed.returncode, resumed.stdout.strip()) == (0, "3"), resumed.stderr


CLONE_THEN_WORK = """\
name: clone-then-work
version: "1"
start_node: fetch
nodes:
  fetch:
    type: action
    actions:
      - {type: clone_repo, url: "UPSTREAM", dest: src, store_as: computed.sha}
      - {type: run_command, command: [sleep, "30"]}
    on_success: done
    on_failure: failed
endings:
  done: {type: success, message: "cloned ${computed.sha}"}
  failed: {type: failure, message: "${computed.last_error}"}
"""


def test_a_clone_made_before_its_step_was_killed_is_taken_as_the_clone_when_the_step_runs_again(tmp_path):
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(upstream)], check=True)
    (upstream / "README").write_text("hello\n")
    subprocess.run([*git, "-C", str(upstream), "add", "README"], check=True)
    subprocess.run([*git, "-C", str(upstream), "commit", "-qm", "first"], check=True)
    sha = subprocess.run(["git", "-C", str(upstream), "rev-parse", "HEAD"], capture_output=True, text=True,
                         check=True).stdout.strip()
    work = tmp_path / "work"
    work.mkdir()
    (work / "workflow.yaml").write_text(CLONE_THEN_WORK.replace("UPSTREAM", str(upstream)))
    process = subprocess.Popen([sys.executable, "-m", "wfexec", "run", "workflow.yaml", "--store", "runs.db"],
                               cwd=work, env=with_coverage(dict(os.environ)), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while not (work / "src" / "README").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # into the sleep that follows the clone
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    run_id = json.loads(cli("runs", "--store", "runs.db", "--format", "json", cwd=work).stdout)[0]["id"]
    (work / "workflow.yaml").write_text(CLONE_THEN_WORK.replace("UPSTREAM", str(upstream)).replace('"30"', '"0"'))
    resumed = cli("resume", run_id, "--store", "runs.db", "--rerun", "--accept-changes", cwd=work)
    assert (resumed.returncode, resumed.stdout.strip()) == (0, f"cloned {sha}"), resumed.stdout + resumed.stderr


def test_a_run_leased_to_a_process_on_another_machine_is_taken_over_only_when_the_person_says_so(tmp_path):
    (tmp_path / "workflow.yaml").write_text(SLOW_LOOP)
    for run in range(2):
        parked = cli("run", "workflow.yaml", "--store", "runs.db", "--max-steps", "1", cwd=tmp_path)
        assert parked.returncode == 4, parked.stderr  # stopped at its step budget: resumable
    with sqlite3.connect(tmp_path / "runs.db") as db:
        # As a container that was replaced left it: killed while it ran, under a hostname no longer there.
        db.execute("UPDATE runs SET status = 'running', lease = '1@a-replaced-container#42'")
    first, second = [r["id"] for r in json.loads(cli("runs", "--store", "runs.db", "--format", "json",
                                                     cwd=tmp_path).stdout)]
    refused = cli("resume", first, "--store", "runs.db", cwd=tmp_path)
    assert refused.returncode == 2 and "being driven by process 1@a-replaced-container" in refused.stderr
    assert "--take-over" in refused.stderr
    taken = cli("resume", first, "--store", "runs.db", "--take-over", cwd=tmp_path)
    assert (taken.returncode, taken.stdout.strip()) == (0, "3"), taken.stderr
    assert cli("cancel", second, "--store", "runs.db", cwd=tmp_path).returncode == 2
    assert cli("cancel", second, "--store", "runs.db", "--take-over", cwd=tmp_path).returncode == 0


ONE_QUESTION = ('name: q\nversion: "1"\nstart_node: ask\nnodes:\n  ask:\n    type: user_prompt\n'
                '    prompt: {question: Go on?, header: go, options: [{id: go, label: Go, description: go on}]}\n'
                '    on_response: {go: {next_node: done}}\nendings:\n  done: {type: success, message: ok}\n')


# The statements that make a new store, in order: each a point a kill may land on.
MAKING_A_STORE = [("PRAGMA journal_mode=WAL", 1), ("BEGIN IMMEDIATE", 1), ("CREATE TABLE runs", 1),
                  ("DROP TABLE journal_6", 1), ("INSERT OR REPLACE INTO wfexec_meta", 1), ("^COMMIT$", 1),
                  ("BEGIN IMMEDIATE", 2)]  # the store made, its first run not yet


def test_an_empty_store_an_older_wfexec_left_half_made_is_said_as_such_and_a_run_makes_it_whole(tmp_path):
    """Before stores were made whole or not at all, a kill could leave an SQLite file with no tables, which `runs`
    and `show` reported as "no such table: wfexec_meta"."""
    (tmp_path / "workflow.yaml").write_text(ONE_QUESTION)
    store = tmp_path / "runs.db"
    half = sqlite3.connect(store)
    half.execute("PRAGMA journal_mode=WAL")  # what the killed process had done: the file, in WAL mode
    half.close()
    for command in (("runs",), ("show", "0mx0abcdefghijk")):
        said = cli(*command, "--store", store, cwd=tmp_path)
        assert said.returncode == 2, said.stderr
        assert f"{store} is an empty SQLite file, not yet a run store" in said.stderr, said.stderr
        assert "any `wfexec run` with this store makes it whole" in said.stderr
    assert cli("run", "workflow.yaml", "--store", store, "--answer", "ask=go", cwd=tmp_path).returncode == 0
    listed = cli("runs", "--store", store, "--format", "json", cwd=tmp_path)
    assert [run["status"] for run in json.loads(listed.stdout)] == ["completed"], listed.stderr


@pytest.mark.parametrize("statement, nth", MAKING_A_STORE, ids=[f"{s}#{n}" for s, n in MAKING_A_STORE])
def test_a_kill_while_a_store_is_made_leaves_no_store_or_a_whole_one(tmp_path, statement, nth):
    """A kill between SQLite making the file and the tables' commit once left a file `runs` refused ("no such
    table: wfexec_meta") until the next `run` repaired it."""
    (tmp_path / "workflow.yaml").write_text(ONE_QUESTION)
    store = tmp_path / "runs.db"
    killed = subprocess.run([sys.executable, str(ROOT / "tests" / "crashpoint.py"), "before-statement", statement,
                             str(nth), "--", "run", "workflow.yaml", "--store", str(store)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert killed.returncode == -signal.SIGKILL, killed.stderr  # it died at that statement, not before or after
    listed = cli("runs", "--store", store, "--format", "json", cwd=tmp_path)
    if nth == 1:
        assert not store.exists(), sorted(p.name for p in tmp_path.iterdir())
        assert listed.returncode == 2 and "there is no run store at" in listed.stderr, listed.stderr
    else:
        assert (listed.returncode, json.loads(listed.stdout)) == (0, []), listed.stderr
    again = cli("run", "workflow.yaml", "--store", store, "--answer", "ask=go", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    # and what the killed process was making is gone once a process makes the store again
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.db", "workflow.yaml"]
