"""`states`: a folder (directory, zip, or inline `states:` mapping) of `.md`/`.sh`
states run in the md/sh protocol (DESIGN §4).

This module holds the node's schema and compiled shape; running the protocol
is `wfexec.protocol`'s job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .base import TARGET, Outcome

TYPE = "states"
SCHEMA = {
    "properties": {
        "folder": {"type": "string"},
        "states": {"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 1},
        "start": {"type": "string"},
        "input": {},
        "budget_usd": {"type": "number", "minimum": 0},
        "timeout": {"type": "number", "exclusiveMinimum": 0},
        "backend": {"type": "string"},
        "model": {"type": "string"},
        "effort": {"type": "string"},
        "cwd": {"type": "string"},
        "store_as": {"type": "string"},
        "on_result": {"type": "object", "additionalProperties": TARGET},
        "on_success": TARGET,
        "on_failure": TARGET,
    },
    "oneOf": [{"required": ["folder"]}, {"required": ["states"]}],
    "required": ["on_success"],
}


@dataclass(frozen=True)
class States:
    folder: Any              # Path or None
    inline: dict | None
    start: str | None
    input: Any
    budget_usd: float | None
    timeout: float | None
    backend: str | None
    model: str | None
    effort: str | None
    cwd: Any
    store_as: tuple | None
    on_result: dict
    on_success: Any
    on_failure: Any


def compile(node_id, raw, c):
    folder = raw.get("folder")
    return States(
        folder=c.file(folder, ("folder",), "states folder", allow_dir=True) if folder else None,
        inline=dict(raw["states"]) if isinstance(raw.get("states"), dict) else None,
        start=raw.get("start"),
        input=c.value(raw.get("input"), ("input",)),
        budget_usd=raw.get("budget_usd"),
        timeout=raw.get("timeout"),
        backend=raw.get("backend"),
        model=raw.get("model"),
        effort=raw.get("effort"),
        cwd=c.value(raw.get("cwd"), ("cwd",)),
        store_as=c.path(raw["store_as"], ("store_as",)) if raw.get("store_as") else None,
        on_result={str(k): c.target(v, ("on_result", k)) for k, v in (raw.get("on_result") or {}).items()},
        on_success=c.target(raw.get("on_success"), ("on_success",)),
        on_failure=c.target(raw.get("on_failure"), ("on_failure",)),
    )


def targets(spec):
    edges = [(f"result {k}", v) for k, v in spec.on_result.items()]
    return edges + [("on_success", spec.on_success), ("on_failure", spec.on_failure)]


def calls(spec):
    return []


def execute(node, run) -> Outcome:
    run.stop(node, "this wfexec cannot run `states` nodes yet (the md/sh protocol runner is not built)",
             "run the folder with an agent for now, or follow the project's issue tracker")
