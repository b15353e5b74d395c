"""`--dry-run` changes nothing outside the run: the working tree stays byte-identical and no step starts a process.

Every example skill runs dry in a real subprocess whose PATH holds only logging stand-ins for the programs a step
could start (git, bash, touch...): the log must stay empty. State-only steps, conditions and questions run; a step
with effects prints "would ..." and leaves a placeholder; a condition that needs a placeholder's value stops (4).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, one_action, with_coverage

PROGRAMS = ("git", "bash", "sh", "touch", "python3", "python", "node", "cat", "ls", "env", "rm", "mkdir", "curl",
            "date", "echo", "claude")


def _tree(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.stat().st_mode, hashlib.sha256(p.read_bytes()).hexdigest()
                                       if p.is_file() and not p.is_symlink() else None)
            for p in sorted(root.rglob("*"))}


@pytest.fixture
def logging_path(tmp_path):
    """A PATH of stand-ins that record being started (in a log outside the tree) and do nothing else."""
    fake = tmp_path / "fakebin"
    fake.mkdir()
    log = tmp_path / "started.log"
    for name in PROGRAMS:
        (fake / name).write_text(f"#!/bin/sh\necho \"{name} $*\" >> {log}\n")
        (fake / name).chmod(0o755)
    return fake, log


def _dry(args, cwd, fake, store):
    env = with_coverage({"PATH": str(fake), "HOME": str(cwd.parent), "WFEXEC_STORE": str(store), "NO_COLOR": "1"})
    return subprocess.run([sys.executable, "-m", "wfexec", "run", *args, "--dry-run"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("skill,args", [
    ("quickstart", ["--answer", "ask_mood=cheerful"]),
    ("triage", ["--input", "request=Production outage: the export crashes and corrupts the database"]),
    ("triage", ["--input", "request=How do I change the cache directory?"]),
    ("release-checklist", ["--input", "repo=demo", "--input", "version=1.2.0", "--answer", "confirm=tag"]),
])
def test_every_example_skill_runs_dry_without_changing_a_byte_or_starting_a_process(tmp_path, logging_path, skill,
                                                                                  args):
    fake, log = logging_path
    work = tmp_path / "work"
    shutil.copytree(ROOT / "skills", work / "skills")
    (work / "demo" / ".git").mkdir(parents=True)  # enough for the checklist's "is it a repository" check
    (work / "demo" / "CHANGELOG.md").write_text("## 1.2.0\n- fixed\n")
    before = _tree(work)
    result = _dry([f"skills/{skill}", *args], work, fake, tmp_path / "store" / "runs.db")
    assert result.returncode in (0, 4), result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert _tree(work) == before
    assert not log.exists(), log.read_text()
    assert not (tmp_path / "store").exists()  # a dry run records no run either
    if skill == "release-checklist":
        assert "would run git status --porcelain (in demo)" in result.stdout
        assert "would run git tag --list v1.2.0 (in demo)" in result.stdout
        assert result.returncode == 4 and "dry run stops here" in result.stderr
        assert "needs the real value of computed.status" in result.stderr and "node 'ready'" in result.stderr


def test_a_step_with_effects_says_what_it_would_do_and_stores_a_placeholder(tmp_path, logging_path):
    fake, log = logging_path
    doc = json.loads(one_action(
        {"type": "write_file", "path": "release/NOTES.md", "content": "notes"},
        {"type": "run_command", "command": ["git", "tag", "v${input.version}"], "store_as": "computed.tagged"},
        {"type": "set_state", "field": "computed.copy", "value": "${computed.tagged}"},
        {"type": "delete_file", "path": "old.txt"}))
    doc["endings"]["done"]["message"] = "tagged: ${computed.copy}"
    (tmp_path / "workflow.yaml").write_text(json.dumps(doc))
    (tmp_path / "old.txt").write_text("keep me")
    result = _dry(["workflow.yaml", "--input", "version=1.2"], tmp_path, fake, tmp_path / "store" / "runs.db")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert "would write release/NOTES.md" in lines
    assert "would run git tag v1.2" in lines
    assert "would delete old.txt" in lines
    assert "tagged: <dry-run: computed.copy>" in result.stdout  # a copy of a placeholder is one too
    assert not (tmp_path / "release").exists() and (tmp_path / "old.txt").read_text() == "keep me"
    assert not log.exists()


def test_a_condition_on_a_placeholder_stops_the_dry_run_with_exit_4(tmp_path, logging_path):
    fake, log = logging_path
    doc = {"name": "x", "version": "1.0", "start_node": "get",
           "nodes": {"get": {"type": "action", "on_success": "check", "on_failure": "failed", "actions": [
               {"type": "run_command", "command": ["cat", "VERSION"], "store_as": "computed.version"}]},
               "check": {"type": "conditional", "branches": {"true": "done", "false": "failed"},
                         "condition": {"type": "evaluate_expression",
                                       "expression": "computed.version.stdout.trim() === '1.2'"}}},
           "endings": {"done": {"type": "success", "message": "ok"}, "failed": {"type": "failure", "message": "no"}}}
    (tmp_path / "workflow.yaml").write_text(json.dumps(doc))
    result = _dry(["workflow.yaml"], tmp_path, fake, tmp_path / "store" / "runs.db")
    assert result.returncode == 4, result.stdout + result.stderr
    assert "would run cat VERSION" in result.stdout
    assert "node 'check'" in result.stderr and "needs the real value of computed.version" in result.stderr
    assert not log.exists()


def test_a_recorded_run_cannot_continue_dry(tmp_path):
    """Placeholders must never land in a recorded run's state or journal."""
    from conftest import wfexec_cli

    result = wfexec_cli("resume", "0mwt6297ui2n", "--dry-run", cwd=tmp_path)
    assert result.returncode == 2 and "cannot continue dry" in result.stderr.replace("\n", " ").replace("│", "")
    assert list(tmp_path.iterdir()) == []
