"""`validation_gate`: every validation is evaluated (no short-circuit); the
messages of the failed ones go to `computed.validation_errors`."""

from __future__ import annotations

from wfexec.nodes.base import PRECONDITION, TARGET, NodeType, Outcome
from wfexec.nodes.context import NodeContext
from wfexec.nodes.parts import Docs, Drawing
from wfexec.records import dataclass

TYPE = "validation_gate"
SCHEMA = {
    "properties": {
        "validations": {"type": "array", "minItems": 1, "items": PRECONDITION},
        "on_valid": TARGET,
        "on_invalid": TARGET,
    },
    "required": ["validations", "on_valid", "on_invalid"],
}

ERRORS_PATH = ("computed", "validation_errors")


@dataclass(frozen=True, slots=True)
class ValidationGate:
    validations: tuple
    on_valid: object
    on_invalid: object


def compile(node_id, raw, c):
    return ValidationGate(
        validations=c.calls(raw.get("validations", []), ("validations",), "precondition"),
        on_valid=c.target(raw.get("on_valid"), ("on_valid",)),
        on_invalid=c.target(raw.get("on_invalid"), ("on_invalid",)),
    )


def targets(spec):
    return [("on_valid", spec.on_valid), ("on_invalid", spec.on_invalid)]


def calls(spec):
    return list(spec.validations)


def execute(node, ctx: NodeContext) -> Outcome:
    errors = []
    for call in node.spec.validations:
        if not ctx.check(call):
            message = call.params.get("error_message")
            errors.append(ctx.render_text(message) if message else f"{call.describe()} failed")
    ctx.set(ERRORS_PATH, errors)
    if errors:
        return Outcome(node.spec.on_invalid, {"valid": False, "errors": errors}, "on_invalid")
    return Outcome(node.spec.on_valid, {"valid": True}, "on_valid")


NODE_TYPE = NodeType(
    name=TYPE, schema=SCHEMA, compile=compile, execute=execute, targets=targets, calls=calls,
    drawing=Drawing(shape_name="hexagon", mermaid_shape=("{{", "}}"), dot_shape="shape=hexagon"),
    docs=Docs(doc=__doc__, order=40, field_notes={
        "validations": "preconditions, each with an `error_message`; all are evaluated",
        "on_valid": "where to go when every validation passed",
        "on_invalid": "where to go otherwise; the messages are at `computed.validation_errors`",
    }, rules="""\
1. Evaluate every precondition in `validations`, all of them (no short-circuit).
2. Set `computed.validation_errors` to the list of the rendered `error_message` of each one that is false (a
   description of the precondition when it has no message); the list is empty when all pass.
3. All true: go to `on_valid`. Otherwise go to `on_invalid`.
"""),
)
