"""wfexec.system.spawn starts a program as subprocess.Popen(start_new_session=True) does (the watchdog and
`wfexec states`' scripts start through it): each test starts the same real program both ways and compares what the
program saw of itself, or checks what spawnable refuses (and so leaves to Popen)."""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess

import pytest

from wfexec.system import spawn

pytestmark = pytest.mark.skipif(not (hasattr(os, "posix_spawn") and os.path.isdir("/proc/self/fd")),
                                reason="posix_spawn and /proc (Linux)")
BASH = shutil.which("bash")
STRAY = 77  # a descriptor number no shell takes for itself
# What a program reports of how it was started: its session, what it reads, its open descriptors, the signals it
# ignores and its environment. The descriptors are listed into a file before any `$(...)`: while one runs, the
# shell holds its pipe, and whether the write end is closed yet when `ls` looks is a race (it failed a CI run).
REPORT = r"""
listed=$(mktemp)
ls /proc/$$/fd > "$listed"
echo "session $(( $(ps -o sid= -p $$) == $$ ))"
echo "stdin $(cat | wc -c)"
echo "fds $(sort -n "$listed" | tr '\n' ' ')"
rm -f "$listed"
grep SigIgn /proc/$$/status
echo "tag $WFEXEC_TEST_TAG"
echo "to stderr" >&2
exit 7
"""


def spawned(argv: list[str], stdin: str = spawn.DEVNULL) -> tuple[int, bytes, bytes]:
    program = spawn.spawn(argv, env={**os.environ, "WFEXEC_TEST_TAG": "t1"}, stdin=stdin, stdout=spawn.PIPE,
                          stderr=spawn.PIPE)
    if program.stdin is not None:
        program.stdin.close()
    out, err = program.stdout.read(), program.stderr.read()
    program.stdout.close()
    program.stderr.close()
    return program.wait(), out, err


def without_glibc_internal_signals(result: tuple[int, bytes, bytes]) -> tuple[int, bytes, bytes]:
    """glibc's posix_spawn leaves the two signals it keeps for itself (32 and 33, below SIGRTMIN: thread
    cancellation and set-id calls) ignored in the program, where glibc sets their handlers when it uses them."""
    code, out, err = result
    lines = out.decode().splitlines()
    at = next(index for index, line in enumerate(lines) if line.startswith("SigIgn:"))
    mask = int(lines[at].split()[1], 16)
    lines[at] = f"SigIgn:\t{mask & ~(1 << 31 | 1 << 32):016x}"
    return code, "".join(line + "\n" for line in lines).encode(), err


def popened(argv: list[str]) -> tuple[int, bytes, bytes]:
    done = subprocess.run(argv, env={**os.environ, "WFEXEC_TEST_TAG": "t1"}, stdin=subprocess.DEVNULL,
                          capture_output=True, start_new_session=True)
    return done.returncode, done.stdout, done.stderr


def test_a_program_sees_the_same_start_as_with_popen_even_with_an_inheritable_descriptor_open():
    stray_read, stray_write = os.pipe()
    os.dup2(stray_write, STRAY, inheritable=True)  # Popen's close_fds keeps it from the program: so must spawn
    try:
        ours = spawned([BASH, "-c", REPORT])
        theirs = popened([BASH, "-c", REPORT])
    finally:
        for fd in (stray_read, stray_write, STRAY):
            os.close(fd)
    assert without_glibc_internal_signals(ours) == theirs
    code, out, err = ours
    assert (code, err) == (7, b"to stderr\n")
    assert b"session 1\n" in out and b"stdin 0\n" in out and b"tag t1\n" in out
    fds = next(line for line in out.decode().splitlines() if line.startswith("fds ")).split()[1:]
    assert {"0", "1", "2"} <= set(fds) and str(STRAY) not in fds


def test_a_program_killed_by_a_signal_and_one_writing_to_a_closed_pipe_end_as_with_popen():
    assert spawned([BASH, "-c", "kill -TERM $$"])[0] == -signal.SIGTERM == popened([BASH, "-c", "kill -TERM $$"])[0]
    # SIGPIPE is the default again in the program (Python ignores it): `yes` ends when its reader goes
    pipeline = [BASH, "-c", "yes | head -c 1 >/dev/null; echo ${PIPESTATUS[0]}"]
    assert spawned(pipeline) == popened(pipeline) == (0, b"141\n", b"")


def test_stdin_can_be_a_pipe():
    program = spawn.spawn(["/bin/cat"], env=dict(os.environ), stdin=spawn.PIPE, stdout=spawn.PIPE,
                          stderr=spawn.DEVNULL)
    assert program.stderr is None
    program.stdin.write(b"fed\n")
    program.stdin.close()
    assert program.stdout.read() == b"fed\n"
    program.stdout.close()
    assert program.wait() == 0 and program.poll() == 0


def test_a_program_that_cannot_start_raises_what_popen_raises_and_leaves_no_pipe_open(tmp_path):
    missing = str(tmp_path / "no-such-program")
    text = tmp_path / "not-executable"
    text.write_text("echo hi\n")
    before = sorted(os.listdir("/proc/self/fd"))
    for program, error in ((missing, FileNotFoundError), (str(text), PermissionError)):
        with pytest.raises(error):
            subprocess.Popen([program])
        with pytest.raises(error):
            spawn.spawn([program], env={}, stdin=spawn.PIPE, stdout=spawn.PIPE, stderr=spawn.PIPE)
    assert sorted(os.listdir("/proc/self/fd")) == before


def test_a_process_holding_many_descriptors_leaves_the_start_to_popen_and_the_program_inherits_none():
    """Naming each inheritable descriptor to posix_spawn costs a call per descriptor open: a fork of a thousand
    agents spent more time there than in the agents. Popen closes them all in the program in one go."""
    from wfexec.system.subprocesses import start_piped

    baseline = spawn.spawnable([BASH], None)
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(spawn.SPAWN_MAX_DESCRIPTORS)]
    strays = [os.dup(held[0]) for _ in range(2)]
    for stray in strays:  # inheritable, as Popen's close_fds keeps them from the program
        os.set_inheritable(stray, True)
    try:
        assert not spawn.spawnable([BASH], None)
        program = start_piped([BASH, "-c", "ls /proc/$$/fd"], cwd=os.getcwd())
        out = program.stdout.read().decode().split()
        program.stdout.close()
        program.stderr.close()
        program.wait()
        assert isinstance(program, subprocess.Popen)
        assert {type(program.stdout), type(program.stderr)} == {io.FileIO}  # unbuffered, as spawn's pipes are
    finally:
        for fd in held + strays:
            os.close(fd)
    assert not {str(stray) for stray in strays} & set(out) and {"0", "1", "2"} <= set(out)
    assert spawn.spawnable([BASH], None) == baseline  # the descriptors closed: posix_spawn again


@pytest.mark.parametrize("counted_by_the_kernel", [True, False])
def test_up_to_the_limit_of_descriptors_open_posix_spawn_starts_the_program(monkeypatch, counted_by_the_kernel):
    """The descriptors open are counted exactly, by the kernel (Linux 6.2 on) or from the listing of
    /proc/self/fd, whose own descriptor is not one of this process's."""
    if not counted_by_the_kernel:
        real_stat = os.stat
        monkeypatch.setattr(os, "stat", lambda path, *a, **k: (os.stat_result((0o40500,) + (0,) * 9)
                                                              if path == "/proc/self/fd" else real_stat(path, *a, **k)))
    elif not os.stat("/proc/self/fd").st_size:
        pytest.skip("a kernel before 6.2 does not count the descriptors for a stat")
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(spawn.SPAWN_MAX_DESCRIPTORS
                                                               - len(os.listdir("/proc/self/fd")) + 1)]
    try:
        assert len(os.listdir("/proc/self/fd")) - 1 == spawn.SPAWN_MAX_DESCRIPTORS
        assert spawn.spawnable([BASH], None)
        held.append(os.open(os.devnull, os.O_RDONLY))
        assert not spawn.spawnable([BASH], None)
    finally:
        for fd in held:
            os.close(fd)


def test_what_spawn_cannot_do_is_left_to_popen(tmp_path, monkeypatch):
    # However many descriptors this test process holds by now (a worker that ran many tests may hold dozens):
    monkeypatch.setattr(spawn, "SPAWN_MAX_DESCRIPTORS", 1 << 20)
    assert spawn.spawnable(["/bin/sh"], os.getcwd())
    assert not spawn.spawnable(["sh"], None)               # found on $PATH: Popen looks in the program's own
    assert not spawn.spawnable(["/bin/sh"], str(tmp_path))  # another working directory: posix_spawn has no chdir
