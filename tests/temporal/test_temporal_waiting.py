"""`wfexec run --temporal` tells the person to start a worker only when no worker has taken the run: from the
server's record of the run, not from whether a worker answers in time (a frozen or loaded worker does not)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("temporalio", reason="needs wfexec[temporal]")

from temporal_support import WAIT_FOR_FILE, Workers, environment, server, wait_until, wfexec  # noqa: E402,F401

from wfexec.temporal.client import NO_WORKER_NOTE_AFTER, QUERY_TIMEOUT  # noqa: E402

pytestmark = pytest.mark.temporal

NO_WORKER = "no worker has taken run "


def _follow(server, tmp_path, queue: str, env: dict | None = None) -> tuple[subprocess.Popen, object]:
    """`wfexec run` of WAIT_FOR_FILE on this queue, its stderr in a file the test can read while it runs."""
    (tmp_path / "step").mkdir()
    err = open(tmp_path / "stderr", "w+")
    follower = subprocess.Popen([sys.executable, "-m", "wfexec", "run", str(WAIT_FOR_FILE), "--task-queue", queue,
                                 "--set", f"computed.dir={tmp_path / 'step'}"], env=env or environment(server),
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=err, text=True)
    return follower, err


def test_a_run_no_worker_polls_for_names_the_command_that_starts_one(server, tmp_path):
    follower, err = _follow(server, tmp_path, "nobody-polls")
    try:
        said = wait_until(lambda: NO_WORKER in (tmp_path / "stderr").read_text() and (tmp_path / "stderr").read_text(),
                          60, "the note that no worker took the run")
        line = next(line for line in said.splitlines() if NO_WORKER in line)
        assert line.endswith(f"start one with: wfexec worker --temporal {server.address} --task-queue nobody-polls")
        run_id = line.split(NO_WORKER, 1)[1].split()[0]
    finally:
        follower.kill()
        follower.wait(10)
        err.close()
    wfexec(server, "cancel", run_id, cwd=tmp_path, check_code=0)


def test_a_run_whose_worker_is_too_busy_to_answer_is_not_said_to_be_untaken(server, tmp_path):
    """The worker takes the run and starts its slow step, then is frozen (SIGSTOP: a starved machine) for longer
    than the client waits before it wonders; its queries go unanswered, yet the server knows it took the run."""
    env = {**environment(server), "WFEXEC_TEMPORAL_HEARTBEAT": "120"}  # frozen is not dead: the step is not lost
    pool = Workers(server, "busy", tmp_path)
    worker = pool.start()
    follower, err = _follow(server, tmp_path, "busy", env)
    try:
        wait_until(lambda: (tmp_path / "step" / "started").exists(), 60, "the step to start on the worker")
        worker.send_signal(signal.SIGSTOP)
        # Past the client's wait, plus one unanswered query: the moment it decides, while the worker is frozen.
        time.sleep(NO_WORKER_NOTE_AFTER + 2 * QUERY_TIMEOUT.total_seconds() + 1)
        worker.send_signal(signal.SIGCONT)
        (tmp_path / "step" / "go").touch()
        out, _ = follower.communicate(timeout=120)
        said = (tmp_path / "stderr").read_text()
        assert follower.returncode == 0, (out, said)
        assert out == "waited: went\n\n"
        assert NO_WORKER not in said, said
    finally:
        worker.send_signal(signal.SIGCONT)
        (tmp_path / "step" / "go").touch()
        if follower.poll() is None:
            follower.kill()
        err.close()
        pool.stop()
