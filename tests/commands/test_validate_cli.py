"""`wfexec validate` through the real command: exit codes, text and JSON output, --strict, paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import wfexec
from conftest import ROOT, wfexec_cli

FIXTURES = ROOT / "tests" / "workflows"
VALID = FIXTURES / "valid"
INVALID = FIXTURES / "invalid"
EXAMPLES = sorted((ROOT / "skills").glob("*/workflow.yaml"))
DIAGNOSTIC_KEYS = {"file", "line", "column", "yaml_path", "severity", "code", "message", "hint"}


def no_traceback(done):
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout, done.stderr


def test_a_valid_workflow_exits_0_and_says_valid(cli):
    done = cli("validate", VALID / "every_node" / "workflow.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""
    valid, summary, *steps = done.stderr.strip().splitlines()
    assert valid.endswith("every_node/workflow.yaml: valid")
    assert summary.endswith("every_node/workflow.yaml: 8 nodes: 5 run as code, 1 ask a person, 2 go to the LLM")
    assert steps == ["  - read_doc: markdown reference at nodes.read_doc.doc",
                     "  - agents: states node (.md states) at nodes.agents.folder"]


def test_an_invalid_workflow_exits_2_with_file_line_column_and_hint():
    done = wfexec_cli("validate", INVALID / "typo_target.yaml", cwd=ROOT)
    assert done.returncode == 2
    assert done.stdout.splitlines() == [
        "tests/workflows/invalid/typo_target.yaml:12:17: error: `on_success` names 'fnish', which is neither a "
        "node nor an ending — did you mean 'finish'?"]
    assert "1 error in 1 file" in done.stderr
    no_traceback(done)


def test_warnings_alone_exit_0_and_are_printed(cli):
    done = cli("validate", VALID / "warnings_only.yaml", cwd=ROOT)
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines == [
        "tests/workflows/valid/warnings_only.yaml:10:15: warning: header 'Please decide now' is 17 characters; "
        "Claude shows at most 12 — shorten it",
        "tests/workflows/valid/warnings_only.yaml:17:3: warning: node 'forgotten' cannot be reached from "
        "start_node 'ask' — route to it from another node, or remove it",
    ]
    assert "valid (2 warnings)" in done.stderr


def test_strict_turns_warnings_into_errors(cli):
    done = cli("validate", VALID / "warnings_only.yaml", "--strict", cwd=ROOT)
    assert done.returncode == 2
    assert [line.split(": ")[1] for line in done.stdout.splitlines()] == ["error", "error"]
    assert "2 errors in 1 file" in done.stderr
    assert ": valid" not in done.stderr


def test_strict_json_reports_warnings_as_errors(cli):
    done = cli("validate", VALID / "warnings_only.yaml", "--strict", "--format", "json")
    assert done.returncode == 2
    assert [(d["code"], d["severity"]) for d in json.loads(done.stdout)["diagnostics"]] == [
        ("prompt-header-long", "error"), ("unreachable-node", "error")]


def test_strict_on_a_clean_workflow_still_exits_0(cli):
    done = cli("validate", VALID / "every_node", "--strict")
    assert done.returncode == 0, done.stdout


def test_json_output_shape(cli):
    done = cli("validate", INVALID / "typo_target.yaml", "--format", "json", cwd=ROOT)
    assert done.returncode == 2
    diagnostics = json.loads(done.stdout)["diagnostics"]
    assert diagnostics == [{
        "file": "tests/workflows/invalid/typo_target.yaml",
        "line": 12,
        "column": 17,
        "yaml_path": "nodes.greet.on_success",
        "severity": "error",
        "code": "unknown-target",
        "message": "`on_success` names 'fnish', which is neither a node nor an ending",
        "hint": "did you mean 'finish'?",
    }]


def test_json_output_types_for_every_kind_of_problem(cli):
    done = cli("validate", *sorted(INVALID.glob("*.yaml")), VALID / "warnings_only.yaml", "--format", "json")
    assert done.returncode == 2
    diagnostics = json.loads(done.stdout)["diagnostics"]
    assert {Path(d["file"]).name for d in diagnostics} == {
        "duplicate_keys.yaml", "expression_syntax_error.yaml", "syntax_error.yaml", "typo_target.yaml",
        "warnings_only.yaml"}
    for d in diagnostics:
        assert set(d) == DIAGNOSTIC_KEYS
        assert isinstance(d["line"], int) and d["line"] >= 1
        assert isinstance(d["column"], int) and d["column"] >= 1
        assert d["severity"] in ("error", "warning")
        assert all(isinstance(d[k], str) for k in DIAGNOSTIC_KEYS - {"line", "column"})
    assert {d["code"] for d in diagnostics} >= {"duplicate-key", "expression", "yaml-syntax", "unknown-target",
                                                "prompt-header-long", "unreachable-node"}


def test_json_for_a_valid_workflow_is_an_empty_list(cli):
    done = cli("validate", VALID / "every_node", "--format", "json")
    assert done.returncode == 0
    assert json.loads(done.stdout)["diagnostics"] == []


def test_several_paths_at_once(cli):
    done = cli("validate", VALID / "every_node", INVALID / "syntax_error.yaml", VALID / "warnings_only.yaml",
               cwd=ROOT)
    assert done.returncode == 2
    out = done.stdout.splitlines()
    assert out[0].startswith("tests/workflows/invalid/syntax_error.yaml:9:9: error: YAML syntax error")
    assert [line.split(":")[0] for line in out[1:]] == ["tests/workflows/valid/warnings_only.yaml"] * 2
    assert "every_node/workflow.yaml: valid" in done.stderr
    assert "warnings_only.yaml: valid (2 warnings)" in done.stderr
    assert "1 error in 3 files" in done.stderr


def test_several_valid_paths_exit_0(cli):
    done = cli("validate", VALID / "every_node", VALID / "warnings_only.yaml")
    assert done.returncode == 0


def test_a_skill_folder_is_its_workflow_yaml(cli, tmp_path):
    skill = tmp_path / "my-skill"
    skill.mkdir()
    (skill / "workflow.yaml").write_text((INVALID / "typo_target.yaml").read_text(encoding="utf-8"),
                                         encoding="utf-8")
    done = cli("validate", "my-skill", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout.startswith("my-skill/workflow.yaml:12:17: error: `on_success` names 'fnish'")


def test_a_missing_file_is_a_diagnostic_not_a_traceback(cli, tmp_path):
    done = cli("validate", "nowhere.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout.strip() == "nowhere.yaml:1:1: error: no such file: nowhere.yaml — check the path"
    no_traceback(done)


def test_a_missing_file_in_json(cli, tmp_path):
    done = cli("validate", "nowhere.yaml", "--format", "json", cwd=tmp_path)
    assert done.returncode == 2
    [d] = json.loads(done.stdout)["diagnostics"]
    assert (d["code"], d["line"], d["column"], d["file"]) == ("file-missing", 1, 1, "nowhere.yaml")


def test_a_folder_without_a_workflow(cli, tmp_path):
    (tmp_path / "empty").mkdir()
    done = cli("validate", "empty", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout.startswith("empty/workflow.yaml:1:1: error: no such file")
    no_traceback(done)


@pytest.mark.parametrize("content", [b"\xff\xfe not utf-8", b"", b"- a list\n", b"key: [unclosed\n"])
def test_unusable_files_exit_2_without_traceback(cli, tmp_path, content):
    path = tmp_path / "workflow.yaml"
    path.write_bytes(content)
    done = cli("validate", path)
    assert done.returncode == 2
    assert done.stdout.count(": error: ") >= 1
    no_traceback(done)


def test_no_path_is_a_usage_error(cli):
    done = cli("validate")
    assert done.returncode == 2
    no_traceback(done)


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.parent.name for p in EXAMPLES])
def test_every_example_skill_validates_without_errors(example):
    diagnostics = wfexec.validate(example)
    assert [d.format() for d in diagnostics if d.severity == "error"] == []


def test_there_are_examples_to_validate():
    assert EXAMPLES, "skills/*/workflow.yaml should hold at least one example"


def test_every_example_through_the_command(cli):
    done = cli("validate", *EXAMPLES, "--format", "json")
    assert done.returncode == 0, done.stdout
    assert [d for d in json.loads(done.stdout)["diagnostics"] if d["severity"] == "error"] == []


def test_the_summary_says_how_much_runs_as_code_in_text_and_json(cli):
    prose = "tests/workflows/compat/prose_steps.yaml"
    text = cli("validate", prose, cwd=ROOT)
    assert text.stderr.splitlines()[-3:] == [
        "tests/workflows/compat/prose_steps.yaml: 3 nodes: 2 run as code, 0 ask a person, 1 go to the LLM",
        "  - read_config: prose step (compute) at nodes.read_config.actions[0].expression",
        "  - read_config: prose step (evaluate) at nodes.read_config.actions[1].expression"]
    done = cli("validate", prose, "tests/workflows/valid/warnings_only.yaml", "--format", "json", cwd=ROOT)
    files = json.loads(done.stdout)["files"]
    assert [f["file"] for f in files] == ["tests/workflows/compat/prose_steps.yaml",
                                          "tests/workflows/valid/warnings_only.yaml"]
    assert files[0]["summary"] == {
        "text": "3 nodes: 2 run as code, 0 ask a person, 1 go to the LLM", "nodes": 3, "code": 2, "person": 0,
        "llm": 1, "llm_steps": [
            {"node": "read_config", "what": "prose step (compute)",
             "yaml_path": "nodes.read_config.actions[0].expression"},
            {"node": "read_config", "what": "prose step (evaluate)",
             "yaml_path": "nodes.read_config.actions[1].expression"}]}
    assert files[1]["summary"]["text"] == "2 nodes: 1 run as code, 1 ask a person, 0 go to the LLM"


def test_the_summary_of_a_real_workflow_counts_every_node_even_with_errors(cli):
    from conftest import compat_root

    tree = compat_root() / "hiivmind-corpus" / "856e42a"
    done = cli("validate", "skills/hiivmind-corpus-add-source/workflow.yaml", "--format", "json", cwd=tree)
    [summary] = [f["summary"] for f in json.loads(done.stdout)["files"]]
    assert (summary["nodes"], summary["person"]) == (57, 22)          # 22 user_prompt nodes
    assert summary["code"] + summary["person"] + summary["llm"] == 57
    steps = {(s["node"], s["what"]) for s in summary["llm_steps"]}
    assert {("execute_pdf_split", "markdown reference"), ("research_git_source", "markdown reference"),
            ("update_navigate_examples", "markdown reference"), ("ask_pdf_split", "LLM call (invoke_pattern)"),
            ("locate_corpus", "prose step (compute)")} <= steps
