"""One engine, many doors (DESIGN §1): the Python API says and does what the command line does for the same
thing asked (the states a workflow runs, a states folder, option values); MCP's side is tests/mcp/test_mcp_doors.py."""

from __future__ import annotations

import json

import pytest

import wfexec
from conftest import wfexec_in_process as cli

STATES_NODE = """\
name: statesbad
version: "1.0.0"
start_node: check
nodes:
  check: {type: states, folder: states, on_success: done, on_failure: done}
endings:
  done: {type: success, message: "ok"}
"""
BAD_START = '#!/bin/bash\necho "<goto>NOWHERE.sh</goto>"\n'


def states_node_workflow(tmp_path):
    """A workflow whose `states` node runs a folder with a lint error (a <goto> to no state)."""
    (tmp_path / "wf" / "states").mkdir(parents=True)
    (tmp_path / "wf" / "workflow.yaml").write_text(STATES_NODE)
    (tmp_path / "wf" / "states" / "START.sh").write_text(BAD_START)
    return tmp_path / "wf"


def states_folder(tmp_path, start=BAD_START, name="flow"):
    (tmp_path / name).mkdir()
    (tmp_path / name / "START.sh").write_text(start)
    return tmp_path / name


def _cli_diagnostics(path, cwd) -> list[dict]:
    done = cli("validate", path, "--format", "json", cwd=cwd)
    return json.loads(done.stdout)["diagnostics"]


@pytest.mark.parametrize("made", [states_node_workflow, states_folder], ids=["states-node", "states-folder"])
def test_validate_gives_what_the_command_line_reports(tmp_path, monkeypatch, made):
    """`wfexec.validate` once missed the lint of the states a `states` node runs (it returned []), and called a
    states folder `no such file: FOLDER/workflow.yaml`, where `wfexec validate` lints both."""
    monkeypatch.chdir(tmp_path)
    path = made(tmp_path).name
    given = [d.to_json() for d in wfexec.validate(path)]
    assert given == _cli_diagnostics(path, tmp_path)
    assert [(d["code"], d["line"], d["column"]) for d in given] == [("missing-target", 2, 7)]


ASK = """\
name: ask
version: "1.0.0"
start_node: q
input_schema:
  name: {type: string}
nodes:
  q:
    type: user_prompt
    prompt:
      question: "Pick one"
      header: Pick
      options:
        - {id: a, label: Alpha, description: first}
    on_response:
      a: {next_node: done}
endings:
  done: {type: success, message: "chose"}
"""


@pytest.mark.parametrize("given,said", [
    ({"max_steps": 0}, "Invalid value for 'max_steps': Input should be greater than or equal to 1, not 0"),
    ({"max_steps": -5}, "Invalid value for 'max_steps': Input should be greater than or equal to 1, not -5"),
    ({"max_steps": 10**10}, "Invalid value for 'max_steps': Input should be less than or equal to 1000000000"),
    ({"max_steps": "5"}, "Invalid value for 'max_steps': Input should be a valid integer, not '5'"),
    ({"max_steps": True}, "Invalid value for 'max_steps': Input should be a valid integer, not True"),
    ({"inputs": "name=x"}, "Invalid value for 'inputs': Input should be a valid dictionary, not 'name=x'"),
    ({"durability": "fast"}, "Invalid value for 'durability': Input should be 'normal' or 'full', not 'fast'"),
    ({"ephemeral": "yes"}, "Invalid value for 'ephemeral': Input should be a valid boolean, not 'yes'"),
], ids=lambda value: str(value)[:30])
def test_the_run_request_refuses_what_its_options_declare_before_any_run_is_recorded(tmp_path, given, said):
    """`max_steps=0` once recorded a `stopped` run ("the run took more than 0 steps"), `"5"` a `failed` one
    (InternalError), and `inputs="name=x"` was a bare ValueError: the API checked only keyword names, where the
    command line and MCP check each value against the option's declaration."""
    (tmp_path / "ask.yaml").write_text(ASK)
    store = tmp_path / "runs.db"
    with pytest.raises(wfexec.WfexecError) as refused:
        wfexec.run(tmp_path / "ask.yaml", answers={"q": "a"}, store=store, **given)
    assert isinstance(refused.value, ValueError) and refused.value.outcome == "invalid"
    assert refused.value.message.startswith(said), refused.value.message
    assert refused.value.run_id is None and not store.exists()
    assert wfexec.run(tmp_path / "ask.yaml", answers={"q": "a"}, store=store).ending == "done"


def test_the_command_line_refuses_an_out_of_range_value_in_the_same_words(tmp_path):
    (tmp_path / "ask.yaml").write_text(ASK)
    done = cli("run", "ask.yaml", "--max-steps", "0", cwd=tmp_path)
    assert done.returncode == 2 and "Invalid value for '--max-steps': Input should be greater than or equal to 1" \
        in done.stderr, done.stderr


ECHO_INPUT = '#!/bin/bash\necho "<result>done-$RAYMOND_INPUT</result>"\n'


def test_a_states_folder_runs_through_the_api_as_wfexec_run_runs_it(tmp_path, monkeypatch):
    """`wfexec run FOLDER` ran a states folder; `wfexec.run(FOLDER)` said `no such file: FOLDER/workflow.yaml`."""
    from wfexec.durable.store import open_store

    monkeypatch.chdir(tmp_path)
    states_folder(tmp_path, ECHO_INPUT)
    store = tmp_path / "runs.db"
    done = cli("run", "flow", "--input", "abc", "--store", store, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "done-abc\n"), done.stderr
    result = wfexec.run("flow", inputs={"input": "abc"}, store=store)
    assert (result.ending, result.message) == ("done", "done-abc")
    opened = open_store(store)
    try:
        runs = opened.list(None, 10)  # the CLI's run and the API's: the same workflow written for the folder
        assert [r.status for r in runs] == ["completed", "completed"] and len({r.workflow_path for r in runs}) == 1
        assert opened.get(result.run_id).workflow_name == "flow"
    finally:
        opened.close()
    assert wfexec.run("flow", ephemeral=True).message == "done-"  # no input: an empty {{input}}
    with pytest.raises(wfexec.WfexecError, match="unknown input 'name'.*a states folder takes one input"):
        wfexec.run("flow", inputs={"name": "x"}, store=store)


def test_a_states_folder_with_no_first_state_is_refused_by_the_api_as_by_the_command_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    states_folder(tmp_path, name="flow").joinpath("START.sh").rename(tmp_path / "flow" / "OTHER.sh")
    refused = cli("run", "flow", cwd=tmp_path)
    assert refused.returncode == 2 and "[no-entry-point]" in refused.stderr
    with pytest.raises(wfexec.WorkflowError) as invalid:
        wfexec.run("flow", store=tmp_path / "runs.db")
    assert [d.code for d in invalid.value.diagnostics] == ["no-entry-point"]
    assert not (tmp_path / "runs.db").exists()


def test_a_states_folder_runs_past_its_lint_errors_at_every_door_as_ray_runs_it(tmp_path, monkeypatch):
    # An author's example in a notes file: `ray lint` calls it an error; `ray` runs the folder all the same.
    monkeypatch.chdir(tmp_path)
    flow = states_folder(tmp_path, start='#!/bin/bash\necho "<result>done</result>"\n')
    (flow / "NOTES.md").write_text("Example for authors: <goto>SOMEWHERE</goto>\n")
    assert cli("validate", "flow", cwd=tmp_path).returncode == 2  # `ray lint`'s verdict stands
    ran = cli("run", "flow", "--store", "cli.db", cwd=tmp_path)
    assert (ran.returncode, ran.stdout) == (0, "done\n"), ran.stderr
    assert "NOTES.md:1:22: warning:" in ran.stderr and "[missing-target]" in ran.stderr
    assert wfexec.run("flow", store=tmp_path / "api.db").message == "done"


def test_a_missing_input_is_asked_for_in_the_api_s_terms(tmp_path):
    (tmp_path / "named.yaml").write_text('name: named\nversion: "1"\nstart_node: greet\ninput_schema:\n'
                                         '  name: {type: string, required: true}\nnodes:\n  greet:\n    type: action\n'
                                         '    actions: [{type: set_state, field: computed.who, value: "${input.name}"}]'
                                         '\n    on_success: done\nendings:\n  done: {type: success, message: "hi"}\n')
    with pytest.raises(wfexec.WfexecError) as missing:
        wfexec.run(tmp_path / "named.yaml", ephemeral=True)
    assert missing.value.message == "missing required input 'name': pass inputs={'name': VALUE}"
