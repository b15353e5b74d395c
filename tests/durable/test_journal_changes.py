"""What the journal records of a step, replayed on the state before it, gives the state after it: for random
steps of sets, appends (also at negative indices), writes that fail half way, and rollbacks, through the real
run loop's writers; and a durable run's state rebuilt from its store equals the state it ended with."""

from __future__ import annotations

import copy
import io
import json
import random

import pytest

import wfexec
from wfexec.durable.changes import record, replay
from wfexec.durable.journal import state_for_snapshot
from wfexec.language.paths import PathError
from wfexec.running.console import Console
from wfexec.running.context import CallContext
from wfexec.running.engine import Options, Run

MINIMAL = """
name: minimal
version: 1
start_node: done_now
initial_state: {items: [1, {tags: [a]}], nested: {x: {list: [0]}}}
nodes:
  done_now:
    type: action
    actions: [{type: set_state, field: computed.a, value: 1}]
    on_success: done
endings:
  done: {type: success, message: done}
"""

PATHS = [("computed", "a"), ("computed", "list"), ("computed",), ("items",), ("items", 0), ("items", -1),
         ("items", 1, "tags"), ("items", -1, "tags"), ("nested", "x", "list"), ("nested", "x", "list", -1),
         ("nested", "y"), ("fresh", "a", 0), ("computed", "list", -1), ("flags", "ready")]
VALUES = [0, "text", None, [1, 2], {"k": [3]}, {"tags": ["b"]}]


def random_step(rng: random.Random, run: Run) -> None:
    for _ in range(rng.randint(1, 5)):
        action = rng.random()
        path, value = rng.choice(PATHS), copy.deepcopy(rng.choice(VALUES))
        try:
            if action < 0.45:
                run.append(path, value)
            elif action < 0.9:
                run.write(path, value)
            else:  # a rollback to a state with some keys gone and one new
                kept = {k: copy.deepcopy(v) for k, v in run.state.items() if rng.random() < 0.7 or k == "history"}
                kept.setdefault("restored", rng.randint(0, 9))
                CallContext(run, None, None).replace_state(kept)  # type: ignore[arg-type]
        except PathError:
            pass


@pytest.mark.parametrize("seed", range(40))
def test_replaying_recorded_steps_rebuilds_the_state(tmp_path, seed):
    path = tmp_path / "workflow.yaml"
    path.write_text(MINIMAL)
    run = Run(wfexec.load(path), io=Console(out=io.StringIO(), err=io.StringIO()), options=Options())
    rng = random.Random(seed)
    rebuilt = json.loads(json.dumps(state_for_snapshot(run.state)))
    for step in range(30):
        random_step(rng, run)
        recorded = json.loads(json.dumps(record(run.state, run.changed, run.appended)))  # as the store keeps it
        run.changed.clear()
        run.appended.clear()
        replay(rebuilt, *recorded)
        assert rebuilt == state_for_snapshot(run.state), f"seed {seed}, step {step}: {recorded}"


def test_appends_are_journaled_as_the_items_appended(tmp_path):
    path = tmp_path / "workflow.yaml"
    path.write_text(MINIMAL)
    run = Run(wfexec.load(path), io=Console(out=io.StringIO(), err=io.StringIO()), options=Options())
    run.append(("items",), {"n": 1})
    run.append(("items",), {"n": 2})
    run.write(("computed", "a"), 5)
    assert record(run.state, run.changed, run.appended) == ({"computed.a": 5}, {"items": [{"n": 1}, {"n": 2}]}, [])
    run.changed.clear()
    run.appended.clear()
    run.append(("items",), 3)
    run.write(("items",), [9])  # a set after an append: the set's value is what counts
    assert record(run.state, run.changed, run.appended) == ({"items": [9]}, {}, [])
