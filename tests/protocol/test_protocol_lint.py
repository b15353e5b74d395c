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
    "invalid_model": ({"START.md": "---\nmodel: gpt-9\n---\n<result>x</result>"}, {"invalid-model"}),
    "invalid_effort": ({"START.md": "---\neffort: maximal\n---\n<result>x</result>"}, {"invalid-effort"}),
    "unknown_field": ({"START.md": "---\ncolour: blue\n---\n<result>x</result>"}, {"unknown-field"}),
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


def test_a_workflows_states_node_is_linted_at_its_node_and_runs_all_the_same(tmp_path):
    """`validate` reports the findings at the node; `run` does not refuse them (ray runs what ray lint flags)."""
    write_states(tmp_path / "flow", {"START.sh": "echo \"<goto>$NEXT_STATE</goto>\"\n",
                                     "END.sh": "echo '<result>ran</result>'\n"})
    (tmp_path / "workflow.yaml").write_text("""
name: linted
version: 1
start_node: agents
nodes:
  agents: {type: states, folder: flow, store_as: computed.out, on_success: done}
endings:
  done: {type: success, message: "${computed.out}"}
""")
    done = cli("validate", "workflow.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert "states node 'agents': <goto> in START.sh names '$NEXT_STATE'" in done.stdout
    ran = cli("run", "workflow.yaml", "--ephemeral", cwd=tmp_path, env={"NEXT_STATE": "END"})
    assert (ran.returncode, ran.stdout.strip()) == (0, "ran"), ran.stderr
