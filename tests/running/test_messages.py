"""The messages at the seams have one JSON form each: a question (`Question`), what the Temporal activities send
back (`EffectStepResult`, `AgentStateResult`, `EdgeResult`) and an ending (`Result`). Each goes through its JSON
form and back unchanged; the forms kept before there was one (a store's old `pending_question` rows, a Temporal
history's activity results) still read; and every door shows the same question the same way."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys

import pytest

from conftest import ROOT, wfexec_in_process as cli, with_coverage
from wfexec.nodes.base import Choice, Question
from wfexec.running.engine import Result
from wfexec.temporal.messages import AgentStateResult, EdgeResult, EffectStepResult
from wfexec.temporal.state_changes import MISSING

QUICKSTART = str(ROOT / "skills" / "quickstart")
ASKED = Question(node="ask_mood", text="How should I greet Ada?", header="Mood",
                 choices=(Choice("cheerful", "Cheerful", "with an exclamation mark"), Choice("plain", "Plain")),
                 allow_other=True, dynamic=False)
AN_AGENTS_QUESTION = Question(node="team", text="Which file?", header="", choices=(), allow_other=True,
                              dynamic=True, asker="writer")


@pytest.mark.parametrize("question", [ASKED, AN_AGENTS_QUESTION])
def test_a_question_goes_through_its_json_form_unchanged(question):
    sent = json.loads(json.dumps(question.to_json()))
    assert Question.from_json(sent) == question
    assert sent["key"] == question.key and sent["question"] == question.text


def test_a_question_kept_before_there_was_one_form_still_reads():
    """A store row written before (no `dynamic`, no `asker`: the key named the agent) and a Temporal history's
    question (`text`, `choices`) read as the question they were."""
    old_row = {"node": "team", "key": "writer", "question": "Which file?", "header": "", "options": [],
               "allow_other": True}
    assert Question.from_json(old_row) == Question("team", "Which file?", "", (), True, False, "writer")
    old_history = {"node": "ask_mood", "key": "ask_mood", "text": "How should I greet Ada?", "header": "Mood",
                   "choices": [{"id": "cheerful", "label": "Cheerful", "description": "with an exclamation mark"},
                               {"id": "plain", "label": "Plain", "description": ""}],
                   "allow_other": True, "dynamic": False, "asker": ""}
    assert Question.from_json(old_history) == ASKED


@pytest.mark.parametrize("result", [
    EffectStepResult(missing_state=True),
    EffectStepResult(question=ASKED, events=[["print", "hi"]], answers={"x": ["1"]}, refused="'grumpy' is not…"),
    EffectStepResult(error={"outcome": "failed", "text": "boom", "message": "boom"}, events=[],
                     kept={"node": "n", "output": "o\n", "output_bytes": 2, "transcript": []}),
    EffectStepResult(changes={"set": [[["computed", "a"], 1]]}, state_token="1/1", target="next", outcome={},
                     events=[], answers={}, written=[["computed", "a"]], appended=[[["log"], 2]]),
])
def test_an_effect_steps_result_goes_through_its_json_form_unchanged(result):
    assert EffectStepResult.from_json(json.loads(json.dumps(result.to_json()))) == result


def test_an_effect_steps_result_from_a_history_before_the_classes_reads():
    """The dicts `_run_node` returned before: the keys are the same, an absent one is no key."""
    assert EffectStepResult.from_json({MISSING: True}).missing_state
    went_on = {"changes": {"set": []}, "state_token": "a/1", "target": "done", "outcome": {"ok": True},
               "events": [["print", "x"]], "answers": {}, "written": [], "appended": []}
    done = EffectStepResult.from_json(went_on)
    assert (done.target, done.outcome, done.question, done.error) == ("done", {"ok": True}, None, None)
    assert done.to_json() == went_on
    asked = {"question": {"node": "q", "key": "q", "text": "Go?", "header": "", "choices": [],
                          "allow_other": True, "dynamic": False, "asker": ""}, "events": [], "answers": {}}
    assert EffectStepResult.from_json(asked).question == Question("q", "Go?", "", (), True, False)


@pytest.mark.parametrize("result", [
    AgentStateResult(fatal={"message": "no state", "hint": "", "stop": False, "routable": True}, events=[]),
    AgentStateResult(error={"outcome": "failed", "text": "boom"}, events=[["error", "boom"]]),
    AgentStateResult(step={"agent": {"id": "main"}, "kind": "goto", "transitions": [], "cost_usd": 0.5},
                     events=[], kept={"node": "n", "output": "", "output_bytes": 0, "transcript": [{"a": 1}]}),
])
def test_an_agent_states_result_goes_through_its_json_form_unchanged(result):
    sent = json.loads(json.dumps(result.to_json()))
    assert AgentStateResult.from_json(sent) == result
    if result.step:  # the agents loop's keys stay at the top level, as before the class
        assert sent["agent"] == {"id": "main"} and sent["kind"] == "goto"


@pytest.mark.parametrize("result", [
    EdgeResult(events=[]),
    EdgeResult(error={"outcome": "failed", "text": "no"}, entry_gate=True, events=[]),
    EdgeResult(result={"ending": "done", "type": "success", "message": "ok", "silent": False, "state": None},
               state={"computed": {}}, events=[["print", "ok"]]),
])
def test_an_edges_result_goes_through_its_json_form_unchanged(result):
    assert EdgeResult.from_json(json.loads(json.dumps(result.to_json()))) == result


def test_an_ending_has_one_json_form_that_builds_it_again():
    ending = Result(ending="done", type="success", message="Hello, Ada!", details=None, summary={"letters": 3},
                    recovery=None, output={"greeting": "Hello, Ada!"}, state={"computed": {"greeting": "Hello, Ada!"}},
                    steps=3, run_id="r1", delegate={"skill": "next", "args": "", "context": {}}, code=7)
    assert Result.from_json(json.loads(json.dumps(ending.to_json())), run_id="r1") == ending


def _mcp_run_waiting(tmp_path) -> dict:
    pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'wfexec[mcp]')")
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    environment = with_coverage({k: v for k, v in os.environ.items() if k != "WFEXEC_STORE"})
    params = StdioServerParameters(command=sys.executable, args=["-m", "wfexec", "mcp", "--root",
                                                                 str(ROOT / "skills")],
                                   cwd=str(tmp_path), env=environment)

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return (await session.call_tool("run", {"path": QUICKSTART, "inputs": {"name": "Ada"}})
                        ).structured_content

    return asyncio.run(main())


def test_every_door_gives_the_same_question_the_same_json(tmp_path):
    """`run --format json`, the MCP `run` tool, the journal's `pending_question` (its SQLite row) and `show
    --format json` give the question the run waits on in one form; the waiting doors add which run,
    `answer_key` and what the run printed (MCP's `printed`)."""
    store = tmp_path / "runs.db"
    parked = cli("run", QUICKSTART, "--input", "name=Ada", "--non-interactive", "--format", "json",
                        "--store", store, cwd=tmp_path)
    assert parked.returncode == 3, parked.stderr
    by_cli = json.loads(parked.stdout)
    shown = cli("show", by_cli["run_id"], "--store", store, "--format", "json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    by_show = json.loads(shown.stdout)["pending_question"]
    with sqlite3.connect(store) as db:
        (row,) = db.execute("SELECT pending_question FROM runs WHERE id = ?", (by_cli["run_id"],)).fetchone()
    by_journal = json.loads(row)
    by_mcp = _mcp_run_waiting(tmp_path)

    def question_of(door: dict) -> dict:
        return {k: v for k, v in door.items() if k not in ("status", "run_id", "answer_key", "printed")}

    assert by_journal == by_show == question_of(by_cli) == question_of(by_mcp)
    assert by_journal["question"] == "How should I greet Ada?" and by_journal["key"] == "ask_mood"
    assert [o["id"] for o in by_journal["options"]] == ["cheerful", "plain"]
    assert by_cli["answer_key"] == by_mcp["answer_key"] == "ask_mood"
    assert Question.from_json(by_journal).to_json() == by_journal
