"""A run's state sent to its effect steps by change, not whole (issue 28, point 3).

Sending the whole state with every effect step and back cost a 10 MB state 381 ms a step (24× a small one) and a
new 10 MB blob each time. Instead:

- a worker keeps, in memory, the state of the runs whose effect steps it ran last (`WorkerStates`), under a token
  that names that one attempt of that one step (`<activity id>/<attempt>`: an attempt whose result Temporal threw
  away must never pass for the one it kept);
- the workflow code remembers the token of the effect step whose result it applied, and the changes the steps
  since then made (`ShippedState`), in the journal's own representation (`wfexec.durable.changes.record`);
- the next effect step is sent that token and those changes; the worker that holds the token replays them
  (`wfexec.durable.changes.replay`, as `wfexec resume` does) and returns only what the step changed;
- a worker that does not hold the token (another worker, restarted, evicted) says so at once, before running
  anything, and the workflow code sends the whole state again: once, by reference when large (the claim-check of
  `wfexec.temporal.blob_stores`).

Nothing here imports Temporal: the workflow code and the activities both use it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from wfexec.durable.changes import record, replay

# Rows of changes kept for the next effect step; past this the whole state is sent instead (a long state-only loop
# between two effect steps would otherwise send more than the state).
MAX_PENDING_STEPS = 200
# Runs whose state a worker keeps. A 10 MB JSON state is several times that in Python objects: a bound on count
# keeps a worker serving many runs of large state in memory; a run past it costs one resend of its whole state.
MAX_CACHED_RUNS = 32
MISSING = "missing_state"  # what an effect step returns when this worker does not hold the state it was sent


class ShippedState:
    """The workflow code's side: which state the workers were last given, and the changes made since."""

    def __init__(self) -> None:
        self.token: str | None = None
        self.pending: list[list] = []
        self._own_step_next = False  # the next journal row is the effect step's own: its worker has it already

    def note(self, sets: dict, appends: dict, removed: list) -> None:
        """One step's changes, as the journal records them (StepLog.after_step)."""
        if self._own_step_next:
            self._own_step_next = False
            return
        if self.token is None:
            return  # the whole state goes with the next effect step anyway
        if sets or appends or removed:
            self.pending.append([sets, appends, removed])
            if len(self.pending) > MAX_PENDING_STEPS:
                self.forget()

    def argument(self, state: dict) -> dict:
        """The state as the next effect step is sent it: the changes since a token, or the whole of it."""
        history = state.get("history") or []
        shipped: dict[str, Any] = {"history": history[-50:]}  # enough for a step that reads recent history
        if self.token is None:
            shipped["whole"] = {k: v for k, v in state.items() if k != "history"}
        else:
            shipped["base"], shipped["changes"] = self.token, self.pending
        return shipped

    def applied(self, token: str) -> None:
        """An effect step's result was applied: its worker holds the state after it, under `token`."""
        self.token, self.pending, self._own_step_next = token, [], True

    def forget(self) -> None:
        """The workers were found not to hold the state (or too much changed): send it whole next time."""
        self.token, self.pending = None, []


def apply_changes(state: dict, changes: list) -> None:
    """Apply an effect step's returned changes (set, appended, removed) to the workflow's state."""
    sets, appends, removed = changes
    replay(state, sets, appends, removed)


def step_changes(run) -> list:
    """What a step changed, in the journal's representation: [set, appended, removed]."""
    sets, appends, removed = record(run.state, run.changed, run.appended)
    return [sets, appends, removed]


class WorkerStates:
    """The worker's side: the state of the runs it stepped last, by run, under the token of that step."""

    def __init__(self, capacity: int = MAX_CACHED_RUNS) -> None:
        self.capacity = capacity
        self._states: OrderedDict[str, tuple[str, dict]] = OrderedDict()
        self._lock = threading.Lock()  # steps run in a pool of threads

    def take(self, run_key: str, shipped: dict) -> dict | None:
        """The state a step of `run_key` starts from, removed from the cache (the step changes it in place, and a
        step that does not finish leaves it half changed); None when this worker does not hold it."""
        if "whole" in shipped:
            with self._lock:
                self._states.pop(run_key, None)
            state = dict(shipped["whole"])
        else:
            with self._lock:
                held = self._states.pop(run_key, None)
            if held is None or held[0] != shipped["base"]:
                return None
            state = held[1]
            for changes in shipped["changes"]:
                apply_changes(state, changes)
        state["history"] = list(shipped.get("history") or ())
        return state

    def keep(self, run_key: str, token: str, state: dict) -> None:
        """The state after a step that finished, for the run's next step on this worker."""
        kept = {k: v for k, v in state.items() if k != "history"}
        with self._lock:
            self._states[run_key] = (token, kept)
            self._states.move_to_end(run_key)
            while len(self._states) > self.capacity:
                self._states.popitem(last=False)

    def __len__(self) -> int:
        return len(self._states)
