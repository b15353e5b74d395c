"""Progress you can see (issue 12, point 4): --trace streams output as it comes; a live status line at a
terminal; colour only at a terminal. Real processes, a real pseudo-terminal."""

from __future__ import annotations

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
    on_success: agents
  agents:
    type: states
    folder: flow
    on_success: done
endings:
  done: {type: success, message: finished}
"""


def _read_until(stream, text: str) -> list[str]:
    lines = []
    for line in stream:
        lines.append(line)
        if text in line:
            return lines
    raise AssertionError(f"{text!r} never came; got:\n{''.join(lines)}")


def test_trace_streams_command_and_script_output_while_they_still_run(tmp_path):
    (tmp_path / "workflow.yaml").write_text(WAITS_FOR_GO)
    (tmp_path / "flow").mkdir()
    (tmp_path / "flow" / "START.sh").write_text(
        "echo 'script says hello' >&2\nwhile [ ! -e go2 ]; do sleep 0.05; done\necho '<result>ok</result>'\n")
    process = subprocess.Popen([sys.executable, "-m", "wfexec.cli", "run", "workflow.yaml", "--ephemeral",
                                "--trace"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = _read_until(process.stderr, "stdout| first")
        seen += _read_until(process.stderr, "stderr| warming")
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
