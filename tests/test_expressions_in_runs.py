"""Expressions inside runs: the recorded clock, and what validation says about the names they read."""

from __future__ import annotations

import time

import wfexec
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


def test_every_expression_of_a_step_reads_the_time_the_step_started(run_yaml):
    before = time.time_ns() // 1_000_000
    result, _ = run_yaml(CLOCK_WORKFLOW)
    after = time.time_ns() // 1_000_000
    first, again = result.state["computed"]["first"], result.state["computed"]["again"]
    assert first[0] == first[1] == again and before <= first[0] <= after
    assert result.message == str(first[0])


def test_a_step_run_again_on_resume_reads_its_recorded_start(write_workflow):
    workflow = wfexec.load(write_workflow(CLOCK_WORKFLOW))
    run = Run(workflow)
    run.resumed_step_ms = 1_700_000_000_000  # what the journal recorded when the step first started
    result = run.execute()
    assert result.state["computed"]["first"] == [1_700_000_000_000, 1_700_000_000_000]
    assert result.state["computed"]["second"] != "2023-11-14T22:13:20.000Z"  # the next step reads its own time
