"""`wfexec plan` lists what a run may do outside its state, and runs nothing to find out."""

from __future__ import annotations

import json
import shutil

from conftest import ROOT, wfexec_cli, wfexec_in_process


def test_plan_of_the_release_checklist_names_every_command_file_and_question_as_written(tmp_path):
    skill = tmp_path / "release-checklist"
    shutil.copytree(ROOT / "skills" / "release-checklist", skill)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    result = wfexec_cli("plan", skill, cwd=tmp_path, env={"PATH": "/nonexistent"}, timeout=60)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "tool_available git   [files]" in text
    assert "run git tag 'v${input.version}' '${computed.sha}' (in ${input.repo})   [process]" in text
    assert "write ${computed.notes_path}   [files]" in text
    assert "ask Release v${input.version}" in text and "[question]" in text
    assert text.index("inspect (action)") < text.index("confirm (user_prompt)") < text.index("tag (action)")
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # no store, no file: nothing ran


def test_plan_as_json_lists_nodes_with_their_effects(tmp_path):
    result = wfexec_cli("plan", ROOT / "skills" / "release-checklist", "--format", "json", cwd=tmp_path, timeout=60)
    manifest = json.loads(result.stdout)
    assert manifest["workflow"] == "release-checklist"
    assert {"files", "git", "process"} <= set(manifest["effects"])
    by_node = {n["node"]: n for n in manifest["nodes"]}
    assert {"effect": "files", "type": "write_file", "does": "write ${computed.notes_path}"} \
        in by_node["write_notes"]["effects"]
    assert not (tmp_path / ".wfexec").exists()


def test_plan_of_a_workflow_that_only_changes_state_says_so(tmp_path):
    result = wfexec_cli("plan", ROOT / "skills" / "triage", cwd=tmp_path, timeout=60)
    assert result.returncode == 0 and "nothing: every step only reads and writes the run's state" in result.stdout


def test_plan_of_an_invalid_workflow_exits_2_with_positions(tmp_path):
    (tmp_path / "workflow.yaml").write_text("name: x\nstart_node: nowhere\nnodes: {}\n")
    result = wfexec_cli("plan", "workflow.yaml", cwd=tmp_path, timeout=60)
    assert result.returncode == 2 and "workflow.yaml:" in result.stderr


def test_plan_of_every_real_hiivmind_workflow_that_validates(tmp_path):
    from conftest import compat_root

    planned = 0
    # In this process: the sweep is about what `plan` makes of each file (an exception it did not handle is raised
    # here); the command as a process is the tests above.
    for path in sorted(compat_root().rglob("workflow.yaml"))[:60]:
        result = wfexec_in_process("plan", path, "--format", "json", cwd=tmp_path)
        assert result.returncode in (0, 2) and "Traceback" not in result.stderr, (path, result.stderr)
        if result.returncode == 0:
            manifest = json.loads(result.stdout)
            assert all(item["does"] and "\n" not in item["does"] for node in manifest["nodes"]
                       for item in node["effects"])
            planned += 1
    assert planned >= 1
    assert not (tmp_path / ".wfexec").exists()
