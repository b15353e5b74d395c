"""`wfexec validate` on the files a workflow names beside itself, and on the people a states folder asks.

- a `script:` found neither in the plugin root nor beside the workflow is a warning at its line (an error with
  `--strict`); the run would look in its working directory last;
- a `${…}` of the workflow's state in a reference node's markdown document is a warning (the model receives it as
  written), once per node; shell snippets (`${CLAUDE_PLUGIN_ROOT}`, `${path%/}`, a variable the document sets) and
  names the node passes in `context:` are not, and no real hiivmind document gets one (test_hiivmind_corpus_real);
- a states folder whose states hold an `<ask>` counts as asking a person in the summary.
"""

from __future__ import annotations

import json
import textwrap

from conftest import ROOT, wfexec_in_process as cli

SCRIPTED = """\
name: scripted
version: "1"
start_node: act
nodes:
  act:
    type: action
    actions:
      - {type: run_command, script: tools/check.sh}
    on_success: done
    on_failure: done
endings:
  done: {type: success, message: ok}
"""

EXPLAINED = """\
name: explained
version: "1"
start_node: explain
initial_state:
  computed: {repo_url: null}
  source_id: s1
nodes:
  explain:
    type: reference
    doc: guide.md
    context: {branch: main}
    next_node: done
endings:
  done: {type: success, message: ok}
"""


def validate(folder, *options):
    done = cli("validate", "--format", "json", *options, "workflow.yaml", cwd=folder)
    return done.returncode, json.loads(done.stdout)


def codes(result, code):
    return [d for d in result["diagnostics"] if d["code"] == code]


def test_a_missing_script_is_a_warning_at_its_line_and_an_error_when_strict(tmp_path):
    (tmp_path / "workflow.yaml").write_text(SCRIPTED, encoding="utf-8")
    code, result = validate(tmp_path)
    [found] = codes(result, "script-missing")
    assert (code, found["severity"], found["line"]) == (0, "warning", 8)
    assert "script 'tools/check.sh' does not exist" in found["message"] and "working directory" in found["message"]
    assert validate(tmp_path, "--strict")[0] == 2
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "check.sh").write_text("echo ok\n", encoding="utf-8")
    code, result = validate(tmp_path, "--strict")
    assert (code, codes(result, "script-missing")) == (0, [])


def test_a_computed_script_path_is_left_to_the_run(tmp_path):
    (tmp_path / "workflow.yaml").write_text(SCRIPTED.replace("tools/check.sh", "'${computed.tool}'"),
                                            encoding="utf-8")
    assert codes(validate(tmp_path)[1], "script-missing") == []


def test_state_templates_in_a_reference_document_are_one_warning_shell_snippets_none(tmp_path):
    (tmp_path / "workflow.yaml").write_text(EXPLAINED, encoding="utf-8")
    (tmp_path / "guide.md").write_text(textwrap.dedent("""\
        # Guide
        Clone ${computed.repo_url} for ${source_id}; the branch is ${branch}.
        ```bash
        cd "${CLAUDE_PLUGIN_ROOT}" && ls "${corpus_path%/}" ${1:-main}
        for name in *; do echo "${name}"; done
        ```
        ${computed.never_written} and ${computed.repo_url} again.
        """), encoding="utf-8")
    code, result = validate(tmp_path)
    [found] = codes(result, "document-template")
    assert (code, found["severity"], found["line"]) == (0, "warning", 10)
    assert "`${computed.repo_url}`, `${source_id}`, which the model receives as written" in found["message"]
    assert "context:" in found["hint"]


def test_a_document_without_state_templates_gets_no_warning(tmp_path):
    (tmp_path / "workflow.yaml").write_text(EXPLAINED, encoding="utf-8")
    (tmp_path / "guide.md").write_text("# Guide\nsource_id=x; echo ${source_id} in ${PWD}\n", encoding="utf-8")
    assert codes(validate(tmp_path)[1], "document-template") == []


def test_a_states_folder_that_asks_counts_as_asking_a_person():
    done = cli("validate", "--format", "json", "skills/docs-check", cwd=ROOT)
    summary = json.loads(done.stdout)["files"][0]["summary"]
    assert summary["text"] == "2 nodes: 1 run as code, 1 ask a person, 0 go to the LLM"


def test_the_summary_looks_each_node_type_up_once_and_counts_what_the_nodes_do(monkeypatch):
    """Over a workflow with a node that asks a person, one that goes to the LLM and the rest code: the node types
    are asked for once for the whole summary, not twice per node."""
    from wfexec.language import summary
    from wfexec.language.compiler import check_document
    from wfexec.language.loader import load_file

    checked = check_document(load_file(ROOT / "tests" / "workflows" / "valid" / "every_node" / "workflow.yaml"))
    asked = []
    real = summary.node_types
    monkeypatch.setattr(summary, "node_types", lambda: asked.append(1) or real())
    found = checked.summary
    assert len(asked) == 1
    assert found.nodes == found.code + found.person + found.llm and found.person >= 1 and found.llm >= 1
