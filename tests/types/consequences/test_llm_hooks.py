"""invoke_pattern, spawn_agent and invoke_skill: judgement steps sent to an LLM backend."""

from __future__ import annotations

import json
import pytest

import wfexec
from wfexec.language.diagnostics import WorkflowError
from wfexec.running.engine import RunStopped
from conftest import FakeBackend, one_action

PATTERN = """\
# Corpus patterns

Intro text that is not part of any section.

## Analyse sources

Look at every source and say which is stale.

### Details

Consider the commit dates.

## Write index

Write the index.
"""




# --------------------------------------------------------------------------- #
# invoke_pattern

def test_invoke_pattern_sends_the_section_and_context_and_stores_the_reply(write_workflow, tmp_path):
    write_workflow(PATTERN, "skill/patterns/corpus.md")
    path = write_workflow(one_action(
        {"type": "invoke_pattern", "path": "patterns/corpus.md", "section": "Analyse sources",
         "context": {"sources": "${computed.sources}", "mode": "quick"}, "store_as": "computed.analysis"},
        initial_state={"computed": {"sources": ["alpha", "beta"]}}), "skill/workflow.yaml")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    backend = FakeBackend("beta is stale")

    # the pattern is found next to the workflow, not in the run's working directory
    result = wfexec.run(path, backend=backend, cwd=elsewhere)

    assert result.type == "success"
    assert result.state["computed"]["analysis"] == "beta is stale"
    [prompt] = backend.prompts
    assert prompt.startswith("## Analyse sources\n\nLook at every source")
    assert "Consider the commit dates." in prompt        # subsections come along
    assert "Write the index" not in prompt and "Intro text" not in prompt
    context = json.loads(prompt.split("```json\n")[1].split("\n```")[0])
    assert context == {"sources": ["alpha", "beta"], "mode": "quick"}


def test_invoke_pattern_without_section_or_store_as_sends_the_whole_file(run_yaml, tmp_path):
    (tmp_path / "p.md").write_text(PATTERN)
    backend = FakeBackend("done")
    result, _ = run_yaml(one_action({"type": "invoke_pattern", "path": "p.md"}), backend=backend)
    assert result.type == "success"
    assert backend.prompts == [PATTERN.strip() + "\n"]
    assert result.state["computed"] == {}  # nothing stored without store_as


def test_invoke_pattern_with_a_missing_file_is_a_validation_error(run_yaml):
    with pytest.raises(WorkflowError) as caught:
        run_yaml(one_action({"type": "invoke_pattern", "path": "nope.md", "store_as": "computed.x"}))
    [error] = caught.value.diagnostics
    assert error.code == "file-missing" and error.yaml_path == "nodes.act.actions[0].path"
    assert "document 'nope.md' does not exist" in error.message and "nope.md" in error.message


def test_invoke_pattern_with_a_computed_missing_file_fails_without_asking(run_yaml):
    backend = FakeBackend()
    result, _ = run_yaml(one_action({"type": "invoke_pattern", "path": "${computed.name}", "store_as": "computed.x"},
                                    initial_state={"computed": {"name": "nope.md"}}), backend=backend)
    assert result.type == "failure"
    assert "pattern 'nope.md' does not exist (looked in " in result.message
    assert backend.prompts == []


def test_invoke_pattern_with_an_unknown_section_sends_the_whole_pattern_saying_so(run_yaml, tmp_path):
    (tmp_path / "p.md").write_text(PATTERN)
    backend = FakeBackend("done")
    result, _ = run_yaml(one_action({"type": "invoke_pattern", "path": "p.md", "section": "Deploy"}),
                         backend=backend)
    assert result.type == "success"
    [prompt] = backend.prompts
    assert "asks for the section 'Deploy'" in prompt and "Analyse sources" in prompt


# --------------------------------------------------------------------------- #
# spawn_agent

def test_spawn_agent_prompts_as_the_sub_agent_and_stores_its_reply(run_yaml):
    backend = FakeBackend("found 3 files")
    result, out = run_yaml(one_action(
        {"type": "spawn_agent", "subagent_type": "Explore", "prompt": "Find docs about ${computed.topic}.",
         "store_as": "computed.found", "run_in_background": True},
        initial_state={"computed": {"topic": "hooks"}}), backend=backend, trace=True)
    assert result.type == "success"
    assert backend.prompts == ["You are a Explore agent.\n\nFind docs about hooks."]
    assert result.state["computed"]["found"] == "found 3 files"
    assert "run_in_background is ignored" in out.err.getvalue()


def test_spawn_agent_without_store_as_is_a_load_error(run_yaml):
    with pytest.raises(WorkflowError):
        run_yaml(one_action({"type": "spawn_agent", "subagent_type": "x", "prompt": "y"}), backend=FakeBackend())


# --------------------------------------------------------------------------- #
# invoke_skill

def test_invoke_skill_asks_to_run_the_skill_with_its_args(run_yaml):
    backend = FakeBackend("refreshed", "ok")
    result, _ = run_yaml(one_action(
        {"type": "invoke_skill", "skill": "corpus-refresh", "args": "${computed.name} --all"},
        {"type": "invoke_skill", "skill": "/corpus-status", "store_as": "computed.status"},
        initial_state={"computed": {"name": "react"}}), backend=backend)
    assert result.type == "success"
    first, second = backend.prompts
    assert "`/corpus-refresh react --all`" in first
    assert "`/corpus-status`" in second and "//" not in second
    assert result.state["computed"] == {"name": "react", "status": "ok"}  # only the second one stores


def test_invoke_skill_with_an_empty_name_fails(run_yaml):
    backend = FakeBackend()
    result, _ = run_yaml(one_action({"type": "invoke_skill", "skill": "${computed.s}"},
                                    initial_state={"computed": {"s": " / "}}), backend=backend)
    assert result.type == "failure"
    assert "`skill` is empty" in result.message
    assert backend.prompts == []


# --------------------------------------------------------------------------- #
# Without a backend the run stops (exit 4); a dry run prints the prompt instead.

NEEDS_LLM = """
    name: needs-llm
    version: "1.0"
    start_node: ask
    nodes:
      ask:
        type: action
        actions:
          - type: set_state
            field: computed.before
            value: yes
          - type: spawn_agent
            subagent_type: reviewer
            prompt: Review the change.
            store_as: computed.review
        on_success: done
        on_failure: failed
    endings:
      done: {type: success, message: "review: ${computed.review}"}
      failed: {type: failure, message: "${computed.last_error}"}
"""


def test_without_a_backend_the_run_stops(run_yaml):
    with pytest.raises(RunStopped) as stopped:
        run_yaml(NEEDS_LLM)
    assert "needs an LLM backend" in stopped.value.message
    assert "spawn_agent (reviewer)" in stopped.value.message
    assert stopped.value.node == "ask"


def test_the_cli_exits_4_without_a_backend(cli, write_workflow, tmp_path):
    path = write_workflow(NEEDS_LLM)
    done = cli("run", path, "--non-interactive", cwd=tmp_path)
    assert done.returncode == 4, done.stderr
    assert "needs an LLM backend" in done.stderr
    assert "internal error" not in done.stderr


def test_the_cli_dry_run_prints_the_prompt_instead(cli, write_workflow, tmp_path):
    path = write_workflow(NEEDS_LLM)
    done = cli("run", path, "--non-interactive", "--dry-run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "You are a reviewer agent.\n\nReview the change." in done.stdout
    assert "dry run: not sent" in done.stdout


def test_llm_hooks_are_marked_as_llm_effects_and_not_idempotent():
    from wfexec.types.registry import consequences

    for name in ("invoke_pattern", "spawn_agent", "invoke_skill"):
        spec = consequences().get(name)
        assert spec.effects == ("llm",) and spec.idempotent is False, name



# --------------------------------------------------------------------------- #
# inline (blueprint-lib)

INLINE = {"type": "inline", "description": "Count the stale sources",
          "pseudocode": "computed.stale = sources.filter(s => s.stale).length  // ${not rendered}",
          "state_reads": ["sources"], "state_writes": ["computed.stale"], "store_as": "computed.inline_result"}


def test_inline_sends_the_pseudocode_and_applies_only_declared_writes(write_workflow):
    path = write_workflow(one_action(INLINE, initial_state={"sources": [{"id": "a", "stale": True}],
                                                            "computed": {"secret": "not sent"}}))
    backend = FakeBackend('Here you go:\n```json\n{"result": "one stale", "writes": {"computed.stale": 1}}\n```')
    result = wfexec.run(path, backend=backend)
    assert result.ending == "done", result.message
    assert result.state["computed"]["stale"] == 1 and result.state["computed"]["inline_result"] == "one stale"
    (prompt,) = backend.prompts
    assert "Count the stale sources" in prompt and "// ${not rendered}" in prompt
    assert '"stale": true' in prompt and "not sent" not in prompt


@pytest.mark.parametrize("reply, message", [
    ('{"result": 1, "writes": {"computed.stale": 2, "flags.admin": true}}', "sets flags.admin, which `state_writes`"),
    ("I counted one.", "the reply is not JSON"),
])
def test_inline_refuses_a_bad_reply_and_changes_nothing(write_workflow, reply, message):
    path = write_workflow(one_action(INLINE, initial_state={"sources": []}))
    result = wfexec.run(path, backend=FakeBackend(reply))
    assert result.ending == "failed"
    assert message in result.message
    assert "stale" not in result.state["computed"] and "admin" not in result.state["flags"]


def test_invoke_skill_takes_a_skill_path_from_the_plugin_root(tmp_path):
    plugin = tmp_path / "plugin"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text("{}")
    (plugin / "skills" / "refresh").mkdir(parents=True)
    (plugin / "skills" / "refresh" / "SKILL.md").write_text("---\nname: corpus-refresh\ndescription: x\n---\n# Refresh\n")
    (plugin / "skills" / "caller").mkdir(parents=True)
    path = plugin / "skills" / "caller" / "workflow.yaml"
    path.write_text(one_action({"type": "invoke_skill", "skill_path": "skills/refresh", "args": "--all",
                                "store_as": "computed.out"}))
    backend = FakeBackend("refreshed")

    result = wfexec.run(path, backend=backend, cwd=tmp_path)

    assert result.state["computed"]["out"] == "refreshed"
    [prompt] = backend.prompts
    assert "`/corpus-refresh --all`" in prompt
    assert str(plugin / "skills" / "refresh" / "SKILL.md") in prompt


def test_invoke_skill_needs_a_skill_or_an_existing_skill_path(write_workflow):
    path = write_workflow(one_action({"type": "invoke_skill", "args": "x"}))
    [error] = wfexec.validate(path)
    assert error.severity == "error" and error.yaml_path.startswith("nodes.act.actions[0]")
    assert "skill" in error.message
    path = write_workflow(one_action({"type": "invoke_skill", "skill_path": "skills/nowhere"}))
    [error] = wfexec.validate(path)
    assert error.code == "file-missing" and "skills/nowhere" in error.message
