"""The messages between a run's workflow code and its activities, as frozen dataclasses with one JSON form each:
the run's request as Temporal ships it (`ClusterRequest`), what each activity is sent (`EffectStepInput`,
`AgentStateInput`, `EdgeInput`; the claim of a worker is sent the request alone) and what it sends back
(`EffectStepResult`, `AgentStateResult`, `EdgeResult`).

Temporal's history holds the JSON forms (dicts), never these classes (its data converter does not know them).
A replay hands the workflow code the results of histories recorded before these classes existed: `from_json`
reads those, and `to_json` writes the same keys, so a client reading a history (`wfexec serve --temporal`: the
steps' `kept` output) sees what it saw before. Likewise an activity may be sent what workflow code sent before
its input was one message, positional arguments (`received`): a run started then may be in flight on a cluster
whose workers were upgraded since."""

from __future__ import annotations

from typing import Any, TypeVar

from wfexec.nodes.base import Question
from wfexec.records import dataclass, field, replace
from wfexec.temporal.state_changes import MISSING
from wfexec.running.request import DEFAULT_MAX_STEPS


def _present(**fields: Any) -> dict[str, Any]:
    """The fields that were given: an absent one is no key at all, as the dicts before these classes had it."""
    return {key: value for key, value in fields.items() if value is not None}


@dataclass(frozen=True)
class ClusterRequest:
    """A run's request as the workflow code is started with it (`wfexec.temporal.client.run_request`) and as each
    activity is sent it: the workflow file (`path`, `source_hash`; `bundle`: the bundle it travels in,
    `wfexec.temporal.delivery`), what the run starts with (`inputs`, `overrides`: `--set`, `answers`,
    `max_steps`), the folder it was started from (`cwd`; on a worker with --workdir, that folder and, in
    `started_in`, the client's: `delivery.localized_paths`), the `env.` values it reads (`steps.env_names`), how
    soon a worker counts as gone (`heartbeat_seconds`, `worker_gone_seconds`), the LLM `backend`, and whether
    short steps may be local activities (`local_steps`)."""

    path: str
    source_hash: str
    cwd: str
    inputs: dict = field(default_factory=dict)
    overrides: dict = field(default_factory=dict)
    answers: dict = field(default_factory=dict)
    max_steps: int = DEFAULT_MAX_STEPS
    env: dict = field(default_factory=dict)
    heartbeat_seconds: float | None = None
    worker_gone_seconds: float | None = None
    backend: str | None = None
    local_steps: bool = True
    bundle: dict | None = None
    started_in: str | None = None

    def for_steps(self) -> ClusterRequest:
        """The request as the activities are sent it: without the `--set` overrides, which the state holds
        already (a large one would otherwise travel with every step), and the bundle named, its bytes left in the
        history they came in."""
        bundle = {k: v for k, v in self.bundle.items() if k != "first"} if self.bundle is not None else None
        return replace(self, overrides={}, bundle=bundle)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "source_hash": self.source_hash, "cwd": self.cwd, "inputs": self.inputs,
                "overrides": self.overrides, "answers": self.answers, "max_steps": self.max_steps, "env": self.env,
                "heartbeat_seconds": self.heartbeat_seconds, "worker_gone_seconds": self.worker_gone_seconds,
                "backend": self.backend, "local_steps": self.local_steps,
                **_present(bundle=self.bundle, started_in=self.started_in)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClusterRequest:
        """Read from this form or an older one (`overrides` and later keys absent, `max_steps` null)."""
        return cls(path=data["path"], source_hash=data["source_hash"], cwd=data["cwd"],
                   inputs=data.get("inputs") or {}, overrides=data.get("overrides") or {},
                   answers=data.get("answers") or {}, max_steps=int(data.get("max_steps") or DEFAULT_MAX_STEPS),
                   env=data.get("env") or {}, heartbeat_seconds=data.get("heartbeat_seconds"),
                   worker_gone_seconds=data.get("worker_gone_seconds"), backend=data.get("backend"),
                   local_steps=data.get("local_steps", True) is not False, bundle=data.get("bundle"),
                   started_in=data.get("started_in"))


@dataclass(frozen=True)
class EffectStepInput:
    """One effect step for a worker to run (`wfexec_effect_step`, or `wfexec_local_effect_step` as a local
    activity): the node, the run's state as the workers are sent it (`state_changes.ShippedState.argument`), the
    run's answers so far, the step's clock (`step_ms`, the workflow's), and, for a local activity, the queue of
    the run's worker (`home`: another worker refuses it, `local_steps.not_home`)."""

    request: ClusterRequest
    node_id: str
    shipped: dict
    answers: dict
    step_ms: int
    home: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"request": self.request.to_json(), "node_id": self.node_id, "shipped": self.shipped,
                "answers": self.answers, "step_ms": self.step_ms, **_present(home=self.home)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EffectStepInput:
        return cls(ClusterRequest.from_json(data["request"]), data["node_id"], data["shipped"], data["answers"],
                   int(data["step_ms"]), data.get("home"))


@dataclass(frozen=True)
class AgentStateInput:
    """One state of one agent of a states node for a worker to run (`wfexec_agent_state`): the node's `meta`
    (what its agents share, `AgentSteps.begin`, with the budget `spent` so far) and the agent (None: start the
    node's first agent)."""

    request: ClusterRequest
    node_id: str
    meta: dict
    agent: dict | None = None

    def to_json(self) -> dict[str, Any]:
        return {"request": self.request.to_json(), "node_id": self.node_id, "meta": self.meta, "agent": self.agent}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AgentStateInput:
        return cls(ClusterRequest.from_json(data["request"]), data["node_id"], data["meta"], data.get("agent"))


@dataclass(frozen=True)
class EdgeInput:
    """The entry gate (`what` "entry") or an ending (`what` "ending", `ending_id`) for a worker to run
    (`wfexec_run_edge`), with the run's state (its history left out)."""

    request: ClusterRequest
    what: str
    ending_id: str | None
    state: dict

    def to_json(self) -> dict[str, Any]:
        return {"request": self.request.to_json(), "what": self.what, "ending_id": self.ending_id,
                "state": self.state}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EdgeInput:
        return cls(ClusterRequest.from_json(data["request"]), data["what"], data.get("ending_id"), data["state"])


ActivityInput = TypeVar("ActivityInput", EffectStepInput, AgentStateInput, EdgeInput)


def received(kind: type[ActivityInput], sent: tuple) -> ActivityInput:
    """What an activity was sent, as its message: the message's JSON form (one argument), or the positional
    arguments of the workflow code before there was one (the request's dict, then the message's other fields in
    order), which a run started by that code sends until it ends."""
    first, *positional = sent
    if not positional:
        return kind.from_json(first)
    return kind(ClusterRequest.from_json(first), *positional)


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
