"""The `states` node inside a workflow.yaml, end to end through `wfexec.run(...)` and the real CLI:
store_as (and fork results beside it), on_result routing, on_failure on a script error, the budget stop,
inline and zip scopes, load-time checks, the step budget, and `wfexec.commands.states.run_states_path`.
"""

from __future__ import annotations

import json
import zipfile

import pytest
from protocol_support import FIXTURES, Quiet, ScriptedBackend, run_folder, write_states

import wfexec
from wfexec.backends import create_backend
from wfexec.exit_codes import exit_code_for
from wfexec.language.diagnostics import WorkflowError
from wfexec.running.engine import RunError, RunStopped


def workflow(states_node: dict, *, initial_state=None, extra_nodes=None) -> str:
    doc = {"name": "states-test", "version": "1", "start_node": "work",
           "nodes": {"work": {"type": "states", **states_node}, **(extra_nodes or {})},
           "endings": {"done": {"type": "success", "message": "done: ${computed.out}"},
                       "approved": {"type": "success", "message": "approved"},
                       "failed": {"type": "failure", "message": "${computed.last_error}"}}}
    if initial_state:
        doc["initial_state"] = initial_state
    return json.dumps(doc, indent=2)


def run_workflow(write_workflow, tmp_path, node, backend=None, **kw):
    path = write_workflow(workflow(node, **{k: kw.pop(k) for k in ("initial_state", "extra_nodes") if k in kw}))
    quiet = Quiet()
    result = wfexec.run(path, backend=backend, io=quiet.console, cwd=tmp_path, **kw)
    return result, quiet


FORKING = {
    "START.sh": 'echo "<fork next=\\"JOIN\\" item=\\"a\\">W</fork><fork next=\\"JOIN\\" item=\\"b\\">W</fork>"\n',
    "W.sh": 'echo "<result>did $item</result>"\n',
    "JOIN.sh": 'echo "<result>  main: $RAYMOND_INPUT  </result>"\n',
}


def test_store_as_keeps_the_main_result_and_lists_fork_results_beside_it(write_workflow, tmp_path):
    write_states(tmp_path / "flow", FORKING)
    result, _ = run_workflow(write_workflow, tmp_path, {"folder": "flow", "input": "${plan}", "store_as": "computed.out",
                                                        "on_success": "done"}, initial_state={"plan": "P"})
    assert result.ending == "done"
    assert result.state["computed"]["out"] == "  main:   "  # a script's payload is not trimmed
    forks = result.state["computed"]["out_forks"]
    assert sorted(f["result"] for f in forks) == ["did a", "did b"]
    assert {f["agent"] for f in forks} == {"main_w1", "main_w2"}
    entry = result.state["history"][0]
    assert entry["outcome"]["success"] is True and entry["outcome"]["forks"] == 2 and entry["outcome"]["states"] == 4


def test_on_result_routes_on_the_trimmed_payload(write_workflow, tmp_path):
    write_states(tmp_path / "flow", {"START.sh": 'echo "<result> $RAYMOND_INPUT </result>"\n'})
    node = {"folder": "flow", "input": "${verdict}", "store_as": "computed.out", "on_result": {"APPROVED": "approved"},
            "on_success": "done"}
    approved, _ = run_workflow(write_workflow, tmp_path, node, initial_state={"verdict": "APPROVED"})
    other, _ = run_workflow(write_workflow, tmp_path, node, initial_state={"verdict": "MAYBE"})
    assert (approved.ending, other.ending) == ("approved", "done")
    assert approved.state["history"][0]["target"] == "approved"


def test_a_script_error_routes_on_failure_with_the_message(write_workflow, tmp_path):
    write_states(tmp_path / "flow", {"START.sh": "echo broken >&2; exit 7\n"})
    result, _ = run_workflow(write_workflow, tmp_path, {"folder": "flow", "on_success": "done",
                                                        "on_failure": "failed"})
    assert result.ending == "failed"
    assert result.message == "main: START.sh exited with status 7; a script must exit 0 (stderr: broken)"
    assert result.state["history"][0]["outcome"]["success"] is False


def test_without_on_failure_a_script_error_fails_the_run(write_workflow, tmp_path):
    write_states(tmp_path / "flow", {"START.sh": "echo 'no tag'\n"})
    with pytest.raises(RunError) as caught:
        run_workflow(write_workflow, tmp_path, {"folder": "flow", "on_success": "done"})
    assert exit_code_for(caught.value) == 1
    assert "node 'work': main: START.sh printed no transition tag" in caught.value.format()


BUDGET_CASSETTE = """\
wfexec_cassette: 1
interactions:
  - {kind: llm, agent: main, state: START.md, prompt: "Think.", reply: "<goto>AGAIN</goto>", cost_usd: 0.02}
  - {kind: llm, agent: main, state: AGAIN.md, prompt: "Again.", reply: "<result>x</result>", cost_usd: 0.02}
"""


def test_the_budget_stops_the_node_and_routes_on_failure(write_workflow, tmp_path):
    write_states(tmp_path / "flow", {"START.md": "Think.", "AGAIN.md": "Again."})
    (tmp_path / "c.yaml").write_text(BUDGET_CASSETTE)
    node = {"folder": "flow", "budget_usd": 0.01, "on_success": "done", "on_failure": "failed"}
    result, _ = run_workflow(write_workflow, tmp_path, node, backend=create_backend(None, replay=tmp_path / "c.yaml"))
    assert result.ending == "failed"
    assert result.message == ("main: cost budget exceeded before the LLM call for AGAIN.md: spent $0.0200 of a "
                              "$0.0100 budget")
    assert result.state["history"][0]["outcome"]["cost_usd"] == 0.02
    node.pop("on_failure")
    with pytest.raises(RunStopped, match="cost budget exceeded"):
        run_workflow(write_workflow, tmp_path, node, backend=create_backend(None, replay=tmp_path / "c.yaml"))


def test_no_backend_stops_even_with_on_failure(write_workflow, tmp_path):
    write_states(tmp_path / "flow", {"START.md": "Think."})
    with pytest.raises(RunStopped, match="no LLM backend is configured"):
        run_workflow(write_workflow, tmp_path, {"folder": "flow", "on_success": "done", "on_failure": "failed"})


def test_inline_states_files_and_objects(write_workflow, tmp_path):
    node = {"states": {"START.sh": "echo \"<goto input=\\\"$PWD\\\">ASK</goto>\"\n",
                       "ASK": {"prompt": "Dir is {{input}}.", "model": "haiku"}},
            "store_as": "computed.out", "on_success": "done"}
    backend = ScriptedBackend("<result>ok</result>")
    result, _ = run_workflow(write_workflow, tmp_path, node, backend=backend)
    assert result.state["computed"]["out"] == "ok"
    assert backend.requests[0].prompt == f"Dir is {tmp_path.resolve()}."  # scripts run in the node's directory
    assert backend.requests[0].model == "haiku"


def test_zip_and_raymond_yaml_folders(write_workflow, tmp_path):
    with zipfile.ZipFile(tmp_path / "flow.zip", "w") as archive:
        archive.writestr("flow/START.sh", "echo '<result>from the zip</result>'\n")
    result, _ = run_workflow(write_workflow, tmp_path, {"folder": "flow.zip", "store_as": "computed.out",
                                                        "on_success": "done"})
    assert result.message == "done: from the zip"
    (tmp_path / "flow.yaml").write_text((FIXTURES / "raymond.yaml").read_text())
    result, quiet = run_workflow(write_workflow, tmp_path, {"folder": "flow.yaml", "store_as": "computed.out",
                                                            "on_success": "done"})
    assert result.message.startswith("done: counted 42 in ")
    assert "starting main" in quiet.printed


def test_cwd_and_start_and_a_node_level_backend(write_workflow, tmp_path):
    (tmp_path / "work").mkdir()
    program = tmp_path / "llm.sh"
    program.write_text("#!/bin/bash\ncat > /dev/null\necho '<result>from the command</result>'\n")
    program.chmod(0o755)
    write_states(tmp_path / "flow", {"A.sh": "pwd > here.txt; echo '<goto>B</goto>'\n", "B.md": "Go."})
    node = {"folder": "flow", "start": "A", "cwd": "${where}", "backend": f"command:{program}",
            "store_as": "computed.out", "on_success": "done"}
    result, _ = run_workflow(write_workflow, tmp_path, node, initial_state={"where": "work"})
    assert result.message == "done: from the command"
    assert (tmp_path / "work" / "here.txt").read_text().strip() == str((tmp_path / "work").resolve())


def test_a_states_loop_counts_against_the_step_budget(write_workflow, tmp_path):
    write_states(tmp_path / "flow", {"START.sh": "echo '<reset>START</reset>'\n"})
    with pytest.raises(RunStopped, match="more than 15 steps"):
        run_workflow(write_workflow, tmp_path, {"folder": "flow", "on_success": "done", "on_failure": "failed"},
                     max_steps=15)


@pytest.mark.parametrize("node,files,message", [
    ({"folder": "flow"}, {"OTHER.sh": "x"}, "no entry point"),
    ({"folder": "flow", "start": "NOPE"}, {"START.sh": "x"}, "state 'NOPE' not found"),
    ({"folder": "flow"}, {"START.md": "x", "START.sh": "x"}, "ambiguous"),
    ({"states": {"START": "echo"}}, {}, "needs an extension"),
    ({"states": {"START.sh": "echo"}, "backend": "gpt"}, {}, "unknown LLM backend 'gpt'"),
    ({"folder": "missing"}, {}, "does not exist"),
])
def test_load_time_checks(write_workflow, tmp_path, node, files, message):
    write_states(tmp_path / "flow", files)
    path = write_workflow(workflow({**node, "on_success": "done"}))
    with pytest.raises(WorkflowError) as caught:
        wfexec.load(path)
    assert message in str(caught.value) or any(message in d.message for d in caught.value.diagnostics)


def test_dry_run_runs_nothing(write_workflow, tmp_path):
    from wfexec.running.engine import Options, run_workflow as engine_run

    write_states(tmp_path / "flow", {"START.sh": "touch ran.txt; echo '<result>x</result>'\n"})
    path = write_workflow(workflow({"folder": "flow", "on_success": "approved"}))
    quiet = Quiet()
    result = engine_run(wfexec.load(path), io=quiet.console, options=Options(dry_run=True, cwd=tmp_path))
    assert result.ending == "approved" and not (tmp_path / "ran.txt").exists()
    assert "states node 'work' (dry run: not run)" in quiet.printed and "START.sh" in quiet.printed


def test_a_dry_run_leaves_a_placeholder_where_the_node_stores_its_result(write_workflow, tmp_path):
    """As a skipped action leaves `<dry-run: PATH>` at each path it would write: the result at `store_as` and the
    forks' results beside it. What reads them shows the placeholder (an ending's message), and what decides on one
    stops the dry run (exit 4) naming the node it would come from, instead of deciding on a missing value."""
    from wfexec.running.engine import Options, run_workflow as engine_run

    write_states(tmp_path / "flow", {"START.sh": "touch ran.txt; echo '<result>APPROVED</result>'\n"})
    path = write_workflow(workflow({"folder": "flow", "store_as": "computed.out", "on_success": "done"}))
    quiet = Quiet()
    result = engine_run(wfexec.load(path), io=quiet.console, options=Options(dry_run=True, cwd=tmp_path))
    assert result.ending == "done" and not (tmp_path / "ran.txt").exists()
    assert result.state["computed"]["out"] == "<dry-run: computed.out>"
    assert result.state["computed"]["out_forks"] == "<dry-run: computed.out_forks>"
    assert result.message == "done: <dry-run: computed.out>"

    check = {"check": {"type": "conditional",
                       "condition": {"type": "evaluate_expression", "expression": "computed.out == 'APPROVED'"},
                       "branches": {"on_true": "approved", "on_false": "done"}}}
    path = write_workflow(workflow({"folder": "flow", "store_as": "computed.out", "on_success": "check"},
                                   extra_nodes=check))
    with pytest.raises(RunStopped) as stopped:
        engine_run(wfexec.load(path), io=Quiet().console, options=Options(dry_run=True, cwd=tmp_path))
    assert "dry run stops here" in stopped.value.message and "computed.out" in stopped.value.message
    assert "the result of states node 'work' (not run in a dry run)" in stopped.value.message
    assert exit_code_for(stopped.value) == 4


# -- the real CLI -----------------------------------------------------------------------------

def test_cli_runs_a_scripts_only_states_node(cli, write_workflow, tmp_path):
    write_states(tmp_path / "flow", FORKING)
    path = write_workflow(workflow({"folder": "flow", "store_as": "computed.out", "on_success": "done"}))
    done = cli("run", path, "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["ending"] == "done" and len(data["state"]["computed"]["out_forks"]) == 2


def test_cli_exit_code_of_a_failing_states_node(cli, write_workflow, tmp_path):
    write_states(tmp_path / "flow", {"START.sh": "exit 2\n"})
    path = write_workflow(workflow({"folder": "flow", "on_success": "done", "on_failure": "failed"}))
    done = cli("run", path, cwd=tmp_path)
    assert done.returncode == 1
    assert "main: START.sh exited with status 2" in done.stdout + done.stderr


# -- run_states_path (the future `wfexec states PATH`) ------------------------------------------------

def test_run_states_path_forms_and_exit_codes(tmp_path):
    flow = write_states(tmp_path / "flow", {"START.sh": "echo '<result>start</result>'\n",
                                            "OTHER.sh": "echo '<result>other</result>'\n"})
    assert run_folder(flow)[0].to_json()["result"] == "start"
    assert run_folder(flow / "OTHER.sh")[0].result == "other"  # a state file: its folder, starting there
    yaml_path = tmp_path / "flow.yaml"
    yaml_path.write_text((FIXTURES / "raymond.yaml").read_text())
    result, _ = run_folder(f"{yaml_path}/COUNT", input="7", cwd=tmp_path)
    assert result.result.startswith("counted 7 in ")
    missing, _ = run_folder(tmp_path / "nowhere", cwd=tmp_path)
    assert (missing.status, missing.exit_code) == ("invalid", 2) and "does not exist" in missing.error
    empty = write_states(tmp_path / "empty", {"NOTES.md": "x"})
    assert run_folder(empty)[0].exit_code == 2
    failing = write_states(tmp_path / "fail", {"START.sh": "exit 1\n"})
    assert run_folder(failing)[0].exit_code == 1
    assert run_folder(flow, budget_usd=-1)[0].exit_code == 2
    loop = write_states(tmp_path / "loop", {"START.sh": "echo '<goto>START</goto>'\n"})
    looped, _ = run_folder(loop, max_steps=5)
    assert (looped.exit_code, looped.status) == (4, "stopped") and "more than 5 states" in looped.error


def test_a_node_with_on_ask_reject_fails_before_any_state_runs_when_its_states_may_ask(write_workflow, tmp_path):
    write_states(tmp_path / "flow", {
        "START.sh": "touch ran; echo '<goto>ASK</goto>'\n", "DONE.sh": "echo '<result>x</result>'\n",
        "ASK.md": "---\nallowed_transitions:\n  - {tag: ask, next: DONE}\n---\nMay I?\n"})
    node = {"folder": "flow", "on_ask": "reject", "store_as": "computed.out", "on_success": "done",
            "on_failure": "failed"}
    result, _ = run_workflow(write_workflow, tmp_path, node, backend=ScriptedBackend())
    assert result.ending == "failed" and not (tmp_path / "ran").exists()
    assert "may ask a person (ASK.md allows <ask>), and on_ask is reject" in result.message
