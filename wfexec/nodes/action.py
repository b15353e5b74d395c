"""`action`: run consequences in order; the first failure skips the rest."""

from __future__ import annotations

from wfexec.records import dataclass

from wfexec.language.prose import Prose
from wfexec.types.registry import ActionFailed
from wfexec.nodes.base import CONSEQUENCES, TARGET, NodeType, Outcome
from wfexec.nodes.context import NodeContext
from wfexec.nodes.parts import Checks, Docs, Drawing

TYPE = "action"
SCHEMA = {
    "properties": {"actions": CONSEQUENCES, "on_success": TARGET, "on_failure": TARGET,
                   "effect": {"type": "string", "description": "older hiivmind files: the node's work written as "
                                                               "prose, without `actions`: a judgement step"}},
    "required": ["on_success"],
    "anyOf": [{"required": ["actions"]}, {"required": ["effect"]}],
}


@dataclass(frozen=True, slots=True)
class Action:
    actions: tuple
    on_success: object
    on_failure: object
    effect: object = None   # Prose: the work as older files describe it, for the LLM backend


def compile(node_id, raw, c):
    effect = None
    if isinstance(raw.get("effect"), str) and not raw.get("actions"):
        effect = Prose.of(raw["effect"], "value")
        c.report.warning(c.full(("effect",)), "prose-step",
                         f"action node '{node_id}' has no `actions`, only a prose `effect`: it runs as a judgement "
                         "step on the LLM backend", "write its work as `actions:` to run it as code, for free; keep "
                         "it and the run needs --backend (validate --strict refuses it)")
    return Action(
        actions=c.calls(raw.get("actions", []), ("actions",), "consequence"),
        on_success=c.target(raw.get("on_success"), ("on_success",)),
        on_failure=c.target(raw.get("on_failure"), ("on_failure",)),
        effect=effect,
    )


def targets(spec):
    return [("on_success", spec.on_success), ("on_failure", spec.on_failure)]


def calls(spec):
    return list(spec.actions)


def execute(node, ctx: NodeContext) -> Outcome:
    spec = node.spec
    if spec.effect is not None:
        return _judged(node, ctx)
    failed = ctx.apply_each(spec.actions)
    if failed is None:
        return Outcome(spec.on_success, {"success": True}, "on_success")
    index, failure = failed
    call = spec.actions[index]
    error = ctx.record_error(call, failure)
    if spec.on_failure is None:
        ctx.fail(f"action {index + 1} ({call.type}) failed: {failure.message}, and the node has "
                 "no on_failure", failure.hint or "add `on_failure: <node or ending>` to handle it", call.where)
    return Outcome(spec.on_failure, {"success": False, "error": error, "failed_action": index}, "on_failure")


def _judged(node, ctx: NodeContext) -> Outcome:
    """A prose `effect`: the model does the work; its reply gives the values the nodes after it read."""
    spec = node.spec
    try:
        ctx.judge_effect(spec.effect, ctx.workflow.reply_paths.get(node.id, ()))
    except ActionFailed as failure:
        ctx.keep_error(failure.message, failure.hint)
        if spec.on_failure is None:
            ctx.fail(failure.message, failure.hint, node.where)
        return Outcome(spec.on_failure, {"success": False, "error": failure.message}, "on_failure")
    return Outcome(spec.on_success, {"success": True}, "on_success")


def judgement(spec, raw) -> str | None:
    return "prose effect" if isinstance(raw.get("effect"), str) and not raw.get("actions") else None


def replies_into_state(spec) -> bool:
    return spec.effect is not None


def effects(spec):
    return ("llm",) if spec.effect is not None else ()


def idempotent(spec) -> bool:
    return spec.effect is None  # a model's work may differ, and may have cost money


NODE_TYPE = NodeType(
    name=TYPE, schema=SCHEMA, compile=compile, execute=execute, targets=targets, calls=calls,
    skip_edge="on_success", replies_into_state=replies_into_state, effects=effects, idempotent=idempotent,
    checks=Checks(judgement=judgement),
    drawing=Drawing(shape_name="rectangle", mermaid_shape=("[", "]"), dot_shape="shape=box"),
    docs=Docs(doc=__doc__, order=10, field_notes={
        "actions": "consequences run in order; the first failure skips the rest",
        "on_success": "where to go when every action succeeded",
        "on_failure": "where to go when an action failed (its message is at `computed.last_error`)",
    }, rules="""\
1. Run the consequences in `actions` in order. Each one's parameters are rendered (`${...}`) just before it runs.
2. When one fails, skip the rest: set `computed.last_error` to `"<type> failed: <message>"` (and
   `computed.last_error_hint` when the failure says how to fix it) and go to `on_failure`. What the earlier
   actions changed stays changed (`create_checkpoint` / `rollback_checkpoint` undo state, not files). With no
   `on_failure`, the failure is a run error.
3. When all succeed, go to `on_success`.
4. An older file's action node may have no `actions`, only `effect:` (its work in prose): that is a judgement
   step. Do the work it describes; when the nodes after it read state that nothing in the workflow writes, set
   those values (wfexec asks the model for them as one JSON object keyed by state path). Then go to `on_success`.
"""),
)
