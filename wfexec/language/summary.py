"""How much of a workflow runs for free: each node runs as code, asks a person, or goes to the LLM.

A node goes to the LLM when it holds a prose step (a `compute`/`evaluate`
field written as prose), calls a type with the `llm` effect (invoke_pattern,
spawn_agent, ...), or its node type says so (a markdown `reference`, a
`states` node with `.md` states: `Checks.judgement`). A node type with
`asks_person` (`user_prompt`) asks a person, as does one whose `Checks.asks_person_in` says so (a `states`
node whose states hold an `<ask>`). Everything else runs as code. A node
that failed its checks is classified by what was written.
"""

from __future__ import annotations

from typing import Any

from wfexec.language.prose import Prose
from wfexec.nodes.base import node_types
from wfexec.records import dataclass


@dataclass(frozen=True)
class LlmStep:
    node: str
    what: str                 # "markdown reference", "prose step (compute)", "states node", "LLM call (...)"
    yaml_path: str

    def to_json(self) -> dict:
        return {"node": self.node, "what": self.what, "yaml_path": self.yaml_path}


@dataclass(frozen=True)
class Summary:
    nodes: int
    code: int
    person: int
    llm: int
    llm_steps: tuple[LlmStep, ...]

    def line(self) -> str:
        return (f"{self.nodes} node{'s' if self.nodes != 1 else ''}: {self.code} run as code, "
                f"{self.person} ask a person, {self.llm} go to the LLM")

    def step_lines(self) -> list[str]:
        return [f"  - {step.node}: {step.what} at {step.yaml_path}"
                for step in self.llm_steps]

    def to_json(self) -> dict:
        return {"text": self.line(), "nodes": self.nodes, "code": self.code, "person": self.person, "llm": self.llm,
                "llm_steps": [step.to_json() for step in self.llm_steps]}


def summarise(raw_nodes: dict, nodes: dict) -> Summary:
    """`raw_nodes` as written, `nodes` those compiled."""
    steps: list[LlmStep] = []
    code = person = llm = 0
    known = node_types().types
    for node_id, raw in raw_nodes.items():
        node = nodes.get(node_id)
        kind = _kind(raw, known)
        own = _node_steps(node_id, raw, node, kind)
        steps.extend(own)
        if own:
            llm += 1
        elif _asks_person(kind, node):
            person += 1
        else:
            code += 1
    return Summary(nodes=len(raw_nodes), code=code, person=person, llm=llm, llm_steps=tuple(steps))


def _kind(raw: Any, known: dict):
    """The node type of a node as written (among the `known` node types), or None when it names none."""
    if not isinstance(raw, dict):
        return None
    name = raw.get("type")
    return known.get(name) if isinstance(name, str) else None


def _asks_person(kind, node) -> bool:
    if kind is None:
        return False
    asks_person_in = kind.checks.asks_person_in
    return kind.asks_person or (asks_person_in is not None and node is not None and asks_person_in(node.spec))


def _node_steps(node_id: str, raw: Any, node, kind) -> list[LlmStep]:
    if not isinstance(raw, dict):
        return []
    judgement = kind.checks.judgement if kind is not None else None
    found = []
    if judgement is not None:
        what = judgement(node.spec if node is not None else None, raw)
        if what:
            field = next((key for key in ("doc", "states", "folder", "effect") if key in raw), "")
            found.append(LlmStep(node_id, what, f"nodes.{node_id}" + (f".{field}" if field else "")))
    if node is not None:
        tops = node.kind.calls(node.spec)
        for call in (c for top in tops if top is not None for c in top.walk()):
            if "llm" not in call.spec.effects:
                continue
            prose = [name for name, value in call.params.items() if isinstance(value, Prose)]
            for name in prose:
                found.append(LlmStep(node_id, f"prose step ({call.type})", f"{call.where.yaml_path}.{name}"))
            if not prose:
                found.append(LlmStep(node_id, f"LLM call ({call.type})", call.where.yaml_path))
    return found
