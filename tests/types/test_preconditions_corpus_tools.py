"""Corpus and tool preconditions that need more than a folder: a real upstream repository, a tool that
answers its login check, the entry gate of the hiivmind workflows."""

from __future__ import annotations

import json
import os
import stat
import subprocess

import pytest

from test_preconditions import check


def git(*args, cwd):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                   capture_output=True)


@pytest.fixture
def cloned_source(tmp_path):
    """A corpus folder whose .source/main is a clone of a local upstream repository."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git("init", "-q", "-b", "main", cwd=upstream)
    (upstream / "a.md").write_text("one\n")
    git("add", ".", cwd=upstream)
    git("commit", "-q", "-m", "one", cwd=upstream)
    corpus = tmp_path / "corpus"
    (corpus / ".source").mkdir(parents=True)
    git("clone", "-q", str(upstream), str(corpus / ".source" / "main"), cwd=tmp_path)
    return upstream, corpus


def test_source_has_updates_after_an_upstream_commit(cloned_source):
    upstream, corpus = cloned_source
    assert check({"type": "source_has_updates", "id": "main"}, corpus) is False
    (upstream / "b.md").write_text("two\n")
    git("add", ".", cwd=upstream)
    git("commit", "-q", "-m", "two", cwd=upstream)
    assert check({"type": "source_has_updates", "id": "main"}, corpus) is True
    assert check({"type": "source_check", "source_id": "main", "aspect": "has_updates"}, corpus) is True


def test_source_has_updates_is_false_when_it_cannot_tell(cloned_source, tmp_path):
    upstream, corpus = cloned_source
    assert check({"type": "source_has_updates", "id": "missing"}, corpus) is False
    (corpus / ".source" / "plain").mkdir()  # not a repository (and git must not use the one above it)
    git("init", "-q", cwd=corpus)
    assert check({"type": "source_has_updates", "id": "plain"}, corpus) is False
    upstream.rename(tmp_path / "gone")  # the fetch fails
    assert check({"type": "source_has_updates", "id": "main"}, corpus) is False


def fake_tool(folder, name, exit_code):
    """A program `name` on a PATH folder that records its arguments and exits with `exit_code`."""
    script = folder / name
    script.write_text(f"#!/bin/sh\necho \"$@\" >> {folder / (name + '.calls')}\nexit {exit_code}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


@pytest.mark.parametrize("exit_code, expected", [(0, True), (1, False)])
def test_tool_authenticated_asks_the_tool_itself(tmp_path, monkeypatch, exit_code, expected):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_tool(bin_dir, "gh", exit_code)
    fake_tool(bin_dir, "docker", exit_code)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert check({"type": "tool_authenticated", "tool": "gh"}, tmp_path) is expected
    assert check({"type": "tool_check", "tool": "gh", "capability": "authenticated"}, tmp_path) is expected
    assert (bin_dir / "gh.calls").read_text().splitlines() == ["auth status", "auth status"]
    assert check({"type": "tool_daemon_ready", "tool": "docker"}, tmp_path) is expected
    assert (bin_dir / "docker.calls").read_text().splitlines() == ["info"]


def test_a_tool_that_prints_no_version_counts_as_new_enough(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_tool(bin_dir, "quiet", 0)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert check({"type": "tool_version_gte", "tool": "quiet", "min_version": "3.1"}, tmp_path) is True


def test_the_hiivmind_entry_gate_says_to_run_init_when_there_is_no_config(tmp_path, cli):
    (tmp_path / "workflow.yaml").write_text(json.dumps({
        "name": "gate", "version": 1, "start_node": "end",
        "entry_preconditions": [{"type": "config_exists",
                                 "error_message": "No config.yaml found. Run hiivmind-corpus-init first."}],
        "nodes": {"end": {"type": "action", "actions": [{"type": "set_flag", "flag": "x"}], "on_success": "ok"}},
        "endings": {"ok": {"type": "success", "message": "ran"}}}))
    done = cli("run", ".", cwd=tmp_path)
    assert done.returncode != 0
    assert "Entry gate failed: No config.yaml found. Run hiivmind-corpus-init first." in done.stdout + done.stderr
    (tmp_path / "config.yaml").write_text("corpus: {name: x}\n")
    done = cli("run", ".", cwd=tmp_path)
    assert done.returncode == 0 and "ran" in done.stdout
