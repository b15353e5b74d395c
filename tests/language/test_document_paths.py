"""Document paths resolve as hiivmind defines them: from the plugin root, then from the workflow's folder.

Data paths (files a workflow reads or writes as data) stay relative to the working directory.
"""

from __future__ import annotations

import json
import textwrap

import wfexec
from wfexec.language.documents import find_document
from conftest import compat_root, one_action


class Recorder:
    """An LLM backend that remembers every prompt and answers 'noted'."""

    def __init__(self):
        self.prompts: list[str] = []

    def complete(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return "noted"


REFERENCE = """\
name: uses-a-pattern
version: "1"
start_node: read
nodes:
  read:
    type: reference
    doc: {doc}
    next_node: done
endings:
  done: {{type: success, message: ok}}
"""


def make_plugin(root, doc="lib/patterns/git.md", text="# Git\n\nClone it.\n"):
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text('{"name": "demo"}')
    (root / doc).parent.mkdir(parents=True, exist_ok=True)
    (root / doc).write_text(text)
    skill = root / "skills" / "demo"
    skill.mkdir(parents=True)
    return skill


def test_a_reference_doc_resolves_from_the_nearest_plugin_root(tmp_path):
    skill = make_plugin(tmp_path / "plugin")
    path = skill / "workflow.yaml"
    path.write_text(REFERENCE.format(doc="lib/patterns/git.md"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    backend = Recorder()

    result = wfexec.run(path, backend=backend, cwd=elsewhere)

    assert result.type == "success"
    assert backend.prompts == ["# Git\n\nClone it.\n"]


def test_the_plugin_root_wins_over_the_workflow_folder_which_is_the_fallback(tmp_path):
    skill = make_plugin(tmp_path / "plugin", doc="lib/a.md", text="from the plugin root\n")
    (skill / "lib").mkdir()
    (skill / "lib" / "a.md").write_text("beside the workflow\n")
    (skill / "lib" / "b.md").write_text("only beside the workflow\n")
    first, second = skill / "a.yaml", skill / "b.yaml"
    first.write_text(REFERENCE.format(doc="lib/a.md"))
    second.write_text(REFERENCE.format(doc="lib/b.md"))
    backend = Recorder()

    wfexec.run(first, backend=backend)
    wfexec.run(second, backend=backend)

    assert backend.prompts == ["from the plugin root\n", "only beside the workflow\n"]


def test_claude_plugin_root_overrides_the_manifest_search(tmp_path, monkeypatch):
    skill = make_plugin(tmp_path / "plugin", doc="lib/a.md", text="manifest root\n")
    other = tmp_path / "installed"
    (other / "lib").mkdir(parents=True)
    (other / "lib" / "a.md").write_text("installed root\n")
    path = skill / "workflow.yaml"
    path.write_text(REFERENCE.format(doc="lib/a.md"))
    monkeypatch.setenv("CLAUDE_PLUGIN_ROOT", str(other))
    backend = Recorder()

    wfexec.run(path, backend=backend)

    assert backend.prompts == ["installed root\n"]


def test_a_missing_document_names_every_place_looked(tmp_path):
    skill = make_plugin(tmp_path / "plugin")
    path = skill / "workflow.yaml"
    path.write_text(REFERENCE.format(doc="lib/patterns/missing.md"))

    diagnostics = wfexec.validate(path)

    [error] = [d for d in diagnostics if d.severity == "error"]
    assert error.code == "file-missing" and error.yaml_path == "nodes.read.doc"
    looked = error.message.split("(looked in ", 1)[1]
    assert looked.split(", then ") == [str(tmp_path / "plugin/lib/patterns/missing.md"),
                                       str(skill / "lib/patterns/missing.md") + ")"]
    assert "plugin root" in error.hint


def test_invoke_pattern_and_sub_workflows_resolve_from_the_plugin_root_too(tmp_path):
    skill = make_plugin(tmp_path / "plugin", doc="lib/review.md", text="# Review\n\nReview it.\n")
    (tmp_path / "plugin" / "flows").mkdir()
    (tmp_path / "plugin" / "flows" / "child.yaml").write_text(textwrap.dedent("""\
        name: child
        version: "1"
        start_node: end_now
        nodes:
          end_now: {type: action, actions: [], on_success: fine}
        endings:
          fine: {type: success, message: child ok, output: {answer: 42}}
        """))
    doc = json.loads(one_action({"type": "invoke_pattern", "path": "lib/review.md", "store_as": "computed.review"}))
    doc["nodes"]["act"]["on_success"] = "child"
    doc["nodes"]["child"] = {"type": "reference", "workflow": "flows/child.yaml", "store_as": "computed.child",
                             "next_node": "done"}
    path = skill / "workflow.yaml"
    path.write_text(json.dumps(doc))
    backend = Recorder()

    result = wfexec.run(path, backend=backend, cwd=tmp_path)

    assert result.type == "success", result.message
    assert result.state["computed"] == {"review": "noted", "child": {"answer": 42}}
    assert backend.prompts == ["# Review\n\nReview it.\n"]


def test_data_paths_stay_relative_to_the_working_directory(tmp_path):
    skill = make_plugin(tmp_path / "plugin", doc="data.txt", text="plugin copy")
    work = tmp_path / "work"
    work.mkdir()
    (work / "data.txt").write_text("working copy")
    path = skill / "workflow.yaml"
    path.write_text(one_action({"type": "read_file", "path": "data.txt", "store_as": "computed.text"}))

    result = wfexec.run(path, cwd=work)

    assert result.state["computed"]["text"] == "working copy"


def test_the_real_corpus_documents_resolve_from_any_working_directory(tmp_path, monkeypatch):
    corpus = compat_root() / "hiivmind-corpus"
    monkeypatch.chdir(tmp_path)
    missing = []
    for path in sorted(corpus.glob("*/skills/*/workflow.yaml")) + sorted(corpus.glob("*/commands/*/workflow.yaml")):
        diagnostics = wfexec.validate(path)
        missing += [d.format() for d in diagnostics if d.code == "file-missing"]
    assert missing == []


def test_the_real_add_source_names_its_documents_from_the_plugin_root(tmp_path):
    tree = compat_root() / "hiivmind-corpus" / "856e42a"
    diagnostics = wfexec.validate(tree / "skills/hiivmind-corpus-add-source/workflow.yaml")
    assert not [d for d in diagnostics if d.code == "file-missing"]
    lookup = find_document("lib/corpus/patterns/sources/git.md", tree / "skills/hiivmind-corpus-add-source/workflow.yaml")
    assert lookup.found == tree / "lib/corpus/patterns/sources/git.md"


def test_a_path_written_from_claude_plugin_root_resolves_there_only(tmp_path):
    skill = make_plugin(tmp_path / "plugin")
    path = skill / "workflow.yaml"
    path.write_text(REFERENCE.format(doc='"${CLAUDE_PLUGIN_ROOT}/lib/patterns/git.md"'))
    backend = Recorder()

    assert wfexec.validate(path) == []
    wfexec.run(path, backend=backend)

    assert backend.prompts == ["# Git\n\nClone it.\n"]
    lookup = find_document("${CLAUDE_PLUGIN_ROOT}/lib/missing.md", path)
    assert lookup.found is None and lookup.looked == (tmp_path / "plugin" / "lib" / "missing.md",)


# Blueprint-era gateways build a skill's path from the plugin root and report a failure with `${error.message}`.
GATEWAY = """\
name: gateway
version: "1"
start_node: execute_skill
initial_state: {computed: {matched_skill: "${skill}"}}
nodes:
  execute_skill:
    type: action
    actions:
      - type: invoke_skill
        skill_path: "${CLAUDE_PLUGIN_ROOT}/skills/${computed.matched_skill}/SKILL.md"
    on_success: done
    on_failure: error_skill_failed
endings:
  done: {type: success, message: "Ran from ${CLAUDE_PLUGIN_ROOT}"}
  error_skill_failed: {type: error, message: "Skill execution failed: ${error.message} (at ${error.node})"}
"""


def test_claude_plugin_root_reads_the_plugin_root_outside_claude_code(tmp_path, monkeypatch):
    monkeypatch.delenv("CLAUDE_PLUGIN_ROOT", raising=False)
    root = tmp_path / "plugin"
    make_plugin(root)
    (root / "skills" / "demo" / "SKILL.md").write_text("---\nname: demo\n---\nDo the demo.\n")
    gateway = root / "commands" / "gateway" / "workflow.yaml"
    gateway.parent.mkdir(parents=True)
    gateway.write_text(GATEWAY.replace("${skill}", "demo"))
    backend = Recorder()
    result = wfexec.run(gateway, backend=backend)
    assert result.type == "success", result.message
    assert result.message == f"Ran from {root}"
    assert f"Its instructions are in {root / 'skills' / 'demo' / 'SKILL.md'}." in backend.prompts[0]


def test_an_error_ending_reads_the_failure_as_error_message(tmp_path, monkeypatch):
    monkeypatch.delenv("CLAUDE_PLUGIN_ROOT", raising=False)
    root = tmp_path / "plugin"
    make_plugin(root)
    gateway = root / "commands" / "gateway" / "workflow.yaml"
    gateway.parent.mkdir(parents=True)
    gateway.write_text(GATEWAY.replace("${skill}", "missing"))
    assert [d for d in wfexec.validate(gateway) if "error" in d.message] == []  # `error` is the run's own name
    result = wfexec.run(gateway, backend=Recorder())
    assert result.ending == "error_skill_failed"
    assert result.message.startswith("Skill execution failed: invoke_skill failed: skill "
                                     f"'{root}/skills/missing/SKILL.md' does not exist")
    assert result.message.endswith("(at execute_skill)")
