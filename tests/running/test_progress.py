"""Progress you can see (issue 12, point 4): --trace streams output as it comes; a live status line at a
terminal; colour only at a terminal. Real processes, a real pseudo-terminal."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

WAITS_FOR_GO = """
name: waits
version: 1
start_node: work
nodes:
  work:
    type: action
    actions:
      - type: run_command
        command: [bash, -c, "echo first; echo warming >&2; while [ ! -e go ]; do sleep 0.05; done; echo second"]
        timeout: 60  # a lost line fails the test in a minute, not in the default five
    on_success: agents
  agents:
    type: states
    folder: flow
    on_success: done
endings:
  done: {type: success, message: finished}
"""


def _read_until(stream, *texts: str) -> list[str]:
    """Lines up to the one where the last of `texts` came, in whatever order they came: stdout and stderr are
    read by two threads, so the trace may show either first."""
    lines, waiting = [], set(texts)
    for line in stream:
        lines.append(line)
        waiting = {text for text in waiting if text not in line}
        if not waiting:
            return lines
    raise AssertionError(f"{sorted(waiting)!r} never came; got:\n{''.join(lines)}")


def test_trace_streams_command_and_script_output_while_they_still_run(tmp_path):
    (tmp_path / "workflow.yaml").write_text(WAITS_FOR_GO)
    (tmp_path / "flow").mkdir()
    (tmp_path / "flow" / "START.sh").write_text(
        "echo 'script says hello' >&2\nwhile [ ! -e go2 ]; do sleep 0.05; done\necho '<result>ok</result>'\n")
    process = subprocess.Popen([sys.executable, "-m", "wfexec", "run", "workflow.yaml", "--ephemeral",
                                "--trace"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = _read_until(process.stderr, "stdout| first", "stderr| warming")
        assert process.poll() is None and "stdout| second" not in "".join(seen)  # the command has not ended
        (tmp_path / "go").touch()
        seen += _read_until(process.stderr, "stdout| second")
        seen += _read_until(process.stderr, "START.sh stderr| script says hello")
        assert process.poll() is None  # the script waits for go2: its stderr came while it ran
        (tmp_path / "go2").touch()
        out, rest = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, rest
    assert out.strip() == "finished"


COLOUR = re.compile(r"\x1b\[(?:\d+;)*3\d(?:;\d+)*m")  # an SGR sequence setting a foreground colour

LONG_COMMAND = """
name: long
version: 1
start_node: build
nodes:
  build:
    type: action
    actions:
      - type: run_command
        command: [bash, -c, "while [ ! -e go ]; do sleep 0.05; done"]
      - type: run_command
        command: [bash, -c, "exit 3"]
    on_success: done
    on_failure: broke
endings:
  done: {type: success, message: built}
  broke: {type: failure, message: broke}
"""


def _terminal_run(folder: Path, **env):
    import os

    import pexpect

    environment = {k: v for k, v in os.environ.items() if k not in ("WFEXEC_STATUS", "CI", "NO_COLOR")}
    environment.update(TERM="xterm-256color", **env)
    return pexpect.spawn(sys.executable, ["-m", "wfexec", "run", "workflow.yaml", "--ephemeral"], cwd=folder,
                         env=environment, encoding="utf-8", timeout=30, dimensions=(24, 160))


def test_at_a_terminal_a_status_line_shows_the_node_the_command_and_the_time(tmp_path):
    (tmp_path / "workflow.yaml").write_text(LONG_COMMAND)
    child = _terminal_run(tmp_path)
    try:
        child.expect_exact("build")
        child.expect_exact("$ bash -c 'while [ ! -e go ]")
        child.expect(r"\d+s")  # the command's elapsed time
        (tmp_path / "go").touch()
        child.expect_exact("broke")
        shown = child.before
        child.expect(pexpect_eof())
    finally:
        child.close(force=True)
    assert COLOUR.search(shown)  # coloured at a terminal


def test_at_a_terminal_wfexec_states_shows_the_agent_its_state_and_the_running_script(tmp_path):
    import os

    import pexpect

    flow = tmp_path / "flow"
    flow.mkdir()
    (flow / "START.sh").write_text("echo '<goto>BUILD.sh</goto>'\n")
    (flow / "BUILD.sh").write_text("while [ ! -e go ]; do sleep 0.05; done\necho '<result>built</result>'\n")
    environment = {k: v for k, v in os.environ.items() if k not in ("WFEXEC_STATUS", "CI", "NO_COLOR")}
    child = pexpect.spawn(sys.executable, ["-m", "wfexec", "states", "flow"], cwd=tmp_path,
                          env={**environment, "TERM": "xterm-256color"}, encoding="utf-8", timeout=30,
                          dimensions=(24, 160))
    try:
        child.expect_exact("main: BUILD.sh")  # the agent and its state, in the status line
        child.expect(r"\d+s")
        (tmp_path / "go").touch()
        child.expect_exact("built")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0


def pexpect_eof():
    import pexpect

    return pexpect.EOF


def test_no_colour_with_no_color_set_and_no_status_line_in_a_pipe(tmp_path):
    (tmp_path / "workflow.yaml").write_text(LONG_COMMAND)
    (tmp_path / "go").touch()
    child = _terminal_run(tmp_path, NO_COLOR="1")
    try:
        child.expect(pexpect_eof())
        shown = child.before
    finally:
        child.close(force=True)
    assert "broke" in shown
    assert not COLOUR.search(shown)  # bold and dim may stay: NO_COLOR is about colour
    import os

    piped = subprocess.run([sys.executable, "-m", "wfexec", "run", "workflow.yaml", "--ephemeral"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=60,
                           env={k: v for k, v in os.environ.items() if k != "WFEXEC_STATUS"})
    assert piped.stdout.strip() == "Failure: broke"
    assert "▶" not in piped.stderr and "\x1b[" not in piped.stderr + piped.stdout
