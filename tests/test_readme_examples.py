"""The README cannot drift: its shell examples that use skills/ run, and its sample output is what they print.

Each command of a fenced `sh` block that names `skills/` runs as a real `wfexec` process (no terminal, so a
question parks the run with exit 3, as the README says). Each untagged block that names an example skill is sample
output: its lines (but `...`) must appear, in order, in the output of one of those commands.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest

from conftest import ROOT, with_coverage

README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```([a-z]*)\n(.*?)^```", README, flags=re.M | re.S)
SKILLS = sorted(p.name for p in (ROOT / "skills").iterdir() if (p / "workflow.yaml").exists())


def _commands() -> list[str]:
    found = []
    for language, body in BLOCKS:
        if language != "sh":
            continue
        for part in (piece for line in body.splitlines() for piece in line.split(" && ")):
            command = part.split("  #", 1)[0].strip()
            named = re.findall(r"skills/([\w-]+)", command)
            if command.startswith("wfexec ") and named and all(name in SKILLS for name in named) \
                    and command not in found:
                found.append(command)
    return found


COMMANDS = _commands()
# Untagged blocks are sample output; one that names a skill not in skills/ shows another project's files.
SAMPLES = [body for language, body in BLOCKS
           if language == "" and all(name in SKILLS for name in re.findall(r"skills/([\w-]+)", body))]


def _run(command: str, tmp_path) -> subprocess.CompletedProcess:
    argv = shlex.split(command)
    env = with_coverage({"PATH": "/usr/bin:/bin", "WFEXEC_STORE": str(tmp_path / "runs.db"), "NO_COLOR": "1",
                         "HOME": str(tmp_path), "COLUMNS": "200"})
    return subprocess.run([sys.executable, "-m", "wfexec.cli", *argv[1:]], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def _same_ids(text: str) -> str:
    """Run ids differ from run to run; the README shows one such id."""
    return RUN_ID.sub("RUN", text)


RUN_ID = re.compile(r"\b0[0-9a-z]{14}\b")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    return {command: _run(command, tmp_path_factory.mktemp("readme")) for command in COMMANDS}


def test_the_readme_has_examples_and_samples_to_check():
    assert len(COMMANDS) >= 5 and len(SAMPLES) >= 2, (COMMANDS, SAMPLES)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_shell_example_runs_as_the_readme_says(outputs, command):
    result = outputs[command]
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode in (0, 3), (command, result.returncode, result.stdout, result.stderr)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.splitlines()[0][:40])
def test_every_sample_output_is_what_a_command_prints(outputs, sample):
    wanted = [_same_ids(line) for line in sample.splitlines() if line.strip() and line.strip() != "..."]

    def shows(text: str) -> bool:
        lines, at = _same_ids(text).splitlines(), 0
        for line in wanted:
            while at < len(lines) and lines[at].rstrip() != line.rstrip():
                at += 1
            if at == len(lines):
                return False
        return True

    assert any(shows(r.stdout + r.stderr) for r in outputs.values()), \
        "\n\n".join(f"$ {c}\n{r.stdout}{r.stderr}" for c, r in outputs.items())


def test_the_first_example_prints_what_the_readme_promises(outputs):
    assert "prints `Hello, world!`" in README
    first = next(c for c in COMMANDS if c.endswith("--answer ask_mood=cheerful"))
    assert "Hello, world!" in outputs[first].stdout
