"""`wfexec validate` on a states folder runs Raymond's lint (checklist item 89): one fixture of our own per
check family of Raymond's `workflows/test_cases/lint`, each giving the same checks and the same verdict
(errors: exit 2; warnings only: exit 0)."""

from __future__ import annotations

import pytest

from conftest import wfexec_in_process as cli
from protocol_support import write_states

POLICY = "---\nallowed_transitions:\n{entries}\n---\n"


def policy(*entries: str, extra: str = "") -> str:
    return "---\nallowed_transitions:\n" + "".join(f"  - {e}\n" for e in entries) + extra + "---\n"


FIXTURES = {
    "valid_simple": ({"START.md": "Go to <goto>NEXT</goto>.", "NEXT.sh": "echo '<result>ok</result>'"}, set()),
    "missing_entry": ({"WORK.md": "<result>x</result>"}, {"no-entry-point"}),
    "ambiguous_entry": ({"1_START.md": "<result>a</result>", "START.md": "<result>b</result>"},
                        {"ambiguous-entry-point"}),
    "missing_target": ({"START.md": "Then <goto>NOWHERE</goto>."}, {"missing-target"}),
    "missing_return_absent": ({"START.md": "<call>SUB</call>", "SUB.md": "<result>s</result>"}, {"missing-return"}),
    "missing_return_bad_target": ({"START.md": '<function return="GONE">SUB</function>',
                                   "SUB.md": "<result>s</result>"}, {"missing-return"}),
    "missing_fork_next": ({"START.md": "<fork>A</fork><fork>B</fork>", "A.md": "<result>a</result>",
                           "B.md": "<result>b</result>"}, {"missing-fork-next"}),
    "ambiguous_resolution": ({"START.md": "<goto>POLL</goto>", "POLL.md": "<result>m</result>",
                              "POLL.sh": "echo '<result>s</result>'"}, {"ambiguous-state-resolution"}),
    "fork_next_mismatch": ({"START.md": '<fork next="C1">A</fork><fork next="C2">B</fork>',
                            "A.md": "<result>a</result>", "B.md": "<result>b</result>",
                            "C1.md": "<result>1</result>", "C2.md": "<result>2</result>"}, {"fork-next-mismatch"}),
    "unreachable_state": ({"START.md": "<result>done</result>", "LOST.md": "<result>never</result>"},
                          {"unreachable-state"}),
    "dead_end_state": ({"START.md": "<goto>STUCK</goto>", "STUCK.md": "Think about it."}, {"dead-end-state"}),
    "call_without_result": ({"START.md": '<call return="DONE">SUB</call>', "SUB.md": "<goto>LOOP</goto>",
                             "LOOP.md": "<goto>SUB</goto>", "DONE.md": "<result>d</result>"},
                            {"call-without-result-path"}),
    "unused_allowed_transition": ({"START.md": policy("{tag: goto, target: A}", "{tag: goto, target: B}") +
                                   "Go to A when ready.", "A.md": "<result>a</result>",
                                   "B.md": "<result>b</result>"}, {"unused-allowed-transition"}),
    "single_transition_no_warn": ({"START.md": policy("{tag: goto, target: NEXT}") + "Just go on.",
                                   "NEXT.md": "<result>n</result>"}, set()),
    "implicit_transition": ({"START.md": policy("{tag: result, payload: DONE}") + "Work."}, set()),
    "script_state": ({"START.sh": "echo '<result>done</result>'"}, set()),
    "force_implicit_ok": ({"START.md": policy("{tag: goto, target: DONE}", extra="force_implicit: true\n") + "W.",
                           "DONE.md": "<result>d</result>"}, set()),
    "force_implicit_bad_multi": ({"START.md": policy("{tag: goto, target: A}", "{tag: goto, target: B}",
                                                     extra="force_implicit: true\n") + "A or B",
                                  "A.md": "<result>a</result>", "B.md": "<result>b</result>"},
                                 {"force-implicit-invalid"}),
    "force_implicit_bad_ask": ({"START.md": policy("{tag: ask, next: DONE}", extra="force_implicit: true\n") + "Q",
                                "DONE.md": "<result>d</result>"}, {"force-implicit-invalid"}),
    "force_implicit_bad_bare_result": ({"START.md": policy("{tag: result}", extra="force_implicit: true\n") + "W"},
                                       {"force-implicit-invalid"}),
    "bad_frontmatter": ({"START.md": "---\nallowed_transitions: [unclosed\n---\n<result>x</result>"},
                        {"frontmatter-parse-error"}),
    # Raymond's decoder refuses an entry that is no mapping: the whole frontmatter does not parse.
    "text_entry": ({"START.md": "---\nallowed_transitions:\n  - result\n---\n<result>x</result>"},
                   {"frontmatter-parse-error"}),
    "invalid_model": ({"START.md": "---\nmodel: gpt-9\n---\n<result>x</result>"}, {"invalid-model"}),
    "invalid_effort": ({"START.md": "---\neffort: maximal\n---\n<result>x</result>"}, {"invalid-effort"}),
    "unknown_field": ({"START.md": "---\ncolour: blue\n---\n<result>x</result>"}, {"unknown-field"}),
    "frontmatter_trailing_blanks": ({"START.md": "--- \nmodel: gpt-9\n---\t\n<result>x</result>"}, {"invalid-model"}),
    "mixed_errors_warnings": ({"START.md": "<goto>GONE</goto>", "LOST.md": "<result>x</result>"},
                              {"missing-target", "unreachable-state"}),
    "task_values": ({"START.sh": "echo '<reset task=\"inherit\">A</reset>'", "A.sh": "echo '<goto task=\"new\">B</goto>'",
                     "B.sh": "echo '<fork next=\"START\" task=\"maybe\">A</fork>'"},
                    {"unsupported-task-attribute", "invalid-task-value"}),
    "ask_checks": ({"START.md": '<ask next="NOPE" cd="x">Which?</ask>'}, {"missing-target", "unsupported-cd-attribute"}),
}
ERRORS = {"no-entry-point", "ambiguous-entry-point", "missing-target", "missing-return", "missing-fork-next",
          "ambiguous-state-resolution", "force-implicit-invalid", "frontmatter-parse-error", "invalid-model",
          "invalid-effort", "unsupported-task-attribute", "invalid-task-value", "unsupported-cd-attribute"}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_each_lint_fixture_gives_raymonds_checks_and_verdict(tmp_path, name):
    files, expected = FIXTURES[name]
    write_states(tmp_path / name, {file: text + "\n" for file, text in files.items()})
    done = cli("validate", name, cwd=tmp_path)
    found = {line.rsplit("[", 1)[1].rstrip("]") for line in done.stdout.splitlines() if line.endswith("]")}
    assert found == expected, done.stdout
    assert done.returncode == (2 if expected & ERRORS else 0), done.stdout + done.stderr
    if not expected:
        assert f"{name}: valid states" in done.stderr


def test_a_frontmatter_error_is_reported_at_its_line_in_the_state_file(tmp_path):
    write_states(tmp_path / "flow", {"START.md": "---\nmodel: opus\nallowed_transitions:\n  - {tag: result}\n"
                                                 "  - goto\n---\n<result>x</result>\n"})
    done = cli("validate", "flow", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout.startswith("flow/START.md:5:5: error: invalid YAML frontmatter in START.md: invalid "
                                  "frontmatter (line 5): entry 2 of `allowed_transitions` is the text 'goto', not a "
                                  "mapping"), done.stdout


# One states node that runs the folder `flow` and ends with its result.
WITH_STATES = """
name: linted
version: 1
start_node: agents
nodes:
  agents: {type: states, folder: flow, store_as: computed.out, on_success: done}
endings:
  done: {type: success, message: "${computed.out}"}
"""


def test_a_target_the_script_computes_is_not_checked_and_runs(tmp_path):
    """A script's `<goto>$NEXT_STATE</goto>` is known only when it runs: lint does not call it missing (`ray lint`
    does), so `validate` passes and `run`, which refuses what lint calls an error, runs it."""
    write_states(tmp_path / "flow", {"START.sh": "echo \"<goto>$NEXT_STATE</goto>\"\n",
                                     "END.sh": "echo '<result>ran</result>'\n"})
    (tmp_path / "workflow.yaml").write_text(WITH_STATES)
    done = cli("validate", "workflow.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "missing-target" not in done.stdout
    ran = cli("run", "workflow.yaml", "--ephemeral", cwd=tmp_path, env={"NEXT_STATE": "END"})
    assert (ran.returncode, ran.stdout.strip()) == (0, "ran"), ran.stderr


# -- run refuses what validate calls an error (issue #24) ----------------------------------------------------------

BROKEN_FLOW = {"START.sh": "touch started.marker\necho '<goto>NOPE.sh</goto>'\n",
               "END.sh": "echo '<result>ran</result>'\n"}
NOPE = "<goto> in START.sh names 'NOPE.sh', which is not a state of this workflow [missing-target]"


def test_run_refuses_a_workflow_whose_states_folder_validate_calls_wrong_at_the_state_files_line(tmp_path,
                                                                                                   private_run_store):
    import wfexec
    from wfexec.language.diagnostics import WorkflowError

    write_states(tmp_path / "flow", BROKEN_FLOW)
    (tmp_path / "workflow.yaml").write_text(WITH_STATES)
    expected = f"flow/START.sh:2:7: error: states node 'agents': {NOPE}"
    validated = cli("validate", "workflow.yaml", cwd=tmp_path)
    assert validated.returncode == 2 and validated.stdout.splitlines()[0] == expected, validated.stdout
    for args in (["run", "workflow.yaml"], ["run", "workflow.yaml", "--ephemeral"]):
        ran = cli(*args, cwd=tmp_path)
        assert ran.returncode == 2, ran.stdout + ran.stderr
        assert ran.stderr.splitlines() == [expected, "workflow.yaml: not run, the workflow has 1 error (wfexec "
                                                     "validate shows them all)"], ran.stderr
    assert not (tmp_path / "started.marker").exists() and not private_run_store.exists()
    with pytest.raises(WorkflowError, match="flow/START.sh:2:7: error"):
        wfexec.run(tmp_path / "workflow.yaml", cwd=tmp_path, store=private_run_store)


@pytest.mark.parametrize("command", [["run"], ["states"]])
def test_run_and_states_start_a_states_folder_past_what_ray_lint_calls_an_error(tmp_path, private_run_store, command):
    """`ray` never lints before it runs a folder: `wfexec validate` keeps `ray lint`'s verdicts, and a run of the
    folder says them as warnings and starts (a full model id, an author's example tag are no reason to refuse)."""
    write_states(tmp_path / "flow", {"START.md": "---\nmodel: gpt-9\n---\nFirst.\nThen <goto>GONE</goto>.\n",
                                     "GONE2.sh": "touch started.marker\necho '<result>x</result>'\n"})
    validated = cli("validate", "flow", cwd=tmp_path)
    errors = [line for line in validated.stdout.splitlines() if ": error: " in line]
    assert errors == ["flow/START.md:2:1: error: invalid model 'gpt-9' in START.md; must be one of: opus, sonnet, "
                      "haiku [invalid-model]",
                      "flow/START.md:5:6: error: <goto> in START.md names 'GONE', which is not a state of this "
                      "workflow [missing-target]"], validated.stdout
    assert validated.returncode == 2
    ran = cli(*command, "flow", "--backend", "command:cat", cwd=tmp_path)
    warned = [line.replace(": warning: ", ": error: ") for line in ran.stderr.splitlines() if ": warning: " in line]
    assert warned == errors, ran.stderr
    # The reply (the prompt, echoed) goes to GONE, which is no state: the run's own error, as in `ray`.
    assert ran.returncode == 1 and "GONE" in ran.stderr.splitlines()[-1], ran.stderr
    assert private_run_store.exists() and not (tmp_path / "started.marker").exists()


def test_resume_refuses_once_a_state_file_is_broken(tmp_path, private_run_store):
    """A run parked before its states node cannot be resumed into states that validate now calls wrong."""
    write_states(tmp_path / "flow", {"START.sh": "echo '<goto>END.sh</goto>'\n",
                                     "END.sh": "echo '<result>ran</result>'\n"})
    (tmp_path / "workflow.yaml").write_text(WITH_STATES.replace("start_node: agents", "start_node: ask").replace(
        "nodes:\n", "nodes:\n  ask:\n    type: user_prompt\n    prompt: {question: Go on, options: [{id: go, label: Go}]}\n"
                    "    on_response: {go: {next_node: agents}}\n"))
    parked = cli("run", "workflow.yaml", cwd=tmp_path)
    assert parked.returncode == 3, parked.stderr
    (tmp_path / "flow" / "START.sh").write_text("echo '<goto>NOPE.sh</goto>'\n")
    run_id = parked.stderr.split("wfexec resume ")[1].split()[0]
    resumed = cli("resume", run_id, "--answer", "ask=go", cwd=tmp_path)
    assert resumed.returncode == 2, resumed.stdout + resumed.stderr
    assert resumed.stderr.splitlines()[0] == f"flow/START.sh:1:7: error: states node 'agents': {NOPE}", resumed.stderr
    assert "no longer validates" in resumed.stderr


def test_a_raymond_yaml_states_target_with_an_extension_is_a_known_state(tmp_path):
    """A Raymond .yaml names states without extensions; `<goto>COUNT.md</goto>` there is state COUNT, as the run
    resolves it. Lint called it missing, which `run` now refuses: it must not."""
    from pathlib import Path

    fixture = Path(__file__).parent / "fixtures" / "raymond.yaml"
    (tmp_path / "flow.yaml").write_text(fixture.read_text())
    assert "COUNT.md</goto>" in fixture.read_text()
    done = cli("validate", "flow.yaml", cwd=tmp_path)
    assert done.returncode == 0 and "flow.yaml: valid states" in done.stderr, done.stdout + done.stderr
