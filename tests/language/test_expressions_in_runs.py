"""Expressions inside runs: the recorded clock, and what validation says about the names they read."""

from __future__ import annotations

import time

import pytest

import wfexec
from conftest import Captured, one_action
from wfexec.running.engine import Run

CLOCK_WORKFLOW = """
name: clock
version: 1
start_node: first
nodes:
  first:
    type: action
    actions:
      - {type: compute, expression: "[Date.now(), new Date().getTime()]", store_as: computed.first}
      - {type: compute, expression: "Date.now()", store_as: computed.again}
    on_success: second
  second:
    type: action
    actions:
      - {type: compute, expression: "new Date().toISOString()", store_as: computed.second}
    on_success: done
endings:
  done: {type: success, message: "${computed.first[0]}"}
"""


def test_every_expression_of_a_step_reads_one_time(run_yaml):
    before = time.time_ns() // 1_000_000
    result, _ = run_yaml(CLOCK_WORKFLOW)
    after = time.time_ns() // 1_000_000
    first, again = result.state["computed"]["first"], result.state["computed"]["again"]
    assert first[0] == first[1] == again and before <= first[0] <= after
    assert result.message == str(first[0])


def test_a_step_run_again_on_resume_reads_its_recorded_start(write_workflow):
    workflow = wfexec.load(write_workflow(CLOCK_WORKFLOW))
    run = Run(workflow, io=Captured().console())
    run.resumed_step_ms = 1_700_000_000_000  # what the journal recorded when the step first started
    result = run.execute()
    assert result.state["computed"]["first"] == [1_700_000_000_000, 1_700_000_000_000]
    assert result.state["computed"]["second"] != "2023-11-14T22:13:20.000Z"  # the next step reads its own time


def test_a_replayed_run_reads_the_times_the_recording_read(write_workflow, cli, tmp_path):
    """--record keeps the time of each step that reads the clock; --replay serves the same times again."""
    import json

    import yaml

    path = write_workflow(CLOCK_WORKFLOW)
    cassette = tmp_path / "run.cassette.yaml"
    recorded = cli("run", path, "--ephemeral", "--backend", "command:cat", "--record", cassette, "--format", "json")
    assert recorded.returncode == 0, recorded.stderr
    clocks = [i for i in yaml.safe_load(cassette.read_text())["interactions"] if i["kind"] == "clock"]
    assert [c["node"] for c in clocks] == ["first", "second"]  # the ending's message reads state, not the clock
    time.sleep(0.01)
    replayed = cli("run", path, "--ephemeral", "--replay", cassette, "--format", "json")
    assert replayed.returncode == 0, replayed.stderr
    before, after = json.loads(recorded.stdout)["state"], json.loads(replayed.stdout)["state"]
    assert after["computed"] == before["computed"]
    assert after["computed"]["first"][0] == clocks[0]["ms"]


NAMES_WORKFLOW = """
name: names
version: 1
start_node: work
initial_state: {config: {depth: 1}, computed: {seeded: 1}}
input_schema:
  url: {type: string}
imports: {rules: rules.yaml}
nodes:
  work:
    type: action
    actions:
      - {type: compute, expression: "config.depth + computed.seeded + input.url.length", store_as: computed.total}
      - {type: set_flag, flag: ready}
      - {type: evaluate, expression: "computed.total > 1", set_flag: big}
      - type: foreach
        items: "${[1, 2]}"
        as: entry
        actions:
          - {type: compute, expression: "entry + index + imports.rules.x", store_as: computed.last}
      - {type: compute, expression: "[total, ready, big, ask.id, HOME, [config].map(c => c.depth)]", store_as: computed.ok}
      - {type: compute, expression: "computed.totl + flags.redy + input.ulr + imports.rulez", store_as: computed.typos}
      - {type: compute, expression: "totl + nobody", store_as: computed.bare}
    on_success: ask
  ask:
    type: user_prompt
    prompt: {question: "Go?", header: Go, options: [{id: "yes", label: "Yes"}, {id: "no", label: "No"}]}
    on_response: {"yes": {next_node: done}, "no": {next_node: done}}
endings:
  done: {type: success, message: "${computed.last_error ?? computed.validation_errors ?? 'ok'}"}
"""


def test_validate_warns_about_names_nothing_writes_and_suggests_the_spelling(write_workflow):
    write_workflow("x: 1\n", name="rules.yaml")
    diagnostics = wfexec.validate(write_workflow(NAMES_WORKFLOW))
    warnings = {(d.message.split(" is ")[0], d.hint) for d in diagnostics if d.code in ("unwritten-name",)}
    assert {message for message, _hint in warnings} == {
        "`computed.totl`", "`flags.redy`", "`input.ulr`", "`imports.rulez`", "`totl`", "`nobody`"}
    hints = dict(warnings)
    assert "total" in hints["`computed.totl`"] and "ready" in hints["`flags.redy`"] and "url" in hints["`input.ulr`"]
    assert all(d.severity == "warning" for d in diagnostics), [d.format() for d in diagnostics]
    line = NAMES_WORKFLOW.splitlines().index(
        '      - {type: compute, expression: "totl + nobody", store_as: computed.bare}') + 1
    assert {d.line for d in diagnostics if "nobody" in d.message} == {line}


def test_an_endless_loop_in_a_condition_is_a_run_error_naming_the_node_and_line(run_yaml):
    from wfexec.running.engine import RunError

    try:
        run_yaml("""
            name: t
            version: 1
            start_node: spin
            nodes:
              spin:
                type: conditional
                condition: {type: evaluate_expression, expression: "while (true) {}"}
                branches: {true: done, false: done}
            endings:
              done: {type: success, message: ok}
            """)
    except RunError as error:
        text = error.format()
    else:
        raise AssertionError("the loop was not stopped")
    assert "ran longer than" in text and "node 'spin'" in text and "workflow.yaml:8:" in text


STAMP_THEN_SLOW = """
name: stamp
version: 1
start_node: deploy
nodes:
  deploy:
    type: action
    actions:
      - {{type: compute, expression: "Date.now()", store_as: computed.started}}
      - type: run_command
        command: ["{python}", "-c", "import pathlib, time; p = pathlib.Path('started'); first = not p.exists(); p.write_text('x'); time.sleep(30 if first else 0)"]
    on_success: done
endings:
  done: {{type: success, message: "${{computed.started}}"}}
"""


def test_a_step_rerun_after_a_crash_reads_the_time_it_first_started(tmp_path, private_run_store):
    import json
    import os
    import signal
    import subprocess
    import sys

    from conftest import wfexec_cli

    (tmp_path / "workflow.yaml").write_text(STAMP_THEN_SLOW.format(python=sys.executable))
    before = time.time_ns() // 1_000_000
    process = subprocess.Popen([sys.executable, "-m", "wfexec", "run", "workflow.yaml"], cwd=tmp_path,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 20
    while not (tmp_path / "started").exists() and time.time() < deadline:
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    killed = time.time_ns() // 1_000_000
    time.sleep(0.05)
    [record] = json.loads(wfexec_cli("runs", "--format", "json").stdout)
    resumed = wfexec_cli("resume", record["id"], "--rerun", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    started = int(resumed.stdout.strip())
    assert before <= started <= killed  # the first attempt's time, not the rerun's
    assert started == round(record["in_flight"]["started_at"] * 1000)


def test_only_a_states_node_writes_the_forks_beside_its_result(write_workflow):
    """`computed.x_forks` is where a `states` node keeps its forks' results; a compute's `store_as` has none,
    so reading one is the typo it looks like."""
    diagnostics = wfexec.validate(write_workflow("""
        name: t
        version: 1
        start_node: work
        nodes:
          work:
            type: action
            actions:
              - {type: compute, expression: "1", store_as: computed.total}
              - {type: compute, expression: "computed.total_forks", store_as: computed.read}
            on_success: done
        endings:
          done: {type: success, message: ok}
        """))
    assert [d.message.split(" is ")[0] for d in diagnostics if d.code == "unwritten-name"] == ["`computed.total_forks`"]


def test_pwd_is_the_folder_the_run_works_in(run_yaml, tmp_path, monkeypatch):
    """The real init workflow stores `'${PWD}'` as the corpus root: the run's folder, whatever the environment
    variable says (a program that starts wfexec in another folder does not update it)."""
    monkeypatch.setenv("PWD", "/somewhere/else")
    work = tmp_path / "corpus"
    work.mkdir()
    result, _ = run_yaml("""
        name: t
        version: 1
        start_node: work
        nodes:
          work:
            type: action
            actions:
              - {type: compute, expression: "'${PWD}'", store_as: computed.root}
              - {type: compute, expression: "PWD + '/data'", store_as: computed.data}
            on_success: done
        endings:
          done: {type: success, message: "${computed.root}|${computed.data}|${PWD}"}
        """, cwd=work)
    assert result.message == f"{work}|{work}/data|{work}"


# A bare name is looked up in computed, flags, user_responses, then the top level: by the Python fast path for a
# simple read, and by the JavaScript engine for anything else. Both must agree (a mutation of the engine's lookup
# went unseen while only the fast path was exercised).
LOOKUP_ORDER = {"computed": {"a": "computed"}, "flags": {"a": "flag", "b": True},
                "user_responses": {"a": "answer", "b": "answer", "c": {"id": "yes"}},
                "a": "top", "b": "top", "c": "top", "d": "top"}


@pytest.mark.parametrize("name, expected", [("a", "computed"), ("b", True), ("c", {"id": "yes"}), ("d", "top")])
@pytest.mark.parametrize("form", ["{name}", "[{name}][0]"], ids=["fast path", "engine"])
def test_a_bare_name_is_looked_up_in_the_same_order_by_both_paths(run_yaml, name, expected, form):
    from wfexec.language.expressions import Expression

    source = form.format(name=name)
    assert (Expression(source)._fast_text is None) == (form != "{name}")  # the path the case means to take
    result, _ = run_yaml(one_action({"type": "compute", "expression": source, "store_as": "computed.found"},
                                    initial_state=LOOKUP_ORDER))
    assert result.ending == "done", result.message
    assert result.state["computed"]["found"] == expected
