"""The example skills under skills/: each validates cleanly and runs for real through the `wfexec` command.

release-checklist runs against real git repositories made in tmp_path; triage runs its sub-workflow; the
command blocks of skills/README.md are run as written, so the documentation cannot drift from the skills.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

SKILLS = ROOT / "skills"
SKILL_WORKFLOWS = sorted(SKILLS.glob("*/workflow.yaml"))
SKILL_IDS = [path.parent.name for path in SKILL_WORKFLOWS]
SCHEMA_LINE = "# yaml-language-server: $schema=../../schemas/workflow.schema.json"
V8_SCHEMA_LINE = "# yaml-language-server: $schema=../../schemas/workflow-v8.schema.json"  # a skill written in v8

# Identities for the commits the tests make, and no user or system git config
# (a global tag.gpgSign or hook would change what `git tag` does).
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Release Tester", "GIT_AUTHOR_EMAIL": "tester@example.com",
    "GIT_COMMITTER_NAME": "Release Tester", "GIT_COMMITTER_EMAIL": "tester@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}


def run_json(cli, *args, cwd=ROOT, env=None) -> tuple[int, dict]:
    """Run `wfexec run ... --format json` and return (exit code, the JSON result)."""
    done = cli("run", *args, "--format", "json", cwd=cwd, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    try:
        return done.returncode, json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"no JSON result (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")


# -- every skill ---------------------------------------------------------------

def test_the_skills_folder_has_the_examples():
    assert {"quickstart", "release-checklist", "triage"} <= set(SKILL_IDS)


@pytest.mark.parametrize("workflow", SKILL_WORKFLOWS, ids=SKILL_IDS)
def test_skill_validates_with_no_warnings(cli, workflow):
    done = cli("validate", "--strict", "--format", "json", workflow, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["diagnostics"] == []  # sub-workflows' diagnostics are reported here too


@pytest.mark.parametrize("workflow", SKILL_WORKFLOWS, ids=SKILL_IDS)
def test_skill_follows_the_house_conventions(workflow):
    import wfexec
    from wfexec.language.loader import load_file
    from wfexec.language.v8 import is_v8

    text = workflow.read_text(encoding="utf-8")
    assert text.splitlines()[0] == (V8_SCHEMA_LINE if is_v8(load_file(workflow).data) else SCHEMA_LINE)
    loaded = wfexec.load(workflow)
    assert loaded.name == workflow.parent.name
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", (loaded.description or "").strip()) if s]
    assert 1 <= len(sentences) <= 3, loaded.description


@pytest.mark.parametrize("workflow", SKILL_WORKFLOWS, ids=SKILL_IDS)
def test_skill_is_listed_in_the_skills_readme_with_a_command(workflow):
    readme = (SKILLS / "README.md").read_text(encoding="utf-8")
    name = workflow.parent.name
    assert f"[{name}]({name}/)" in readme, f"add {name} to the table of skills/README.md"
    assert re.search(rf"wfexec run \S*skills/{re.escape(name)}\b", readme), f"give the command that runs {name}"


def readme_blocks() -> list[tuple[str, str]]:
    """(section heading, sh block) for every ```sh block of skills/README.md."""
    readme = (SKILLS / "README.md").read_text(encoding="utf-8")
    blocks = []
    heading = ""
    for part in re.split(r"(^## .*$)", readme, flags=re.M):
        if part.startswith("## "):
            heading = part[3:].strip()
            continue
        blocks += [(heading, block) for block in re.findall(r"^```sh\n(.*?)^```", part, flags=re.S | re.M)]
    return blocks


@pytest.mark.parametrize("heading,block", readme_blocks(), ids=[h for h, _ in readme_blocks()])
def test_the_skills_readme_commands_run_as_written(tmp_path, heading, block):
    env = dict(os.environ, **GIT_ENV)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["TMPDIR"] = str(tmp_path)  # mktemp -d lands here
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, f"[{heading}]\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr


# -- quickstart ----------------------------------------------------------------

def test_quickstart_runs_with_the_answer_from_the_readme(cli):
    line = re.search(r"wfexec run skills/quickstart ([^\n&|;]*)", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert line, "README.md should show how to run skills/quickstart"
    code, result = run_json(cli, "skills/quickstart", *shlex.split(line.group(1)))
    assert code == 0
    assert (result["ending"], result["message"]) == ("done", "Hello, world!")
    assert result["summary"] == {"letters": 5}


def test_quickstart_plain_answer_takes_the_other_branch(cli):
    code, result = run_json(cli, "skills/quickstart", "--answer", "ask_mood=plain", "--input", "name=Ada")
    assert (code, result["message"]) == (0, "Hello, Ada")


# -- release-checklist -----------------------------------------------------------

RELEASE = SKILLS / "release-checklist"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, env=dict(os.environ, **GIT_ENV), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def commit(repo: Path, files: dict, message: str) -> str:
    for name, text in files.items():
        (repo / name).write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path) -> Path:
    """A real repository with two commits; CHANGELOG.md mentions 1.2.0."""
    path = tmp_path / "project"
    path.mkdir()
    git(path, "init", "-q")
    commit(path, {"README.md": "# project\n"}, "Start the project")
    commit(path, {"CHANGELOG.md": "# Changelog\n\n## 1.2.0\n- Faster export\n"}, "Prepare 1.2.0")
    return path


def release(cli, repo: Path, *answers: str, version: str = "1.2.0") -> tuple[int, dict]:
    args = [RELEASE, "--input", f"repo={repo}", "--input", f"version={version}"]
    for answer in answers:
        args += ["--answer", f"confirm={answer}"]
    return run_json(cli, *args, cwd=repo.parent, env=GIT_ENV)


def test_release_tags_head_and_writes_the_notes(cli, repo):
    head = git(repo, "rev-parse", "HEAD")
    code, result = release(cli, repo, "tag")
    assert code == 0, result["message"]
    assert result["ending"] == "done"
    assert git(repo, "tag", "--list") == "v1.2.0"
    assert git(repo, "rev-parse", "v1.2.0^{commit}") == head
    notes = (repo / "release-notes" / "v1.2.0.md").read_text(encoding="utf-8")
    assert notes.startswith("# v1.2.0 (")
    assert f"Commit: {head}" in notes
    assert "Prepare 1.2.0" in notes and "Start the project" in notes
    # The summary comes back from the summarize.yaml sub-workflow through store_as.
    assert result["state"]["computed"]["summary"] == {
        "headline": f"Tagged v1.2.0 at {head[:7]} (2 commits)",
        "next_step": f"commit {repo}/release-notes/v1.2.0.md, then publish with: git push origin v1.2.0",
        "commit_count": 2}
    assert result["message"] == f"Tagged v1.2.0 at {head[:7]} (2 commits)"
    assert result["output"] == {"version": "1.2.0", "sha": head, "tagged": True,
                                "notes_path": f"{repo}/release-notes/v1.2.0.md"}


def test_release_notes_only_creates_no_tag(cli, repo):
    code, result = release(cli, repo, "notes_only")
    assert (code, result["ending"]) == (0, "done")
    assert git(repo, "tag", "--list") == ""
    assert (repo / "release-notes" / "v1.2.0.md").is_file()
    assert result["message"] == "Release notes for v1.2.0 written; no tag created"
    assert "then tag with: git tag v1.2.0" in result["summary"]["next step"]


def test_release_free_text_answer_becomes_a_highlight_and_tags(cli, repo):
    code, result = release(cli, repo, "Export is twice as fast")
    assert (code, result["ending"]) == (0, "done")
    assert git(repo, "tag", "--list") == "v1.2.0"
    notes = (repo / "release-notes" / "v1.2.0.md").read_text(encoding="utf-8")
    assert "\nExport is twice as fast\n" in notes


def test_release_notes_list_only_the_commits_since_the_previous_tag(cli, repo):
    assert release(cli, repo, "tag")[0] == 0
    commit(repo, {"CHANGELOG.md": "# Changelog\n\n## 1.3.0\n- Colours\n\n## 1.2.0\n- Faster export\n"},
           "Add colours")  # also commits release-notes/v1.2.0.md, as a user would
    code, result = release(cli, repo, "tag", version="1.3.0")
    assert code == 0, result["message"]
    assert git(repo, "tag", "--list").split() == ["v1.2.0", "v1.3.0"]
    notes = (repo / "release-notes" / "v1.3.0.md").read_text(encoding="utf-8")
    assert "Add colours" in notes
    assert "Prepare 1.2.0" not in notes
    assert result["summary"]["commits"] == 1
    assert "(1 commit)" in result["message"]


def test_release_of_a_dirty_tree_fails_at_the_gate(cli, repo):
    (repo / "README.md").write_text("# project\nunsaved work\n", encoding="utf-8")
    code, result = release(cli, repo, "tag")
    assert code == 1
    assert (result["ending"], result["type"]) == ("not_ready", "failure")
    assert result["state"]["computed"]["validation_errors"] == [
        "the working tree has uncommitted changes: M README.md"]
    assert result["message"] == ("Not ready to release v1.2.0: the working tree has uncommitted changes: "
                                 "M README.md")
    assert git(repo, "tag", "--list") == ""
    assert not (repo / "release-notes").exists()


def test_release_gate_reports_every_problem_at_once(cli, repo):
    git(repo, "tag", "v3.1")
    code, result = release(cli, repo, "tag", version="3.1")
    assert (code, result["ending"]) == (1, "not_ready")
    assert result["state"]["computed"]["validation_errors"] == [
        "'3.1' is not a semantic version such as 1.2.0",
        "CHANGELOG.md does not mention 3.1",
        "the tag v3.1 already exists"]
    assert result["summary"] == {"problems": 3}


@pytest.mark.parametrize("version", ["1.2.x", "1..2", "1.2.0.0", "v1.2.0", "-1.2.0"])
def test_release_refuses_versions_that_are_not_semantic(cli, repo, version):
    code, result = release(cli, repo, "tag", version=version)
    assert code == 1
    assert f"'{version}' is not a semantic version such as 1.2.0" in result["state"]["computed"]["validation_errors"]


def test_release_cancel_changes_nothing(cli, repo):
    code, result = release(cli, repo, "cancel")
    assert code == 1
    assert (result["ending"], result["type"]) == ("cancelled", "cancelled")
    assert result["message"] == "Release of v1.2.0 cancelled; nothing was written."
    assert git(repo, "tag", "--list") == ""
    assert not (repo / "release-notes").exists()


def test_release_of_a_folder_that_is_not_a_repository(cli, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    code, result = release(cli, plain, "tag")
    assert (code, result["ending"]) == (1, "not_a_repo")
    assert result["message"] == f"'{plain}' is not a git repository (no .git in it)"


def test_release_of_a_repository_outside_the_working_directory_writes_and_tags_nothing(cli, repo, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, result = run_json(cli, RELEASE, "--input", f"repo={repo}", "--input", "version=1.2.0",
                            "--answer", "confirm=tag", cwd=elsewhere, env=GIT_ENV)
    assert (code, result["ending"]) == (1, "failed")
    assert "outside the working directory" in result["message"]
    assert "run it from the repository's folder" in result["recovery"]
    assert git(repo, "tag", "--list") == ""  # the notes are written before the tag, so nothing half-done
    assert not (repo / "release-notes").exists()


def test_release_text_output_shows_the_gate_messages(cli, repo):
    (repo / "stray.txt").write_text("x\n", encoding="utf-8")
    done = cli("run", RELEASE, "--input", f"repo={repo}", "--input", "version=1.2.0", cwd=repo.parent, env=GIT_ENV)
    assert done.returncode == 1
    assert "uncommitted changes: ?? stray.txt" in done.stdout
    assert "Fix the problems listed above" in done.stdout


def test_release_without_an_answer_waits_at_the_confirmation(cli, repo):
    done = cli("run", RELEASE, "--input", f"repo={repo}", "--input", "version=1.2.0", "--non-interactive",
               cwd=repo.parent, env=GIT_ENV)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "confirm" in done.stdout + done.stderr
    assert git(repo, "tag", "--list") == ""


# -- triage --------------------------------------------------------------------

def triage(cli, request: str) -> tuple[int, dict]:
    return run_json(cli, "skills/triage", "--input", f"request={request}")


def test_triage_sends_a_bug_through_the_sub_workflow(cli):
    code, result = triage(cli, "The export crashes with a traceback when the file is empty. It worked in 1.1.")
    assert (code, result["ending"]) == (0, "bug")
    ticket = {"title": "The export crashes with a traceback when the file is empty",
              "severity": "major", "labels": ["bug", "severity:major"],
              "next_step": "ask the reporter for steps to reproduce, then queue it for the next triage meeting"}
    assert result["output"] == {"kind": "bug", "ticket": ticket}
    assert result["state"]["computed"]["ticket"] == ticket          # store_as
    assert result["state"]["computed"]["severity"] == "major"        # output_mapping
    assert result["message"] == "Bug [major]: The export crashes with a traceback when the file is empty"
    step = next(h for h in result["state"]["history"] if h["node"] == "file_bug")
    assert step["outcome"] == {"success": True, "ending": "drafted"}


def test_triage_pages_on_call_for_a_critical_bug(cli):
    code, result = triage(cli, "Production outage: the export crashes and corrupts the database")
    assert (code, result["ending"]) == (0, "bug")
    assert result["state"]["computed"]["severity"] == "critical"
    assert result["output"]["ticket"]["labels"] == ["bug", "severity:critical", "on-call"]
    assert result["summary"]["next step"] == "page the on-call maintainer now"


@pytest.mark.parametrize("request_text,ending,kind", [
    ("It would be nice to have support for YAML output", "feature_request", "feature"),
    ("How do I change the cache directory?", "question", "question"),
    ("This is not a bug, but how do I turn off colours?", "question", "question"),
])
def test_triage_routes_other_requests_straight_to_an_ending(cli, request_text, ending, kind):
    code, result = triage(cli, request_text)
    assert (code, result["ending"], result["output"]) == (0, ending, {"kind": kind})
    assert result["state"]["computed"]["route"] == ending  # the winning rule's action is the target
    assert "ticket" not in result["state"]["computed"]     # the sub-workflow did not run


def test_triage_without_a_clear_winner_says_so(cli):
    code, result = triage(cli, "hello there")
    assert (code, result["ending"], result["type"]) == (1, "unclear", "failure")
    assert result["message"] == "Could not tell what this request is (candidates: question, feature, bug)."
    assert result["summary"] == {"flags": "asks=U broken=U wants_new=U"}


def test_triage_needs_a_request(cli):
    done = cli("run", "skills/triage", cwd=ROOT)
    assert done.returncode == 2
    assert "missing required input 'request'" in done.stderr + done.stdout


# -- project-setup (a blueprint-lib v8 workflow) ---------------------------------------------------------

PROJECT_SETUP = str(ROOT / "skills" / "project-setup")


def setup_project(cli, folder, *answers) -> tuple[int, dict]:
    return run_json(cli, PROJECT_SETUP, "--ephemeral", "--input", "name=demo",
                    *[a for answer in answers for a in ("--answer", answer)], cwd=folder)


def test_project_setup_writes_each_file_and_the_project_passes_its_own_test(cli, tmp_path):
    code, result = setup_project(cli, tmp_path, "pick_layout=src", "confirm_write__ask=yes")
    assert (code, result["ending"]) == (0, "created")
    assert result["summary"]["files"] == ["pyproject.toml", "src/demo/__init__.py", "tests/test_demo.py"]
    # the goal_seek ran each goal's node once, in order, and checked every goal after each
    visited = [h["node"] for h in result["state"]["history"]]
    assert [n for n in visited if n.startswith("write_")] == ["write_pyproject", "write_package", "write_test"]
    assert visited.count("build__check_pyproject") == 3 and visited[-2:] == ["build__complete_check",
                                                                             "report__case_0"]
    tested = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_project_setup_writes_only_what_is_missing(cli, tmp_path):
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "__init__.py").write_text("__version__ = '0.1.0'\n")
    code, result = setup_project(cli, tmp_path, "pick_layout=flat", "confirm_write__ask=yes")
    assert (code, result["ending"]) == (0, "completed")
    assert result["message"] == "demo: wrote 2 missing file(s): pyproject.toml, tests/test_demo.py"
    assert (tmp_path / "demo" / "__init__.py").read_text() == "__version__ = '0.1.0'\n"  # left as it was
    assert 'pythonpath = ["."]' in (tmp_path / "pyproject.toml").read_text()


def test_project_setup_declined_or_already_set_up_writes_nothing(cli, tmp_path):
    code, result = setup_project(cli, tmp_path, "pick_layout=src", "confirm_write__ask=no")
    assert (code, result["ending"], result["type"]) == (1, "declined", "cancelled")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'other'\n")
    code, result = setup_project(cli, tmp_path)  # no question is asked
    assert (code, result["ending"]) == (0, "already_set_up")
    assert (tmp_path / "pyproject.toml").read_text() == "[project]\nname = 'other'\n"
