"""The one step loop (wfexec.running.steploop): what every driver gets from it — the history window, one timestamp
format — and a driver that waits for its answers instead of parking."""

from __future__ import annotations

import asyncio
import io
import itertools
import re
import sys
import time

import wfexec
from conftest import ROOT
from wfexec.durable.store import ROWS_BEFORE_ORJSON
from wfexec.running.console import Console
from wfexec.running.engine import Options
from wfexec.running.prompts import Answers, NeedsAnswer
from wfexec.running.steploop import HISTORY_WINDOW, Driver, drive, start
from wfexec.temporal.steps import RecordingIo

COUNTER_LOOP = ROOT / "tests" / "workflows" / "running" / "counter_loop.yaml"
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def test_an_in_memory_run_keeps_the_window_of_history_a_durable_run_keeps(tmp_path):
    """Memory stays flat without a store too: the loop, not the store, keeps the window."""
    in_memory = wfexec.run(COUNTER_LOOP, inputs={"limit": 1500}, max_steps=10_000, ephemeral=True)
    durable = wfexec.run(COUNTER_LOOP, inputs={"limit": 1500}, store=tmp_path / "runs.db", max_steps=10_000)
    assert in_memory.message == durable.message == "1500" and in_memory.steps == durable.steps == 3001
    for result in (in_memory, durable):
        history = result.state["history"]
        assert len(history) == HISTORY_WINDOW
        # the latest steps, in order: the last of 3001 steps is a `check` going to the ending
        assert [(entry["node"], entry["target"]) for entry in history[-3:]] == [
            ("check", "step"), ("step", "check"), ("check", "done")]
    strip = [{k: v for k, v in entry.items() if k != "at"} for entry in in_memory.state["history"]]
    assert strip == [{k: v for k, v in entry.items() if k != "at"} for entry in durable.state["history"]]


def test_a_short_run_keeps_all_its_history_and_every_entry_has_milliseconds(tmp_path):
    for result in (wfexec.run(COUNTER_LOOP, inputs={"limit": 3}, ephemeral=True),
                   wfexec.run(COUNTER_LOOP, inputs={"limit": 3}, store=tmp_path / "runs.db")):
        history = result.state["history"]
        assert len(history) == result.steps == 7
        assert all(STAMP.match(entry["at"]) for entry in history), history


class AnsweringDriver(Driver):
    """Runs every step here, but waits (a real await) for each answer, as the Temporal driver waits for an update."""

    def __init__(self, answers: dict):
        self.answers = answers
        self.asked: list[str] = []

    async def wait_for_answer(self, waiting: NeedsAnswer):
        self.asked.append(waiting.question.key)
        await asyncio.sleep(0)
        if waiting.question.key not in self.answers:
            raise waiting
        return self.answers[waiting.question.key]


def test_a_driver_that_waits_for_answers_runs_the_asking_node_again_with_the_answer():
    workflow = wfexec.load(ROOT / "skills" / "quickstart")
    run = start(workflow, io=RecordingIo(), options=Options(answers=Answers({})), inputs={})
    driver = AnsweringDriver({"ask_mood": "cheerful"})
    result = asyncio.run(drive(run, driver))
    assert driver.asked == ["ask_mood"]
    assert (result.ending, result.message) == ("done", "Hello, world!")
    assert [entry["node"] for entry in result.state["history"]] == ["ask_mood", "count_letters", "pick_style",
                                                                 "cheer"]
    # with no answer, the run parks as an in-process one does
    parked = start(workflow, io=RecordingIo(), options=Options(answers=Answers({})), inputs={})
    try:
        asyncio.run(drive(parked, AnsweringDriver({})))
    except NeedsAnswer as waiting:
        assert waiting.question.key == "ask_mood"
    else:
        raise AssertionError("the run did not park")


# bench_durable's part 2 step: two state writes (one computed, one a `text ${...}` template) and a computed target.
TICK = """
name: tick
version: 1
start_node: tick
initial_state: {count: 0, label: ""}
input_schema:
  limit: {type: integer, required: true}
nodes:
  tick:
    type: action
    actions:
      - {type: compute, expression: "count + 1", store_as: count}
      - {type: set_state, field: label, value: "step ${count}"}
    on_success: "${count < input.limit ? 'tick' : 'done'}"
endings:
  done: {type: success, message: "${count}"}
"""


def python_calls(run) -> int:
    """The Python functions entered while `run()` runs (functions written in C not counted)."""
    entered = 0

    def count(frame, event, arg):
        nonlocal entered
        if event == "call":
            entered += 1

    sys.setprofile(count)
    try:
        run()
    finally:
        sys.setprofile(None)
    return entered


def calls_per_step(run_steps, monkeypatch) -> int:
    """Python calls a step of the loop costs: two runs that differ only in their step count, set against each
    other (what starting and ending a run costs cancels out). The clock stands still, as steps that share a
    millisecond share its text without a call: how many do depends on the machine's speed."""
    monkeypatch.setattr(time, "time_ns", itertools.repeat(1_764_000_000_000_000_000).__next__)  # no Python call
    # Warm: the expressions' fast paths are made on their first evaluation, orjson taken up after a process's
    # first rows (wfexec.durable.store.ROWS_BEFORE_ORJSON).
    run_steps(ROWS_BEFORE_ORJSON + 100)
    # Rounded: now and then something outside the step (a garbage collection's callback) adds a call.
    return round((python_calls(lambda: run_steps(400)) - python_calls(lambda: run_steps(200))) / 200)


# The Python calls of TICK's step in memory: entering it, the node's execute and its `apply_each`, each write's
# direct form, its value's evaluator and the run's `write`, the outcome, `resolve_target` and the target's
# evaluator, `record` and the clock. It made 20 before issue 27's trims of the step.
STEP_CALLS = 15
# What committing it adds: before_step, after_step, its changes, flush, the store's append_steps, `_encode_steps`
# and orjson's encoder.
JOURNAL_CALLS = 7


def test_a_state_only_step_runs_in_a_handful_of_python_calls(write_workflow, monkeypatch):
    """The step every loop of a workflow makes most (issue 27): each call it makes is a good part of its cost, so
    they are counted, and may not creep back."""
    workflow = wfexec.load(write_workflow(TICK))
    quiet = Console(out=io.StringIO(), err=io.StringIO())

    def run_steps(steps: int) -> None:
        result = wfexec.run(workflow, inputs={"limit": steps}, max_steps=steps + 10, ephemeral=True, io=quiet)
        assert result.message == str(steps) and result.steps == steps

    assert calls_per_step(run_steps, monkeypatch) <= STEP_CALLS


def test_a_committed_state_only_step_adds_seven_python_calls_for_its_journal(write_workflow, tmp_path,
                                                                             monkeypatch):
    """A durable run committing every step makes the in-memory step's calls, and its journal's."""
    from wfexec.durable.journal import start_run
    from wfexec.durable.store import Store

    workflow = wfexec.load(write_workflow(TICK))
    store = Store(tmp_path / "runs.db")
    quiet = Console(out=io.StringIO(), err=io.StringIO())

    def run_steps(steps: int) -> None:
        driven = start_run(store, workflow, inputs={"limit": steps}, overrides={}, io=quiet,
                           options=Options(max_steps=steps + 10, commit_every_step=True))
        assert driven.result.message == str(steps) and driven.result.steps == steps

    try:
        assert calls_per_step(run_steps, monkeypatch) <= STEP_CALLS + JOURNAL_CALLS
    finally:
        store.close()


def test_a_node_that_breaks_ends_the_run_with_an_internal_error_at_the_node(write_workflow):
    """The step's error boundary (the loop's, for a node run in process): a bug in a node type is reported at its
    node, as a bug, with what it raised."""
    from wfexec.records import replace
    from wfexec.running.engine import InternalError

    def broken(node, ctx):
        raise ValueError("the plugin's own bug")

    workflow = wfexec.load(write_workflow(TICK))
    node = workflow.nodes["tick"]
    workflow.nodes["tick"] = replace(node, kind=replace(node.kind, execute=broken))
    try:
        wfexec.run(workflow, inputs={"limit": 3}, ephemeral=True, io=Console(out=io.StringIO(), err=io.StringIO()))
    except InternalError as error:
        assert error.node == "tick" and "ValueError: the plugin's own bug" in error.message
        assert isinstance(error.__cause__, ValueError)
    else:
        raise AssertionError("the run went on past a broken node")
