"""Writing a workflow (issue 15, point 4): every error of a file in one pass, a graph of a workflow that has
errors, `wfexec types NAME`, and shell completion."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import wfexec_in_process as cli

BAD_EVERYWHERE = """\
name: bad
version: 1
start_node: a
nodes:
  a:
    type: action
    actions:
      - {type: set_state, field: computed.x}
      - {type: no_such_type}
    on_success: done
    bogus_field: 1
endings:
  done: {type: success, message: ok}
"""

BROKEN_EDGES = """\
name: broken
version: 1
start_node: a
nodes:
  a:
    type: action
    actions: [{type: set_state, field: computed.x, value: 1}]
    on_success: b
    on_failure: nowhere
  b:
    type: conditional
    condition: {type: flag_set, flag: ready}
    branches: {on_true: done, on_false: a}
  c:
    type: action
    actions: []
    on_success: done
    extra: 1
endings:
  done: {type: success, message: ok}
"""


def test_errors_inside_actions_come_with_the_nodes_own_in_one_pass(tmp_path):
    (tmp_path / "workflow.yaml").write_text(BAD_EVERYWHERE)
    done = cli("validate", "workflow.yaml", "--format", "json", cwd=tmp_path)
    assert done.returncode == 2
    found = {(d["line"], d["message"].split(" — ")[0]) for d in json.loads(done.stdout)["diagnostics"]}
    assert (8, "consequence 'set_state' is missing required field 'value'") in found
    assert (9, "unknown consequence type 'no_such_type'") in found
    assert any(line == 11 and "unknown field 'bogus_field'" in message for line, message in found)


def test_graph_draws_a_workflow_with_errors_and_marks_what_is_broken(tmp_path):
    (tmp_path / "workflow.yaml").write_text(BROKEN_EDGES)
    drawn = cli("graph", "workflow.yaml", cwd=tmp_path)
    assert drawn.returncode == 0, drawn.stderr
    text = drawn.stdout
    assert 'a -.->|"on_failure"| nowhere' in text and 'nowhere["nowhere (missing)"]' in text
    assert 'c["c (error)"]' in text and "class c,nowhere broken" in text
    assert 'a -->|"on_success"| b' in text and 'b -->|"on_true"| done' in text
    assert "`on_failure` names 'nowhere'" in drawn.stderr and "drawn as far as it goes" in drawn.stderr
    dot = cli("graph", "workflow.yaml", "--format", "dot", cwd=tmp_path).stdout
    assert '"a" -> "nowhere" [label="on_failure", style=dashed, color="#dc3545"];' in dot


def test_types_name_prints_one_type_in_full():
    shown = cli("types", "append_state")
    assert shown.returncode == 0
    lines = shown.stdout.splitlines()
    assert lines[0] == "consequence append_state  (from wfexec)"
    assert any(line.startswith("  field*") and "state path" in line for line in lines)
    assert any(line.startswith("  value*") and "the item to append" in line for line in lines)
    assert "effects: none; idempotent: yes" in lines and "  - type: append_state" in lines
    data = json.loads(cli("types", "file_exists", "--format", "json").stdout)
    assert data[0]["kind"] == "precondition" and data[0]["params"][0]["name"] == "path"
    unknown = cli("types", "apend_state")
    assert unknown.returncode == 2 and "did you mean 'append_state'" in unknown.stderr


def test_shell_completion_completes_commands_and_options():
    """What `wfexec --install-completion` installs: bash asks wfexec for the words that fit."""
    environment = {**os.environ, "_WFEXEC_COMPLETE": "complete_bash", "COMP_WORDS": "wfexec va", "COMP_CWORD": "1",
                   "WFEXEC_LEAN": "1"}
    done = subprocess.run([sys.executable, "-c", "import sys; sys.argv=['wfexec']; from wfexec.launcher import main; "
                           "main()"], env=environment, capture_output=True, text=True, timeout=60)
    assert "validate" in done.stdout.split(), done.stdout + done.stderr
    environment.update(COMP_WORDS="wfexec run --ans", COMP_CWORD="2")
    done = subprocess.run([sys.executable, "-c", "import sys; sys.argv=['wfexec']; from wfexec.launcher import main; "
                           "main()"], env=environment, capture_output=True, text=True, timeout=60)
    assert "--answer" in done.stdout.split() and "--answers" in done.stdout.split(), done.stdout + done.stderr
