"""`action`: run consequences in order; the first failure skips the rest."""

from __future__ import annotations

from dataclasses import dataclass

from wfexec.types.registry import ActionFailed
from wfexec.nodes.base import CONSEQUENCES, TARGET, NodeType, Outcome

TYPE = "action"
SCHEMA = {
    "properties": {"actions": CONSEQUENCES, "on_success": TARGET, "on_failure": TARGET},
    "required": ["actions", "on_success"],
}


@dataclass(frozen=True, slots=True)
class Action:
    actions: tuple
    on_success: object
    on_failure: object


def compile(node_id, raw, c):
    return Action(
        actions=c.calls(raw.get("actions", []), ("actions",), "consequence"),
        on_success=c.target(raw.get("on_success"), ("on_success",)),
        on_failure=c.target(raw.get("on_failure"), ("on_failure",)),
    )


def targets(spec):
    return [("on_success", spec.on_success), ("on_failure", spec.on_failure)]


def calls(spec):
    return list(spec.actions)


def execute(node, run) -> Outcome:
    spec = node.spec
    for index, call in enumerate(spec.actions):
        try:
            run.apply(call)
        except ActionFailed as failure:
            error = run.record_error(node, call, failure)
            if spec.on_failure is None:
                run.fail(node, f"action {index + 1} ({call.type}) failed: {failure.message}, and the node has "
                         "no on_failure", failure.hint or "add `on_failure: <node or ending>` to handle it",
                         call.where)
            return Outcome(spec.on_failure, {"success": False, "error": error, "failed_action": index},
                           "on_failure")
    return Outcome(spec.on_success, {"success": True}, "on_success")


NODE_TYPE = NodeType(
    name=TYPE, schema=SCHEMA, compile=compile, execute=execute, targets=targets, calls=calls, doc=__doc__, order=10,
    field_notes={
        "actions": "consequences run in order; the first failure skips the rest",
        "on_success": "where to go when every action succeeded",
        "on_failure": "where to go when an action failed (its message is at `computed.last_error`)",
    },
    rules="""\
1. Run the consequences in `actions` in order. Each one's parameters are rendered (`${...}`) just before it runs.
2. When one fails, skip the rest: set `computed.last_error` to `"<type> failed: <message>"` (and
   `computed.last_error_hint` when the failure says how to fix it) and go to `on_failure`. What the earlier
   actions changed stays changed (`create_checkpoint` / `rollback_checkpoint` undo state, not files). With no
   `on_failure`, the failure is a run error.
3. When all succeed, go to `on_success`.
""",
    skip_edge="on_success", shape_name="rectangle", mermaid_shape=("[", "]"), dot_shape="shape=box",
)
