"""The tutorial in docs/tutorial/ cannot drift: each step's files are written and its commands run, in order, in a
fresh folder, and what each command prints must hold the lines the page shows under it.

A page marks what the test uses: ```` ```LANG file=PATH ```` is a file to write at PATH; in a ```` ```console ````
block each `$ ` line is a command (run with bash, `wfexec` on PATH as a real process of this checkout) and the
lines up to the next `$ ` are its output: each must appear, in order, in what the command printed (stdout and
stderr together); `...` alone skips any lines, and inside a line stands for any text. Blocks of other kinds
(```` ```sh ````) are for the reader to run elsewhere (`claude mcp add …`) and are not run.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import ROOT, with_coverage

TUTORIAL = ROOT / "docs" / "tutorial"
PAGES = sorted(TUTORIAL.glob("[0-9][0-9]-*.md"))
BLOCK = re.compile(r"^```(\w*)(?: file=(\S+))?\n(.*?)^```", flags=re.M | re.S)
MARK = "@@wfexec-tutorial-command@@"


@dataclass
class Command:
    text: str
    expected: list[str] = field(default_factory=list)


def steps_of(page: Path) -> list[tuple[str, object]]:
    """("file", (path, text)) and ("command", Command) in the page's order."""
    steps: list[tuple[str, object]] = []
    for language, path, body in BLOCK.findall(page.read_text(encoding="utf-8")):
        if path:
            steps.append(("file", (path, body)))
        elif language == "console":
            for line in body.splitlines():
                if line.startswith("$ "):
                    steps.append(("command", Command(line[2:])))
                elif steps and steps[-1][0] == "command" and line.strip():
                    steps[-1][1].expected.append(line)  # type: ignore[union-attr]
    return steps


def script_of(steps) -> str:
    """One bash script for the page: files written with here-documents, each command after a marker line."""
    lines = ["set +e", "cd \"$TUTORIAL_FOLDER\""]
    for kind, step in steps:
        if kind == "file":
            path, text = step
            lines += [f"mkdir -p \"$(dirname {shlex.quote(path)})\"",
                      f"cat > {shlex.quote(path)} <<'WFEXEC_TUTORIAL_EOF'\n{text}WFEXEC_TUTORIAL_EOF"]
        else:
            # `$?` after the marker is still the status of the page's previous command (`echo $?` shows it)
            lines += [f"status=$?; echo {MARK}; (exit $status)", f"{{ {step.text}\n}} 2>&1"]
    return "\n".join(lines) + "\n"


def shows(output: str, expected: list[str]) -> bool:
    lines = [line.rstrip() for line in output.splitlines()]
    at = 0
    for wanted in expected:
        if wanted.strip() == "...":
            continue
        pattern = re.compile(".*".join(re.escape(piece) for piece in wanted.rstrip().split("...")) + r"\Z")
        while at < len(lines) and not pattern.match(lines[at]):
            at += 1
        if at == len(lines):
            return False
        at += 1
    return True


def test_the_tutorial_has_its_seven_steps_and_each_runs_commands():
    assert [p.name[:2] for p in PAGES] == ["01", "02", "03", "04", "05", "06", "07"]
    for page in PAGES:
        assert sum(1 for kind, _ in steps_of(page) if kind == "command") >= 2, page.name
        assert page.name in (TUTORIAL / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_each_step_runs_as_the_page_says(page, tmp_path):
    steps = steps_of(page)
    commands = [step for kind, step in steps if kind == "command"]
    folder, bin_folder = tmp_path / "work", tmp_path / "bin"
    folder.mkdir()
    bin_folder.mkdir()
    launcher = bin_folder / "wfexec"
    launcher.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m wfexec \"$@\"\n", encoding="utf-8")
    launcher.chmod(0o755)
    env = with_coverage({**{k: v for k, v in os.environ.items() if not k.startswith("WFEXEC_")},
                         "PATH": f"{bin_folder}:{os.path.dirname(sys.executable)}:/usr/bin:/bin",
                         "HOME": str(tmp_path), "NO_COLOR": "1", "COLUMNS": "200", "TUTORIAL_FOLDER": str(folder),
                         "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT))})
    process = subprocess.Popen(["bash", "-c", script_of(steps)], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=300)
    finally:  # a server a step started in the background ends with the page
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    printed = output.split(MARK + "\n")[1:]
    assert len(printed) == len(commands), output
    for command, text in zip(commands, printed):
        assert "Traceback" not in text, f"$ {command.text}\n{text}"
        assert shows(text, command.expected), \
            f"{page.name}: `$ {command.text}` printed:\n{text}\nbut the page shows:\n" + "\n".join(command.expected)


def test_a_mismatch_is_caught():
    assert shows("a\nb 12 c\nd\n", ["a", "...", "b ... c"]) and not shows("a\nb\n", ["b", "a"])
    assert not shows("Hello, world!\n", ["Hello, Ada!"])
