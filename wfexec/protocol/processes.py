"""Running a program from asyncio code, or blocking, with an *inactivity* timeout.

Used for script states and for the process-based LLM backends. The program
gets its own process group, so a timeout or a cancelled node kills it and
everything it started. Any byte on stdout or stderr restarts the timer, so a
long build that keeps printing is never cut off, and one that hangs silently
is. `run_process_blocking` watches the program with the same code (`_Running`)
served by `select.poll`, for a caller with no event loop: a lone agent's scripts,
where importing asyncio would cost more than the script.
"""

from __future__ import annotations

import codecs
import os
import select
import time
from wfexec.records import dataclass
# The heap queue's C functions: the `heapq` module around them costs a start ~0.5 ms of CPU to import.
from _heapq import heappop, heappush

from wfexec.system.subprocesses import EXIT_GRACE_SECONDS, done_with, kill_group, start_piped

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from typing import Callable, Sequence

    from wfexec.system.spawn import Spawned

    Sink = Callable[[str], None]

READ_SIZE = 65536
# After the program exits, how long its pipes may stay open (held by a background child) before we stop waiting.


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


async def run_process(argv: Sequence[str], *, cwd: str | os.PathLike, env: dict | None = None,
                      stdin: bytes | None = None, timeout: float | None = None, on_stdout: Sink | None = None,
                      on_stderr: Sink | None = None, spawn_in_thread: bool = False) -> ProcessOutput:
    """Run `argv` to completion; raise ProcessTimeout after `timeout` seconds without output (None/0: never).

    `spawn_in_thread`: start the program from a worker thread. Starting a program blocks its thread
    until the exec is done (a millisecond or more); when many agents start scripts at once, threads let
    those starts overlap. A lone agent starts inline, which is quicker.
    """
    import asyncio

    if not os.path.isdir(cwd):
        raise ProcessStartError(f"the working directory {cwd} does not exist")
    started = time.perf_counter()
    loop = asyncio.get_running_loop()
    if spawn_in_thread:
        process = await _start_in_thread(loop, argv, cwd, env, stdin is not None)
    else:
        process = _start(argv, cwd, env, stdin is not None)
    run = _Running(process, loop, on_stdout, on_stderr, timeout)
    try:
        run.watch(stdin)
        await run.done
    except ProcessTimeout as timed_out:
        raise ProcessTimeout(timed_out.seconds, _text(run.out), _text(run.err)) from None
    finally:
        run.close()
    return ProcessOutput(_text(run.out), _text(run.err), process.wait(), time.perf_counter() - started)  # reaped by now


def _start(argv: Sequence[str], cwd, env, has_stdin: bool) -> Spawned | subprocess.Popen:
    # A started program plus event-loop readers rather than asyncio's subprocess transports: the same work, without
    # asyncio's child-watcher thread per process, which made each short script cost about twice as much.
    try:
        return start_piped(list(argv), cwd=cwd, env=env, stdin_piped=has_stdin)
    except FileNotFoundError:
        raise ProcessStartError(f"`{argv[0]}` was not found") from None
    except PermissionError:
        raise ProcessStartError(f"`{argv[0]}` cannot be executed (permission denied)") from None
    except OSError as exc:
        raise ProcessStartError(f"`{argv[0]}` could not be started: {exc.strerror or exc}") from None


def run_process_blocking(argv: Sequence[str], *, cwd: str | os.PathLike, env: dict | None = None,
                         timeout: float | None = None, on_stdout: Sink | None = None,
                         on_stderr: Sink | None = None) -> ProcessOutput:
    """`run_process` for a caller without an event loop: the same watching, in this thread."""
    if not os.path.isdir(cwd):
        raise ProcessStartError(f"the working directory {cwd} does not exist")
    started = time.perf_counter()
    loop = _BlockingLoop()
    process = _start(argv, cwd, env, False)
    run = _Running(process, loop, on_stdout, on_stderr, timeout)
    try:
        run.watch(None)
        loop.run_until_done(run.done)
    except ProcessTimeout as timed_out:
        raise ProcessTimeout(timed_out.seconds, _text(run.out), _text(run.err)) from None
    finally:
        run.close()
        loop.close()
    return ProcessOutput(_text(run.out), _text(run.err), process.wait(), time.perf_counter() - started)  # reaped by now


async def _start_in_thread(loop, argv, cwd, env, has_stdin: bool) -> Spawned | subprocess.Popen:
    import asyncio

    spawning = loop.run_in_executor(None, _start, argv, cwd, env, has_stdin)
    try:
        return await asyncio.shield(spawning)
    except asyncio.CancelledError:
        # The start completes in its thread regardless: make sure the program it starts does not outlive us.
        spawning.add_done_callback(_stop_orphan)
        raise


def _stop_orphan(spawning) -> None:
    if spawning.cancelled() or spawning.exception() is not None:
        return
    process = spawning.result()
    kill_group(process)
    process.wait()
    done_with(process)
    for pipe in (process.stdout, process.stderr, process.stdin):
        if pipe is not None:
            pipe.close()


class _Outcome:
    """The part of a future `_Running` and `_BlockingLoop` use."""

    def __init__(self) -> None:
        self._done = False
        self._error: BaseException | None = None
        self._callbacks: list = []

    def done(self) -> bool:
        return self._done

    def set_result(self, _value) -> None:
        self._settle(None)

    def set_exception(self, error: BaseException) -> None:
        self._settle(error)

    def add_done_callback(self, callback) -> None:
        self._callbacks.append(callback)

    def _settle(self, error: BaseException | None) -> None:
        self._done, self._error = True, error
        for callback in self._callbacks:
            callback(self)

    def result(self) -> None:
        if self._error is not None:
            raise self._error


class _Timer:
    __slots__ = ("callback", "cancelled")

    def __init__(self, callback) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


def _milliseconds_not_early(seconds: float) -> int:
    """`math.ceil(max(0, seconds) * 1000)`: a poll's timeout that never ends before the timer is due. (Without
    math, a shared library whose loading cost a `wfexec states` start ~0.2 ms.)"""
    milliseconds = max(0.0, seconds) * 1000
    whole = int(milliseconds)
    return whole + (whole < milliseconds)


class _BlockingLoop:
    """The event-loop calls `_Running` makes (readers, writers, timers, a future, a thread), served by poll(2) in
    the calling thread until one future is done (select.poll, not the selectors module: its import costs a
    one-script `wfexec states` about a millisecond)."""

    def __init__(self) -> None:
        self._poll = select.poll()
        self._callbacks: dict[int, tuple] = {}  # fd: (callback, args)
        self._timers: list = []  # a heap of (when, sequence, _Timer)
        self._sequence = 0

    def time(self) -> float:
        return time.monotonic()

    def create_future(self) -> _Outcome:
        return _Outcome()

    def add_reader(self, fd: int, callback, *args) -> None:
        self._watch(fd, select.POLLIN, callback, args)

    def add_writer(self, fd: int, callback, *args) -> None:
        self._watch(fd, select.POLLOUT, callback, args)

    def _watch(self, fd: int, events: int, callback, args: tuple) -> None:
        if fd in self._callbacks:
            raise KeyError(f"{fd} is already watched")
        self._poll.register(fd, events)
        self._callbacks[fd] = (callback, args)

    def remove_reader(self, fd: int) -> None:
        if self._callbacks.pop(fd, None) is not None:  # else already removed
            self._poll.unregister(fd)

    remove_writer = remove_reader

    def call_at(self, when: float, callback) -> _Timer:
        timer = _Timer(callback)
        self._sequence += 1
        heappush(self._timers, (when, self._sequence, timer))
        return timer

    def call_later(self, delay: float, callback) -> _Timer:
        return self.call_at(self.time() + delay, callback)

    def run_in_executor(self, _executor, function) -> _Outcome:
        """`function` in a thread (where no pidfd tells a process's exit); its end wakes the poll."""
        outcome = _Outcome()
        wake_read, wake_write = os.pipe()

        def woken() -> None:
            os.read(wake_read, 1)
            self.remove_reader(wake_read)
            os.close(wake_read)
            outcome.set_result(None)

        def call() -> None:
            try:
                function()
            finally:
                os.write(wake_write, b"x")
                os.close(wake_write)

        import threading  # only where no pidfd tells a process's exit

        self.add_reader(wake_read, woken)
        threading.Thread(target=call, daemon=True).start()
        return outcome

    def run_until_done(self, future: _Outcome) -> None:
        timers = self._timers
        while not future.done():
            while timers and timers[0][2].cancelled:
                heappop(timers)
            wait = _milliseconds_not_early(timers[0][0] - self.time()) if timers else None
            for fd, _ in self._poll.poll(wait):
                watched = self._callbacks.get(fd)
                if watched is not None:  # (not removed by a callback before it in this round)
                    watched[0](*watched[1])
            now = self.time()
            while timers and timers[0][0] <= now and not future.done():
                _, _, timer = heappop(timers)
                if not timer.cancelled:
                    timer.callback()
        future.result()

    def close(self) -> None:
        for fd in list(self._callbacks):
            self.remove_reader(fd)


class _Running:
    """One process watched by the event loop: its pipes through readers, its exit through a pidfd.

    Everything resolves one future, `done`: set when both pipes reached EOF and
    the process exited (or a few seconds after the exit if a background child
    keeps the pipes open), or failed with ProcessTimeout. One future and plain
    callbacks keep a short script to a handful of event-loop iterations.
    """

    def __init__(self, process: Spawned | subprocess.Popen, loop, on_stdout: Sink | None, on_stderr: Sink | None,
                 timeout: float | None):
        self.process = process
        self.loop = loop
        self.out: list[bytes] = []
        self.err: list[bytes] = []
        self.timeout = timeout or None
        self.last_output = loop.time()
        self.done = loop.create_future()
        self.exited = False
        self._readers: dict[int, tuple] = {}
        self._writer: int | None = None
        self._pidfd: int | None = None
        self._timers: list = []
        for pipe, chunks, sink in ((process.stdout, self.out, on_stdout), (process.stderr, self.err, on_stderr)):
            assert pipe is not None  # _start pipes stdout and stderr
            fd = pipe.fileno()
            os.set_blocking(fd, False)
            decoder = codecs.getincrementaldecoder("utf-8")("replace") if sink else None
            self._readers[fd] = (chunks, sink, decoder)
        self._open = len(self._readers)

    def watch(self, stdin: bytes | None) -> None:
        for fd in self._readers:
            self.loop.add_reader(fd, self._read, fd)
        if stdin is not None:
            self._feed(stdin)
        try:
            self._pidfd = os.pidfd_open(self.process.pid)
        except (AttributeError, OSError):  # not Linux ≥ 5.3: a thread waits instead
            waiting = self.loop.run_in_executor(None, self.process.wait)
            waiting.add_done_callback(lambda _: self._on_exit())
        else:
            self.loop.add_reader(self._pidfd, self._on_exit)
        if self.timeout:
            self._timers.append(self.loop.call_at(self.last_output + self.timeout, self._check_silence))

    def _finish(self, error: BaseException | None = None) -> None:
        if not self.done.done():
            if error is None:
                self.done.set_result(None)
            else:
                self.done.set_exception(error)

    def _read(self, fd: int) -> None:
        try:
            data = os.read(fd, READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        chunks, sink, decoder = self._readers[fd]
        if data:
            self.last_output = self.loop.time()
            chunks.append(data)
            if decoder is not None:
                text = decoder.decode(data)
                if text:
                    sink(text)
            return
        self.loop.remove_reader(fd)
        if decoder is not None:
            tail = decoder.decode(b"", final=True)
            if tail:
                sink(tail)
        self._open -= 1
        if self._open == 0:
            # EOF on both pipes nearly always means the program exited: reap it now, without another wake-up.
            if self.exited or self.process.poll() is not None:
                self.exited = True
                self._finish()

    def _on_exit(self) -> None:
        if self._pidfd is not None:
            self.loop.remove_reader(self._pidfd)
        if self.exited:
            return
        self.exited = True
        if self._open == 0:
            self._finish()
        else:  # a child it left behind holds the pipes open: read what comes for a moment, then stop
            self._timers.append(self.loop.call_later(EXIT_GRACE_SECONDS, self._finish))

    def _check_silence(self) -> None:
        timeout = self.timeout
        assert timeout is not None  # scheduled only when there is a timeout
        deadline = self.last_output + timeout
        if self.loop.time() >= deadline:
            self._finish(ProcessTimeout(timeout, "", ""))
        else:
            self._timers.append(self.loop.call_at(deadline, self._check_silence))

    def _feed(self, data: bytes) -> None:
        stdin = self.process.stdin
        assert stdin is not None  # _feed is called only when _start piped stdin
        fd = stdin.fileno()
        os.set_blocking(fd, False)
        view = memoryview(data)

        def write() -> None:
            nonlocal view
            try:
                written = os.write(fd, view[:READ_SIZE]) if view else 0
            except BlockingIOError:
                return
            except OSError:  # the program closed its stdin: its business
                view = view[:0]
                written = 0
            view = view[written:]
            if not view:
                self.loop.remove_writer(fd)
                self._writer = None
                stdin.close()

        self._writer = fd
        self.loop.add_writer(fd, write)

    def close(self) -> None:
        process = self.process
        for timer in self._timers:
            timer.cancel()
        for fd in self._readers:
            self.loop.remove_reader(fd)
        if self._writer is not None:
            self.loop.remove_writer(self._writer)
        if self._pidfd is not None:
            self.loop.remove_reader(self._pidfd)
        if not (self.exited and self._open == 0):
            kill_group(process)  # on a timeout, a cancel, or a child left behind: the whole group goes
        process.wait()  # reaps it; after the exit (or a SIGKILL) this returns at once
        done_with(process)
        if self._pidfd is not None:
            os.close(self._pidfd)
        for pipe in (process.stdout, process.stderr, process.stdin):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass


def _text(chunks: list[bytes]) -> str:
    return b"".join(chunks).decode("utf-8", errors="replace")
