"""Property: a template that fails at run time, put into any templated field of any node type (or of an
ending), makes `wfexec run` exit 1 with `file:line:col: error:` naming where, and never an internal error.

Runs the real command in-process (typer's runner: the same code as the console script) with a real
SQLite store, and the API beside it.
"""

from __future__ import annotations

import copy
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from typer.testing import CliRunner

import wfexec
from wfexec.cli import app
from wfexec.durable.store import open_store
from wfexec.errors import WfexecError
from wfexec.exit_codes import exit_code_for
from wfexec.running.engine import InternalError

HOLE = "\0hole"  # where the failing template goes


def failing_templates(context: str) -> list[str]:
    """Templates that compile (validate accepts them) and fail when rendered, wrapped in `context`.

    The one place that knows the expression language (JavaScript): a thrown error, and a property read
    from a name nothing set (undefined).
    """
    return [context.replace("@", body) for body in ("${ (() => { throw new Error('boom') })() }",
                                                     "${ missing_name.attr }")]


CONTEXTS = ["@", "before @ after"]

SUCCESS = {"type": "success", "message": "ok"}


def workflow(nodes: dict, endings: dict | None = None, **top) -> dict:
    return {"name": "p", "version": 1, "start_node": next(iter(nodes)), **top, "nodes": nodes,
            "endings": endings or {"done": SUCCESS}}


def action(*actions) -> dict:
    return {"go": {"type": "action", "actions": list(actions), "on_success": "done"}}


def prompt(**fields) -> dict:
    question = {"question": "Pick", "options": [{"id": "a", "label": "A"}], **fields.pop("prompt", {})}
    return {"go": {"type": "user_prompt", "prompt": question,
                   "on_response": fields.pop("on_response", {"a": {"next_node": "done"}})}}


# Every templated field, as (node type: field, workflow with HOLE in it).
FIELDS = {
    "action: a consequence parameter": workflow(action({"type": "set_state", "field": "computed.x", "value": HOLE})),
    "action: display_message": workflow(action({"type": "display_message", "message": HOLE})),
    "action: computed on_success target": workflow(
        {"go": {"type": "action", "actions": [{"type": "set_flag", "flag": "x"}], "on_success": HOLE}}),
    "conditional: a condition parameter": workflow(
        {"go": {"type": "conditional", "condition": {"type": "state_equals", "field": "computed.x", "value": HOLE},
                "branches": {"true": "done", "false": "done"}}}),
    "validation_gate: a validation parameter": workflow(
        {"go": {"type": "validation_gate",
                "validations": [{"type": "state_equals", "field": "computed.x", "value": HOLE}],
                "on_valid": "done", "on_invalid": "done"}}),
    "validation_gate: error_message": workflow(
        {"go": {"type": "validation_gate", "validations": [{"type": "flag_set", "flag": "never",
                                                            "error_message": HOLE}],
                "on_valid": "done", "on_invalid": "done"}}),
    "user_prompt: question": workflow(prompt(prompt={"question": HOLE})),
    "user_prompt: header": workflow(prompt(prompt={"header": HOLE})),
    "user_prompt: option label": workflow(prompt(prompt={"options": [{"id": "a", "label": HOLE}]})),
    "user_prompt: option description": workflow(
        prompt(prompt={"options": [{"id": "a", "label": "A", "description": HOLE}]})),
    "user_prompt: option_mapping label": workflow(
        {"go": {"type": "user_prompt",
                "prompt": {"question": "Pick", "options_from_state": "things",
                           "option_mapping": {"id": "${item}", "label": HOLE}},
                "on_response": {"selected": {"next_node": "done"}}}}, initial_state={"things": ["a"]}),
    "user_prompt: on_response consequence parameter": workflow(
        prompt(on_response={"a": {"next_node": "done",
                                  "consequences": [{"type": "set_state", "field": "computed.x", "value": HOLE}]}})),
    "reference: input": workflow({"go": {"type": "reference", "workflow": "child.yaml", "input": {"x": HOLE},
                                         "next_node": "done"}}),
    "reference: section": workflow({"go": {"type": "reference", "doc": "guide.md", "section": HOLE,
                                           "next_node": "done"}}),
    "reference: context": workflow({"go": {"type": "reference", "doc": "guide.md", "context": {"x": HOLE},
                                           "next_node": "done"}}),
    "states: input": workflow({"go": {"type": "states", "states": {"START.sh": "echo '<result>ok</result>'"},
                                      "input": HOLE, "on_success": "done"}}),
    "states: cwd": workflow({"go": {"type": "states", "states": {"START.sh": "echo '<result>ok</result>'"},
                                    "cwd": HOLE, "on_success": "done"}}),
    "ending: message": workflow(action({"type": "set_flag", "flag": "x"}), {"done": {**SUCCESS, "message": HOLE}}),
    "ending: details": workflow(action({"type": "set_flag", "flag": "x"}),
                                {"done": {"type": "failure", "message": "no", "details": HOLE}}),
    "ending: summary": workflow(action({"type": "set_flag", "flag": "x"}), {"done": {**SUCCESS, "summary": {"k": HOLE}}}),
}

CHILD = json.dumps(workflow(action({"type": "set_flag", "flag": "x"})))


def answers(field: str) -> dict:
    """The answer to `go` when it asks (an answer for a node that asks nothing is refused before the run)."""
    return {"go": "a"} if FIELDS[field]["nodes"]["go"]["type"] == "user_prompt" else {}


def fill(value, template: str):
    if value == HOLE:
        return template
    if isinstance(value, dict):
        return {k: fill(v, template) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, template) for v in value]
    return value


def write(folder, field: str, template: str):
    (folder / "child.yaml").write_text(CHILD)
    (folder / "guide.md").write_text("# Guide\n\n## Steps\n\nDo things.\n")
    path = folder / "workflow.yaml"
    path.write_text(json.dumps(fill(copy.deepcopy(FIELDS[field]), template), indent=1))  # JSON is YAML
    return path


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_with_a_template_that_works_every_workflow_reaches_its_ending(field, tmp_path):
    """The control: the failures below come from the template, nothing else."""
    from wfexec.backends import create_backend

    fine = {"states: cwd": "${ '.' }", "reference: section": "${ 'Steps' }"}.get(field, "${ 'done' }")
    result = wfexec.run(write(tmp_path, field, fine), answers=answers(field), cwd=tmp_path,
                        backend=create_backend("command:cat"))  # a document step's reply: its own prompt
    assert result.ending == "done"


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_every_field_fails_through_the_api_as_a_run_error_at_its_node_or_ending(field, tmp_path):
    for template in failing_templates("@"):
        path = write(tmp_path, field, template)
        with pytest.raises(WfexecError) as caught:
            wfexec.run(path, answers=answers(field), cwd=tmp_path)
        error = caught.value
        assert not isinstance(error, InternalError) and exit_code_for(error) == 1, error.format()
        assert error.position.file == str(path) and error.position.line > 1
        assert error.node == "go" or "ending 'done'" in error.message, error.format()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(sorted(FIELDS)), context=st.sampled_from(CONTEXTS), which=st.integers(0, 1))
def test_a_failing_template_anywhere_makes_the_command_exit_1_with_a_position(field, context, which,
                                                                            tmp_path_factory):
    folder = tmp_path_factory.mktemp("wf")
    path = write(folder, field, failing_templates(context)[which])
    assert not [d for d in wfexec.validate(path) if d.severity == "error"], wfexec.validate(path)

    given = [f"--answer={key}={value}" for key, value in answers(field).items()]
    done = CliRunner().invoke(app, ["run", str(path), *given, "--store", str(folder / "runs.db")])
    assert done.exit_code == 1, (field, done.output)
    assert re.search(r"workflow\.yaml:\d+:\d+: error: ", done.output), (field, done.output)
    assert "internal error" not in done.output and "Traceback" not in done.output
    store = open_store(folder / "runs.db")
    try:
        assert [run.status for run in store.list()] == ["failed"], field
    finally:
        store.close()
