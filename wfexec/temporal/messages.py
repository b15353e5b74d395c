"""What the activities send back to the run's workflow code, as frozen dataclasses with one JSON form each.

Temporal's history holds the JSON form (a dict), and a replay hands the workflow code the dicts of histories
recorded before these classes existed: `from_json` reads those, and `to_json` writes the same keys, so a client
reading a history (`wfexec serve --temporal`: the steps' `kept` output) sees what it saw before."""

from __future__ import annotations

from typing import Any

from wfexec.nodes.base import Question
from wfexec.records import dataclass, field
from wfexec.temporal.state_changes import MISSING


def _present(**fields: Any) -> dict[str, Any]:
    """The fields that were given: an absent one is no key at all, as the dicts before these classes had it."""
    return {key: value for key, value in fields.items() if value is not None}


@dataclass(frozen=True)
class EffectStepResult:
    """One effect step on a worker (`wfexec_effect_step`): exactly one of
    - `missing_state`: the worker does not hold the state the changes were meant for (the workflow code sends it
      whole and asks again);
    - `question`: the step asks (with `refused`: why the answer it was given did not fit);
    - `error`: the run error it met (`steps.error_json`);
    - else it went on: `changes` to the state (`state_changes`), `state_token`, `target`, `outcome`, and the paths
      it `written` and `appended` (`steps.written`).
    `events`: what it printed; `answers`: the run's answers after it took its own; `kept`: its programs' output
    and transcripts for whoever watches the run (`kept.KeptByStep`)."""

    events: list = field(default_factory=list)
    missing_state: bool = False
    question: Question | None = None
    refused: str | None = None
    error: dict | None = None
    answers: dict | None = None
    changes: Any = None
    state_token: str | None = None
    target: str | None = None
    outcome: dict | None = None
    written: list | None = None
    appended: list | None = None
    kept: dict | None = None

    def to_json(self) -> dict[str, Any]:
        if self.missing_state:
            return {MISSING: True}
        return _present(question=self.question.to_json() if self.question is not None else None,
                        refused=self.refused, error=self.error, changes=self.changes, state_token=self.state_token,
                        target=self.target, outcome=self.outcome, events=self.events, answers=self.answers,
                        written=self.written, appended=self.appended, kept=self.kept)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EffectStepResult:
        if data.get(MISSING):
            return cls(missing_state=True)
        question = data.get("question")
        return cls(events=list(data.get("events") or ()),
                   question=Question.from_json(question) if question is not None else None,
                   refused=data.get("refused"), error=data.get("error"), answers=data.get("answers"),
                   changes=data.get("changes"), state_token=data.get("state_token"), target=data.get("target"),
                   outcome=data.get("outcome"), written=data.get("written"), appended=data.get("appended"),
                   kept=data.get("kept"))


@dataclass(frozen=True)
class AgentStateResult:
    """One state of one agent of a states node on a worker (`wfexec_agent_state`): `fatal` (a protocol error that
    ends the node: `agents_loop.fatal_of`), `error` (a run error), or `step`, what the agents loop moves the
    agent on by (`agents_loop`: `agent`, `kind`, `transitions`, `retry`, `pause`, `cost_usd`…), which its JSON
    form carries at the top level beside `events` and `kept`."""

    events: list = field(default_factory=list)
    fatal: dict | None = None
    error: dict | None = None
    step: dict = field(default_factory=dict)
    kept: dict | None = None

    def to_json(self) -> dict[str, Any]:
        return {**self.step, **_present(fatal=self.fatal, error=self.error, events=self.events, kept=self.kept)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AgentStateResult:
        own = ("events", "fatal", "error", "kept")
        return cls(events=list(data.get("events") or ()), fatal=data.get("fatal"), error=data.get("error"),
                   kept=data.get("kept"), step={key: value for key, value in data.items() if key not in own})


@dataclass(frozen=True)
class EdgeResult:
    """The entry gate or an ending run on a worker (`wfexec_run_edge`): `error` (with `entry_gate`: the entry
    gate refused the run), or, for an ending, its rendered `result` and the `state` its consequences left."""

    events: list = field(default_factory=list)
    error: dict | None = None
    entry_gate: bool = False
    result: dict | None = None
    state: dict | None = None

    def to_json(self) -> dict[str, Any]:
        if self.error is not None:
            return {"error": self.error, "entry_gate": self.entry_gate, "events": self.events}
        return _present(result=self.result, state=self.state, events=self.events)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EdgeResult:
        return cls(events=list(data.get("events") or ()), error=data.get("error"),
                   entry_gate=bool(data.get("entry_gate")), result=data.get("result"), state=data.get("state"))
