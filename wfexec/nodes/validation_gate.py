"""`validation_gate`: every validation is evaluated (no short-circuit); the
messages of the failed ones go to `computed.validation_errors`."""

from __future__ import annotations

from dataclasses import dataclass

from wfexec.nodes.base import PRECONDITION, TARGET, Outcome

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


@dataclass(frozen=True)
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


def execute(node, run) -> Outcome:
    errors = []
    for call in node.spec.validations:
        if not run.check(call):
            message = call.params.get("error_message")
            errors.append(run.render_text(message) if message else f"{call.describe()} failed")
    run.set(ERRORS_PATH, errors)
    if errors:
        return Outcome(node.spec.on_invalid, {"valid": False, "errors": errors}, "on_invalid")
    return Outcome(node.spec.on_valid, {"valid": True}, "on_valid")
