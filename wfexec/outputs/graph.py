"""Pictures of a workflow: Mermaid and Graphviz DOT text, SVG/PNG through Graphviz.

Shapes say the node type, edge labels the branch taken (`on_success`, `true`,
an option id...), endings are coloured by their type, nodes no path from
`start_node` reaches are drawn faded, and a `${...}` target is a dashed edge to
a "computed" marker (it may lead anywhere, so it keeps every node reachable,
as `wfexec validate` counts it). Output is deterministic: same workflow,
same bytes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field

from wfexec.errors import WfexecError
from wfexec.language.expressions import Template
from wfexec.language.model import Workflow
from wfexec.nodes.parts import Drawing

START, COMPUTED = "start", "computed"

# Node shapes are each node type's own (its `Drawing`: `NodeType.drawing`).
MERMAID_ENDING = ("([", "])")

# (fill, stroke, text) per ending type.
ENDING_COLOURS = {
    "success": ("#d4edda", "#28a745", "#155724"),
    "failure": ("#fff3cd", "#e0a800", "#856404"),
    "error": ("#f8d7da", "#dc3545", "#721c24"),
    "cancelled": ("#e2e3e5", "#6c757d", "#383d41"),
}
MARKER_COLOURS = ("#ffffff", "#999999", "#555555")

# Words the Mermaid flowchart grammar reserves: a node with such an id is renamed.
_MERMAID_RESERVED = {"end", "graph", "flowchart", "subgraph", "style", "class", "classdef", "click", "linkstyle",
                     "direction", "default", "call", "href", "interpolate", "callback"}
_PLAIN_ID = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Edge:
    source: str
    target: str          # a node id, an ending id, or COMPUTED
    labels: tuple
    kind: str = "branch"  # branch | computed | retry


@dataclass
class Picture:
    """What both formats draw, decided once."""

    name: str
    start: str
    nodes: dict                     # node id → its NodeType
    endings: dict                   # ending id → ending type
    edges: list
    unreachable: set = field(default_factory=set)
    has_computed: bool = False
    broken: dict = field(default_factory=dict)  # node id → why it is drawn broken ("error", "missing")


@dataclass(frozen=True)
class Shape:
    """What drawing a node needs of its kind, for a node drawn without a NodeType (missing, a v8 composite)."""

    name: str
    drawing: Drawing


MISSING = Shape("missing", Drawing())
BROKEN_COLOURS = ("#fdecea", "#dc3545", "#721c24")


def picture_with_errors(checked, data: dict) -> Picture:
    """A workflow with errors, drawn as far as it goes: the nodes that compiled with their edges, the nodes that
    did not (marked "error"), and each edge to a node or ending that does not exist (marked "missing")."""
    from wfexec.nodes.base import node_types

    kinds = node_types()
    compiled = checked.nodes or {}
    nodes: dict = {}
    broken: dict = {}
    for node_id, raw in (checked.raw_nodes or {}).items():
        node_id = str(node_id)
        if node_id in compiled:
            nodes[node_id] = compiled[node_id].kind
        else:
            kind = raw.get("type") if isinstance(raw, dict) else None
            nodes[node_id] = kinds[kind] if isinstance(kind, str) and kind in kinds else MISSING
            broken[node_id] = "error"
    raw_endings: dict = data["endings"] if isinstance(data.get("endings"), dict) else {}
    endings = {str(k): (v.get("type") if isinstance(v, dict) and isinstance(v.get("type"), str) else "error")
               for k, v in raw_endings.items()}
    grouped: dict[tuple, list[str]] = {}
    for node_id, node in compiled.items():
        for label, target in node.kind.targets(node.spec):
            if target is None:
                continue
            if isinstance(target, Template):
                grouped.setdefault((node_id, COMPUTED, "computed"), []).append(f"{label}: {target.source}")
                continue
            target = str(target)
            if target not in nodes and target not in endings:
                nodes[target] = MISSING
                broken[target] = "missing"
            grouped.setdefault((node_id, target, "broken" if target in broken else "branch"), []).append(str(label))
    start: str = data["start_node"] if isinstance(data.get("start_node"), str) else ""
    if start and start not in nodes and start not in endings:
        nodes[start] = MISSING
        broken[start] = "missing"
    edges = [Edge(source, target, tuple(labels), kind) for (source, target, kind), labels in grouped.items()]
    return Picture(name=str(data.get("name", "")), start=start, nodes=nodes, endings=endings, edges=edges,
                   has_computed=any(edge.kind == "computed" for edge in edges), broken=broken)


def picture(workflow: Workflow) -> Picture:
    edges = _edges(workflow)
    return Picture(
        name=workflow.name,
        start=workflow.start_node,
        nodes={node_id: node.kind for node_id, node in workflow.nodes.items()},
        endings={ending_id: ending.type for ending_id, ending in workflow.endings.items()},
        edges=edges,
        unreachable=unreachable(workflow),
        has_computed=any(edge.kind == "computed" for edge in edges),
    )


COMPOSITE_SHAPE = Drawing(mermaid_shape=("[/", "\\]"), dot_shape="shape=component")


def collapsed(pic: Picture, composite_of: dict) -> Picture:
    """`pic` with the nodes each v8 composite expanded into drawn as one box, the composite the author wrote;
    an edge out of it is labelled by the generated node it leaves from (`gate: on_true`, `case_1: on_true`), its
    failure and unknown routes as one `on errors`."""
    if not composite_of:
        return pic

    def outer(name: str) -> str:
        return composite_of[name][0] if name in composite_of else name

    nodes: dict = {}
    for node_id, kind in pic.nodes.items():
        if node_id in composite_of:
            composite, composite_type = composite_of[node_id]
            nodes.setdefault(composite, Shape(composite_type, COMPOSITE_SHAPE))
        else:
            nodes[node_id] = kind
    grouped: dict[tuple, list[str]] = {}
    for edge in pic.edges:
        source, target = outer(edge.source), outer(edge.target)
        if edge.source in composite_of and source == target:
            continue  # inside the composite
        labels = edge.labels
        if edge.source in composite_of:
            part = edge.source[len(source) + 2:]
            labels = tuple("on errors" if label in ("on_failure", "on_unknown") else f"{part}: {label}"
                           for label in labels)
        grouped.setdefault((source, target, edge.kind), []).extend(labels)
    grouped = {key: list(dict.fromkeys(labels)) for key, labels in grouped.items()}
    reached = {outer(name) for name in [*pic.nodes, *pic.endings] if name not in pic.unreachable}
    return Picture(name=pic.name, start=outer(pic.start), nodes=nodes, endings=pic.endings,
                   edges=[Edge(s, t, tuple(labels), kind) for (s, t, kind), labels in grouped.items()],
                   unreachable={outer(name) for name in pic.unreachable} - reached,
                   has_computed=pic.has_computed, broken=pic.broken)


def _edges(workflow: Workflow) -> list[Edge]:
    """Edges in the order the workflow lists them; parallel edges share one arrow with every label."""
    grouped: dict[tuple, list[str]] = {}
    for node_id, node in workflow.nodes.items():
        for label, target in node.kind.targets(node.spec):
            if target is None:
                continue
            if isinstance(target, Template):
                key = (node_id, COMPUTED, "computed")
                label = f"{label}: {target.source}"
            else:
                key = (node_id, str(target), "branch")
            grouped.setdefault(key, []).append(str(label))
    for ending_id, ending in workflow.endings.items():
        retry = ending.recovery.get("retry_node") if isinstance(ending.recovery, dict) else None
        if retry in workflow.nodes:
            grouped.setdefault((ending_id, retry, "retry"), []).append("retry")
    return [Edge(source, target, tuple(labels), kind) for (source, target, kind), labels in grouped.items()]


def unreachable(workflow: Workflow) -> set[str]:
    """Nodes and endings no path from start_node reaches (the validator's own rule)."""
    from wfexec.language.checks import closure, successors

    reached = closure([workflow.start_node], successors(workflow.nodes, workflow.endings))
    return {name for name in [*workflow.nodes, *workflow.endings] if name not in reached}


# --------------------------------------------------------------------------- #
# Mermaid

def _mermaid_ids(pic: Picture) -> dict[str | tuple[str, str], str]:
    """Graph name → a Mermaid id: the name itself when Mermaid reads it as a plain id."""
    taken: set[str] = set()
    ids: dict[str | tuple[str, str], str] = {}

    def allocate(name: str | tuple[str, str], wanted: str) -> None:
        candidate = wanted
        suffix = 2
        while candidate in taken:
            candidate = f"{wanted}_{suffix}"
            suffix += 1
        taken.add(candidate)
        ids[name] = candidate

    names = [*pic.nodes, *pic.endings]
    plain = [n for n in names if _PLAIN_ID.fullmatch(n) and n.lower() not in _MERMAID_RESERVED]
    for name in plain:  # plain names first, so a renamed one never takes a real name
        allocate(name, name)
    for name in names:
        if name not in ids:
            allocate(name, "n_" + re.sub(r"\W", "_", name))
    allocate(("marker", START), "_start")
    allocate(("marker", COMPUTED), "_computed")
    return ids


def _mermaid_text(text: str) -> str:
    """Text inside a quoted Mermaid label."""
    return (text.replace("&", "#amp;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")
            .replace("\n", " "))


def to_mermaid(workflow: Workflow) -> str:
    return mermaid_of(picture(workflow))


def mermaid_of(pic: Picture) -> str:
    ids = _mermaid_ids(pic)
    start_id, computed_id = ids[("marker", START)], ids[("marker", COMPUTED)]
    lines = ["flowchart TD", f'    {start_id}(("start"))']
    for node_id, kind in pic.nodes.items():
        opening, closing = kind.drawing.mermaid_shape
        label = node_id + (" (unreachable)" if node_id in pic.unreachable else "") + \
            (f" ({pic.broken[node_id]})" if node_id in pic.broken else "")
        lines.append(f'    {ids[node_id]}{opening}"{_mermaid_text(label)}"{closing}')
    for ending_id in pic.endings:
        opening, closing = MERMAID_ENDING
        label = ending_id + (" (unreachable)" if ending_id in pic.unreachable else "")
        lines.append(f'    {ids[ending_id]}{opening}"{_mermaid_text(label)}"{closing}')
    if pic.has_computed:
        lines.append(f'    {computed_id}[/"computed"\\]')
    if pic.start:
        lines.append(f"    {start_id} --> {ids[pic.start]}")
    for edge in pic.edges:
        arrow = "-->" if edge.kind == "branch" else "-.->"
        target = computed_id if edge.kind == "computed" else ids[edge.target]
        label = _mermaid_text(", ".join(edge.labels))
        lines.append(f'    {ids[edge.source]} {arrow}|"{label}"| {target}')
    lines += _mermaid_classes(pic, ids)
    return "\n".join(lines) + "\n"


def _mermaid_classes(pic: Picture, ids: dict) -> list[str]:
    lines = []
    for ending_type, (fill, stroke, colour) in ENDING_COLOURS.items():
        lines.append(f"    classDef {ending_type} fill:{fill},stroke:{stroke},color:{colour}")
    lines.append("    classDef unreachable stroke-dasharray:4 3,opacity:0.5")
    fill, stroke, colour = BROKEN_COLOURS
    lines.append(f"    classDef broken fill:{fill},stroke:{stroke},color:{colour},stroke-dasharray:4 3")
    fill, stroke, colour = MARKER_COLOURS
    lines.append(f"    classDef marker fill:{fill},stroke:{stroke},color:{colour}")
    members: dict[str, list[str]] = {}
    for ending_id, ending_type in pic.endings.items():
        members.setdefault(ending_type, []).append(ids[ending_id])
    for name in [*pic.nodes, *pic.endings]:
        if name in pic.unreachable:
            members.setdefault("unreachable", []).append(ids[name])
        if name in pic.broken:
            members.setdefault("broken", []).append(ids[name])
    markers = [ids[("marker", START)]] + ([ids[("marker", COMPUTED)]] if pic.has_computed else [])
    members["marker"] = markers
    for class_name in [*ENDING_COLOURS, "unreachable", "broken", "marker"]:
        if members.get(class_name):
            lines.append(f"    class {','.join(members[class_name])} {class_name}")
    return lines


# --------------------------------------------------------------------------- #
# Graphviz DOT

def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _dot_marker_ids(pic: Picture) -> tuple[str, str]:
    taken = {*pic.nodes, *pic.endings}
    found = []
    for wanted in ("_start", "_computed"):
        candidate = wanted
        while candidate in taken:
            candidate += "_"
        taken.add(candidate)
        found.append(candidate)
    return found[0], found[1]


def to_dot(workflow: Workflow) -> str:
    return dot_of(picture(workflow))


def dot_of(pic: Picture) -> str:
    start_id, computed_id = _dot_marker_ids(pic)
    fill, stroke, colour = MARKER_COLOURS
    lines = [
        f"digraph {_dot_quote(pic.name)} {{",
        "    rankdir=TB;",
        '    node [fontname="Helvetica", fontsize=11];',
        '    edge [fontname="Helvetica", fontsize=9];',
        f'    {_dot_quote(start_id)} [label="start", shape=circle, style=filled, fillcolor="{fill}", '
        f'color="{stroke}", fontcolor="{colour}"];',
    ]
    for node_id, kind in pic.nodes.items():
        attributes = [kind.drawing.dot_shape, f"label={_dot_quote(node_id)}", f"tooltip={_dot_quote(kind.name)}"]
        if node_id in pic.unreachable:
            attributes += ['style=dashed', 'color="#999999"', 'fontcolor="#999999"',
                           f"xlabel={_dot_quote('unreachable')}"]
        if node_id in pic.broken:
            fill, stroke, colour = BROKEN_COLOURS
            attributes += ['style="filled,dashed"', f'fillcolor="{fill}"', f'color="{stroke}"',
                           f'fontcolor="{colour}"', f"xlabel={_dot_quote(pic.broken[node_id])}"]
        lines.append(f"    {_dot_quote(node_id)} [{', '.join(attributes)}];")
    for ending_id, ending_type in pic.endings.items():
        fill, stroke, colour = ENDING_COLOURS.get(ending_type, MARKER_COLOURS)
        style = "rounded,filled,dashed" if ending_id in pic.unreachable else "rounded,filled"
        extra = f", xlabel={_dot_quote('unreachable')}" if ending_id in pic.unreachable else ""
        lines.append(f'    {_dot_quote(ending_id)} [shape=box, style="{style}", fillcolor="{fill}", '
                     f'color="{stroke}", fontcolor="{colour}", label={_dot_quote(ending_id)}, '
                     f"tooltip={_dot_quote(ending_type)}{extra}];")
    if pic.has_computed:
        fill, stroke, colour = MARKER_COLOURS
        lines.append(f'    {_dot_quote(computed_id)} [label="computed", shape=note, style="filled,dashed", '
                     f'fillcolor="{fill}", color="{stroke}", fontcolor="{colour}"];')
    if pic.start:
        lines.append(f"    {_dot_quote(start_id)} -> {_dot_quote(pic.start)};")
    for edge in pic.edges:
        target = computed_id if edge.kind == "computed" else edge.target
        attributes = [f"label={_dot_quote(', '.join(edge.labels))}"]
        if edge.kind != "branch":
            attributes.append("style=dashed")
        if edge.kind == "broken":
            attributes.append(f'color="{BROKEN_COLOURS[1]}"')
        lines.append(f"    {_dot_quote(edge.source)} -> {_dot_quote(target)} [{', '.join(attributes)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- #
# Rendering through Graphviz

class GraphvizMissing(WfexecError, RuntimeError):
    """Graphviz's `dot` program is not on PATH."""


class GraphvizFailed(WfexecError, RuntimeError):
    """`dot` ran and failed."""


def render(dot_text: str, image_format: str, timeout: float = 60) -> bytes:
    """SVG or PNG bytes of a DOT graph, drawn by Graphviz's `dot`."""
    program = shutil.which("dot")
    if program is None:
        raise GraphvizMissing(
            f"--format {image_format} needs Graphviz's `dot` program, which is not on PATH — install Graphviz "
            "(apt-get install graphviz, brew install graphviz, or graphviz.org/download), or use --format "
            "mermaid or --format dot")
    try:
        done = subprocess.run([program, f"-T{image_format}"], input=dot_text.encode("utf-8"), capture_output=True,
                              timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GraphvizFailed(f"Graphviz's dot could not draw the graph: {exc}") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip() or f"exit code {done.returncode}"
        raise GraphvizFailed(f"Graphviz's dot failed: {message}")
    return done.stdout
