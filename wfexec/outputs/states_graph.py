"""A picture of a states folder (`wfexec graph FOLDER`): each state a node (prompts as boxes, scripts as
subroutines), each transition it may take an edge labelled with its tag, `<result>` an ending, and another
workflow a cross-workflow tag goes to a node of its own. The transitions are those lint reads: a prompt's
policy, else the tags written in its text, a script's echoed tags."""

from __future__ import annotations

import os

from wfexec.nodes.parts import Drawing
from wfexec.outputs.graph import Edge, Picture, Shape
from wfexec.protocol.lint import state_transitions
from wfexec.protocol.scopes import ENTRY_POINTS, StateScope, extension
from wfexec.protocol.tags import WORKFLOW_TAGS

RESULT = "result"


PROMPT = Shape("prompt (.md)", Drawing(mermaid_shape=("[", "]"), dot_shape="shape=box"))
SCRIPT = Shape("script (.sh)", Drawing(mermaid_shape=("[[", "]]"), dot_shape="shape=component"))
WORKFLOW = Shape("another workflow", Drawing(mermaid_shape=("[/", "/]"), dot_shape="shape=parallelogram"))


def _stem(name: str) -> str:
    return os.path.splitext(name)[0] if extension(name) else name


def states_picture(scope: StateScope, name: str) -> Picture:
    transitions = state_transitions(scope)
    by_stem = {_stem(file): file for file in transitions}
    nodes: dict = {file: (PROMPT if extension(file) == ".md" else SCRIPT) for file in transitions}
    grouped: dict[tuple, list[str]] = {}
    ends = False

    def edge(source: str, target: str, label: str) -> None:
        grouped.setdefault((source, target), []).append(label)

    for file, found in transitions.items():
        for t in found:
            if t.tag == RESULT:
                edge(file, RESULT, "result")
                ends = True
            elif t.tag in WORKFLOW_TAGS:
                nodes.setdefault(t.target, WORKFLOW)
                edge(file, t.target, t.tag)
            else:
                edge(file, by_stem.get(_stem(t.target), t.target), t.tag)
            for key in ("return", "next", "timeout_next"):
                if t.attributes.get(key) and not (t.tag == "ask" and key == "next"):  # an ask's target is its next
                    edge(file, by_stem.get(_stem(t.attributes[key]), t.attributes[key]), key)
    for (_source, target) in list(grouped):
        nodes.setdefault(target, PROMPT if target != RESULT else None)
    nodes.pop(RESULT, None)
    start = next((by_stem[n] for n in ENTRY_POINTS if n in by_stem), None) or next(iter(transitions), "")
    reached = _reached(start, grouped)
    return Picture(name=name, start=start, nodes=nodes, endings={RESULT: "success"} if ends else {},
                   edges=[Edge(s, t, tuple(labels)) for (s, t), labels in grouped.items()],
                   unreachable={n for n in nodes if n not in reached})


def _reached(start: str, grouped: dict) -> set[str]:
    following: dict[str, list[str]] = {}
    for source, target in grouped:
        following.setdefault(source, []).append(target)
    seen, todo = {start}, [start]
    while todo:
        for target in following.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen
