"""`wfexec run … --record-case FILE`: a real run written as a test case that `wfexec test` then passes.

The round trip goes through a real terminal (pexpect) for the answers a person types, with no LLM backend for a
workflow without LLM steps; replies of an LLM step come from the backend the command line names (here a
`command:` program) and go into the case; a parked run is a `waiting` case; a file keeps its other cases and a
case of the same name is replaced; `--record-state` picks the state paths the case expects.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap

import pexpect
import yaml

from conftest import ROOT, wfexec_cli, with_coverage

DOWN = "\x1b[B"
ENTER = "\r"


def quickstart_copy(tmp_path):
    skill = tmp_path / "quickstart"
    shutil.copytree(ROOT / "skills" / "quickstart", skill, ignore=shutil.ignore_patterns("tests"))
    return skill


def test_answers_typed_at_a_terminal_become_a_case_that_wfexec_test_passes(tmp_path):
    skill = quickstart_copy(tmp_path)
    child = pexpect.spawn(sys.executable, ["-m", "wfexec", "run", "quickstart", "--input", "name=Ada",
                                           "--record-case", "quickstart/tests/typed.yaml"],
                          cwd=str(tmp_path), encoding="utf-8", timeout=30, dimensions=(40, 120),
                          env=with_coverage({"TERM": "xterm", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                                             "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT))}))
    child.expect("How should I greet Ada")
    child.send(DOWN)  # the second option: Plainly
    child.send(ENTER)
    child.expect("Hello, Ada\r\n")
    child.expect("typed.yaml: case 'plain, name=Ada → done' written|typed.yaml: case 'plain → done' written")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    [case] = yaml.safe_load((skill / "tests" / "typed.yaml").read_text(encoding="utf-8"))["cases"]
    assert case["answers"] == {"ask_mood": "plain"} and case["inputs"] == {"name": "Ada"}
    assert case["expect"]["ending"] == "done" and case["expect"]["status"] == "success"
    assert case["expect"]["state"]["computed"] == {"letters": 3, "greeting": "Hello, Ada"}
    assert "history" not in case["expect"]["state"]
    tested = wfexec_cli("test", "--coverage", "quickstart", cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "ok    plain → done" in tested.stdout or "ok    plain, name=Ada → done" in tested.stdout


def test_a_parked_run_and_chosen_state_paths_and_a_replaced_case(tmp_path):
    skill = quickstart_copy(tmp_path)
    cases = skill / "tests" / "cases.yaml"
    cases.parent.mkdir()
    cases.write_text("cases:\n  - name: kept\n    answers: {ask_mood: cheerful}\n    expect: {ending: done}\n")
    for _ in range(2):  # the second run replaces the case the first wrote
        parked = wfexec_cli("run", "quickstart", "--record-case", cases, "--record-state", "computed.letters",
                            "--record-state", "name", cwd=tmp_path)
        assert parked.returncode == 3, parked.stderr
    written = yaml.safe_load(cases.read_text(encoding="utf-8"))["cases"]
    assert [c["name"] for c in written] == ["kept", "waiting"]
    assert written[1]["expect"] == {"status": "waiting", "state": {"name": "world"}}  # letters: not written yet
    assert "case 'waiting' replaced" in parked.stderr
    tested = wfexec_cli("test", cases, cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_llm_replies_are_recorded_from_the_backend_given_and_none_is_needed_without_llm_steps(tmp_path):
    (tmp_path / "judge").mkdir()
    (tmp_path / "judge" / "workflow.yaml").write_text(textwrap.dedent("""\
        name: judge
        version: "1"
        start_node: ask_model
        nodes:
          ask_model:
            type: reference
            doc: question.md
            store_as: computed.verdict
            next_node: done
        endings:
          done: {type: success, message: "${computed.verdict}"}
        """))
    (tmp_path / "judge" / "question.md").write_text("# Question\nSay yes.\n")
    (tmp_path / "yes.sh").write_text("cat > /dev/null; printf yes\n")
    recorded = wfexec_cli("run", "judge", "--backend", f"command:sh {tmp_path / 'yes.sh'}", "--record-case",
                          "judge/tests/judge.yaml", "--record-state", "computed.verdict", cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    [case] = yaml.safe_load((tmp_path / "judge" / "tests" / "judge.yaml").read_text())["cases"]
    assert case["replies"] == ["yes"] and case["expect"]["state"] == {"computed.verdict": "yes"}
    assert wfexec_cli("test", "judge", cwd=tmp_path).returncode == 0
    without = wfexec_cli("run", "judge", "--record-case", "judge/tests/none.yaml", cwd=tmp_path)
    assert without.returncode == 4 and "needs an LLM backend" in without.stderr, without.stderr


def test_record_case_refuses_a_dry_run_a_states_folder_and_a_file_that_is_no_test_file(tmp_path):
    quickstart_copy(tmp_path)
    folder = wfexec_cli("run", ROOT / "skills" / "docs-check" / "states", "--record-case", "x.yaml", cwd=tmp_path)
    assert folder.returncode == 2 and "a states folder has no `wfexec test` cases" in folder.stderr
    dry = wfexec_cli("run", "quickstart", "--dry-run", "--record-case", "x.yaml", cwd=tmp_path)
    assert dry.returncode == 2 and "--record-case cannot be used with --dry-run" in dry.stderr
    (tmp_path / "list.yaml").write_text("- 1\n")
    done = wfexec_cli("run", "quickstart", "--answer", "ask_mood=plain", "--record-case", "list.yaml", cwd=tmp_path)
    # found before the run (which would be done for nothing): exit 2, as for any other unusable FILE
    assert done.returncode == 2 and "--record-case list.yaml is not a test file" in done.stderr, done.stderr
    assert "Hello" not in done.stdout
    bad = wfexec_cli("run", "quickstart", "--record-case", "x.yaml", "--record-state", "computed..x", cwd=tmp_path)
    assert bad.returncode == 2 and "--record-state computed..x" in bad.stderr and "Traceback" not in bad.stderr
