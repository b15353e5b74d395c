"""`conditional`: one precondition (composites allowed), a two-way branch.

`branches` may be written `{true, false}` (seed) or `{on_true, on_false}` (v3).
`audit` evaluates every sub-condition of a composite without short-circuit and
writes `{passed, total, passed_count, failed_count, results[]}` to state.
"""

from __future__ import annotations

from wfexec.records import dataclass

from wfexec.errors import WfexecError
from wfexec.nodes.base import PRECONDITION, TARGET, NodeType, Outcome
from wfexec.nodes.context import NodeContext
from wfexec.nodes.parts import Checks, Docs, Drawing

TYPE = "conditional"
SCHEMA = {
    "properties": {
        "condition": PRECONDITION,
        "branches": {
            "type": "object",
            "properties": {"true": TARGET, "false": TARGET, "on_true": TARGET, "on_false": TARGET},
            "additionalProperties": False,
            "oneOf": [{"required": ["true", "false"]}, {"required": ["on_true", "on_false"]}],
        },
        "on_unknown": {**TARGET, "description": "v8: where to go when the condition cannot be evaluated"},
        "audit": {
            "oneOf": [
                {"type": "boolean"},
                {"type": "object", "additionalProperties": False, "properties": {
                    "enabled": {"type": "boolean", "description": "check every condition and record each result"},
                    "output": {"type": "string", "description": "the state path the results are stored at"},
                    "messages": {"type": "object", "additionalProperties": {"type": "string"},
                                 "description": "condition → the message kept when it is false"},
                }},
            ],
        },
    },
    "required": ["condition", "branches"],
}

DEFAULT_AUDIT_OUTPUT = "computed.audit_results"


@dataclass(frozen=True, slots=True)
class Conditional:
    condition: object
    on_true: object
    on_false: object
    true_label: str
    false_label: str
    audit_output: tuple | None
    audit_messages: dict
    on_unknown: object = None


def compile(node_id, raw, c):
    branches = raw.get("branches") or {}
    seed = "true" in branches
    true_key, false_key = ("true", "false") if seed else ("on_true", "on_false")
    audit = raw.get("audit")
    audit_output = None
    messages = {}
    if audit is True or (isinstance(audit, dict) and audit.get("enabled", True)):
        output = audit.get("output", DEFAULT_AUDIT_OUTPUT) if isinstance(audit, dict) else DEFAULT_AUDIT_OUTPUT
        audit_output = c.path(output, ("audit", "output"))
        messages = dict(audit.get("messages") or {}) if isinstance(audit, dict) else {}
    return Conditional(
        condition=c.call(raw.get("condition"), ("condition",), "precondition"),
        on_true=c.target(branches.get(true_key), ("branches", true_key)),
        on_false=c.target(branches.get(false_key), ("branches", false_key)),
        true_label=true_key,
        false_label=false_key,
        audit_output=audit_output,
        audit_messages=messages,
        on_unknown=c.target(raw["on_unknown"], ("on_unknown",)) if raw.get("on_unknown") is not None else None,
    )


def targets(spec):
    unknown = [("on_unknown", spec.on_unknown)] if spec.on_unknown is not None else []
    return [(spec.true_label, spec.on_true), (spec.false_label, spec.on_false), *unknown]


def calls(spec):
    return [spec.condition]


def execute(node, ctx: NodeContext) -> Outcome:
    spec = node.spec
    try:
        result = _audit(spec, ctx) if spec.audit_output is not None else ctx.check(spec.condition)
    except WfexecError as exc:
        if spec.on_unknown is None or exc.outcome == "stopped":  # a step budget is no unknown condition
            raise
        # Three-valued (v8): a condition that cannot be evaluated is unknown, and routes there.
        ctx.keep_error(exc.message, exc.hint)
        return Outcome(spec.on_unknown, {"branch": "unknown", "error": exc.message}, "on_unknown")
    if result:
        return Outcome(spec.on_true, {"branch": "true"}, spec.true_label)
    return Outcome(spec.on_false, {"branch": "false"}, spec.false_label)


def _audit(spec, ctx: NodeContext) -> bool:
    condition = spec.condition
    children = condition.params.get("conditions")
    parts = list(children) if isinstance(children, (list, tuple)) else [condition]
    results = []
    for index, part in enumerate(parts):
        passed = ctx.check(part)
        entry = {"index": index, "condition": part.describe(), "passed": passed}
        if not passed:
            message = part.params.get("error_message") or spec.audit_messages.get(part.type)
            if message:
                entry["message"] = ctx.render_text(message)
        results.append(entry)
    overall = ctx.check(condition) if parts != [condition] else results[0]["passed"]
    passed_count = sum(1 for r in results if r["passed"])
    ctx.set(spec.audit_output, {
        "passed": overall, "total": len(results), "passed_count": passed_count,
        "failed_count": len(results) - passed_count, "results": results,
    })
    return overall



def check(node, raw: dict, report) -> None:
    """`branches` uses true/false (seed) or on_true/on_false (v3): mixing them leaves one pair unused."""
    branches = raw.get("branches")
    if not isinstance(branches, dict) or "true" not in branches:
        return
    if "on_true" not in branches and "on_false" not in branches:
        report.warning(("nodes", node.id, "branches", "true"), "branch-yaml11",
                       f"`branches` of '{node.id}' has `true:`/`false:` keys, which YAML 1.1 tools (check-jsonschema, "
                       "yaml-language-server) read as booleans and then flag", "write `on_true:`/`on_false:`, "
                       "which mean the same to wfexec and to every YAML reader", at_key=True)
    for key in ("on_true", "on_false"):
        if key in branches:
            report.error(("nodes", node.id, "branches", key), "branch-spelling",
                         f"`branches` of '{node.id}' mixes `true`/`false` with `{key}`; `{key}` would be ignored",
                         "write either true/false (seed) or on_true/on_false (v3)", at_key=True)


NODE_TYPE = NodeType(
    name=TYPE, schema=SCHEMA, compile=compile, execute=execute, targets=targets, calls=calls,
    checks=Checks(check=check),
    drawing=Drawing(shape_name="rhombus", mermaid_shape=("{", "}"), dot_shape="shape=diamond"),
    docs=Docs(doc=__doc__, order=20, field_notes={
        "condition": "one precondition; `all_of`, `any_of`, `none_of`, `xor_of` combine others",
        "branches": "`{true: target, false: target}` (seed) or `{on_true, on_false}` (v3)",
        "audit": "evaluate every sub-condition and write the results (default `computed.audit_results`)",
    }, rules="""\
1. Evaluate the precondition `condition` (`all_of`, `any_of`, `none_of`, `xor_of` combine others; `all_of` stops
   at the first false, `any_of` at the first true).
2. True: go to `branches.true` (v3: `branches.on_true`). False: go to `branches.false` (`branches.on_false`).
3. With `audit` (`true`, or `{enabled, output, messages}`), evaluate every sub-condition of the composite without
   stopping early and write `{passed, total, passed_count, failed_count, results: [{index, condition, passed,
   message}]}` to `audit.output` (default `computed.audit_results`), then branch on the composite's result.
"""),
)
