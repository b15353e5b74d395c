"""Transitions on agents: checklist items 59–67, 85 and 86 of reference/raymond-state-protocol.md §4.

Skipped, with the reason:
- 61 (`task="new"`), 66 (`task` on fork): task folders are tested end to end in test_protocol_scripts.py
  (test_task_folders_…); the `cd` half of 61 is tested here.
- 68 (`<ask>`): wfexec asks people through `user_prompt` nodes; `<ask>` is refused (test_protocol_tags.py,
  test_protocol_scripts.py).
- 69 (cross-workflow tags): wfexec composes workflows through `reference` nodes; those tags are refused.
- 85, 86 (Raymond's state file on disk): wfexec stores agents with durable runs (DESIGN §5); what is tested
  here is that the agents' state is plain data that round-trips through JSON, and the workflow id format.

Deliberate differences from Raymond (DESIGN §4), tested here: one fork counter per parent; a `<call>`
leaves the agent without a session and a `branch_from` marker that lasts until an LLM turn uses it
(Raymond's transient ForkSessionID, item 63); `result` always restores the frame's cwd (Raymond only a
non-empty one). Its task folder is always restored too, as Raymond does (its frames never hold an empty one).
"""

from __future__ import annotations

import copy
import json
import re

import pytest

from wfexec.protocol.agents import Agent, AgentsState, Frame, apply, resolve_cd, worker_id
from wfexec.protocol.errors import ProtocolError
from wfexec.protocol.orchestrator import new_workflow_id
from wfexec.protocol.tags import Transition

BASE = "/base"


def step(agent, *transitions, counters=None):
    return apply(agent, list(transitions), {} if counters is None else counters, BASE)


def busy_agent(**changes) -> Agent:
    values = dict(id="main", state="HERE.md", session_id="sess1", stack=[Frame("R.md", "old", "/c")],
                  cwd="/work", input="pending", fork_attributes={"item": "x"}, branch_from=None)
    values.update(changes)
    return Agent(**values)


def test_item59_apply_leaves_the_input_agent_unchanged_and_clears_one_state_fields():
    agent = busy_agent()
    before = copy.deepcopy(agent)
    moved, _ = step(agent, Transition("goto", "NEXT.md"))
    assert agent == before
    assert moved.input is None and moved.fork_attributes is None
    moved.stack.append(Frame("X.md"))
    assert agent.stack == before.stack  # stacks are not shared


def test_item60_goto():
    moved, workers = step(busy_agent(), Transition("goto", "NEXT.md"))
    assert (moved.state, moved.session_id, moved.stack, moved.cwd, workers) == \
        ("NEXT.md", "sess1", [Frame("R.md", "old", "/c")], "/work", [])
    assert step(busy_agent(), Transition("goto", "N.md", {"input": "x"}))[0].input == "x"
    assert step(busy_agent(), Transition("goto", "N.md", {"input": ""}))[0].input is None


def test_item61_reset_fresh_session_keeps_stack_and_applies_cd():
    moved, _ = step(busy_agent(branch_from="caller"), Transition("reset", "LOOP.md"))
    assert (moved.state, moved.session_id, moved.branch_from, len(moved.stack), moved.cwd) == \
        ("LOOP.md", None, None, 1, "/work")
    assert step(busy_agent(), Transition("reset", "L.md", {"cd": "/abs/../other"}))[0].cwd == "/other"
    assert step(busy_agent(), Transition("reset", "L.md", {"cd": "sub"}))[0].cwd == "/work/sub"
    assert step(busy_agent(cwd=""), Transition("reset", "L.md", {"cd": "sub"}))[0].cwd == "/base/sub"


def test_item62_function_pushes_a_frame_and_starts_fresh():
    with pytest.raises(ProtocolError, match="needs a `return`"):
        step(busy_agent(), Transition("function", "F.md"))
    moved, _ = step(busy_agent(), Transition("function", "F.md", {"return": "AFTER.md", "input": "arg"}))
    assert moved.stack[-1] == Frame(state="AFTER.md", session_id="sess1", cwd="/work")
    assert (moved.state, moved.session_id, moved.branch_from, moved.input) == ("F.md", None, None, "arg")


def test_item63_call_pushes_a_frame_and_marks_the_caller_session_to_branch():
    with pytest.raises(ProtocolError, match="needs a `return`"):
        step(busy_agent(), Transition("call", "C.md", {"return": ""}))
    moved, _ = step(busy_agent(branch_from="older"), Transition("call", "C.md", {"return": "AFTER.md"}))
    assert moved.stack[-1] == Frame(state="AFTER.md", session_id="sess1", cwd="/work")
    assert (moved.session_id, moved.branch_from) == (None, "sess1")  # an older marker is overwritten
    # The marker survives a goto (a script callee hands over to a prompt), unlike Raymond's transient one.
    assert step(moved, Transition("goto", "MORE.md"))[0].branch_from == "sess1"


def test_item64_fork_needs_next_and_names_workers_per_parent():
    with pytest.raises(ProtocolError, match="needs a `next`"):
        step(busy_agent(), Transition("fork", "WORKER.md"))
    counters = {}
    names = [step(busy_agent(), Transition("fork", target, {"next": "N.md"}), counters=counters)[1][0].id
             for target in ("WORKER.md", "WORKER.md", "ANALYZE.md", "RUN.sh")]
    assert names == ["main_worker1", "main_worker2", "main_analyz3", "main_run4"]
    assert worker_id("main", "ANALYZE.md", {}) == "main_analyz1"
    assert worker_id("main", "RUN.sh", {}) == "main_run1"
    assert worker_id("main_worker1", "ANALYZE.md", {}) == "main_worker1_analyz1"
    assert counters == {"main": 4}


def test_item65_the_worker_and_the_parent_after_a_fork():
    parent = busy_agent()
    t = Transition("fork", "WORKER.md", {"next": "NEXT.md", "item": "x", "input": "payload", "task": "new",
                                         "cd": "wt"})
    moved, (worker,) = step(parent, t)
    assert (worker.stack, worker.session_id, worker.branch_from) == ([], None, None)
    assert worker.fork_attributes == {"item": "x"}
    assert worker.input == "payload"
    assert worker.cwd == "/work/wt"
    assert (moved.state, moved.session_id, moved.stack, moved.cwd, moved.input) == \
        ("NEXT.md", "sess1", parent.stack, "/work", None)
    _, (plain,) = step(parent, Transition("fork", "W.md", {"next": "N.md"}))
    assert (plain.cwd, plain.fork_attributes, plain.input) == ("", None, None)  # no cd: the node's directory


def test_item67_result_ends_or_pops_one_frame():
    payload = Transition("result", payload="")
    ended, _ = step(busy_agent(stack=[]), Transition("result", payload="done"))
    assert (ended.status, ended.result) == ("ended", "done")
    two = busy_agent(session_id="inner", stack=[Frame("OUTER.md", "sess1", "/a"), Frame("INNER.md", "sess2", "")],
                     cwd="/callee")
    moved, _ = step(two, payload)
    assert (moved.state, moved.session_id, moved.input, len(moved.stack), moved.status) == \
        ("INNER.md", "sess2", "", 1, "active")
    assert moved.cwd == ""  # the frame's cwd, even when it is the node's directory
    assert step(moved, Transition("result", payload="x"))[0].cwd == "/a"


def test_item67_result_restores_the_callers_task_folder_even_its_default_one():
    caller = Agent(id="main", state="START.md")  # in its own default folder: task ""
    called, _ = step(caller, Transition("call", "C1.md", {"return": "RET.md"}))
    moved, _ = step(called, Transition("reset", "C2.md", {"task": "new", "cd": "/tmp"}))
    assert (moved.task_name, moved.cwd) == ("main_task1", "/tmp")
    back, _ = step(moved, Transition("result", payload="r"))
    assert (back.state, back.task, back.task_name, back.cwd, back.stack) == ("RET.md", "", "main", "", [])
    assert back.task_count == 1  # a later <reset task="new"> still gets a folder of its own
    assert step(back, Transition("reset", "X.md", {"task": "new"}))[0].task_name == "main_task2"


def test_attributes_a_tag_does_not_take_are_ignored_as_in_raymond():
    """transitions.go's handlers read only their own attributes: `cd` where a session is resumed (goto, call,
    function), on result and ask, and `task` where no folder is chosen, change nothing (lint reports `task` and
    `<ask cd>`); they stop nothing either."""
    agent = busy_agent()
    for tag, attributes in (("goto", {}), ("call", {"return": "R.md"}), ("function", {"return": "R.md"}),
                            ("result", {}), ("ask", {})):
        for stray in ({"cd": "/tmp"}, {"task": "new"}, {"task": "inherit"}, {"cd": "/tmp", "task": "bogus"}):
            plain, _ = step(agent, Transition(tag, "X.md", attributes))
            moved, _ = step(agent, Transition(tag, "X.md", {**attributes, **stray}))
            assert (moved.cwd, moved.task, moved.task_count, moved.state) == \
                (plain.cwd, plain.task, plain.task_count, plain.state), (tag, stray)


def test_a_reset_gets_a_new_folder_only_for_task_new_and_a_fork_shares_only_for_inherit():
    """HandleReset: `task == "new"` and nothing else makes a folder (`inherit` or a typo keeps it); CreateForkWorker:
    `task == "inherit"` shares the parent's, anything else gives the worker its own."""
    agent = busy_agent(task="main_task3", task_count=3)
    for task in ("inherit", "bogus", ""):
        moved, _ = step(agent, Transition("reset", "X.md", {"task": task}))
        assert (moved.task, moved.task_count) == ("main_task3", 3), task
    assert step(agent, Transition("reset", "X.md", {"task": "new"}))[0].task == "main_task4"
    for task, shared in (("inherit", "main_task3"), ("new", ""), ("bogus", ""), ("", "")):
        _, (worker,) = step(agent, Transition("fork", "W.md", {"next": "N.md", "task": task}))
        assert worker.task == shared, task


def test_a_fork_with_an_empty_cd_starts_its_worker_in_the_parents_directory():
    """CreateForkWorker resolves `cd` whenever it is written (`ResolveCd("", parent.Cwd)`: the parent's); without one
    the worker starts where the run started."""
    _, (worker,) = step(busy_agent(), Transition("fork", "W.md", {"next": "N.md", "cd": ""}))
    assert worker.cwd == "/work"
    _, (worker,) = step(busy_agent(), Transition("fork", "W.md", {"next": "N.md"}))
    assert worker.cwd == ""


def test_multi_fork_makes_every_worker_and_continues_once():
    counters = {}
    moved, workers = step(busy_agent(), Transition("fork", "W.md", {"next": "N.md", "item": "1"}),
                          Transition("fork", "W.md", {"next": "N.md", "item": "2"}),
                          Transition("goto", "N.md", {"input": "go", "cd": "/elsewhere"}), counters=counters)
    assert [w.id for w in workers] == ["main_w1", "main_w2"]
    assert [w.fork_attributes for w in workers] == [{"item": "1"}, {"item": "2"}]
    # applyMultiFork moves the parent to the continuation with no input; the <goto>'s `cd` changes nothing.
    assert (moved.state, moved.input, moved.cwd) == ("N.md", None, "/work")


def test_resolve_cd():
    assert resolve_cd("/x/./y/..", "/agent", "/base") == "/x"
    assert resolve_cd("sub", "", "/base") == "/base/sub"
    assert resolve_cd("../up", "/agent/dir", "/base") == "/agent/up"


def test_item85_agents_state_is_plain_data_that_round_trips():
    state = AgentsState("workflow_x", [busy_agent(), Agent("main_w1", "W.md", fork_attributes={"item": "1"})],
                        fork_counters={"main": 1}, total_cost_usd=0.25, budget_usd=1.0)
    data = json.loads(json.dumps(state.to_dict()))
    assert data["agents"]["main_w1"]["stack"] == []  # a list, never null
    assert data["agents"]["main_w1"]["session_id"] is None
    assert AgentsState.from_dict(data) == state


def test_an_agent_forked_is_put_without_going_through_every_agent_again():
    """A thousand forked workers, each put as it is made: going through every agent for each made the run of a
    fork quadratic. Agents changed from outside the state are still found."""

    class Walked(list):
        walks = 0

        def __iter__(self):
            Walked.walks += 1
            return super().__iter__()

    state = AgentsState("workflow_x", Walked([Agent("main", "START.sh")]))
    walks = Walked.walks
    for n in range(1, 101):
        state.put(Agent(f"main_w{n}", "W.sh"))
    assert Walked.walks == walks and len(state.agents) == 101
    assert state.agent("main_w100").state == "W.sh"
    state.agents.insert(0, Agent("outside", "X.sh"))  # from outside: indexed again when looked up
    assert state.agent("main_w100").id == "main_w100" and state.agent("outside").state == "X.sh"


def test_item86_workflow_id_format():
    assert re.fullmatch(r"workflow_\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2}-\d{6}", new_workflow_id())
