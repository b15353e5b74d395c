"""What every node type shares."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TARGET = {"$ref": "#/$defs/target"}
PRECONDITION = {"$ref": "#/$defs/precondition"}
CONSEQUENCE = {"$ref": "#/$defs/consequence"}
CONSEQUENCES = {"type": "array", "items": CONSEQUENCE}


@dataclass(slots=True)
class Outcome:
    """What a node did: where to go next and what history should record.

    Not frozen: one is made per step, and a frozen dataclass's __init__ costs
    several times more."""

    target: Any                       # str | Template
    outcome: dict = field(default_factory=dict)
    label: str = ""                   # the edge taken: on_success, true, an option id…
