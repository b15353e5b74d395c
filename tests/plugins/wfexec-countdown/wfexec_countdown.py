"""`countdown`: count a state value down by one per visit; at zero, optionally ask before going on.

While `store_as` holds no number the node sets it to `from`; then each visit takes one off. Above
zero the node goes to `on_tick` (usually a loop back to itself); at zero it goes
to `on_zero`, or, with `confirm`, asks the question first and goes to `on_stop`
when the answer is `stop`. With `log`, each visit appends `left=<count>` to that file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wfexec.language.paths import get_path
from wfexec.nodes import TARGET, Choice, Docs, Drawing, NodeContext, NodeType, Outcome, Question, Skill

SCHEMA = {
    "properties": {
        "from": {"type": "integer", "minimum": 0},
        "store_as": {"type": "string"},
        "confirm": {"type": "string"},
        "log": {"type": "string"},
        "on_tick": TARGET,
        "on_zero": TARGET,
        "on_stop": TARGET,
    },
    "required": ["from", "store_as", "on_tick", "on_zero"],
}


@dataclass(frozen=True)
class Countdown:
    start: int
    store_as: tuple
    confirm: Any
    log: str | None
    on_tick: Any
    on_zero: Any
    on_stop: Any


def compile(node_id, raw, c) -> Countdown:
    if raw.get("confirm") and raw.get("on_stop") is None:
        c.error(("confirm",), "countdown-stop", f"countdown '{node_id}' asks `confirm` but has no `on_stop`",
                "add `on_stop: <node or ending>` for the answer `stop`")
    return Countdown(start=raw["from"], store_as=c.path(raw["store_as"], ("store_as",)),
                     confirm=c.value(raw.get("confirm"), ("confirm",)), log=raw.get("log"),
                     on_tick=c.target(raw.get("on_tick"), ("on_tick",)),
                     on_zero=c.target(raw.get("on_zero"), ("on_zero",)),
                     on_stop=c.target(raw.get("on_stop"), ("on_stop",)))


def targets(spec) -> list:
    return [("on_tick", spec.on_tick), ("on_zero", spec.on_zero), ("on_stop", spec.on_stop)]


def execute(node, ctx: NodeContext) -> Outcome:
    spec = node.spec
    count = get_path(ctx.state, spec.store_as)
    left = count - 1 if isinstance(count, int) else spec.start
    if left <= 0 and spec.confirm is not None:
        # Ask before changing state: a parked step runs again from its start when the run is resumed.
        answer = ctx.ask(Question(node=node.id, text=ctx.render_text(spec.confirm), header="Countdown",
                                  choices=(Choice("go", "Go on"), Choice("stop", "Stop")), allow_other=False,
                                  dynamic=False))
        if answer.choice is not None and answer.choice.id == "stop":
            ctx.set(spec.store_as, left)
            return Outcome(spec.on_stop, {"left": left, "answer": "stop"}, "on_stop")
    ctx.set(spec.store_as, left)
    if spec.log:
        with open(ctx.cwd / spec.log, "a", encoding="utf-8") as log:
            log.write(f"left={left}\n")
    if left > 0:
        return Outcome(spec.on_tick, {"left": left}, "on_tick")
    return Outcome(spec.on_zero, {"left": left}, "on_zero")


def effects(spec):
    return ("files",) if spec.log else ()


def idempotent(spec) -> bool:
    return not spec.log  # a second run of a step would log its line twice


NODE_TYPE = NodeType(
    name="countdown", schema=SCHEMA, compile=compile, execute=execute, targets=targets,
    effects=effects, idempotent=idempotent,
    asks_person=True,  # `confirm`: answered by the node's id (`--answer NODE=go`)
    drawing=Drawing(shape_name="trapezoid", mermaid_shape=("[\\", "/]"), dot_shape="shape=trapezium"),
    skill=Skill(tools=frozenset({"AskUserQuestion"})),
    docs=Docs(doc=__doc__, field_notes={
        "from": "where the count starts", "store_as": "the state path of the count",
        "confirm": "a question asked at zero (answers `go`, `stop`)",
        "log": "a file (relative to the working directory) each visit appends `left=<count>` to",
        "on_tick": "where to go above zero",
        "on_zero": "where to go at zero", "on_stop": "where to go when the answer to `confirm` is `stop`",
    }, rules="""\
1. When `store_as` holds no number, set it to `from`; otherwise take one off it.
2. Above zero: go to `on_tick`. At zero: with `confirm`, ask it (`go` or `stop`; `stop` goes to `on_stop`),
   then go to `on_zero`.
3. With `log`, append `left=<count>` to that file on each visit.
"""),
)
