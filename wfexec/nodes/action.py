"""`action`: run consequences in order; the first failure skips the rest."""

from __future__ import annotations

from dataclasses import dataclass

from wfexec.types.registry import ActionFailed
from wfexec.nodes.base import CONSEQUENCES, TARGET, Outcome

TYPE = "action"
SCHEMA = {
    "properties": {"actions": CONSEQUENCES, "on_success": TARGET, "on_failure": TARGET},
    "required": ["actions", "on_success"],
}


@dataclass(frozen=True)
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
