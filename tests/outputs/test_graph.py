"""`wfexec graph`: Mermaid and DOT pictures of workflows, and SVG/PNG through Graphviz when it is installed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, wfexec_cli

SKILLS = ROOT / "skills"
HAS_DOT = shutil.which("dot") is not None

ODD = {
    "name": "odd", "version": 1, "start_node": "end",
    "nodes": {
        # Ids Mermaid cannot take as they are: a keyword, hyphens, a leading digit, the start marker's own id.
        "end": {"type": "conditional", "condition": {"type": "flag_set", "flag": "go"},
                "branches": {"true": "my-node", "false": "1st"}},
        "my-node": {"type": "action", "actions": [{"type": "set_flag", "flag": "x"}], "on_success": "_start"},
        "1st": {"type": "validation_gate", "validations": [{"type": "flag_set", "flag": "x"}],
                "on_valid": "_start", "on_invalid": 'say "no"'},
        "_start": {"type": "user_prompt",
                   "prompt": {"question": "Pick", "header": "Pick",
                              "options": [{"id": "a<b", "label": "A"}, {"id": "c", "label": "C"}]},
                   "on_response": {"a<b": {"next_node": "done"}, "c": {"next_node": "done"}}},
        "orphan": {"type": "action", "actions": [{"type": "set_flag", "flag": "y"}], "on_success": "done"},
    },
    "endings": {
        "done": {"type": "success", "message": "ok"},
        'say "no"': {"type": "failure", "message": "no", "recovery": {"suggestion": "again", "retry_node": "end"}},
        "never": {"type": "cancelled", "message": "never reached"},
    },
}


def write(tmp_path: Path, doc: dict, name: str = "workflow.yaml") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def mermaid(cli, path, *flags) -> str:
    done = cli("graph", path, *flags)
    assert done.returncode == 0, done.stderr
    return done.stdout


def node_declarations(text: str) -> dict[str, str]:
    """Mermaid id → the rest of its declaration line (shape and label)."""
    found = {}
    for line in text.splitlines():
        match = re.fullmatch(r"    ([A-Za-z_][A-Za-z0-9_]*)([\[\(\{>].*)", line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def edges(text: str) -> list[tuple[str, str, str, str]]:
    """(source, arrow, label, target) of every Mermaid edge."""
    return re.findall(r"^    (\S+) (-->|-\.->)(?:\|\"(.*?)\"\|)? (\S+)$", text, flags=re.M)


# -- Mermaid ------------------------------------------------------------------------

def test_release_checklist_in_mermaid(cli):
    text = mermaid(cli, SKILLS / "release-checklist")
    assert text.startswith("flowchart TD\n")
    shapes = node_declarations(text)
    assert shapes["check_repo"] == '{"check_repo"}'          # conditional: rhombus
    assert shapes["inspect"] == '["inspect"]'                # action: rectangle
    assert shapes["ready"] == '{{"ready"}}'                  # validation_gate: hexagon
    assert shapes["confirm"] == '[/"confirm"/]'              # user_prompt: parallelogram
    assert shapes["summarize"] == '[["summarize"]]'          # reference: subroutine
    assert shapes["done"] == '(["done"])'                    # ending
    found = edges(text)
    assert ("_start", "-->", "", "check_repo") in found
    assert ("check_repo", "-->", "on_true", "inspect") in found
    assert ("check_repo", "-->", "on_false", "not_a_repo") in found
    assert ("inspect", "-->", "on_failure", "failed") in found
    assert ("ready", "-->", "on_invalid", "not_ready") in found
    assert ("confirm", "-->", "tag, notes_only, other", "write_notes") in found  # option ids, one arrow
    assert ("confirm", "-->", "cancel", "cancelled") in found
    assert len(found) == 17
    assert "    class done success" in text.splitlines()
    assert "    class not_ready,not_a_repo failure" in text.splitlines()
    assert "    class failed error" in text.splitlines()
    assert "    class cancelled cancelled" in text.splitlines()
    assert "unreachable" not in text.split("classDef unreachable")[0]
    for ending_type in ("success", "failure", "error", "cancelled"):
        assert re.search(rf"^    classDef {ending_type} fill:#\w+,stroke:#\w+,color:#\w+$", text, flags=re.M)


def test_a_computed_target_is_a_dashed_edge_to_a_marker(cli):
    text = mermaid(cli, SKILLS / "triage")
    assert '    _computed[/"computed"\\]' in text.splitlines()
    assert ("route", "-.->", "on_success: ${computed.route}", "_computed") in edges(text)
    assert "(unreachable)" not in text  # a computed target may lead anywhere: nothing is unreachable
    assert "    class _start,_computed marker" in text.splitlines()


def test_unreachable_nodes_are_marked_as_validate_finds_them(cli, tmp_path):
    path = write(tmp_path, ODD)
    text = mermaid(cli, path)
    shapes = node_declarations(text)
    assert shapes["orphan"] == '["orphan (unreachable)"]'
    assert shapes["never"] == '(["never (unreachable)"])'
    unreachable_line = next(line for line in text.splitlines() if line.endswith(" unreachable")
                            and line.startswith("    class "))
    marked = set(unreachable_line.split()[1].split(","))
    assert marked == {"orphan", "never"}
    validated = json.loads(cli("validate", "--format", "json", path).stdout)["diagnostics"]
    assert {d["message"].split("'")[1] for d in validated if d["code"].startswith("unreachable")} == marked


def test_ids_mermaid_cannot_take_are_renamed_and_labels_escaped(cli, tmp_path):
    text = mermaid(cli, write(tmp_path, ODD))
    shapes = node_declarations(text)
    ids = set(shapes)
    assert "end" not in ids
    labels = {re.search(r'"(.*)"', decl).group(1) for decl in shapes.values()}
    assert {"end", "my-node", "1st", "_start", "say #quot;no#quot;", "start"} <= labels
    assert len(ids) == len(shapes) == 5 + 3 + 1  # nodes, endings, the start marker
    for source, _arrow, _label, target in edges(text):
        assert source in ids and target in ids
    assert any(label == "a#lt;b, c" for _s, _a, label, _t in edges(text))
    start_marker = next(i for i, decl in shapes.items() if decl == '(("start"))')
    real_start = next(i for i, decl in shapes.items() if decl == '{"end"}')
    assert (start_marker, "-->", "", real_start) in edges(text)


def test_a_retry_node_is_a_dashed_edge_back(cli, tmp_path):
    text = mermaid(cli, write(tmp_path, ODD))
    shapes = node_declarations(text)
    ending = next(i for i, decl in shapes.items() if "say" in decl)
    start = next(i for i, decl in shapes.items() if decl == '{"end"}')
    assert (ending, "-.->", "retry", start) in edges(text)


def test_output_file_and_determinism(tmp_path):
    out = tmp_path / "pictures" / "release.mmd"
    done = wfexec_cli("graph", SKILLS / "release-checklist", "--output", out)
    assert done.returncode == 0 and done.stdout == ""
    assert out.read_text(encoding="utf-8") == mermaid(wfexec_cli, SKILLS / "release-checklist")
    assert mermaid(wfexec_cli, SKILLS / "triage") == mermaid(wfexec_cli, SKILLS / "triage" / "workflow.yaml")


def test_a_workflow_with_errors_is_drawn_as_far_as_it_goes(cli, tmp_path):
    broken = dict(ODD, start_node="nowhere")
    done = cli("graph", write(tmp_path, broken))
    assert done.returncode == 0
    assert "nowhere" in done.stderr and '_start --> nowhere' in done.stdout and 'nowhere["nowhere (missing)"]' in done.stdout


def test_a_file_that_is_no_workflow_is_not_drawn(cli, tmp_path):
    (tmp_path / "workflow.yaml").write_text("- just\n- a list\n")
    done = cli("graph", tmp_path / "workflow.yaml")
    assert done.returncode == 2 and done.stdout == ""


# -- DOT -----------------------------------------------------------------------------

def test_dot_has_shapes_labels_and_colours(cli):
    done = cli("graph", SKILLS / "release-checklist", "--format", "dot")
    assert done.returncode == 0
    text = done.stdout
    assert text.startswith('digraph "release-checklist" {')
    assert re.search(r'^    "check_repo" \[shape=diamond, label="check_repo"', text, flags=re.M)
    assert re.search(r'^    "ready" \[shape=hexagon,', text, flags=re.M)
    assert re.search(r'^    "confirm" \[shape=parallelogram,', text, flags=re.M)
    assert '    "check_repo" -> "inspect" [label="on_true"];' in text
    assert '    "confirm" -> "write_notes" [label="tag, notes_only, other"];' in text
    assert re.search(r'^    "done" \[shape=box, style="rounded,filled", fillcolor="#d4edda"', text, flags=re.M)
    assert re.search(r'^    "failed" \[.*fillcolor="#f8d7da"', text, flags=re.M)
    assert '    "_start" -> "check_repo";' in text


def test_dot_quotes_odd_ids_and_dashes_computed_and_unreachable(cli, tmp_path):
    text = cli("graph", write(tmp_path, ODD), "--format", "dot").stdout
    assert '"say \\"no\\""' in text
    assert re.search(r'^    "orphan" \[.*style=dashed', text, flags=re.M)
    assert '"_start_"' in text  # the start marker steps aside for the node named _start
    triage = cli("graph", SKILLS / "triage", "--format", "dot").stdout
    assert '    "route" -> "_computed" [label="on_success: ${computed.route}", style=dashed];' in triage


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz's dot is not installed")
@pytest.mark.parametrize("skill", ["quickstart", "release-checklist", "triage"])
def test_graphviz_accepts_the_dot_text(cli, skill, tmp_path):
    dot_text = cli("graph", SKILLS / skill, "--format", "dot").stdout
    done = subprocess.run(["dot", "-Tsvg"], input=dot_text, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "<svg" in done.stdout


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz's dot is not installed")
def test_svg_and_png_through_graphviz(cli, tmp_path):
    svg = tmp_path / "odd.svg"
    done = cli("graph", write(tmp_path, ODD), "--format", "svg", "--output", svg)
    assert done.returncode == 0, done.stderr
    text = svg.read_text(encoding="utf-8")
    assert "<svg" in text and "orphan" in text and "say &quot;no&quot;" in text
    png = tmp_path / "release.png"
    assert cli("graph", SKILLS / "release-checklist", "--format", "png", "-o", png).returncode == 0
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_svg_without_graphviz_says_how_to_get_it(cli, tmp_path):
    empty_path = tmp_path / "no-programs"
    empty_path.mkdir()
    out = tmp_path / "x.svg"
    done = cli("graph", SKILLS / "quickstart", "--format", "svg", "--output", out, env={"PATH": str(empty_path)})
    assert done.returncode == 2
    assert "Graphviz" in done.stderr and "--format mermaid" in done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists()
