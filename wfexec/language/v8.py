"""Blueprint-lib v4–v8 workflows, read as they are written: rewritten at load into the shape the compiler knows,
with every source position moved along, so a diagnostic points at what the author wrote.

A v8 file names no library version; it is recognised by its shape: a node of `type: ending`, or a top-level
`default_error`. What the rewrite does:

| v8 | as compiled |
|---|---|
| a node `type: ending` with `outcome` | an entry of `endings:` with `type` (`indeterminate` → `failure`, category `indeterminate`) |
| `consequences:` of an action, a handler's `consequences:` | `actions:`, `consequence:` |
| flat `on_true`/`on_false` of a conditional | `branches: {on_true, on_false}` |
| a condition written as a string, or `{all|any|none|xor: [...]}` | `evaluate_expression`, `all_of`/`any_of`/`none_of`/`xor_of` |
| a handler written `option: node` | `option: {next_node: node}` |
| `default_error` | the `on_failure` of every action and the `on_unknown` of every conditional that has none |

A blueprint-lib v7 file has the same shapes with its endings in a top-level `endings:` block (entries with
`type:`); it is read the same way. A file with both ending nodes and an `endings:` block is an error.
"""

from __future__ import annotations

from typing import Any

from wfexec.language.composites import COMPOSITES, DEFAULT_ERROR, routes, set_route
from wfexec.language.loader import Document
from wfexec.language.moved_positions import MovedPositions

# Set on an ending the rewrite made, to the id the author wrote (an `x-` key: the schema lets it through).
REPORTED_AS = "x-wfexec-reported-as"
V8_TOP_LEVEL = ("default_error", "trust_mode", "data_mcps", "payload_types", "declared_effects")
OUTCOMES = {"success": "success", "failure": "failure", "error": "error", "cancelled": "cancelled",
            "indeterminate": "failure"}
COMBINATORS = {"all": "all_of", "any": "any_of", "none": "none_of", "xor": "xor_of"}
_ENDING_FIELDS = ("message", "summary", "details", "category", "recovery", "description")


def is_v8(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    nodes = data.get("nodes")
    written_v8 = isinstance(nodes, dict) and any(
        isinstance(raw, dict) and (raw.get("type") == "ending" or raw.get("type") in COMPOSITES)
        for raw in nodes.values())
    return written_v8 or "default_error" in data


class _Rewrite:
    def __init__(self, doc: Document):
        self.positions = MovedPositions(doc.positions)
        self.errors: list[tuple[tuple, str, str, str]] = []  # (path, code, message, hint)

    def move(self, old: tuple, new: tuple) -> None:
        """Positions under `old` (and of its keys) are now also those of `new`."""
        self.positions.move(old, new)

    def condition(self, value: Any, at: tuple) -> Any:
        if isinstance(value, str):
            return {"type": "evaluate_expression", "expression": value}
        if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in COMBINATORS \
                and isinstance(next(iter(value.values())), list):
            word, parts = next(iter(value.items()))
            self.move(at + (word,), at + ("conditions",))
            return {"type": COMBINATORS[word],
                    "conditions": [self.condition(p, at + ("conditions", i)) for i, p in enumerate(parts)]}
        if isinstance(value, dict) and isinstance(value.get("conditions"), list):
            return {**value, "conditions": [self.condition(p, at + ("conditions", i))
                                            for i, p in enumerate(value["conditions"])]}
        return value


def normalize(doc: Document) -> tuple[Document, list[tuple[tuple, str, str, str]]]:
    """(the document in the compiler's shape, errors found on the way as (path, code, message, hint))."""
    data = dict(doc.data)
    rewrite = _Rewrite(doc)
    default_error = data.pop("default_error", None)
    written_as_nodes = any(isinstance(raw, dict) and raw.get("type") == "ending"
                           for raw in (data.get("nodes") or {}).values())
    if "endings" in data and written_as_nodes:
        # v7 (`default_error`, `consequences:`) keeps an `endings:` block; v8 moved endings into nodes. One file
        # doing both is neither.
        rewrite.errors.append((("endings",), "v8-endings-block",
                               "a v8 workflow writes its endings as nodes (`type: ending`), not in an `endings:` block",
                               "move each ending under `nodes:` with `type: ending` and `outcome:` (an `endings:` "
                               "block alone is blueprint-lib v7's form, also accepted)"))
    nodes: dict = {}
    endings: dict = {}
    for node_id, raw in (data.get("nodes") or {}).items():
        at = ("nodes", node_id)
        if not isinstance(raw, dict):
            nodes[node_id] = raw
            continue
        kind = raw.get("type")
        if kind == "ending" and _restarts(raw):
            nodes.update(_restart_nodes(node_id, raw, data, rewrite))
            written = {k: v for k, v in raw.items() if k not in ("behavior", "consequences")}
            endings[node_id + "__end"] = _ending(written, at, ("endings", node_id + "__end"), rewrite)
            endings[node_id + "__end"][REPORTED_AS] = node_id  # the run ends at the ending the author wrote
            continue
        if kind == "ending":
            endings[node_id] = _ending(raw, at, ("endings", node_id), rewrite)
            continue
        raw = dict(raw)
        if DEFAULT_ERROR not in data.get("nodes", {}):
            raw = _default_error_routes(raw, at, default_error, rewrite)
        if kind == "action":
            raw.pop("run_as", None)  # a goal run `as: subagent` runs inline: its return node says so only
            if "consequences" in raw and "actions" not in raw:
                raw["actions"] = raw.pop("consequences")
                rewrite.move(at + ("consequences",), at + ("actions",))
            if "on_failure" not in raw and default_error is not None:
                raw["on_failure"] = default_error
                rewrite.move(at, at + ("on_failure",))
        elif kind == "conditional":
            if "branches" not in raw and ("on_true" in raw or "on_false" in raw):
                raw["branches"] = {k: raw.pop(k) for k in ("on_true", "on_false") if k in raw}
                for k in raw["branches"]:
                    rewrite.move(at + (k,), at + ("branches", k))
            if "on_unknown" not in raw and default_error is not None:
                raw["on_unknown"] = default_error
                rewrite.move(at, at + ("on_unknown",))
            if "condition" in raw:
                raw["condition"] = rewrite.condition(raw["condition"], at + ("condition",))
        elif kind == "user_prompt" and isinstance(raw.get("on_response"), dict):
            handlers = {}
            for option, handler in raw["on_response"].items():
                there = at + ("on_response", option)
                if isinstance(handler, str):
                    handler = {"next_node": handler}
                    rewrite.move(there, there + ("next_node",))
                elif isinstance(handler, dict) and "consequences" in handler and "consequence" not in handler:
                    handler = dict(handler)
                    handler["consequence"] = handler.pop("consequences")
                    rewrite.move(there + ("consequences",), there + ("consequence",))
                handlers[option] = handler
            raw["on_response"] = handlers
        nodes[node_id] = raw
    data["nodes"] = nodes
    existing = data.get("endings")
    data["endings"] = {**existing, **endings} if isinstance(existing, dict) else endings
    return Document(path=doc.path, data=data, positions=rewrite.positions, diagnostics=list(doc.diagnostics),
                    text=doc.text), rewrite.errors


def _restarts(raw: dict) -> bool:
    return isinstance(raw.get("behavior"), dict) and raw["behavior"].get("type") == "restart"


def _restart_nodes(ending_id: str, raw: dict, data: dict, rewrite: _Rewrite) -> dict:
    """An ending with `behavior: restart`, as nodes: `<id>` counts the restart (`restarts.<id>`) and runs the
    ending's consequences; `<id>__restart_check` goes on to `<id>__restart` while the count is within
    max_restarts (default 3), else to the ending itself, `<id>__end`; `<id>__restart` shows the message, with
    reset_state sets computed, flags and user_responses back to the workflow's initial_state, and goes to
    target_node (default the start node). Plain nodes, so a restart is journaled like any step."""
    behavior = raw["behavior"]
    at = ("nodes", ending_id)
    counter = f"restarts.{ending_id}"
    limit = behavior.get("max_restarts", 3)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        rewrite.errors.append((at + ("behavior", "max_restarts"), "v8-restart",
                               "`max_restarts` must be a whole number of at least 1", "write e.g. `max_restarts: 3`"))
        limit = 1
    target = behavior.get("target_node", data.get("start_node"))
    nodes_written = data.get("nodes")
    nodes_written = nodes_written if isinstance(nodes_written, dict) else {}
    if "target_node" in behavior and target not in nodes_written:
        # checked here, because after the rewrite it would be reported as a generated node's on_success
        rewrite.errors.append((at + ("behavior", "target_node"), "unknown-target",
                               f"`target_node` names '{target}', which is not a node",
                               "name a node under `nodes:`, or leave `target_node` out to go back to the start node"))
        target = data.get("start_node")
    check, again, end = f"{ending_id}__restart_check", f"{ending_id}__restart", f"{ending_id}__end"
    restart: list = [{"type": "display", "content": raw["message"]}] if raw.get("message") else []
    if behavior.get("reset_state"):
        initial = data.get("initial_state")
        initial = initial if isinstance(initial, dict) else {}
        restart += [{"type": "mutate_state", "operation": "set", "field": namespace,
                     "value": initial.get(namespace, {})} for namespace in ("computed", "flags", "user_responses")]
    nodes = {
        ending_id: {"type": "action",
                    "actions": [{"type": "mutate_state", "operation": "set", "field": counter,
                                 "value": "${(" + counter + " ?? 0) + 1}"},
                                *(raw.get("consequences") or [])],
                    "on_success": check, "on_failure": check},
        check: {"type": "conditional", "condition": {"type": "evaluate_expression",
                                                     "expression": f"{counter} <= {limit}"},
                "branches": {"on_true": again, "on_false": end}, "on_unknown": end},
        again: {"type": "action", "actions": restart, "on_success": target},
    }
    rewrite.move(at + ("consequences",), at + ("actions",))
    rewrite.move(at + ("behavior", "target_node"), ("nodes", again, "on_success"))
    for made in (check, again):
        rewrite.move(at, ("nodes", made))
    return nodes


def _default_error_routes(raw: dict, at: tuple, default_error: Any, rewrite: _Rewrite) -> dict:
    """`raw` with each route to the literal `default_error` (a composite's expansion writes it) going to the
    workflow's default_error."""
    for where, target in list(routes(raw)):
        if target != DEFAULT_ERROR:
            continue
        if isinstance(default_error, str):
            raw = set_route(raw, where, default_error)
        else:
            rewrite.errors.append((at + where, "v8-default-error-missing",
                                   f"node '{at[-1]}' routes to default_error, and the workflow has no `default_error`",
                                   "add `default_error: <ending node>` at the top level"))
    return raw


def _ending(raw: dict, at: tuple, to: tuple, rewrite: _Rewrite) -> dict:
    rewrite.move(at, to)
    outcome = raw.get("outcome")
    if outcome is None:
        rewrite.errors.append((to, "v8-ending-outcome", f"ending node '{at[-1]}' has no `outcome`",
                               "add `outcome:` — success, failure, error, cancelled or indeterminate"))
    elif outcome not in OUTCOMES:
        rewrite.errors.append((to + ("type",), "v8-ending-outcome",
                               f"`outcome` {outcome!r} is not one of {', '.join(OUTCOMES)}",
                               "use one of them"))
    # An outcome in error is reported above, once: the compiled ending gets a valid type meanwhile.
    ending: dict = {"type": OUTCOMES.get(outcome, "error") if isinstance(outcome, str) else "error",
                    "message": raw.get("message", "")}
    rewrite.move(at + ("outcome",), to + ("type",))
    for key in _ENDING_FIELDS[1:]:
        if key in raw:
            ending[key] = raw[key]
    if outcome == "indeterminate":
        ending.setdefault("category", "indeterminate")
    for key in raw:
        if key not in ("type", "outcome", *_ENDING_FIELDS):
            ending[key] = raw[key]  # behavior, consequences, a misplaced on_success: the ending's schema says
    return ending
