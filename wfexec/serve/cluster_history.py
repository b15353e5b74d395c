"""What a cluster run's history holds that none of its queries gives: the inputs it was started with (its first
event), and what each of its steps' activities kept (wfexec.temporal.kept: the output of the step's programs, its
agents' transcripts), numbered as the run's journal numbers its steps. A run's step durations come from its journal
(`durations`).

Read once per change of the history's length, and then only the events after those already read (`HistoryCache`):
a run page asks again every second while the run goes, and its history only grows when something happened."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# The activities whose results carry what their step kept (wfexec.temporal.activities).
EFFECT_STEP, AGENT_STATE = "wfexec_effect_step", "wfexec_agent_state"


@dataclass
class History:
    """What a run's history says beyond its queries, as of its event `last_event`."""

    length: int = 0
    inputs: dict = field(default_factory=dict)
    kept: list[dict] = field(default_factory=list)  # each activity's `kept`, with its activity type as `kind`
    last_event: int = 0
    scheduled: dict[int, str] = field(default_factory=dict)  # event id → activity type, of the activities seen


async def read_history(client, handle, length: int, before: History | None = None) -> History:
    """The run's history read (its events after `before`'s last, when given: those are already in it)."""
    from temporalio.api.enums.v1 import EventType

    read = History(length, dict(before.inputs), list(before.kept), before.last_event, dict(before.scheduled)) \
        if before is not None else History(length)
    decode = client.data_converter.decode
    async for event in handle.fetch_history_events():
        if event.event_id <= read.last_event:
            continue
        read.last_event = event.event_id
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            payloads = event.workflow_execution_started_event_attributes.input.payloads
            request = (await decode(payloads, [dict]))[0] if payloads else {}
            read.inputs = dict(request.get("inputs") or {}) if isinstance(request, dict) else {}
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            read.scheduled[event.event_id] = event.activity_task_scheduled_event_attributes.activity_type.name
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            completed = event.activity_task_completed_event_attributes
            activity = read.scheduled.pop(completed.scheduled_event_id, None)
            if activity in (EFFECT_STEP, AGENT_STATE) and completed.result.payloads:
                done = (await decode(completed.result.payloads, [dict]))[0]
                if isinstance(done, dict) and isinstance(done.get("kept"), dict):
                    read.kept.append({**done["kept"], "kind": activity})
    return read


class HistoryCache:
    """The last History read of each run, kept while the run's history has not grown."""

    def __init__(self, runs: int = 32):
        self.runs = runs
        self._read: dict[str, History] = {}
        self._lock = threading.Lock()

    def get(self, run_id: str) -> History | None:
        with self._lock:
            return self._read.get(run_id)

    def put(self, run_id: str, read: History) -> None:
        with self._lock:
            self._read.pop(run_id, None)
            self._read[run_id] = read
            while len(self._read) > self.runs:
                self._read.pop(next(iter(self._read)))


def numbered(kept: list[dict], journal: list[dict]) -> list[dict]:
    """Each activity's `kept` with the journal step it belongs to (`step`; None when the journal's window no
    longer holds it): an effect step's activity is the next step of its node, an agent state's belongs to the
    step of its `states` node; one past the journal's last is the step in flight."""
    rows, at, out = journal, 0, []
    last = rows[-1]["step"] if rows else 0
    for part in kept:
        found = next((i for i in range(at, len(rows)) if rows[i]["node"] == part.get("node")), None)
        if found is None:
            step = last + 1 if not rows or rows[0]["step"] == 1 or at > 0 else None
        else:
            step = rows[found]["step"]
            at = found + 1 if part["kind"] == EFFECT_STEP else found
        out.append({**part, "step": step})
    return out


def output_rows(kept: list[dict]) -> list[tuple]:
    """The parts' output as the store's rows (step, node, start, written, kept bytes), one after the other."""
    rows, start = [], 0
    for part in kept:
        written = int(part.get("output_bytes") or 0)
        if not written:
            continue
        label = part["node"] if part["step"] is not None else f"{part['node']} (an early step)"
        rows.append((part["step"] if part["step"] is not None else "?", label, start, written,
                     (part.get("output") or "").encode("utf-8")))
        start += written
    return rows


def transcripts(kept: list[dict]) -> list[dict]:
    return [record for part in kept for record in part.get("transcript") or ()]


def durations(journal: list[dict], started: float | None) -> list[float]:
    """Each step's duration in milliseconds, from the time its journal entry was recorded at and the one before
    (the run's start for the first): the workflow's clock, which moves between workflow tasks only, so a step
    run in the workflow code itself takes 0, an effect step the time its activity took (with its scheduling), and
    a question the time it waited for its answer."""
    out, previous = [], started
    for row in journal:
        at = _seconds(row.get("at"))
        out.append(max(0.0, (at - previous) * 1000) if at is not None and previous is not None else 0.0)
        previous = at if at is not None else previous
    return out


def _seconds(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
