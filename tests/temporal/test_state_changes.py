"""A run's state goes to its effect steps by change (wfexec.temporal.state_changes), in the journal's change rows:
the worker's copy and the workflow code's stay equal step after step, and a worker that does not hold the state a
change applies to says so instead of running on another state. The same with a real engine run of the effect
step's node, on a real cluster, is in test_temporal.py (parity runs) and bench/bench_temporal_state.py."""

from __future__ import annotations

import copy

from wfexec.durable.changes import record
from wfexec.temporal.state_changes import MAX_PENDING_STEPS, ShippedState, WorkerStates, apply_changes


class Step:
    """What the engine tracks of one step: the paths it wrote and the lists it appended to."""

    def __init__(self, state: dict):
        self.state = state
        self.changed: dict = {}
        self.appended: dict = {}

    def set(self, path: tuple, value) -> None:
        target = self.state
        for key in path[:-1]:
            target = target.setdefault(key, {})
        target[path[-1]] = value
        self.changed[path[:2]] = None

    def append(self, path: tuple, item) -> None:
        target = self.state
        for key in path:
            target = target[key]
        target.append(item)
        self.appended[path] = self.appended.get(path, 0) + 1

    def changes(self) -> list:
        return list(record(self.state, self.changed, self.appended))


def _effect_step(worker: WorkerStates, shipped_arg: dict, token: str, body) -> dict | None:
    """An effect step on a worker: the state it was sent, the step, what it returns."""
    state = worker.take("run/1", shipped_arg)
    if state is None:
        return None
    step = Step(state)
    body(step)
    worker.keep("run/1", token, state)
    return {"changes": step.changes(), "state_token": token}


def test_the_workers_state_and_the_workflows_stay_equal_and_only_changes_travel():
    big = "z" * 1_000_000
    workflow_state = {"computed": {"big": big, "items": [], "count": 0}, "history": []}
    shipped, worker = ShippedState(), WorkerStates()

    first = shipped.argument(workflow_state)
    assert first["whole"]["computed"]["big"] == big  # the first step is sent the whole state
    done = _effect_step(worker, copy.deepcopy(first), "a1/1", lambda s: s.set(("computed", "count"), 1))
    apply_changes(workflow_state, done["changes"])
    shipped.applied(done["state_token"])
    shipped.note(*done["changes"])  # the journal's row of the effect step itself: its worker has it already
    for n in range(3):  # state-only steps in the workflow code
        step = Step(workflow_state)
        step.append(("computed", "items"), {"n": n})
        step.set(("computed", "last"), n)
        shipped.note(*step.changes())
    second = shipped.argument(workflow_state)
    assert "whole" not in second and second["base"] == "a1/1" and len(second["changes"]) == 3
    assert big not in repr(second)  # the large value does not travel again
    done = _effect_step(worker, copy.deepcopy(second), "a2/1", lambda s: s.append(("computed", "items"), {"n": 9}))
    assert big not in repr(done)
    apply_changes(workflow_state, done["changes"])
    shipped.applied(done["state_token"])
    held = worker.take("run/1", {"base": "a2/1", "changes": []})
    assert held == {**workflow_state, "history": []}
    assert workflow_state["computed"]["items"] == [{"n": 0}, {"n": 1}, {"n": 2}, {"n": 9}]


def test_a_worker_without_the_state_says_so_and_the_whole_state_goes_next():
    shipped, worker = ShippedState(), WorkerStates()
    shipped.applied("lost-attempt/1")  # a token this worker never kept (another worker's, or a restart)
    assert _effect_step(worker, shipped.argument({"computed": {}}), "b1/1", lambda s: None) is None
    shipped.forget()
    assert "whole" in shipped.argument({"computed": {}})


def test_an_attempt_whose_result_was_thrown_away_never_passes_for_the_kept_one():
    worker = WorkerStates()
    worker.keep("run/1", "step7/1", {"computed": {"from": "attempt 1"}})
    # Temporal kept attempt 2 (on another worker): the run sends changes against its token
    assert worker.take("run/1", {"base": "step7/2", "changes": []}) is None


def test_too_many_pending_changes_send_the_whole_state_instead():
    shipped = ShippedState()
    shipped.applied("c1/1")
    shipped.note({}, {}, [])  # the effect step's own row
    for n in range(MAX_PENDING_STEPS + 1):
        shipped.note({"computed.n": n}, {}, [])
    assert "whole" in shipped.argument({"computed": {"n": 1}})


def test_a_worker_keeps_a_bounded_number_of_runs():
    worker = WorkerStates(capacity=2)
    for n in range(3):
        worker.keep(f"run/{n}", "t", {"n": n})
    assert len(worker) == 2 and worker.take("run/0", {"base": "t", "changes": []}) is None
