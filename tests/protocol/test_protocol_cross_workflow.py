"""Cross-workflow tags (reference §1.9–§1.13, checklist items 16, 69, 84; the behaviours of Raymond's
`cross_workflow_*` and `reset_workflow_*` fixtures, with fixtures of our own): `<call-workflow>`,
`<function-workflow>`, `<fork-workflow>` and `<reset-workflow>` into folders, zips and YAML files, at their
entry point or a named state, with rendered `input`, `cd`, the return stack and the nesting limit."""

from __future__ import annotations

import zipfile

from protocol_support import run_folder, write_states
from wfexec.protocol.agents import AgentsState


def echo_result(text: str) -> str:
    return f'echo "<result>{text}</result>"\n'


def test_call_workflow_runs_the_other_folder_and_returns_its_result(tmp_path):
    outer = write_states(tmp_path / "outer", {
        "START.sh": "echo '<call-workflow return=\"AFTER\" input=\"from {{agent_id}}\">../inner/</call-workflow>'\n",
        "AFTER.sh": echo_result("back with $RAYMOND_INPUT"),
    })
    write_states(tmp_path / "inner", {
        "START.sh": 'echo "$RAYMOND_INPUT" > "$OLDPWD/../seen.txt" 2>/dev/null; '
                    'echo "inner got $RAYMOND_INPUT" >> log.txt; echo \'<goto>MIDDLE</goto>\'\n',
        "MIDDLE.sh": echo_result("inner done"),
    })
    result, _ = run_folder(outer, cwd=tmp_path)
    assert (result.status, result.result) == ("completed", "back with inner done"), result.error
    assert (tmp_path / "log.txt").read_text() == "inner got from main\n"  # input rendered; scripts in the run's cwd
    main = result.outcome.state.agent("main")
    assert (main.scope, main.depth, main.stack) == ("", 0, [])
    assert AgentsState.from_dict(result.outcome.state.to_dict()) == result.outcome.state


def test_the_target_may_be_a_zip_a_yaml_file_or_a_named_state(tmp_path):
    with zipfile.ZipFile(tmp_path / "zipped.zip", "w") as archive:
        archive.writestr("zipped/START.sh", echo_result("from the zip"))
    (tmp_path / "single.yaml").write_text(
        "states:\n  START:\n    sh: |\n      echo '<result>from the yaml</result>'\n"
        "  OTHER:\n    sh: |\n      echo '<result>from the yaml, OTHER</result>'\n")
    write_states(tmp_path / "folder", {"START.sh": echo_result("folder start"),
                                       "OTHER_ENTRY.sh": echo_result("folder other entry")})
    for target, expected in (("../zipped.zip", "from the zip"), ("../single.yaml", "from the yaml"),
                             ("../single.yaml/OTHER", "from the yaml, OTHER"), ("../folder", "folder start"),
                             ("../folder/OTHER_ENTRY", "folder other entry"), (str(tmp_path / "folder"),
                                                                                "folder start")):
        outer = write_states(tmp_path / "outer", {
            "START.sh": f"echo '<function-workflow return=\"AFTER\">{target}</function-workflow>'\n",
            "AFTER.sh": echo_result("$RAYMOND_INPUT"),
        })
        result, _ = run_folder(outer, cwd=tmp_path)
        assert (result.status, result.result) == ("completed", expected), (target, result.error)


def test_function_workflow_with_cd_runs_there_and_the_caller_gets_its_directory_back(tmp_path):
    (tmp_path / "work").mkdir()
    outer = write_states(tmp_path / "outer", {
        "START.sh": "echo '<function-workflow return=\"AFTER\" cd=\"work\">../inner</function-workflow>'\n",
        "AFTER.sh": 'pwd > after.txt; ' + echo_result("$RAYMOND_INPUT"),
    })
    write_states(tmp_path / "inner", {"START.sh": "pwd > inner.txt; " + echo_result("ok")})
    result, _ = run_folder(outer, cwd=tmp_path)
    assert result.result == "ok", result.error
    assert (tmp_path / "work" / "inner.txt").read_text().strip() == str((tmp_path / "work").resolve())
    assert (tmp_path / "after.txt").read_text().strip() == str(tmp_path.resolve())


def test_fork_workflow_starts_a_worker_in_the_other_folder(tmp_path):
    outer = write_states(tmp_path / "outer", {
        "START.sh": "echo '<fork-workflow next=\"WAIT\" input=\"job {{agent_id}}\">../builder/</fork-workflow>'\n",
        "WAIT.sh": "while [ ! -f built.txt ]; do sleep 0.05; done; " + echo_result("main saw $(cat built.txt)"),
    })
    write_states(tmp_path / "builder", {
        "START.sh": 'echo "$RAYMOND_AGENT_ID built $RAYMOND_INPUT" > built.txt; ' + echo_result("built"),
    })
    result, _ = run_folder(outer, cwd=tmp_path)
    assert result.result == "main saw main_builde1 built job main", result.error  # the caller's directory
    assert result.forks == [{"agent": "main_builde1", "result": "built"}]


def test_reset_workflow_clears_the_stack_so_the_caller_never_gets_control_back(tmp_path):
    (tmp_path / "there").mkdir()
    outer = write_states(tmp_path / "outer", {
        "START.sh": "echo '<call-workflow return=\"DONE\">../inner/</call-workflow>'\n",
        "DONE.sh": echo_result("outer_sentinel"),
    })
    write_states(tmp_path / "inner", {
        "START.sh": "echo '<reset-workflow input=\"hello_from_caller\" cd=\"there\">../final/</reset-workflow>'\n",
    })
    write_states(tmp_path / "final", {"START.sh": 'pwd > where.txt; ' + echo_result("done: $RAYMOND_INPUT")})
    result, _ = run_folder(outer, cwd=tmp_path)
    assert (result.status, result.result) == ("completed", "done: hello_from_caller"), result.error
    assert (tmp_path / "there" / "where.txt").exists()


def test_nesting_deeper_than_four_pauses_the_agent(tmp_path):
    flow = write_states(tmp_path / "flow", {
        "START.sh": "echo '<call-workflow return=\"START\">../flow/</call-workflow>'\n",
    })
    result, _ = run_folder(flow, cwd=tmp_path)
    assert result.status == "stopped" and result.exit_code == 4
    assert "would nest workflows more than 4 deep" in result.error
    assert result.outcome.state.agent("main").depth == 4


def test_a_missing_workflow_or_a_cd_on_call_workflow_pauses_the_agent(tmp_path):
    for tag, message in (('<function-workflow return="START">../nowhere/</function-workflow>',
                          "'../nowhere/' is no states folder"),
                         ('<call-workflow return="START" cd="x">../flow/</call-workflow>',
                          "<call-workflow> takes no `cd`")):
        flow = write_states(tmp_path / "flow", {"START.sh": f"echo '{tag}'\n"})
        result, _ = run_folder(flow, cwd=tmp_path)
        assert result.status == "stopped" and message in result.error, result.error


def test_a_zip_or_yaml_caller_reaches_paths_from_beside_itself(tmp_path):
    """Raymond's reset_workflow_zip_caller: in `caller.zip`, `../target/` is `target/` beside the archive (a zip or
    YAML scope counts as the folder of its name)."""
    with zipfile.ZipFile(tmp_path / "caller.zip", "w") as archive:
        archive.writestr("START.sh", "echo '<reset-workflow input=\"zipped\">../target/</reset-workflow>'\n")
    (tmp_path / "caller.yaml").write_text(
        "states:\n  START:\n    sh: |\n      echo '<reset-workflow input=\"yamled\">../target/</reset-workflow>'\n")
    write_states(tmp_path / "target", {"START.sh": echo_result("target got $RAYMOND_INPUT")})
    for caller, said in (("caller.zip", "zipped"), ("caller.yaml", "yamled")):
        result, _ = run_folder(tmp_path / caller, cwd=tmp_path)
        assert (result.status, result.result) == ("completed", f"target got {said}"), result.error
