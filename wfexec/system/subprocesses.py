"""What every place that starts programs shares: start a program so that it never outlives wfexec.

Each program runs in its own process group (`start_new_session=True`), so one
kill reaches everything it started. Three things stop a group from living on:
- every exit path of the caller kills it (`kill_group`), Ctrl-C, SIGTERM and
  SIGHUP included (they raise in the main thread);
- a watchdog process, one per wfexec process (a `wfexec run`, a `wfexec worker`,
  the MCP server alike), started before the first program, holds the read end
  of a pipe whose write end only wfexec holds. It learns each group as it
  starts and ends; when wfexec dies, even by SIGKILL, the pipe reaches
  end-of-file and the watchdog kills every group still listed. A program is
  announced before it is started, by a tag in its environment
  (`WFEXEC_PROGRAM`): a program that started but whose group wfexec had not
  yet listed when it died is found by that tag (on Linux, in /proc). (The
  parent-death signal would reach the group leader only, not a `sleep` that
  bash started, and it fires when the starting *thread* ends.)
- every program carries `WFEXEC_RUN=<run id>` in its environment, so resume
  can find and kill what is left of an earlier attempt before running the
  step again (`kill_tagged`), even if the watchdog itself was killed.
"""

from __future__ import annotations

import _thread  # a lock, without importing threading where no program is started
import itertools
import os
import sys

from wfexec.system import signals, spawn
from wfexec.system.signals import system_signals

TYPE_CHECKING = False
if TYPE_CHECKING:  # imported where Popen starts a program: a run without one never pays for it
    import subprocess
    from typing import Any, Callable

    from wfexec.system.spawn import Spawned

RUN_TAG_VARIABLE = "WFEXEC_RUN"
PROGRAM_TAG_VARIABLE = "WFEXEC_PROGRAM"
# How long output is still read after a program exited while a background child it left holds its pipes.
EXIT_GRACE_SECONDS = 3.0
run_tag: str | None = None  # the run whose steps start programs now; set by the durable driver

# bash when there is one: it starts in about a millisecond of CPU, where even `python -I -S` takes about ten,
# and the watchdog starts with the first program of every wfexec process (just before it).
# What it reads, a line each: `+@TAG` a program is about to start with WFEXEC_PROGRAM=TAG, `+PGID` it started as
# that process group, `-@TAG` it is listed (or failed to start), `-PGID` it ended. At end-of-file: every group
# listed is killed, and so is the group of every process carrying a tag still announced (/proc).
_WATCHDOG_BASH = r"""
declare -A groups
while IFS= read -r line; do
  if [[ $line == +* ]]; then groups[${line:1}]=1; else unset "groups[${line:1}]"; fi
done
tags=()
for key in "${!groups[@]}"; do
  if [[ $key == @* ]]; then tags+=("WFEXEC_PROGRAM=${key:1}"); else kill -KILL -- "-$key" 2>/dev/null; fi
done
if (( ${#tags[@]} )); then
  for environ in /proc/[0-9]*/environ; do
    while IFS= read -r -d '' variable; do
      for tag in "${tags[@]}"; do
        if [[ $variable == "$tag" ]]; then
          read -r stat < "${environ%environ}stat" && fields=(${stat##*) }) && kill -KILL -- "-${fields[2]}" 2>/dev/null
          break 2
        fi
      done
    done < "$environ"
  done 2>/dev/null
fi
exit 0  # a process that ended while /proc was read fails its redirection; that says nothing about the kills
"""
_WATCHDOG = r"""
import os, signal, sys
groups, tags = set(), set()
for line in sys.stdin:
    sign, what = line[0], line[1:].strip()
    if what.startswith("@"):
        (tags.add if sign == "+" else tags.discard)(b"WFEXEC_PROGRAM=" + what[1:].encode())
    else:
        (groups.add if sign == "+" else groups.discard)(int(what))
if tags and os.path.isdir("/proc"):
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if tags.intersection(handle.read().split(b"\0")):
                    groups.add(os.getpgid(int(entry)))
        except (OSError, ValueError):
            pass
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""
_watchdog: Spawned | subprocess.Popen | None = None
_watchdog_lock = _thread.allocate_lock()
# A program's tag: this process, then a nonce (a pid of a process that died may be taken again), then a number.
_NONCE = os.urandom(4).hex()
_programs = itertools.count(1)


def _tell_watchdog(message: str) -> None:
    global _watchdog
    if not hasattr(os, "killpg"):  # pragma: no cover - Windows has no process groups of this kind
        return
    with _watchdog_lock:
        try:
            if _watchdog is None or _watchdog.poll() is not None:
                _watchdog = _start_watchdog()
            assert _watchdog.stdin is not None  # started with its stdin a pipe
            _watchdog.stdin.write(message.encode() + b"\n")
        except OSError:  # no watchdog: the other two guards still hold
            pass


def _start_watchdog() -> Spawned | subprocess.Popen:
    argv = _watchdog_argv()
    if spawn.spawnable(argv, None):
        return spawn.spawn(argv, env=os.environ, stdin=spawn.PIPE, stdout=spawn.DEVNULL, stderr=spawn.DEVNULL)
    import subprocess

    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, close_fds=True, bufsize=0)


def _watchdog_argv() -> list[str]:
    for bash in ("/bin/bash", "/usr/bin/bash"):
        if os.access(bash, os.X_OK):
            return [bash, "--noprofile", "--norc", "-c", _WATCHDOG_BASH]
    return [sys.executable, "-I", "-S", "-c", _WATCHDOG]


def start(argv, *, env: dict | None = None, **options) -> subprocess.Popen:
    """subprocess.Popen in a new process group, tagged with the run and known to the watchdog."""
    import subprocess

    return _announced(lambda tagged: subprocess.Popen(argv, env=tagged, start_new_session=True, **options), env)


def start_piped(argv, *, cwd: str | os.PathLike, env: dict | None = None,
                stdin_piped: bool = False) -> Spawned | subprocess.Popen:
    """`start` with stdout and stderr piped, and stdin piped or /dev/null: through posix_spawn where that starts
    the program as Popen would (`wfexec.system.spawn`), so that starting a script does not import subprocess."""
    if spawn.spawnable(argv, cwd):
        stdin = spawn.PIPE if stdin_piped else spawn.DEVNULL
        return _announced(lambda tagged: spawn.spawn(argv, env=tagged, stdin=stdin, stdout=spawn.PIPE,
                                                     stderr=spawn.PIPE), env)
    import subprocess

    # Unbuffered, as spawn's: the pipes are read with os.read, and a buffered file costs an isatty and a seek each.
    return start(argv, cwd=cwd, env=env, stdin=subprocess.PIPE if stdin_piped else subprocess.DEVNULL,
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)


def _announced(launch: Callable[[dict], Any], env: dict | None) -> Any:
    """What `launch` started, given the environment `env` (None: this process's) with the program's tags."""
    # Announced before it exists: the program runs as soon as it is started, before its group can be listed,
    # and a process killed in between (the moment its step began, say) must not leave it running.
    tag = f"{os.getpid()}.{_NONCE}.{next(_programs)}"
    env = {**(os.environ if env is None else env), PROGRAM_TAG_VARIABLE: tag,
           **({RUN_TAG_VARIABLE: run_tag} if run_tag is not None else {})}
    _tell_watchdog(f"+@{tag}")
    process = None
    try:
        with signals.deferred():
            try:
                process = launch(env)
            except BaseException:
                _tell_watchdog(f"-@{tag}")
                raise
            _tell_watchdog(f"+{process.pid}\n-@{tag}")
    except KeyboardInterrupt:  # a stop signal came while it started: it goes at once
        if process is not None:
            kill_group(process)
            process.wait()
        raise
    return process


def watch(pid: int) -> None:
    """A process group started elsewhere (`start_new_session=True`, e.g. by anyio) put under the watchdog's guard;
    `done_with` releases it."""
    _tell_watchdog(f"+{pid}")


def kill_group(process) -> None:
    """Kill a program started with `start` and everything it started.

    Its children (bash's `sleep`, git's remote helpers) hold the output pipes
    open, so killing the leader alone would leave the caller waiting on them.
    """
    try:
        if hasattr(os, "killpg"):
            os.killpg(process.pid, system_signals.SIGKILL)
        else:  # pragma: no cover - Windows has no process groups of this kind
            process.kill()
    except (ProcessLookupError, PermissionError):
        pass


def done_with(process) -> None:
    """The program has been reaped: whatever is left of its group goes now, and the watchdog forgets it."""
    kill_group(process)
    _tell_watchdog(f"-{process.pid}")


def kill_tagged(tag: str, variable: str = RUN_TAG_VARIABLE) -> int:
    """Kill the process groups of every program of ours whose environment says it belongs to run `tag` (or
    carries `variable`=`tag`: a process that left its group with `setsid` keeps its environment)."""
    groups = tagged_groups(tag, variable)
    groups.discard(os.getpgrp())
    for group in groups:
        try:
            os.killpg(group, system_signals.SIGKILL)
        except OSError:
            pass
    return len(groups)


def tagged_groups(tag: str, variable: str = RUN_TAG_VARIABLE) -> set[int]:
    """The process groups of the processes (but this one) whose environment holds `variable`=`tag`: read from
    /proc where there is one, else through psutil (macOS, the BSDs, Windows). On Linux /proc is read directly:
    psutil reads the same files at about 7 times the cost (7.1 ms against 1.0 ms for 176 processes) and takes
    20 ms to import, on the path of every `wfexec resume`."""
    if os.path.isdir("/proc/self"):
        return _groups_from_proc(f"{variable}={tag}".encode())
    return groups_from_psutil(tag, variable)


def _groups_from_proc(wanted: bytes) -> set[int]:
    mine = os.getpid()
    groups = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == mine:
            continue
        try:
            environment = _read_all(f"/proc/{entry}/environ")
            # split only where the text is there at all: most processes' environments do not hold it
            if wanted in environment and wanted in environment.split(b"\0"):
                groups.add(os.getpgid(int(entry)))
        except OSError:  # gone, or someone else's
            continue
    return groups


def _read_all(path: str) -> bytes:
    """The file's bytes, read without a file object (every `resume` reads each process's environment)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def groups_from_psutil(tag: str, variable: str = RUN_TAG_VARIABLE) -> set[int]:
    """`tagged_groups` through psutil; nothing without it installed (the watchdog is the guard then)."""
    try:
        import psutil
    except ImportError:
        return set()
    mine = os.getpid()
    groups = set()
    for process in psutil.process_iter():
        try:
            if process.pid != mine and process.environ().get(variable) == tag:
                groups.add(os.getpgid(process.pid) if hasattr(os, "getpgid") else process.pid)
        except (psutil.Error, OSError):  # gone, or someone else's
            continue
    return groups
