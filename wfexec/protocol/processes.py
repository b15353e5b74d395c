"""Running a program as an asyncio subprocess with an *inactivity* timeout.

Used for script states and for the process-based LLM backends. The program
gets its own process group, so a timeout or a cancelled node kills it and
everything it started. Any byte on stdout or stderr restarts the timer, so a
long build that keeps printing is never cut off, and one that hangs silently
is.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import signal
import time
from dataclasses import dataclass
from typing import Callable, Sequence

READ_SIZE = 65536
# After the program exits, how long its pipes may stay open (held by a background child) before we stop waiting.
EXIT_GRACE_SECONDS = 3.0


@dataclass
class ProcessOutput:
    stdout: str
    stderr: str
    returncode: int
    seconds: float


class ProcessTimeout(Exception):
    def __init__(self, seconds: float, stdout: str, stderr: str):
        super().__init__(f"no output for {seconds:g} s")
        self.seconds = seconds
        self.stdout = stdout
        self.stderr = stderr


class ProcessStartError(Exception):
    """The program could not be started (missing, not executable, bad working directory)."""


Sink = Callable[[str], None]


async def run_process(argv: Sequence[str], *, cwd: str | os.PathLike, env: dict | None = None,
                      stdin: bytes | None = None, timeout: float | None = None, on_stdout: Sink | None = None,
                      on_stderr: Sink | None = None) -> ProcessOutput:
    """Run `argv` to completion; raise ProcessTimeout after `timeout` seconds without output (None/0: never)."""
    if not os.path.isdir(cwd):
        raise ProcessStartError(f"the working directory {cwd} does not exist")
    started = time.perf_counter()
    try:
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, env=env, stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)
    except FileNotFoundError:
        raise ProcessStartError(f"`{argv[0]}` was not found") from None
    except PermissionError:
        raise ProcessStartError(f"`{argv[0]}` cannot be executed (permission denied)") from None
    except OSError as exc:
        raise ProcessStartError(f"`{argv[0]}` could not be started: {exc.strerror or exc}") from None
    loop = asyncio.get_running_loop()
    last_output = [loop.time()]
    out_chunks: list[bytes] = []
    err_chunks: list[bytes] = []
    tasks = [asyncio.ensure_future(_pump(process.stdout, out_chunks, on_stdout, last_output, loop)),
             asyncio.ensure_future(_pump(process.stderr, err_chunks, on_stderr, last_output, loop))]
    if stdin is not None:
        tasks.append(asyncio.ensure_future(_feed(process.stdin, stdin)))
    waiter = asyncio.ensure_future(process.wait())
    try:
        await _wait(process, waiter, tasks, timeout, last_output, loop)
    except ProcessTimeout:
        raise ProcessTimeout(timeout, _text(out_chunks), _text(err_chunks)) from None
    finally:
        if process.returncode is None or not all(t.done() for t in tasks):
            _kill_group(process)
        for task in tasks:
            task.cancel()
        if not waiter.done():
            try:
                await asyncio.shield(waiter)
            except asyncio.CancelledError:
                pass
    return ProcessOutput(_text(out_chunks), _text(err_chunks), process.returncode, time.perf_counter() - started)


async def _wait(process, waiter, tasks, timeout, last_output, loop) -> None:
    pending = set(tasks) | {waiter}
    exited_at = None
    while pending:
        wait_for = None
        now = loop.time()
        if timeout:
            wait_for = last_output[0] + timeout - now
            if wait_for <= 0:
                raise ProcessTimeout(timeout, "", "")
        if exited_at is not None:
            grace = exited_at + EXIT_GRACE_SECONDS - now
            if grace <= 0:
                return  # the program exited; a child it left behind holds the pipes open
            wait_for = grace if wait_for is None else min(wait_for, grace)
        done, pending = await asyncio.wait(pending, timeout=wait_for, return_when=asyncio.FIRST_COMPLETED)
        if waiter in done and exited_at is None:
            exited_at = loop.time()
        for task in done:
            if task is not waiter and task.exception() is not None:
                raise task.exception()


async def _pump(stream, chunks: list, sink: Sink | None, last_output: list, loop) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")("replace") if sink else None
    read = stream.read
    while True:
        data = await read(READ_SIZE)
        if not data:
            if decoder is not None:
                tail = decoder.decode(b"", final=True)
                if tail:
                    sink(tail)
            return
        last_output[0] = loop.time()
        chunks.append(data)
        if decoder is not None:
            text = decoder.decode(data)
            if text:
                sink(text)


async def _feed(pipe, data: bytes) -> None:
    try:
        pipe.write(data)
        await pipe.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the program does not read its stdin: its business
    finally:
        pipe.close()


def _kill_group(process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _text(chunks: list[bytes]) -> str:
    return b"".join(chunks).decode("utf-8", errors="replace")
