"""Semantic rules the schema cannot express: targets, the graph, and each node type's own `check`."""

from __future__ import annotations

from typing import Any, Mapping

from wfexec.language.diagnostics import Reporter, did_you_mean, format_yaml_path
from wfexec.language.expressions import Template


def check(data: dict, nodes: dict, endings: dict, static_targets: list, report: Reporter,
          endings_are_nodes: bool = False) -> None:
    raw_nodes = data.get("nodes")
    raw_nodes = raw_nodes if isinstance(raw_nodes, dict) else {}
    raw_endings = data.get("endings")
    raw_endings = raw_endings if isinstance(raw_endings, dict) else {}
    _check_targets(raw_nodes, raw_endings, static_targets, report, endings_are_nodes)
    for node in nodes.values():
        check = node.kind.checks.check
        if check is not None:
            check(node, raw_nodes[node.id], report)
    if not report.diagnostics or all(d.severity != "error" for d in report.diagnostics):
        _check_graph(data.get("start_node"), nodes, endings, report, raw_nodes)


def _check_targets(raw_nodes: dict, raw_endings: dict, static_targets: list, report: Reporter,
                   endings_are_nodes: bool) -> None:
    known = list(raw_nodes) + list(raw_endings)
    for path, name in static_targets:
        if name in raw_nodes or name in raw_endings:
            continue
        what = "start_node" if path == ("start_node",) else f"`{_field_path(path)}`"
        hint = did_you_mean(name, known) or ("name a node under `nodes:` (an ending is a node with `type: ending`)"
                                             if endings_are_nodes else
                                             "name a node under `nodes:` or an ending under `endings:`")
        report.error(path, "unknown-target", f"{what} names '{name}', which is neither a node nor an ending", hint)


def _field_path(path: tuple) -> str:
    """`on_response.yes.next_node` for a path inside a node or ending; the path itself otherwise."""
    if len(path) > 2 and path[0] in ("nodes", "endings"):
        return format_yaml_path(path[2:])
    return format_yaml_path(path)


def _edges(node) -> list[tuple[str, Any]]:
    return [(label, target) for label, target in node.kind.targets(node.spec) if target is not None]


def successors(nodes: Mapping[str, Any], endings: Mapping[str, Any], uncompiled: tuple = ()) -> dict[str, set[str]]:
    """Where each node (and ending, by its retry_node) can go next; a computed target may go anywhere.
    `uncompiled` names nodes that failed their checks: still targets, their own edges are found elsewhere."""
    everything = list(nodes) + list(endings) + list(uncompiled)
    out: dict[str, set[str]] = {}
    for node_id, node in nodes.items():
        targets: set[str] = set()
        for _label, target in _edges(node):
            if isinstance(target, Template):
                targets.update(everything)
            elif target in nodes or target in endings or target in uncompiled:
                targets.add(target)
        out[node_id] = targets
    for ending in endings.values():
        retry = ending.recovery.get("retry_node") if isinstance(ending.recovery, dict) else None
        out[ending.id] = {retry} if isinstance(retry, str) and retry in nodes else set()
    return out


def closure(starts, edges: dict[str, set[str]]) -> set[str]:
    """Every name reachable from `starts` along `edges`, the starts included."""
    reached = set(starts)
    frontier = list(reached)
    while frontier:
        for nxt in edges.get(frontier.pop(), ()):
            if nxt not in reached:
                reached.add(nxt)
                frontier.append(nxt)
    return reached


def names_in(raw: Any, names) -> set[str]:
    """Every string anywhere in `raw` that is one of `names`."""
    if isinstance(raw, str):
        return {raw} if raw in names else set()
    if isinstance(raw, dict):
        return set().union(*(names_in(v, names) for v in raw.values()))
    if isinstance(raw, list):
        return set().union(*(names_in(v, names) for v in raw))
    return set()


def _check_graph(start: Any, nodes: dict, endings: dict, report: Reporter, raw_nodes: dict) -> None:
    # A node that failed its own checks was not compiled, yet its targets are still its targets: read them
    # from what was written, so the nodes after it are not called unreachable.
    broken = [node_id for node_id in raw_nodes if node_id not in nodes and node_id not in endings]
    if not isinstance(start, str) or (start not in nodes and start not in endings and start not in broken):
        return  # reported already: start_node is missing, not a name, or names nothing
    forward = successors(nodes, endings, tuple(broken))
    known = set(nodes) | set(endings) | set(broken)
    for node_id in broken:
        forward[node_id] = names_in(raw_nodes[node_id], known)
    reached = closure([start], forward)
    for node_id in nodes:
        if node_id not in reached:
            report.warning(("nodes", node_id), "unreachable-node",
                           f"node '{node_id}' cannot be reached from start_node '{start}'",
                           "route to it from another node, or remove it", at_key=True)
    for ending_id in endings:
        if ending_id not in reached:
            report.warning(("endings", ending_id), "unreachable-ending", f"ending '{ending_id}' is never reached",
                           "route to it, or remove it", at_key=True)

    # Which nodes can reach an ending: walk the edges backwards from every ending.
    backward: dict[str, set[str]] = {}
    for source, targets in forward.items():
        for target in targets:
            backward.setdefault(target, set()).add(source)
    finishing = closure(endings, backward)
    for node_id in nodes:
        if node_id in reached and node_id not in finishing:
            report.warning(("nodes", node_id), "no-way-out", f"from node '{node_id}' no path leads to an ending",
                           "the run would loop until its step budget; add a route to an ending", at_key=True)
