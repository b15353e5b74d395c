"""`reference` nodes: sub-workflows run in their own state; documents go to the LLM backend."""

from __future__ import annotations

import textwrap

import pytest

import wfexec
from wfexec.running.engine import RunStopped

CHILD = """
name: child
version: 1
start_node: work
input_schema:
  n: {type: integer, required: true}
nodes:
  work:
    type: conditional
    condition: {type: evaluate_expression, expression: "n > 0"}
    branches: {true: double, false: refused}
  double:
    type: action
    actions:
      - {type: compute, expression: "n * 2", store_as: computed.doubled}
      - {type: set_state, field: computed.saw, value: "${secret ?? 'nothing'}"}
    on_success: done
endings:
  done: {type: success, message: ok, output: {doubled: "${computed.doubled}", saw: "${computed.saw}"}}
  refused: {type: failure, message: "n must be positive, got ${n}"}
"""

PARENT = """
name: parent
version: 1
start_node: call
initial_state: {n: 21, secret: parent-only}
nodes:
  call:
    type: reference
    workflow: child.yaml
    input: {n: "${n}"}
    store_as: computed.child
    output_mapping: {computed.doubled: doubled}
    on_success: done
    on_failure: failed
endings:
  done: {type: success, message: "${computed.doubled}"}
  failed: {type: failure, message: "child failed: ${computed.last_error}"}
"""


@pytest.fixture
def parent(tmp_path):
    (tmp_path / "child.yaml").write_text(CHILD)
    path = tmp_path / "workflow.yaml"

    def make(text=PARENT):
        path.write_text(textwrap.dedent(text))
        return path

    return make


def test_sub_workflow_output_comes_back_through_store_as_and_output_mapping(parent):
    result = wfexec.run(parent())
    assert result.message == "42"
    # The child ran in its own state: it could not see the parent's keys, and
    # only its ending's output came back.
    assert result.state["computed"]["child"] == {"doubled": 42, "saw": "nothing"}
    assert "saw" not in result.state["computed"]
    assert [h["node"] for h in result.state["history"]] == ["call"]


def test_sub_workflow_failure_routes_on_failure_with_its_message(parent):
    result = wfexec.run(parent(PARENT.replace("n: 21", "n: -1")))
    assert result.ending == "failed"
    assert result.message == "child failed: n must be positive, got -1"


def test_error_mapping_routes_by_the_child_ending(parent):
    text = PARENT.replace("    on_failure: failed", "    error_mapping: {refused: refused_here}\n    on_failure: failed")
    text = text.replace("endings:", "  refused_here:\n    type: action\n    actions: []\n    on_success: mapped\n"
                              "endings:\n  mapped: {type: failure, message: mapped}")
    result = wfexec.run(parent(text.replace("n: 21", "n: 0")))
    assert [h["node"] for h in result.state["history"]] == ["call", "refused_here"]
    assert result.ending == "mapped"


def test_a_missing_or_self_including_sub_workflow_is_a_validation_error(parent, tmp_path):
    path = parent(PARENT.replace("child.yaml", "nope.yaml"))
    messages = [d.message for d in wfexec.validate(path)]
    assert any("sub-workflow 'nope.yaml' does not exist" in m for m in messages)
    path = parent(PARENT.replace("child.yaml", "workflow.yaml"))
    assert any(d.code == "workflow-cycle" for d in wfexec.validate(path))


DOC_WORKFLOW = """
name: judge
version: 1
start_node: review
initial_state: {diff: "+ added a line"}
nodes:
  review:
    type: reference
    doc: guide.md
    section: Reviewing
    context: {diff: "${diff}"}
    store_as: computed.review
    next_node: done
endings:
  done: {type: success, message: "${computed.review}"}
"""

GUIDE = """# Guide

## Reviewing

Read the diff and answer APPROVED or CHANGES.

## Releasing

Not this part.
"""


class EchoBackend:
    def __init__(self):
        self.prompts = []

    def complete(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return "APPROVED"


def test_document_section_and_context_go_to_the_backend(tmp_path):
    (tmp_path / "guide.md").write_text(GUIDE)
    path = tmp_path / "workflow.yaml"
    path.write_text(DOC_WORKFLOW)
    backend = EchoBackend()
    result = wfexec.run(path, backend=backend)
    assert result.message == "APPROVED"
    prompt = backend.prompts[0]
    assert "## Reviewing" in prompt and "answer APPROVED" in prompt
    assert "Releasing" not in prompt
    assert '"diff": "+ added a line"' in prompt


def test_document_without_backend_stops_and_dry_run_prints_the_prompt(tmp_path, cli):
    (tmp_path / "guide.md").write_text(GUIDE)
    path = tmp_path / "workflow.yaml"
    path.write_text(DOC_WORKFLOW)
    with pytest.raises(RunStopped, match="needs an LLM backend"):
        wfexec.run(path)
    stopped = cli("run", path)
    assert stopped.returncode == 4 and "needs an LLM backend" in stopped.stderr
    dry = cli("run", path, "--dry-run")
    assert "Read the diff and answer APPROVED or CHANGES." in dry.stdout
    assert "(dry run: not sent)" in dry.stdout


def test_unknown_section_warns_and_the_run_sends_the_whole_document(tmp_path, cli):
    """hiivmind's skills read the whole document, and the real files name sections their documents renamed."""
    (tmp_path / "guide.md").write_text(GUIDE)
    path = tmp_path / "workflow.yaml"
    path.write_text(DOC_WORKFLOW.replace("section: Reviewing", "section: Deploying"))
    checked = cli("validate", path)
    assert checked.returncode == 0, checked.stderr
    assert "workflow.yaml:10:14: warning: the document has no section 'Deploying' (its headings: Guide, Reviewing, " \
        "Releasing): the run sends the whole document" in checked.stdout + checked.stderr
    backend = EchoBackend()
    wfexec.run(path, backend=backend)
    assert "asks for the section 'Deploying'" in backend.prompts[0]
    assert "## Reviewing" in backend.prompts[0] and "## Releasing" in backend.prompts[0]


def test_a_hash_line_in_a_code_block_is_code_not_a_heading():
    from wfexec.language.documents import extract_section

    text = "# Guide\n\n## Split\n\n```bash\n# Skip confirmation\nsplit --yes\n```\n\nDone.\n\n## Next\n"
    assert extract_section(text, "Split") == "## Split\n\n```bash\n# Skip confirmation\nsplit --yes\n```\n\nDone."
    with pytest.raises(LookupError, match=r"its headings: Guide, Split, Next\)"):
        extract_section(text, "Skip confirmation")


# A document step with no `store_as`, as hiivmind writes them: the nodes after it read what the model was meant
# to leave in state (`computed.scan`, a placeholder `report.body: null`), which no node writes.
LEFT_TO_THE_MODEL = """
name: scan
version: 1
start_node: scan
initial_state: {report: {body: null, pages: []}, title: Docs}
nodes:
  scan:
    type: reference
    doc: guide.md
    section: Reviewing
    next_node: summarise
  summarise:
    type: action
    actions:
      - {type: compute, expression: "computed.scan.count * 2", store_as: computed.doubled}
    on_success: done
    on_failure: failed
endings:
  done: {type: success, message: "${title}: ${computed.doubled} ${report.body}"}
  failed: {type: failure, message: "${computed.last_error}"}
"""


class Replies:
    def __init__(self, *replies):
        self.replies, self.prompts = list(replies), []

    def complete(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.replies.pop(0)


def test_a_document_step_without_store_as_is_asked_for_what_the_next_nodes_read_and_its_reply_is_kept(tmp_path):
    (tmp_path / "guide.md").write_text(GUIDE)
    path = tmp_path / "workflow.yaml"
    path.write_text(LEFT_TO_THE_MODEL)
    backend = Replies('```json\n{"computed.scan": {"count": 21}, "report.body": "all read", "other.path": 1}\n```')
    result = wfexec.run(path, backend=backend)
    assert result.type == "success", result.message
    assert result.message == "Docs: 42 all read"
    assert "other" not in result.state  # only what the workflow reads is written
    # Declared with a value (`title`), or written by a node (`computed.doubled`): not asked for.
    assert backend.prompts[0].split("## Reply", 1)[1].count("- `") == 2
    assert "- `computed.scan`\n" in backend.prompts[0] and "- `report.body`\n" in backend.prompts[0]


def test_a_reply_that_gives_none_of_the_values_asked_for_is_a_located_run_error(tmp_path, cli):
    (tmp_path / "guide.md").write_text(GUIDE)
    path = tmp_path / "workflow.yaml"
    path.write_text(LEFT_TO_THE_MODEL)
    replies = tmp_path / "cassette.yaml"
    replies.write_text('wfexec_cassette: 1\ninteractions: [{kind: llm, reply: "I looked at it."}]\n')
    ran = cli("run", path, "--replay", replies, "--ephemeral")
    assert ran.returncode == 1
    assert "workflow.yaml:8:5: error: node 'scan': reference node 'scan' (guide.md): the LLM's reply is not a JSON " \
        "value: 'I looked at it.' — the prompt asks for one JSON object keyed by the state paths" in ran.stderr
