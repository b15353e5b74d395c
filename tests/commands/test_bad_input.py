"""Input the commands read that is wrong or cannot be read: a clear line saying what is wrong with which argument
and how to fix it, exit 2, never a traceback and never a misleading result (the audit's findings 2 to 6)."""

from __future__ import annotations

import pytest

from conftest import ROOT, wfexec_cli

QUICKSTART = ROOT / "skills" / "quickstart"


def _clean_error(done, *words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


# -- runs --limit ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("run_cli", ["in_process", "subprocess"])  # typer's parsing, and the launcher's table
def test_runs_limit_past_what_sqlite_can_take_is_a_usage_error(cli, tmp_path, run_cli):
    assert cli("run", QUICKSTART, "--answer", "ask_mood=plain", cwd=tmp_path).returncode == 0  # a store to read
    command = cli if run_cli == "in_process" else wfexec_cli
    done = command("runs", "--limit", str(2 ** 63), cwd=tmp_path)
    _clean_error(done, "--limit", "1000000000")
    listed = command("runs", "--limit", "1000000000", cwd=tmp_path)
    assert listed.returncode == 0 and "quickstart" in listed.stdout, listed.stderr


# -- expand of a file that is no workflow ---------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", "# only a comment\n", "- a list\n"], ids=["empty", "comment", "list"])
def test_expand_says_what_validate_says_of_a_file_that_is_no_mapping(cli, tmp_path, text):
    (tmp_path / "e.yaml").write_text(text)
    expanded = cli("expand", "e.yaml", cwd=tmp_path)
    validated = cli("validate", "e.yaml", cwd=tmp_path)
    _clean_error(expanded, "e.yaml:1:1: error: a workflow must be a YAML mapping")
    assert validated.stdout.splitlines()[0] in expanded.stderr  # the same diagnostic, word for word
    assert expanded.stdout == ""


@pytest.mark.parametrize("text", ["{}\n", "# nothing yet\n{}\n"], ids=["empty-mapping", "after-a-comment"])
def test_expand_refuses_an_empty_mapping_as_validate_does(tmp_path, text):
    """`{}` once came back as `{}`, exit 0: no workflow, and no fragment of nodes either."""
    (tmp_path / "e.yaml").write_text(text)
    expanded = wfexec_cli("expand", "e.yaml", cwd=tmp_path)
    validated = wfexec_cli("validate", "e.yaml", cwd=tmp_path)
    _clean_error(expanded, "e.yaml:", "error: workflow is missing required field 'name'")
    assert validated.returncode == expanded.returncode == 2
    said = [line for line in validated.stdout.splitlines() if ": error: " in line]
    assert said and expanded.stderr.splitlines() == said  # the same diagnostics, word for word
    assert expanded.stdout == ""


# -- graph of a folder with no workflow -----------------------------------------------------------------------

@pytest.mark.parametrize("files", [[], ["notes.txt"]], ids=["empty", "no-state-files"])
def test_graph_of_a_folder_without_a_workflow_says_so_as_validate_does(cli, tmp_path, files):
    folder = tmp_path / "ed"
    folder.mkdir()
    for name in files:
        (folder / name).write_text("hi\n")
    drawn = cli("graph", folder, cwd=tmp_path)
    _clean_error(drawn, "ed/workflow.yaml:1:1: error: no such file: ed/workflow.yaml")
    assert "flowchart" not in drawn.stdout
    for command in ("validate", "plan", "expand"):
        said = cli(command, folder, cwd=tmp_path)
        assert said.returncode == 2 and "no such file: ed/workflow.yaml" in said.stdout + said.stderr


def test_graph_still_draws_a_states_folder(cli, tmp_path):
    folder = tmp_path / "st"
    folder.mkdir()
    (folder / "START.md").write_text("Say hi, then <goto>END.md</goto>\n")
    (folder / "END.md").write_text("Done. <result>ok</result>\n")
    drawn = cli("graph", folder, cwd=tmp_path)
    assert drawn.returncode == 0 and "START.md" in drawn.stdout, drawn.stderr


# -- messages that name what is wrong with the argument given -------------------------------------------------

def test_answers_given_a_folder_says_it_is_a_folder(cli, tmp_path):
    folder = tmp_path / "answers"
    folder.mkdir()
    done = cli("run", QUICKSTART, "--ephemeral", "--answers", folder, cwd=tmp_path)
    _clean_error(done, f"the answers file {folder} is a folder, not a file — give the YAML file that maps node ids "
                       "to answers")
    assert "workflow.yaml" not in done.stderr
    (folder / "answers.yaml").write_text("ask_mood: plain\n")
    done = cli("run", QUICKSTART, "--ephemeral", "--answers", folder, cwd=tmp_path)
    _clean_error(done, f"such as {folder / 'answers.yaml'}")
    assert cli("run", QUICKSTART, "--ephemeral", "--answers", folder / "answers.yaml", cwd=tmp_path).returncode == 0


def test_input_file_given_a_folder_says_it_is_a_folder(cli, tmp_path):
    done = cli("run", QUICKSTART, "--ephemeral", "--answer", "ask_mood=plain", "--input-file", tmp_path,
               cwd=tmp_path)
    _clean_error(done, f"the input file {tmp_path} is a folder, not a file — give --input-file the YAML or JSON file")
    assert "workflow.yaml" not in done.stderr


def test_skill_given_a_file_that_is_no_workflow_yaml_names_that_file(cli, tmp_path):
    (tmp_path / "bin.yaml").write_bytes(b"\x7fELF\x02\x01\x01\x00")
    done = cli("skill", "bin.yaml", cwd=tmp_path)
    _clean_error(done, "error: bin.yaml is not a skill's workflow.yaml — give a skill folder that holds workflow.yaml")
    assert ". has no" not in done.stderr
    missing = cli("skill", "nowhere.yaml", cwd=tmp_path)
    _clean_error(missing, "error: no such file or folder: nowhere.yaml")
    empty = tmp_path / "empty"
    empty.mkdir()
    _clean_error(cli("skill", empty, cwd=tmp_path), f"error: {empty} has no workflow.yaml")
    assert not (tmp_path / "SKILL.md").exists()
