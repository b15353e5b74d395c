"""The README and the guide cannot drift: their shell examples that use skills/ run, and their sample output is
what they print.

Each command of a fenced `sh` block (in README.md or a page of docs/guide/) that names `skills/` runs as a real
`wfexec` process (no terminal, so a question parks the run with exit 3, as the guide says). Each untagged block that
names an example skill is sample output: its lines (but `...`) must appear, in order, in the output of one of those
commands. The README's own example workflow runs from a fresh folder and prints what the README shows.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest

from conftest import ROOT, with_coverage

README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]
SKILLS = sorted(p.name for p in (ROOT / "skills").iterdir() if (p / "workflow.yaml").exists())


def _name(page) -> str:
    return page.relative_to(ROOT).as_posix()


def _blocks(text: str) -> list[tuple[str, str]]:
    return re.findall(r"^```([a-z]*)\n(.*?)^```", text, flags=re.M | re.S)


BLOCKS = {_name(page): _blocks(page.read_text(encoding="utf-8")) for page in PAGES}


def _commands() -> list[tuple[str, str]]:
    """(page, command) for each command naming skills/, each command once (on the first page showing it)."""
    found: list[tuple[str, str]] = []
    for page, blocks in BLOCKS.items():
        for language, body in blocks:
            if language != "sh":
                continue
            for part in (piece for line in body.splitlines() for piece in line.split(" && ")):
                command = part.split("  #", 1)[0].strip()
                named = re.findall(r"skills/([\w-]+)", command)
                if command.startswith("wfexec ") and named and all(name in SKILLS for name in named) \
                        and command not in (c for _, c in found):
                    found.append((page, command))
    return found


COMMANDS = _commands()
# Untagged blocks are sample output; one that names a skill not in skills/ shows another project's files.
SAMPLES = [(page, body) for page, blocks in BLOCKS.items() for language, body in blocks
           if language == "" and all(name in SKILLS for name in re.findall(r"skills/([\w-]+)", body))]


def _run(command: str, tmp_path) -> subprocess.CompletedProcess:
    argv = shlex.split(command)
    env = with_coverage({"PATH": "/usr/bin:/bin", "WFEXEC_STORE": str(tmp_path / "runs.db"), "NO_COLOR": "1",
                         "HOME": str(tmp_path), "COLUMNS": "200"})
    return subprocess.run([sys.executable, "-m", "wfexec", *argv[1:]], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def _same_ids(text: str) -> str:
    """Run ids differ from run to run; a page shows one such id."""
    return RUN_ID.sub("RUN", text)


RUN_ID = re.compile(r"\b0[0-9a-z]{14}\b")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    return {command: _run(command, tmp_path_factory.mktemp("readme")) for _, command in COMMANDS}


def test_the_readme_and_the_guide_have_examples_and_samples_to_check():
    assert len(COMMANDS) >= 5 and len(SAMPLES) >= 2, (COMMANDS, SAMPLES)
    assert {page for page, _ in COMMANDS} >= {"README.md", "docs/guide/using.md"}, COMMANDS


@pytest.mark.parametrize("page,command", COMMANDS, ids=[f"{page}: {command}" for page, command in COMMANDS])
def test_every_shell_example_runs_as_the_page_says(outputs, page, command):
    result = outputs[command]
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode in (0, 3), (command, result.returncode, result.stdout, result.stderr)


@pytest.mark.parametrize("page,sample", SAMPLES,
                         ids=[f"{page}: {sample.splitlines()[0][:40]}" for page, sample in SAMPLES])
def test_every_sample_output_is_what_a_command_prints(outputs, page, sample):
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
    first = next(c for page, c in COMMANDS if page == "README.md" and c.endswith("--answer ask_mood=cheerful"))
    assert "Hello, world!" in outputs[first].stdout
    assert README.startswith("# wfexec\n\n```sh\npython3 -m venv .venv") and first in README.split("\n```", 2)[1]


def test_the_readme_example_workflow_prints_what_the_readme_shows(tmp_path):
    example = README.split("## An example", 1)[1]
    workflow, command, printed = (body for _, body in _blocks(example)[:3])
    (tmp_path / "workflow.yaml").write_text(workflow, encoding="utf-8")
    assert command.startswith("wfexec run workflow.yaml "), command
    done = subprocess.run([sys.executable, "-m", "wfexec", *shlex.split(command)[1:]], cwd=tmp_path,
                          env=with_coverage({"PATH": "/usr/bin:/bin", "WFEXEC_STORE": str(tmp_path / "runs.db"),
                                             "NO_COLOR": "1", "HOME": str(tmp_path)}),
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert (done.returncode, done.stdout, done.stderr) == (0, printed, ""), command
