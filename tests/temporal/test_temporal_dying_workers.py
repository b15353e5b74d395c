"""Temporal workers that die or stop in the middle of a step (SIGKILL, SIGTERM), and a fresh worker given many
runs at once, on a real Temporal dev server (`temporal server start-dev`) with real `wfexec worker` processes.

Apart from tests/temporal/test_temporal.py so that pytest-xdist (`--dist loadfile`) can run the two halves on
different workers: each of these waits out Temporal's timeouts, and together they were a third of the suite's
longest file."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("temporalio", reason="needs wfexec[temporal]")

pytestmark = pytest.mark.temporal

from temporal_support import (  # noqa: E402,F401  (server: a fixture)
    CHILD_WRITES_LATER,
    ROOT,
    SLOW_STATES,
    WAIT_FOR_FILE,
    WAIT_FOR_FILE_IDEMPOTENT,
    Workers,
    environment,
    server,
    wait_until,
    wfexec,
)

SHORT_STEP_BLOCKS = ROOT / "tests" / "workflows" / "temporal" / "short_step_blocks.yaml"
SHORT_STEP_BLOCKS_IDEMPOTENT = ROOT / "tests" / "workflows" / "temporal" / "short_step_blocks_idempotent.yaml"


def _kill_the_worker_mid_step(server, tmp_path, workflow: Path, queue: str, prepare=None):
    """Start the run with one worker, wait until its step runs, start a second worker, kill -9 the first.
    Returns the `wfexec run` process following the run and the folder the step works in (given to `prepare`
    before the run starts)."""
    pool = Workers(server, queue, tmp_path)
    first = pool.start()
    folder = tmp_path / "step"
    folder.mkdir()
    if prepare is not None:
        prepare(folder)
    follower = subprocess.Popen([sys.executable, "-m", "wfexec", "run", str(workflow), "--task-queue", queue,
                                 "--set", f"computed.dir={folder}"], env=environment(server), cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = folder / "started"
    wait_until(lambda: started.exists(), 30, "the step to start on the first worker")
    pool.start()
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    return pool, follower, folder


def test_a_killed_workers_idempotent_step_is_retried_on_the_other(server, tmp_path):
    pool, follower, folder = _kill_the_worker_mid_step(server, tmp_path, WAIT_FOR_FILE_IDEMPOTENT, "retry")
    try:
        wait_until(lambda: (folder / "started").read_text().count("attempt") >= 2, 30,
                   "the step to start again on the second worker")
        (folder / "go").touch()
        out, err = follower.communicate(timeout=30)
        assert follower.returncode == 0, (out, err)
        assert out == "waited: went\n\n"
    finally:
        (folder / "go").touch()  # the killed worker's own attempt, orphaned, ends too
        pool.stop()


def test_a_killed_workers_non_idempotent_step_asks_rerun_or_skip(server, tmp_path):
    pool, follower, folder = _kill_the_worker_mid_step(server, tmp_path, WAIT_FOR_FILE, "ask")
    try:
        out, err = follower.communicate(timeout=30)
        assert follower.returncode == 3, (out, err)
        assert "error: node 'wait_for_go' was running when run " in err and "not safe to run twice" in err
        assert (folder / "started").read_text().count("attempt") == 1  # not run again without asking
        run_id = err.split("when run ", 1)[1].split()[0]
        (folder / "started").unlink()
        resumed = subprocess.Popen([sys.executable, "-m", "wfexec", "resume", run_id, "--rerun"],
                                   env=environment(server), cwd=tmp_path, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        wait_until(lambda: (folder / "started").exists(), 30, "the step to run again on the second worker")
        (folder / "go").touch()
        out, err = resumed.communicate(timeout=30)
        assert resumed.returncode == 0, (out, err)
        assert out == "waited: went\n\n"
    finally:
        (folder / "go").touch()
        pool.stop()


def _make_pipe(folder: Path) -> None:
    os.mkfifo(folder / "pipe")


def _feed_pipe(folder: Path) -> bool:
    """Write into the pipe a step is blocked reading; False when no step reads it (nothing is written then)."""
    try:
        end = os.open(folder / "pipe", os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # ENXIO: no reader
        return False
    try:
        os.write(end, b"went")
    finally:
        os.close(end)
    return True


def test_a_short_step_is_a_local_activity_and_a_killed_workers_idempotent_one_runs_again_on_the_other(server,
                                                                                                         tmp_path):
    """A short effect step (files only) runs as a local activity of the worker running the run: killed mid-step,
    its run is taken over by the other worker, which runs the step again (it says it is idempotent)."""
    pool, follower, folder = _kill_the_worker_mid_step(server, tmp_path, SHORT_STEP_BLOCKS_IDEMPOTENT, "short-retry",
                                                       prepare=_make_pipe)
    try:
        # taken over once the killed worker's workflow task times out (Temporal's default, 10 s)
        wait_until(lambda: (folder / "started").read_text().count("attempt") >= 2, 60,
                   "the step to run again on the second worker")
        wait_until(lambda: _feed_pipe(folder), 30, "the step to read the pipe")
        out, err = follower.communicate(timeout=60)
        assert (follower.returncode, out) == (0, "piped: went\n"), (out, err)
    finally:
        _feed_pipe(folder)
        follower.kill()
        pool.stop()


def test_a_killed_workers_short_step_that_is_not_idempotent_asks_rerun_or_skip(server, tmp_path):
    """The same step, not safe to run twice: it is not a local activity (which a worker taking the run over would
    run again, silently) but a regular one, whose lost attempt makes the run ask before it runs again."""
    pool, follower, folder = _kill_the_worker_mid_step(server, tmp_path, SHORT_STEP_BLOCKS, "short-ask",
                                                       prepare=_make_pipe)
    try:
        out, err = follower.communicate(timeout=90)
        assert follower.returncode == 3, (out, err)
        assert "error: node 'read_pipe' was running when run " in err and "not safe to run twice (files)" in err
        assert (folder / "started").read_text().count("attempt") == 1  # not run again without asking
        run_id = err.split("when run ", 1)[1].split()[0]
        resumed = subprocess.Popen([sys.executable, "-m", "wfexec", "resume", run_id, "--rerun"],
                                   env=environment(server), cwd=tmp_path, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        wait_until(lambda: (folder / "started").read_text().count("attempt") == 2, 60,
                   "the step to run again on the second worker")
        wait_until(lambda: _feed_pipe(folder), 30, "the step to read the pipe")
        out, err = resumed.communicate(timeout=60)
        assert (resumed.returncode, out) == (0, "piped: went\n"), (out, err)
    finally:
        _feed_pipe(folder)
        follower.kill()
        pool.stop()


def _gone(pid: int) -> bool:
    """The process has ended (a zombie no one reaped has ended too: it runs nothing more)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _kill_mid_step(process: subprocess.Popen, folder: Path) -> None:
    """SIGKILL the process running CHILD_WRITES_LATER's step once its child is started; the child must go too."""
    pid_file = folder / "pid"
    # As soon as the child is started (its pid is one write, ending in a newline): the sooner, the closer to the
    # moment the step's program began, which the watchdog must already know of.
    wait_until(lambda: (pid_file.exists() and pid_file.read_text().endswith("\n")) or process.poll() is not None,
               60, "the step to start its child", interval=0.005)
    assert process.poll() is None
    process.send_signal(signal.SIGKILL)
    process.wait(10)
    child = int(pid_file.read_text())
    wait_until(lambda: _gone(child), 30, "the step's child to die with the process that ran the step")
    assert not (folder / "written").exists()  # it was killed before its time came, and never wrote


def test_a_killed_workers_step_children_die_with_it_and_the_run_asks_rerun_or_skip_as_on_sqlite(server, tmp_path):
    """On every driver a step's programs die with the process running the step, even on SIGKILL; and a step
    that is not safe to run twice is then not run again without asking, in the same words on both."""
    without_cluster = {k: v for k, v in environment(server).items() if k != "WFEXEC_TEMPORAL"}
    sqlite, cluster = tmp_path / "sqlite", tmp_path / "cluster"
    for where in (sqlite, cluster):
        (where / "step").mkdir(parents=True)
    store = sqlite / "runs.db"
    local = subprocess.Popen([sys.executable, "-m", "wfexec", "run", str(CHILD_WRITES_LATER), "--store", str(store),
                              "--set", f"computed.dir={sqlite / 'step'}"], env=without_cluster, cwd=sqlite,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _kill_mid_step(local, sqlite / "step")
    [local_run] = json.loads(wfexec(server, "runs", "--store", store, "--format", "json", cwd=sqlite,
                                    env=without_cluster, check_code=0).stdout)
    on_sqlite = wfexec(server, "resume", local_run["id"], "--store", store, cwd=sqlite, env=without_cluster)

    pool = Workers(server, "orphans", cluster)
    first = pool.start()
    try:
        follower = subprocess.Popen([sys.executable, "-m", "wfexec", "run", str(CHILD_WRITES_LATER),
                                     "--task-queue", "orphans", "--set", f"computed.dir={cluster / 'step'}"],
                                    env=environment(server), cwd=cluster, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        _kill_mid_step(first, cluster / "step")
        pool.start()  # the run goes on on another worker: there it asks
        out, err = follower.communicate(timeout=60)
        run_id = json.loads(wfexec(server, "runs", "--format", "json", "--limit", "1", cwd=cluster,
                                   check_code=0).stdout)["runs"][0]["id"]
        assert (follower.returncode, out) == (on_sqlite.returncode, "") == (3, "")
        assert err == on_sqlite.stderr.replace(local_run["id"], run_id), (err, on_sqlite.stderr)
        assert "not safe to run twice (process)" in err and "--rerun" in err and "--skip" in err
        asked = wfexec(server, "resume", run_id, cwd=cluster, check_code=3)  # and asked again, it says the same
        assert asked.stderr == err
        done = wfexec(server, "resume", run_id, "--rerun", cwd=cluster, check_code=0, timeout=120)
        assert done.stdout == "wrote\n\n"  # the command's output, newline included, as the ending prints it
        assert (cluster / "step" / "written").read_text() == "late\n"
    finally:
        pool.stop()


def test_a_worker_stops_on_sigterm_even_in_the_middle_of_a_step(server, tmp_path):
    pool = Workers(server, "stopping", tmp_path)
    worker = pool.start()
    folder = tmp_path / "step"
    folder.mkdir()
    follower = subprocess.Popen([sys.executable, "-m", "wfexec", "run", str(WAIT_FOR_FILE), "--task-queue",
                                 "stopping", "--set", f"computed.dir={folder}"], env=environment(server), cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: (folder / "started").exists(), 30, "the step to start")
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(10) == 0
        assert worker.log.read_text().rstrip().endswith("wfexec worker: stopped")  # type: ignore[attr-defined]
    finally:
        (folder / "go").touch()
        follower.kill()
        follower.wait(10)
        pool.stop()


def test_a_states_node_whose_worker_died_continues_on_the_other_from_its_agents(server, tmp_path):
    """A states node may run again (it continues from its saved agents, as a resumed SQLite run does): the
    step is retried on the other worker, from the agents the lost attempt last reported with its heartbeat."""
    pool, follower, folder = _kill_the_worker_mid_step(server, tmp_path, SLOW_STATES, "agents")
    try:
        wait_until(lambda: (folder / "started").read_text().count("attempt") == 2, 30,
                   "SLOW to run again on the second worker")
        (folder / "go").touch()
        out, err = follower.communicate(timeout=30)
        assert (follower.returncode, out) == (0, "went\n"), err
        assert (folder / "log").read_text() == "start\n"  # START did not run again
    finally:
        (folder / "go").touch()
        pool.stop()


def test_runs_started_together_on_a_fresh_worker_all_complete(server, tmp_path, monkeypatch):
    """A worker whose compiled-workflow cache is cold compiles the workflow in many threads at once (each run's
    workflow code, each effect step): every one of them must get it, none a half-made compile."""
    from wfexec.api import load
    from wfexec.temporal.client import connect, run_request, start

    queue = "fresh"
    monkeypatch.chdir(tmp_path)
    workflow = load(ROOT / "skills" / "triage")  # imports and a sub-workflow: a compile that looks at other files
    request = run_request(workflow, inputs={"request": "Production outage: the export crashes"}, overrides={},
                          answers={}, max_steps=100)

    async def start_ten() -> list[str]:
        client = await connect(server.address)
        return [(await start(client, workflow, request, queue)).id for _ in range(10)]

    # Queued before the worker starts, so that it takes them all at once, while nothing is compiled yet.
    run_ids = asyncio.run(start_ten())
    pool = Workers(server, queue, tmp_path)
    # Not measured by coverage: under its tracer ten cold compiles at once take minutes of CPU on two cores, and
    # the race this is about needs no measuring.
    unmeasured = {k: v for k, v in environment(server).items() if not k.startswith(("COV_CORE_", "COVERAGE_"))}
    pool.start(env={**unmeasured, "WFEXEC_CACHE_DIR": str(tmp_path / "fresh-cache")})
    try:
        async def outcomes() -> list[dict]:
            client = await connect(server.address)
            return await asyncio.wait_for(asyncio.gather(*(client.get_workflow_handle(run_id).result()
                                                           for run_id in run_ids)), 120)

        ended = asyncio.run(outcomes())
        problems = [(run_id, (outcome.get("error") or {}).get("text")) for run_id, outcome in zip(run_ids, ended)
                    if outcome["status"] != "completed"]
        assert not problems, problems
        assert {outcome["result"]["ending"] for outcome in ended} == {"bug"}
    finally:
        pool.stop()
