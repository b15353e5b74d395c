"""The one step loop (wfexec.running.steploop): what every driver gets from it — the history window, one timestamp
format — and a driver that waits for its answers instead of parking."""

from __future__ import annotations

import asyncio
import re

import wfexec
from conftest import ROOT
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
