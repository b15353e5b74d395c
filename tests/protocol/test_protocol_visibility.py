"""Seeing a states run (issue 14, point 7): `wfexec graph` draws a states folder, `wfexec show RUN --agent NAME`
prints what each state of an agent sent and got (Raymond's debug files), and a folder with Raymond's own
`workflow.yaml` manifest runs as states, with a warning for a backend wfexec does not have."""

from __future__ import annotations

import json

from conftest import wfexec_in_process as cli
from protocol_support import write_states


def test_graph_draws_a_states_folder(tmp_path):
    write_states(tmp_path / "flow", {
        "START.sh": "echo '<call return=\"AFTER\">WORK</call>'\n",
        "WORK.md": "---\nallowed_transitions:\n  - {tag: result}\n  - {tag: ask, next: WORK}\n---\nDo it.\n",
        "AFTER.sh": "echo '<fork-workflow next=\"AFTER\">../other/</fork-workflow>'\n",
        "LOST.md": "<result>never</result>\n",
    })
    drawn = cli("graph", "flow", cwd=tmp_path)
    assert drawn.returncode == 0, drawn.stderr
    text = drawn.stdout
    assert '_start --> n_START_sh' in text and 'n_START_sh[["START.sh"]]' in text and 'n_WORK_md["WORK.md"]' in text
    for edge in ('n_START_sh -->|"call"| n_WORK_md', 'n_START_sh -->|"return"| n_AFTER_sh',
                 'n_WORK_md -->|"result"| result', 'n_WORK_md -->|"ask"| n_WORK_md',
                 'n_AFTER_sh -->|"fork-workflow"|'):
        assert edge in text, edge
    assert '"LOST.md (unreachable)"' in text
    dot = cli("graph", "flow", "--format", "dot", cwd=tmp_path).stdout
    assert dot.startswith('digraph "flow" {') and '"START.sh" -> "WORK.md" [label="call"];' in dot


def test_show_agent_prints_what_each_state_sent_and_got(tmp_path):
    program = tmp_path / "llm.sh"
    program.write_text("#!/bin/bash\ncat > /dev/null\necho '<result>reviewed</result>'\n")
    program.chmod(0o755)
    write_states(tmp_path / "flow", {"START.sh": "echo working >&2; echo '<goto>REVIEW</goto>'\n",
                                     "REVIEW.md": "Review the work of {{agent_id}}."})
    ran = cli("states", "flow", "--backend", f"command:{program}", cwd=tmp_path)
    assert (ran.returncode, ran.stdout) == (0, "reviewed\n"), ran.stderr
    [record] = json.loads(cli("runs", "--format", "json", cwd=tmp_path).stdout)
    shown = cli("show", record["id"], "--agent", "main", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"run {record['id']}: agent main, 2 states"
    assert "── 1. START.sh (script, node agents)" in lines and "    working" in lines
    at = lines.index("── 2. REVIEW.md (markdown, node agents)")
    assert lines[at + 1:at + 3] == ["sent:", "    Review the work of main."]
    assert lines[at + 4] == "    <result>reviewed</result>"
    data = json.loads(cli("show", record["id"], "--agent", "main", "--format", "json", cwd=tmp_path).stdout)
    assert [s["state"] for s in data["states"]] == ["START.sh", "REVIEW.md"]
    missing = cli("show", record["id"], "--agent", "main_w1", cwd=tmp_path)
    assert missing.returncode == 2 and "has no agent 'main_w1' (agents: main)" in missing.stderr


def test_a_folder_with_raymonds_manifest_runs_as_states(tmp_path):
    write_states(tmp_path / "approval", {
        "workflow.yaml": "id: approval\nname: Approval\ndefault_budget: 5.0\nbackend:\n  name: gemini\n",
        "START.sh": 'echo "<result>approved $RAYMOND_INPUT</result>"\n',
    })
    ran = cli("run", "approval", "--input", "vendor=acme", cwd=tmp_path)
    assert (ran.returncode, ran.stdout) == (0, "approved vendor=acme\n"), ran.stderr
    assert "warning: the workflow's manifest asks for the gemini backend, which wfexec does not have" in ran.stderr
    [record] = json.loads(cli("runs", "--format", "json", cwd=tmp_path).stdout)
    assert record["workflow_name"] == "approval" and record["status"] == "completed"
    # A wfexec workflow.yaml is still a workflow, never taken for a manifest.
    (tmp_path / "approval" / "workflow.yaml").write_text("name: x\nversion: 1\nstart_node: a\nnodes: {}\n")
    assert "approved" not in cli("run", "approval", "--ephemeral", cwd=tmp_path).stdout
