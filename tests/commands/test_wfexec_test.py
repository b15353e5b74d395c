"""`wfexec test`: a skill's tests/*.yaml cases run, a failing case explained, a broken test file refused at its
line and column, node and branch coverage, JUnit XML and --fail-under — through the real command (in a process of its
own for the passing cases, the example skills and pytest; the rest in this process, `cli`, where only what the
command says and writes is looked at)."""

from __future__ import annotations

import json
import os
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

from conftest import ROOT, wfexec_cli, wfexec_in_process as cli

# A small workflow with a question, a condition and a failure route, so every kind of edge is there to miss.
WORKFLOW = """\
name: gate
version: "1.0.0"
start_node: ask
initial_state:
  computed:
    size: 0
nodes:
  ask:
    type: user_prompt
    prompt:
      question: How big?
      header: Size
      options:
        - {id: small, label: Small}
        - {id: large, label: Large}
        - {id: none, label: None}
    on_response:
      small:
        consequence:
          - {type: set_state, field: computed.size, value: 1}
        next_node: check
      large:
        consequence:
          - {type: set_state, field: computed.size, value: 100}
        next_node: check
      none:
        next_node: stopped
  check:
    type: conditional
    condition:
      type: evaluate_expression
      expression: "computed.size > 10"
    branches:
      on_true: write
      on_false: small_done
  write:
    type: action
    actions:
      - {type: write_file, path: out/big.txt, content: "size ${computed.size}\\n"}
      - {type: run_command, command: [echo, big]}
    on_success: big_done
    on_failure: failed
endings:
  big_done: {type: success, message: big, output: {size: "${computed.size}", kind: big}}
  small_done: {type: success, message: small}
  stopped: {type: cancelled, message: nothing}
  failed: {type: error, message: "failed: ${computed.last_error}"}
"""


def skill(tmp_path: Path, cases: str, name: str = "gate") -> Path:
    folder = tmp_path / name
    (folder / "tests").mkdir(parents=True)
    (folder / "workflow.yaml").write_text(WORKFLOW, encoding="utf-8")
    (folder / "tests" / f"{name}.yaml").write_text(textwrap.dedent(cases), encoding="utf-8")
    return folder


PASSING = """\
    cases:
      - name: large writes the file and runs the command
        answers: {ask: large}
        expect:
          ending: big_done
          status: success
          output: {kind: big}
          state: {computed.size: 100, user_responses.ask.id: large}
          files:
            out/big.txt: "size 100\\n"
          effects: [echo big]
      - name: small writes nothing
        answers: {ask: Small}
        expect:
          ending: small_done
          files:
            out/big.txt: {exists: false}
"""


def test_passing_cases_exit_0_and_run_in_fresh_folders(tmp_path):
    folder = skill(tmp_path, PASSING)
    done = wfexec_cli("test", folder, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[:3] == ["gate/tests/gate.yaml", "  ok    large writes the file and runs the command",
                                            "  ok    small writes nothing"]
    assert "2 passed, 0 failed" in done.stdout
    # The file the first case wrote was in its own folder: neither the skill's nor where the command ran.
    assert not (tmp_path / "out").exists() and not (folder / "out").exists()


def test_the_current_folder_is_searched_by_default(tmp_path):
    skill(tmp_path, PASSING)
    done = cli("test", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed, 0 failed" in done.stdout


def test_a_failing_case_shows_expected_actual_and_the_nodes_taken(tmp_path):
    folder = skill(tmp_path, """\
        cases:
          - name: small is mistaken for large
            answers: {ask: small}
            expect:
              ending: big_done
              state: {computed.size: 100}
              files:
                out/big.txt: {contains: size}
          - name: large passes
            answers: {ask: large}
            expect: {ending: big_done}
    """)
    done = cli("test", folder, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[1:13] == [
        "  FAIL  small is mistaken for large  (gate/tests/gate.yaml:2:5)",
        "        ending:",
        '          expected: "big_done"',
        '          actual:   "small_done"',
        "        state computed.size:",
        "          expected: 100",
        "          actual:   1",
        "        file out/big.txt contains:",
        '          expected: "size"',
        "          actual:   (nothing there)",
        "        nodes taken: ask → check → small_done",
        "  ok    large passes",
    ]
    assert "1 passed, 1 failed" in done.stdout


def test_a_run_that_waits_fails_unless_the_case_expects_it(tmp_path):
    folder = skill(tmp_path, """\
        cases:
          - name: no answer
            expect: {state: {computed.size: 0}}
          - name: no answer, expected
            expect: {status: waiting}
    """)
    done = cli("test", folder, "--format", "json", cwd=tmp_path)
    assert done.returncode == 1
    first, second = json.loads(done.stdout)["cases"]
    assert first["failures"] == [{"what": "status", "expected": "an ending", "actual": "waiting"}]
    assert first["message"].startswith("waiting: node 'ask' asks: How big?")
    assert second["passed"] and second["status"] == "waiting"


def test_an_invalid_test_file_exits_2_at_its_line_and_column(tmp_path):
    folder = skill(tmp_path, """\
        cases:
          - name: misspelt
            answer: {ask: small}
            expect: {ending: big_done}
          - name: no such ending
            answers: {ask: small, asq: large}
            expect: {ending: big_dne}
    """)
    done = cli("test", folder, cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[0].startswith("gate/tests/gate.yaml:3:5: error: ") and "answer" in lines[0], done.stderr
    assert "Traceback" not in done.stderr
    assert lines[-1] == "nothing run: 1 test file or workflow cannot be used"
    # Once its shape is right, the names it uses are checked against the workflow, each at its place.
    (folder / "tests" / "gate.yaml").write_text(
        (folder / "tests" / "gate.yaml").read_text().replace("answer:", "answers:"), encoding="utf-8")
    done = cli("test", folder, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines()[:2] == [
        "gate/tests/gate.yaml:6:27: error: 'asq' names no question of gate — did you mean 'ask'?",
        "gate/tests/gate.yaml:7:22: error: 'big_dne' is no ending of gate — did you mean 'big_done'?",
    ]


def test_a_yaml_error_in_a_test_file_is_one_line(tmp_path):
    folder = skill(tmp_path, "cases:\n  - name: [unclosed\n")
    done = cli("test", folder, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("gate/tests/gate.yaml:"), done.stderr
    assert "Traceback" not in done.stderr


def test_coverage_counts_nodes_and_branches_and_lists_each_branch_not_taken(tmp_path):
    folder = skill(tmp_path, PASSING)
    done = cli("test", folder, "--coverage", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    at = done.stdout.splitlines().index("coverage:")
    assert done.stdout.splitlines()[at:] == [
        "coverage:",
        "  gate/workflow.yaml: nodes 3/3, branches 5/7 (71.4%)",
        "    not taken: ask → stopped (none)",
        "    not taken: write → failed (on_failure)",
        "  total: branches 5/7 (71.4%)",
        done.stdout.splitlines()[-1],
    ]
    report = json.loads(cli("test", folder, "--format", "json", cwd=tmp_path).stdout)
    (measured,) = report["coverage"]["workflows"]
    assert measured["nodes"] == {"covered": 3, "total": 3}
    assert measured["branches"] == {"covered": 5, "total": 7, "percent": 71.4}
    assert measured["uncovered_branches"] == [{"node": "ask", "label": "none", "target": "stopped"},
                                              {"node": "write", "label": "on_failure", "target": "failed"}]


def test_coverage_includes_the_sub_workflows_reference_nodes_run(tmp_path):
    folder = tmp_path / "outer"
    (folder / "tests").mkdir(parents=True)
    (folder / "inner.yaml").write_text(textwrap.dedent("""\
        name: inner
        version: "1.0.0"
        start_node: pick
        nodes:
          pick:
            type: conditional
            condition: {type: evaluate_expression, expression: "input.n > 1"}
            branches: {on_true: many, on_false: one}
        endings:
          many: {type: success, message: many, output: {word: many}}
          one: {type: success, message: one, output: {word: one}}
    """), encoding="utf-8")
    (folder / "workflow.yaml").write_text(textwrap.dedent("""\
        name: outer
        version: "1.0.0"
        start_node: call
        nodes:
          call:
            type: reference
            workflow: inner.yaml
            input: {n: 3}
            store_as: computed.inner
            on_success: done
            on_failure: failed
        endings:
          done: {type: success, message: "${computed.inner.word}"}
          failed: {type: error, message: failed}
    """), encoding="utf-8")
    (folder / "tests" / "outer.yaml").write_text(textwrap.dedent("""\
        cases:
          - name: three is many
            expect: {ending: done, state: {computed.inner.word: many}}
    """), encoding="utf-8")
    done = cli("test", folder, "--coverage", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  outer/workflow.yaml: nodes 1/1, branches 1/2 (50%)" in done.stdout
    assert "  outer/inner.yaml: nodes 1/1, branches 1/2 (50%)" in done.stdout
    assert "    not taken: pick → one (on_false)" in done.stdout


def test_junit_xml_holds_each_case_and_its_failure(tmp_path):
    folder = skill(tmp_path, """\
        cases:
          - name: large
            answers: {ask: large}
            expect: {ending: big_done}
          - name: wrong
            answers: {ask: none}
            expect: {ending: big_done}
    """)
    report = tmp_path / "junit.xml"
    done = cli("test", folder, "--junit", report, cwd=tmp_path)
    assert done.returncode == 1
    root = ET.parse(report).getroot()
    assert (root.tag, root.get("tests"), root.get("failures")) == ("testsuites", "2", "1")
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "gate/tests/gate.yaml"
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    assert cases["large"].find("failure") is None
    failure = cases["wrong"].find("failure")
    assert failure.get("message") == 'ending: expected "big_done", got "stopped"'
    assert "nodes taken: ask → stopped" in failure.text
    properties = {p.get("name"): p.get("value") for p in root.find("properties")}
    assert properties["branch_coverage"] == "57.1"  # large and none, the true branch, and write's success


def test_fail_under_fails_a_passing_run_with_too_little_branch_coverage(tmp_path):
    folder = skill(tmp_path, PASSING)
    low = cli("test", folder, "--fail-under", "80", cwd=tmp_path)
    assert low.returncode == 1
    assert "error: branch coverage 71.4% is below --fail-under 80%" in low.stderr
    assert "2 passed, 0 failed" in low.stdout
    assert cli("test", folder, "--fail-under", "70", cwd=tmp_path).returncode == 0


def test_replies_answer_the_llm_steps_of_a_case(tmp_path):
    folder = tmp_path / "judge"
    (folder / "tests").mkdir(parents=True)
    (folder / "guide.md").write_text("# Guide\nName a colour.\n", encoding="utf-8")
    (folder / "workflow.yaml").write_text(textwrap.dedent("""\
        name: judge
        version: "1.0.0"
        start_node: ask_model
        nodes:
          ask_model:
            type: reference
            doc: guide.md
            store_as: computed.colour
            next_node: done
        endings:
          done: {type: success, message: "${computed.colour}"}
    """), encoding="utf-8")
    (folder / "tests" / "judge.yaml").write_text(textwrap.dedent("""\
        cases:
          - name: the model's reply is stored
            replies: [blue]
            expect: {ending: done, state: {computed.colour: blue}}
          - name: without a reply the run stops
            expect: {status: stopped}
    """), encoding="utf-8")
    done = cli("test", folder, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed, 0 failed" in done.stdout


def test_no_tests_is_an_error_that_says_where_they_go(tmp_path):
    folder = tmp_path / "bare"
    folder.mkdir()
    (folder / "workflow.yaml").write_text(WORKFLOW, encoding="utf-8")
    done = cli("test", folder, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == ("bare: error: the skill has no tests — add bare/tests/bare.yaml with `cases:` "
                                   "(docs/guide/using.md: Testing workflows)")


def test_every_example_skill_passes_its_tests():
    """The example skills' own cases (skills/*/tests/*.yaml), with coverage: each branch they do not take is
    explained in a comment of its test file."""
    done = wfexec_cli("test", "--coverage", "skills/", cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ("quickstart", "triage", "release-checklist", "project-setup"):
        assert f"skills/{name}/tests/{name}.yaml" in done.stdout
    assert " 0 failed in " in done.stdout


def pytest_on(folder: Path, cwd: Path):
    """`pytest` of a plugin repository's own, in a subprocess: the wfexec plugin (entry point pytest11) collects
    the skills' tests/*.yaml."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--no-cov", "-q", "-c",
                           os.devnull, str(folder)], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_pytest_collects_each_case_and_a_failing_one_reads_as_in_wfexec_test(tmp_path):
    folder = skill(tmp_path, """\
        cases:
          - name: small is mistaken for large
            answers: {ask: small}
            expect: {ending: big_done}
          - name: large passes
            answers: {ask: large}
            expect: {ending: big_done}
    """)
    done = pytest_on(folder, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout
    assert "case 'small is mistaken for large' failed\nending:\n  expected: \"big_done\"\n  actual:   " \
        "\"small_done\"\nnodes taken: ask → check → small_done" in done.stdout
    assert "FAILED gate/tests/gate.yaml::small is mistaken for large" in done.stdout


def test_pytest_reports_an_unusable_test_file_at_its_line(tmp_path):
    folder = skill(tmp_path, """\
        cases:
          - name: misspelt
            answer: {ask: small}
            expect: {ending: big_done}
    """)
    done = pytest_on(folder, tmp_path)
    assert done.returncode == 1 or done.returncode == 2, done.stdout
    assert "gate/tests/gate.yaml:3:5: error: " in done.stdout and "1 error" in done.stdout
