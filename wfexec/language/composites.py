"""Blueprint-lib v8 composites (`confirm`, `gated_action`, `goal_seek`): written by authors, expanded at load
into ordinary v8 nodes, before anything else reads the file.

The expansion is blueprint-lib's walker contract: the generated node names, their order (each composite's nodes
take its place in `nodes:`), their fields in order, and the literal target `default_error` where the author left
a route to the workflow's `default_error` (v8.py resolves it). `wfexec expand FILE` prints the result.

Every generated node carries the source position of the composite (or of the field it came from), so a
diagnostic points at what the author wrote; `origin` maps each generated node back to its composite.

Edges into a composite go to its first node. For `goal_seek`, an edge back to it from inside a goal's
sub-process (the nodes reachable from the goal's `starting_node` by forward routes, without passing the
composite) goes to that goal's `__return_<name>` node, which marks the goal satisfied — unless the goal has a
`success_condition`, which is checked on every round instead. A sub-process that leaves the loop (a forward route
to an ending, to a node that does not exist, or to the composite's own exits) is rejected, naming the goal and
the node; so is one that never comes back.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from wfexec.language.diagnostics import Diagnostic, Reporter
from wfexec.language.loader import Document
from wfexec.language.moved_positions import MovedPositions

COMPOSITES = ("confirm", "gated_action", "goal_seek")
DEFAULT_ERROR = "default_error"  # the literal target of a route to the workflow's default_error


_NEXT = {"type": "string", "minLength": 1, "description": "the node to go to"}
_CONSEQUENCES = {"type": "array", "items": {"type": "object"}, "description": "consequences run on this route"}
_CONDITION = {"description": "an expression string, `{all|any|none|xor: [...]}`, or a precondition object"}
SCHEMAS: dict[str, dict] = {
    "confirm": {
        "description": "composite: ask yes/no, record the answer at `store_as`, and route on it",
        "required": ["prompt", "store_as", "on_confirmed", "on_declined"],
        "properties": {
            "prompt": {"type": "string", "minLength": 1, "description": "the yes/no question"},
            "header": {"type": "string", "description": "the question's short header (default CONFIRM)"},
            "store_as": {"type": "string", "minLength": 1,
                         "description": "the state field that records the answer (true/false)"},
            "on_confirmed": {"type": "object", "required": ["next_node"], "additionalProperties": False,
                             "description": "where a yes goes",
                             "properties": {"next_node": _NEXT, "consequences": _CONSEQUENCES,
                                            "label": {"type": "string", "description": "the yes option's label"}}},
            "on_declined": {"type": "object", "required": ["next_node"], "additionalProperties": False,
                            "description": "where a no goes",
                            "properties": {"next_node": _NEXT,
                                           "label": {"type": "string", "description": "the no option's label"}}},
        }},
    "gated_action": {
        "description": "composite: the first `when` whose condition holds routes (with its consequences)",
        "required": ["when", "else"],
        "properties": {
            "when": {"type": "array", "minItems": 1, "description": "cases, tried in order",
                     "items": {"type": "object", "required": ["condition", "next_node"],
                               "additionalProperties": False,
                               "properties": {"condition": _CONDITION, "consequences": _CONSEQUENCES,
                                              "next_node": _NEXT}}},
            "else": {**_NEXT, "description": "where to go when no case holds"},
            "on_unknown": {**_NEXT, "description": "where to go when a condition cannot be evaluated "
                                                   "(default: the workflow's default_error)"},
        }},
    "goal_seek": {
        "description": "composite: a bounded loop that runs each goal's sub-process until all are satisfied",
        "required": ["goals", "max_iterations", "on_complete"],
        "properties": {
            "goals": {"type": "array", "minItems": 1, "description": "the goals, first incomplete first",
                      "items": {"type": "object", "required": ["name", "starting_node"],
                                "additionalProperties": False,
                                "properties": {
                                    "name": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$",
                                             "description": "the goal's name (state: goal_seek.<node>.goals.<name>)"},
                                    "starting_node": {**_NEXT, "description": "the goal's first node"},
                                    "success_condition": {**_CONDITION, "description":
                                                          "checked every round; without it, returning satisfies"},
                                    "run_as": {"enum": ["inline", "subagent"],
                                               "description": "inline (default) or subagent"}}}},
            "max_iterations": {"type": "integer", "minimum": 1, "description": "rounds before on_budget_exceeded"},
            "on_complete": {**_NEXT, "description": "where to go when every goal is satisfied or ignored"},
            "on_abort": {**_NEXT, "description": "where to go when goal_seek.<node>.aborted is set "
                                                 "(default: default_error)"},
            "on_budget_exceeded": {**_NEXT, "description": "where to go after max_iterations rounds "
                                                           "(default: default_error)"},
        }},
}
for _name, _schema in SCHEMAS.items():
    _schema.update(type="object", additionalProperties=False, required=["type", *_schema["required"]],
                   properties={"type": {"const": _name, "description": "the composite"},
                               "description": {"type": "string", "description": "what the node is for"},
                               **_schema["properties"]})

_FORWARD = ("on_success", "on_true", "on_false", "next_node", "else", "on_complete", "on_valid")
_ROUTES = _FORWARD + ("on_failure", "on_unknown", "on_abort", "on_budget_exceeded", "on_invalid")
# Routes written as a mapping of outcome → target: a states node's results, a reference's sub-workflow endings.
_FORWARD_MAPS = ("on_result",)
_ROUTE_MAPS = _FORWARD_MAPS + ("error_mapping",)


def has_composites(data: Any) -> bool:
    nodes = data.get("nodes") if isinstance(data, dict) else None
    return isinstance(nodes, dict) and any(isinstance(raw, dict) and raw.get("type") in COMPOSITES
                                           for raw in nodes.values())


def routes(raw: Any, forward_only: bool = False) -> Iterator[tuple[tuple, str]]:
    """(path inside the node, target) of every route a v8 node (or composite) writes."""
    if not isinstance(raw, dict):
        return
    for key in _FORWARD if forward_only else _ROUTES:
        if isinstance(raw.get(key), str):
            yield (key,), raw[key]
    for key in _FORWARD_MAPS if forward_only else _ROUTE_MAPS:
        targets = raw.get(key)
        if isinstance(targets, dict):
            for outcome, target in targets.items():
                if isinstance(target, str):
                    yield (key, outcome), target
    for key in ("on_response", "branches"):
        handlers = raw.get(key)
        if isinstance(handlers, dict):
            for option, handler in handlers.items():
                if isinstance(handler, str):
                    yield (key, option), handler
                elif isinstance(handler, dict) and isinstance(handler.get("next_node"), str):
                    yield (key, option, "next_node"), handler["next_node"]
    for key in ("on_confirmed", "on_declined"):
        if isinstance(raw.get(key), dict) and isinstance(raw[key].get("next_node"), str):
            yield (key, "next_node"), raw[key]["next_node"]
    if isinstance(raw.get("when"), list):
        for index, case in enumerate(raw["when"]):
            if isinstance(case, dict) and isinstance(case.get("next_node"), str):
                yield ("when", index, "next_node"), case["next_node"]
    if isinstance(raw.get("goals"), list):
        for index, goal in enumerate(raw["goals"]):
            if isinstance(goal, dict) and isinstance(goal.get("starting_node"), str):
                yield ("goals", index, "starting_node"), goal["starting_node"]


def set_route(raw: dict, where: tuple, target: str) -> dict:
    """A copy of `raw` with the route at `where` going to `target`."""
    if len(where) == 1:
        return {**raw, where[0]: target}
    key, rest = where[0], where[1:]
    inner = raw[key]
    if isinstance(inner, list):
        items = list(inner)
        items[rest[0]] = set_route(items[rest[0]], rest[1:], target) if rest[1:] else target
        return {**raw, key: items}
    if len(rest) == 1:
        return {**raw, key: {**inner, rest[0]: target}}
    return {**raw, key: {**inner, rest[0]: set_route(inner[rest[0]], rest[1:], target)}}


def _set(field: str, value: Any) -> dict:
    return {"type": "mutate_state", "operation": "set", "field": field, "value": value}


def _conditional(condition: Any, on_true: str, on_false: str, on_unknown: str | None = None) -> dict:
    node = {"type": "conditional", "condition": condition, "on_true": on_true, "on_false": on_false}
    if on_unknown is not None:
        node["on_unknown"] = on_unknown
    return node


def _action(consequences: list, on_success: str, run_as: str | None = None) -> dict:
    node: dict = {"type": "action"}
    if run_as is not None:
        node["run_as"] = run_as
    node.update(consequences=consequences, on_success=on_success)
    return node


class _Expansion:
    def __init__(self, doc: Document):
        self.data = doc.data
        self.positions = MovedPositions(doc.positions)
        self.report = Reporter(doc.path, self.positions)
        self.origin: dict[str, str] = {}  # generated node → the composite it came from

    def place(self, composite: str, generated: str, sources: dict[tuple, tuple] | None = None) -> None:
        """Give `generated` the composite's position, and each field in `sources` (generated path → authored
        path under the composite) the position of what the author wrote there."""
        at, to = ("nodes", composite), ("nodes", generated)
        self.origin[generated] = composite
        for source, target in ((at, to), (("@key",) + at, ("@key",) + to)):
            if source in self.positions:
                self.positions[target] = self.positions[source]
        for new, old in (sources or {}).items():
            self.positions.move(at + old, to + new)

    # ------------------------------------------------------------------ #

    def confirm(self, name: str, raw: dict) -> dict[str, dict]:
        confirmed, declined = raw["on_confirmed"], raw["on_declined"]
        field = raw["store_as"]
        ask, gate, act = f"{name}__ask", f"{name}__gate", f"{name}__act"
        nodes = {
            ask: {"type": "user_prompt",
                  "prompt": {"question": raw["prompt"], "header": raw.get("header", "CONFIRM"),
                             "options": [{"id": "yes", "label": confirmed.get("label", "Yes")},
                                         {"id": "no", "label": declined.get("label", "No")}]},
                  "on_response": {"yes": {"consequences": [_set(field, True)], "next_node": gate},
                                  "no": {"consequences": [_set(field, False)], "next_node": gate}}},
            gate: _conditional(f"{field} == true", act if confirmed.get("consequences") else confirmed["next_node"],
                               declined["next_node"]),
        }
        self.place(name, ask, {("prompt", "question"): ("prompt",), ("prompt", "header"): ("header",),
                               ("on_response",): ("store_as",)})
        self.place(name, gate, {("on_true",): ("on_confirmed", "next_node"),
                                ("on_false",): ("on_declined", "next_node")})
        if confirmed.get("consequences"):
            nodes[act] = _action(confirmed["consequences"], confirmed["next_node"])
            self.place(name, act, {("consequences",): ("on_confirmed", "consequences"),
                                   ("on_success",): ("on_confirmed", "next_node")})
        return nodes

    def gated_action(self, name: str, raw: dict) -> dict[str, dict]:
        cases = raw["when"]
        nodes: dict[str, dict] = {}
        for index, case in enumerate(cases):
            here = f"{name}__case_{index}"
            after = f"{name}__case_{index + 1}" if index + 1 < len(cases) else raw["else"]
            act = f"{here}__act"
            nodes[here] = _conditional(case["condition"], act if case.get("consequences") else case["next_node"],
                                       after, raw.get("on_unknown"))
            self.place(name, here, {("condition",): ("when", index, "condition"),
                                    ("on_true",): ("when", index, "next_node"),
                                    ("on_false",): ("else",) if index + 1 == len(cases) else ("when", index + 1),
                                    ("on_unknown",): ("on_unknown",)})
            if case.get("consequences"):
                nodes[act] = _action(case["consequences"], case["next_node"])
                self.place(name, act, {("consequences",): ("when", index, "consequences"),
                                       ("on_success",): ("when", index, "next_node")})
        return nodes

    def goal_seek(self, name: str, raw: dict) -> dict[str, dict]:
        goals, limit = raw["goals"], raw["max_iterations"]
        state = f"goal_seek.{name}"
        entry, init, tick = f"{name}__entry", f"{name}__init", f"{name}__tick"
        budget, abort, complete = f"{name}__budget_check", f"{name}__abort_check", f"{name}__complete_check"
        checked = [(i, g) for i, g in enumerate(goals) if "success_condition" in g]

        def status(goal: dict) -> str:
            return f"{state}.goals.{goal['name']}.status"

        def check(position: int) -> str:
            return f"{name}__check_{checked[position][1]['name']}" if position < len(checked) else budget

        nodes: dict[str, dict] = {
            entry: _conditional(f"{state}.iterations == null", init, tick),
            init: _action([_set(f"{state}.iterations", 0)] + [_set(status(g), "incomplete") for g in goals],
                          f"{name}__dispatch_case_0"),
            tick: _action([{"type": "mutate_state", "operation": "increment", "field": f"{state}.iterations"}],
                          check(0)),
        }
        for position, (index, goal) in enumerate(checked):
            mark = f"{name}__mark_{goal['name']}"
            nodes[check(position)] = _conditional(goal["success_condition"], mark, check(position + 1))
            nodes[mark] = _action([_set(status(goal), "satisfied")], check(position + 1))
            self.place(name, check(position), {("condition",): ("goals", index, "success_condition")})
            self.place(name, mark, {})
        nodes[budget] = _conditional(f"{state}.iterations > {limit}", raw.get("on_budget_exceeded", DEFAULT_ERROR),
                                     abort)
        nodes[abort] = _conditional(f"{state}.aborted == true", raw.get("on_abort", DEFAULT_ERROR), complete)
        nodes[complete] = _conditional(
            {"all": [{"type": "state_check", "field": status(g), "operator": "in", "value": ["satisfied", "ignored"]}
                     for g in goals]}, raw["on_complete"], f"{name}__dispatch_case_0")
        for index, goal in enumerate(goals):
            after = f"{name}__dispatch_case_{index + 1}" if index + 1 < len(goals) else DEFAULT_ERROR
            nodes[f"{name}__dispatch_case_{index}"] = _conditional(f"{status(goal)} == 'incomplete'",
                                                                   goal["starting_node"], after)
            self.place(name, f"{name}__dispatch_case_{index}", {("on_true",): ("goals", index, "starting_node")})
        for goal in goals:
            if "success_condition" not in goal:
                nodes[f"{name}__return_{goal['name']}"] = _action([_set(status(goal), "satisfied")], entry,
                                                                  goal.get("run_as"))
        for generated, spot in ((entry, {}), (init, {}), (tick, {("consequences",): ("max_iterations",)}),
                                (budget, {("condition",): ("max_iterations",),
                                          ("on_true",): ("on_budget_exceeded",)}),
                                (abort, {("on_true",): ("on_abort",)}),
                                (complete, {("on_true",): ("on_complete",)})):
            self.place(name, generated, spot)
        for index, goal in enumerate(goals):
            if "success_condition" not in goal:
                self.place(name, f"{name}__return_{goal['name']}", {("run_as",): ("goals", index, "run_as")})
        return nodes

    # ------------------------------------------------------------------ #

    def returns(self, name: str, raw: dict, nodes: dict) -> dict[tuple[str, tuple], str]:
        """(node, route) → new target, for the routes back into goal_seek `name` from its goals' sub-processes;
        problems for a sub-process that leaves the loop or never returns."""
        exits = {raw.get(key) for key in ("on_complete", "on_abort", "on_budget_exceeded")} - {None}
        owner: dict[tuple[str, tuple], str] = {}
        back: dict[tuple[str, tuple], str] = {}
        for goal in raw["goals"]:
            if goal["starting_node"] not in nodes:
                continue  # reported as a missing target, where it is written
            seen, todo, returned = set(), [goal["starting_node"]], False
            while todo:
                current = todo.pop()
                if current in seen or current == name:
                    continue
                seen.add(current)
                node = nodes.get(current)
                if not isinstance(node, dict) or node.get("type") == "ending" or current in exits:
                    self._escapes(name, goal, current, node, nodes, seen)
                    break
                for where, target in routes(node, forward_only=True):
                    if isinstance(node.get("type"), str) and node["type"] in COMPOSITES and where[0] == "goals":
                        continue
                    if target == name:
                        returned = True
                        key = (current, where)
                        if key in owner and owner[key] != goal["name"]:
                            self.report.error(("nodes", current) + where, "goal-seek-shared-return",
                                              f"node '{current}' returns to goal_seek '{name}' from two goals "
                                              f"('{owner[key]}' and '{goal['name']}')",
                                              "give each goal its own last node")
                        owner[key] = goal["name"]
                        if "success_condition" not in goal:
                            back[key] = f"{name}__return_{goal['name']}"
                    elif target not in seen:
                        todo.append(target)
            else:
                if not returned:
                    self.report.error(("nodes", name, "goals", raw["goals"].index(goal), "starting_node"),
                                      "goal-seek-no-return",
                                      f"goal '{goal['name']}' of goal_seek '{name}' never routes back to '{name}'",
                                      f"route the goal's last node to `{name}`")
        return back

    def _escapes(self, name: str, goal: dict, current: str, node: Any, nodes: dict, seen: set) -> None:
        origin = next(((n, where) for n in seen if isinstance(nodes.get(n), dict)
                       for where, target in routes(nodes[n], forward_only=True) if target == current), None)
        what = "is not a node" if not isinstance(node, dict) else \
            "is an ending" if node.get("type") == "ending" else "is where the goal_seek itself goes next"
        where = ("nodes",) + ((origin[0],) + origin[1] if origin else (name,))
        source = f"node '{origin[0]}'" if origin else "its starting node"
        self.report.error(where, "goal-seek-escape",
                          f"goal '{goal['name']}' of goal_seek '{name}' leaves the loop: {source} goes on to "
                          f"'{current}', which {what}",
                          f"route the goal's last node back to '{name}' (the goal_seek marks the goal and decides "
                          "what comes next)")


ENTRY = {"confirm": "__ask", "gated_action": "__case_0", "goal_seek": "__entry"}


CheckShape = Callable[[str, dict, Any, tuple, Reporter, str], bool]  # schema.check_against


def expand(doc: Document, check_shape: CheckShape) -> tuple[Document, list[Diagnostic], dict[str, tuple[str, str]]]:
    """The document with its composites expanded; the problems found on the way; each generated node → (its
    composite, the composite's type).
    A composite whose fields `check_shape` rejects is left as it is (its problems are reported)."""
    nodes = doc.data["nodes"]
    expansion = _Expansion(doc)
    composites = {}
    for name, raw in nodes.items():
        if isinstance(raw, dict) and raw.get("type") in COMPOSITES and \
                check_shape(f"composite.{raw['type']}", SCHEMAS[raw["type"]], raw, ("nodes", name),
                            expansion.report, f"{raw['type']} node '{name}'"):
            composites[name] = raw
    entries = {name: name + ENTRY[raw["type"]] for name, raw in composites.items()}
    back: dict[tuple[str, tuple], str] = {}
    for name, raw in composites.items():
        if raw["type"] == "goal_seek":
            back.update(expansion.returns(name, raw, nodes))
    out: dict = {}
    for name, raw in nodes.items():
        raw = _rerouted(raw, name, back, entries)
        if name not in composites:
            out[name] = raw
            continue
        for new_name, new in getattr(expansion, raw["type"])(name, raw).items():
            if new_name in nodes:
                expansion.report.error(("nodes", new_name), "composite-name-clash",
                                       f"node '{new_name}' has the name of a node that composite '{name}' makes",
                                       "rename the node", at_key=True)
            out[new_name] = new
    data = {**doc.data, "nodes": out}
    if isinstance(data.get("start_node"), str) and data["start_node"] in entries:
        data["start_node"] = entries[data["start_node"]]
    expanded = Document(path=doc.path, data=data, positions=expansion.positions, diagnostics=list(doc.diagnostics),
                        text=doc.text)
    origin = {made: (composite, composites[composite]["type"]) for made, composite in expansion.origin.items()}
    return expanded, expansion.report.diagnostics, origin


def _rerouted(raw: Any, name: str, back: dict, entries: dict) -> Any:
    for where, target in list(routes(raw)):
        new = back.get((name, where)) or entries.get(target)
        if new is not None:
            raw = set_route(raw, where, new)
    return raw
