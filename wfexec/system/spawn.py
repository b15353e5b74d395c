"""Starting a program with `os.posix_spawn`, where that starts it as `subprocess.Popen` would.

`wfexec states` on a one-script folder starts two programs (the watchdog and the script), and importing
`subprocess` (with the locale, threading and selectors modules it brings) cost about a tenth of that command's CPU.
`posix_spawn` does what Popen's C helper does on Linux (a vfork and an exec), without the module. It covers what
the programs wfexec watches need: a new session, stdin, stdout and stderr each a pipe or /dev/null, every other
inherited descriptor closed, SIGPIPE and SIGXFSZ back to their defaults (Python ignores them), the exec's failure
raised here (FileNotFoundError, PermissionError). One difference: glibc's posix_spawn leaves the two signals glibc
keeps for itself (32 and 33, below SIGRTMIN) ignored in the program, where glibc installs their handlers when it
uses them (tests/system/test_spawn.py compares the two starts). posix_spawn cannot change the working directory,
so `spawnable` says no for a program that runs elsewhere, as it does for a program named without a path and where
there is no /proc to list open descriptors from; `wfexec.system.subprocesses` then starts it with Popen.

Nor can posix_spawn close every other descriptor in one go, as Popen's C helper does (one close_range in the
child): `spawn` names each inheritable one, a system call for every descriptor open here. A states run of a
thousand forked agents holds the pipes of each agent's script, so every start cost as many calls as agents, the
kernel's time growing with the square of their number (1,000 one-second agents: 2.9 ms of CPU per agent state,
1.2 ms with Popen). Past SPAWN_MAX_DESCRIPTORS open, `spawnable` says no and Popen starts the program.
"""

from __future__ import annotations

import os

from wfexec.system.signals import system_signals

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping

# Open descriptors past which Popen starts a program (see above): a lone agent's script, or the watchdog, starts
# with a dozen open; a fork of many agents with two pipes each.
SPAWN_MAX_DESCRIPTORS = 64
PIPE = "pipe"
DEVNULL = "devnull"
# What Popen's restore_signals puts back to the default in the program: Python ignores them.
_DEFAULT_IN_PROGRAM = tuple(getattr(system_signals, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ")
                            if hasattr(system_signals, name))


class Spawned:
    """The part of subprocess.Popen the watchers of a program use: its pid, its pipes (unbuffered binary files or
    None), `poll`, `wait` and `returncode`."""

    def __init__(self, pid: int, stdin, stdout, stderr) -> None:
        self.pid = pid
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): Popen says 0 too
                self.returncode = 0
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self) -> int:
        if self.returncode is None:
            try:
                _, status = os.waitpid(self.pid, 0)
            except ChildProcessError:
                self.returncode = 0
            else:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


def spawnable(argv, cwd: str | os.PathLike | None) -> bool:
    """Whether `spawn` starts `argv` in `cwd` as Popen would, and as cheaply: a program given by its path, run in
    this process's working directory, on a system with posix_spawn and /proc, from a process with few descriptors
    open."""
    return (hasattr(os, "posix_spawn") and os.path.isabs(argv[0]) and _few_descriptors_open()
            and (cwd is None or os.fspath(cwd) == os.getcwd()) and all(map(_is_open, (0, 1, 2))))


def _few_descriptors_open() -> bool:
    """At most SPAWN_MAX_DESCRIPTORS open (False without /proc to list them from). Linux 6.2 on counts them for a
    stat of /proc/self/fd (its size; 0 before): the kernel's count of a bitmap. Listed otherwise, only that far,
    though the kernel still reads out every descriptor into the listing's buffer: with a thousand agents' pipes
    open, that listing cost each start about a fifth of a millisecond of system time."""
    try:
        counted = os.stat("/proc/self/fd").st_size
    except OSError:
        return False
    if counted:
        return counted <= SPAWN_MAX_DESCRIPTORS
    try:
        with os.scandir("/proc/self/fd") as listing:
            for count, _entry in enumerate(listing, 0):  # (the listing's own descriptor is listed too)
                if count > SPAWN_MAX_DESCRIPTORS:
                    return False
    except OSError:
        return False
    return True


def _is_open(fd: int) -> bool:
    """(A closed 0, 1 or 2 would be reused by the pipes, which Popen sorts out and `spawn` does not.)"""
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def spawn(argv, *, env: Mapping[str, str], stdin: str, stdout: str, stderr: str) -> Spawned:
    """Start `argv` in a new session; each of stdin, stdout and stderr is PIPE (its end here is in the result)
    or DEVNULL. Raises OSError as Popen does when the program cannot be started."""
    ends: list = [None, None, None]
    theirs: list[int] = []
    actions: list[tuple] = []
    try:
        for target, how in enumerate((stdin, stdout, stderr)):
            if how == DEVNULL:
                actions.append((os.POSIX_SPAWN_OPEN, target, os.devnull, os.O_RDWR, 0))
                continue
            read, write = os.pipe()  # not inheritable: only the copies made onto 0, 1 and 2 reach the program
            child, parent = (read, write) if target == 0 else (write, read)
            theirs.append(child)
            ends[target] = open(parent, "wb" if target == 0 else "rb", buffering=0)
            actions.append((os.POSIX_SPAWN_DUP2, child, target))
        actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable_descriptors(exclude=theirs)]
        pid = os.posix_spawn(argv[0], list(argv), env, file_actions=actions, setsid=True,
                             setsigdef=_DEFAULT_IN_PROGRAM)
    except BaseException:
        for end in ends:
            if end is not None:
                end.close()
        raise
    finally:
        for fd in theirs:
            os.close(fd)
    return Spawned(pid, *ends)


def _inheritable_descriptors(exclude: list[int]) -> list[int]:
    """This process's descriptors above 2 that a program would inherit (Popen's close_fds closes them)."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in exclude:
            try:
                if os.get_inheritable(fd):
                    found.append(fd)
            except OSError:  # the listing's own descriptor, closed by now
                pass
    return found
