"""`wfexec plan`: what a workflow may do outside its own state, read from the types' declared effects.

Nothing runs. For every node reachable from `start_node`, in the order a run
meets them, each call whose type declares effects (files, process, git,
network, llm, display) is listed with what it names, values as written: a
literal path is shown as it is, a `${...}` part as the template text.
Questions and LLM work come from the node types themselves.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from wfexec.language.expressions import Template
from wfexec.language.model import Call, Workflow, describe_call
from wfexec.language.prose import Prose

# Printing a message touches nothing: it is in the effect totals, not listed step by step.
SHOWN_ONLY = frozenset({"display"})


def _reachable(workflow: Workflow) -> list[str]:
    """Nodes in breadth-first order from start_node (a `${...}` target keeps every node reachable)."""
    order, seen = [], {workflow.start_node}
    queue = deque([workflow.start_node])
    computed_target = False
    while queue:
        name = queue.popleft()
        node = workflow.nodes.get(name)
        if node is None:
            continue
        order.append(name)
        for _label, target in node.kind.targets(node.spec):
            if isinstance(target, Template):
                computed_target = True
            elif target is not None and str(target) not in seen:
                seen.add(str(target))
                queue.append(str(target))
    if computed_target:
        order += [name for name in workflow.nodes if name not in order]
    return order


def plan(workflow: Workflow) -> dict:
    """The side-effect manifest: {"workflow", "effects": {effect: [types]}, "nodes": [{"node", "type", "effects"}]}.

    Each entry of a node's list is {"effect": ..., "does": ..., "type": ...}; nodes without effects are left out.
    """
    nodes = []
    entry = [_entry(call, effect) for pre in workflow.entry_preconditions for call in pre.walk()
             for effect in call.spec.effects if effect not in SHOWN_ONLY]
    if entry:
        nodes.append({"node": "(entry preconditions)", "type": "preconditions", "effects": entry})
    for name in _reachable(workflow):
        node = workflow.nodes[name]
        found = [_entry(call, effect) for call in workflow.node_calls(node) for effect in call.spec.effects
                 if effect not in SHOWN_ONLY]
        raw = workflow.raw.get("nodes", {}).get(name, {}) if isinstance(workflow.raw, dict) else {}
        questions, judgement = node.kind.skill.questions, node.kind.checks.judgement
        if questions is not None:
            asked = questions(node, raw) or {}
            found.append({"effect": "question", "type": node.kind.name,
                          "does": f"ask {asked.get('question') or '(a question)'}"})
        judged = judgement(node.spec, raw) if judgement is not None else None
        if judged:
            found.append({"effect": "llm", "type": node.kind.name, "does": f"LLM: {judged}"})
        own = set(node.kind.effects(node.spec)) - {e["effect"] for e in found} - SHOWN_ONLY
        for effect in sorted(own):
            found.append({"effect": effect, "type": node.kind.name, "does": f"{node.kind.name} node ({effect})"})
        if found:
            nodes.append({"node": name, "type": node.kind.name, "effects": found})
    return {"workflow": workflow.name, "effects": {k: sorted(v) for k, v in sorted(workflow.effects().items())},
            "nodes": nodes}


def _entry(call: Call, effect: str) -> dict:
    prose = next((name for name, value in call.params.items() if isinstance(value, Prose)), None)
    if effect == "llm" and prose is not None:  # the compiler gives a prose field the llm effect
        return {"effect": effect, "type": call.type, "does": f"LLM: prose step ({call.type}.{prose})"}
    return {"effect": effect, "type": call.type, "does": _one_line(describe_call(call))}


def _one_line(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def plan_text(manifest: dict) -> str:
    lines = [f"{manifest['workflow']}: what a run may do outside its state (nothing was run)"]
    if not manifest["nodes"]:
        lines.append("  nothing: every step only reads and writes the run's state")
    for node in manifest["nodes"]:
        lines.append(f"{node['node']} ({node['type']}):")
        seen = set()
        for item in node["effects"]:
            key = (item["does"], item["type"])
            if key in seen:
                continue
            seen.add(key)
            kinds = ", ".join(e["effect"] for e in node["effects"] if (e["does"], e["type"]) == key)
            lines.append(f"  {item['does']}   [{kinds}]")
    return "\n".join(lines) + "\n"
