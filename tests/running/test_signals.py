"""Signals and children: a stopped wfexec stops everything it started, says how to resume, and leaves no child
behind, whatever the signal (issue 12, points 3 and 7). Real processes, real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import wfexec_in_process as cli

# The step's program is bash; the program that would write `late` is bash's child, so only killing the whole
# process group (not the leader alone) stops it.
SLOW_STEP = """
name: slow-step
version: 1
start_node: work
nodes:
  work:
    type: action
    actions:
      - type: run_command
        command: [bash, -c, "echo $$ > started; sleep 2; touch late"]
    on_success: done
endings:
  done: {type: success, message: worked}
"""


# The same in a state script of a `states` node (started by the protocol's event loop, not run_command).
SLOW_STATE = """
name: slow-state
version: 1
start_node: work
nodes:
  work:
    type: states
    folder: flow
    on_success: done
endings:
  done: {type: success, message: worked}
"""


def _start(folder: Path, kind: str = "command") -> subprocess.Popen:
    if kind == "command":
        (folder / "workflow.yaml").write_text(SLOW_STEP)
    else:
        (folder / "workflow.yaml").write_text(SLOW_STATE)
        (folder / "flow").mkdir()
        (folder / "flow" / "START.sh").write_text("echo $$ > started; sleep 2; touch late; echo '<result>x</result>'\n")
    process = subprocess.Popen([sys.executable, "-m", "wfexec", "run", "workflow.yaml"], cwd=folder,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (folder / "started").exists() or not (folder / "started").read_text().endswith("\n"):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the step never started"
        time.sleep(0.02)
    return process


def _state_and_group(stat: Path) -> tuple[str, int]:
    """A process's state letter and process group, from its /proc/PID/stat (the fields after the command's ")")."""
    state, _parent, group = stat.read_text().rsplit(")", 1)[1].split()[:3]
    return state, int(group)


def _group_of_the_step(folder: Path) -> int:
    """The process group of the step's shell, read while it runs."""
    return _state_and_group(Path(f"/proc/{int((folder / 'started').read_text())}/stat"))[1]


def _alive_in(group: int) -> list[int]:
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, in_group = _state_and_group(stat)
        except OSError:  # gone while we looked
            continue
        if in_group == group and state != "Z":  # a zombie runs nothing
            alive.append(int(stat.parent.name))
    return alive


def _runs(store) -> list[dict]:
    done = cli("runs", "--format", "json", "--store", store)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _no_late_write(folder: Path, group: int) -> bool:
    """Nothing of the step is left to write `late` (2 s after it started), and nothing wrote it. Without /proc,
    waited out instead."""
    if not Path("/proc/self/stat").exists():
        time.sleep(3)
        return not (folder / "late").exists()
    deadline = time.monotonic() + 10  # a SIGKILLed wfexec's children are stopped by its watchdog, a moment later
    while (left := _alive_in(group)) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not left, f"processes of the step are left: {left}"
    return not (folder / "late").exists()


@pytest.mark.parametrize("kind", ["command", "state script"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_stops_the_run_and_its_children_and_says_how_to_resume(tmp_path, private_run_store, signum, kind):
    process = _start(tmp_path, kind)
    group = _group_of_the_step(tmp_path)
    process.send_signal(signum)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 4, err
    [record] = _runs(private_run_store)
    assert record["status"] == "stopped"
    assert f"wfexec resume {record['id']}" in err
    if signum != signal.SIGINT:
        assert f"interrupted ({signum.name})" in err
    assert _no_late_write(tmp_path, group)


@pytest.mark.parametrize("kind", ["command", "state script"])
def test_children_die_with_a_sigkilled_wfexec_and_the_run_shows_interrupted(tmp_path, private_run_store, kind):
    process = _start(tmp_path, kind)
    group = _group_of_the_step(tmp_path)
    process.kill()
    process.communicate()
    assert _no_late_write(tmp_path, group)
    [record] = _runs(private_run_store)
    assert record["status"] == "interrupted"
    shown = cli("show", record["id"])
    assert "status: interrupted" in shown.stdout and f"wfexec resume {record['id']}" in shown.stdout
    assert [r["id"] for r in _runs_with_status(private_run_store, "interrupted")] == [record["id"]]


def _runs_with_status(store, status: str) -> list[dict]:
    done = cli("runs", "--format", "json", "--status", status, "--store", store)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_resume_kills_what_an_earlier_attempt_left_running_before_rerunning(tmp_path, private_run_store):
    process = _start(tmp_path)
    process.kill()
    process.communicate()
    [record] = _runs(private_run_store)
    # What the watchdog could not reach (it was killed too, say): a program of that run still running.
    leftover = subprocess.Popen(["sleep", "60"], env={**os.environ, "WFEXEC_RUN": record["id"]},
                                start_new_session=True)
    try:
        (tmp_path / "started").unlink()
        resumed = cli("resume", record["id"], "--rerun", cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stderr
        assert leftover.wait(timeout=10) == -signal.SIGKILL
    finally:
        if leftover.poll() is None:
            leftover.kill()
            leftover.wait()


BACKGROUND_CHILD = """
name: background-child
version: 1
start_node: work
nodes:
  work:
    type: action
    actions:
      - type: run_command
        command: [bash, -c, "sleep 30 & echo $! > sleeper; echo hi"]
        timeout: 25
        store_as: computed.out
    on_success: done
endings:
  done: {type: success, message: "said ${computed.out.stdout}"}
"""


def test_a_command_that_exited_is_done_though_a_background_child_holds_its_output(tmp_path, private_run_store):
    (tmp_path / "workflow.yaml").write_text(BACKGROUND_CHILD)
    done = cli("run", "workflow.yaml", "--ephemeral", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "said hi"
    sleeper = int((tmp_path / "sleeper").read_text())
    with pytest.raises(ProcessLookupError):  # and the child went with its group, not left to run 30 s
        for _ in range(100):
            os.kill(sleeper, 0)
            time.sleep(0.05)


@pytest.mark.parametrize("watchdog", ["bash", "python"])
def test_the_watchdog_kills_the_groups_still_listed_when_its_pipe_closes(watchdog):
    from wfexec.system import subprocesses

    argv = subprocesses._watchdog_argv() if watchdog == "bash" else [sys.executable, "-I", "-S", "-c",
                                                                       subprocesses._WATCHDOG]
    assert ("bash" in argv[0]) == (watchdog == "bash")
    kept, finished = (subprocess.Popen(["sleep", "30"], start_new_session=True) for _ in range(2))
    dog = subprocess.Popen(argv, stdin=subprocess.PIPE, text=True, start_new_session=True)
    dog.stdin.write(f"+{kept.pid}\n+{finished.pid}\n-{finished.pid}\n")
    dog.stdin.close()  # what wfexec's death does
    assert dog.wait(timeout=10) == 0
    assert kept.wait(timeout=10) == -signal.SIGKILL
    assert finished.poll() is None  # forgotten: not killed
    finished.kill()
    finished.wait()


@pytest.mark.parametrize("watchdog", ["bash", "python"])
def test_the_watchdog_kills_a_program_announced_but_not_yet_listed_when_its_pipe_closes(watchdog, tmp_path):
    """wfexec announces a program by its tag before starting it, and lists its group only once started: killed
    in between, wfexec leaves a program the watchdog finds by its tag (with what it started: they inherit it)."""
    from wfexec.system import subprocesses

    argv = subprocesses._watchdog_argv() if watchdog == "bash" else [sys.executable, "-I", "-S", "-c",
                                                                       subprocesses._WATCHDOG]
    tagged = lambda tag: {**os.environ, "WFEXEC_PROGRAM": f"{os.getpid()}.test.{tag}"}  # the documented name
    announced = subprocess.Popen(["bash", "-c", "sleep 30 & echo $! > child; wait"], env=tagged("announced"),
                                 start_new_session=True, cwd=tmp_path)
    listed = subprocess.Popen(["sleep", "30"], env=tagged("listed"), start_new_session=True)
    dog = subprocess.Popen(argv, stdin=subprocess.PIPE, text=True, start_new_session=True)
    dog.stdin.write(f"+@{os.getpid()}.test.announced\n+@{os.getpid()}.test.listed\n+{listed.pid}\n"
                    f"-@{os.getpid()}.test.listed\n-{listed.pid}\n")
    dog.stdin.close()  # what wfexec's death does
    try:
        assert dog.wait(timeout=30) == 0
        assert announced.wait(timeout=10) == -signal.SIGKILL
        child = int((tmp_path / "child").read_text())
        deadline = time.monotonic() + 10
        while _alive(child):  # bash's own child, in its group
            assert time.monotonic() < deadline, "the program's child outlived it"
            time.sleep(0.05)
        assert listed.poll() is None  # listed, then ended as far as wfexec knew: not looked for by its tag
    finally:
        for process in (announced, listed):
            if process.poll() is None:
                process.kill()
            process.wait()


def test_a_program_dies_with_wfexec_killed_the_moment_it_starts(tmp_path):
    """The window between a program's start and its group's listing (the watchdog itself starts in it, for the
    first program of a process): the program kills the process that started it as its first act (after saying
    who it is), and still goes with it."""
    program = ("import sys, time; sys.path.insert(0, sys.argv[1]); from wfexec.system.subprocesses import start; "
               "start(['bash', '-c', 'echo $$ > leader; kill -KILL $PPID; sleep 30']); time.sleep(60)")
    root = str(Path(__file__).resolve().parents[2])
    for attempt in range(10):  # a race: each attempt is one more chance for the program to win it
        folder = tmp_path / str(attempt)
        folder.mkdir()
        wfexec_like = subprocess.Popen([sys.executable, "-c", program, root], cwd=folder)
        try:
            assert wfexec_like.wait() == -signal.SIGKILL  # no polling wait: it would take the CPU the race is about
            deadline = time.monotonic() + 30
            while not ((folder / "leader").exists() and (folder / "leader").read_text().endswith("\n")):
                assert time.monotonic() < deadline, "the program never started"
                time.sleep(0.01)
            leader = int((folder / "leader").read_text())
            while _alive(leader):
                assert time.monotonic() < deadline, f"attempt {attempt}: the program outlived the killed process"
                time.sleep(0.05)
        finally:
            if wfexec_like.poll() is None:
                wfexec_like.kill()
                wfexec_like.wait()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
