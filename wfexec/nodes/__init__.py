"""Node types. Each module here has one job: one node type.

A node type module provides:
- `TYPE`: its name in YAML;
- `SCHEMA`: the JSON Schema of its fields (besides the common ones), where
  `#/$defs/target`, `#/$defs/precondition` and `#/$defs/consequence` stand for
  a transition target and registry calls;
- `compile(node_id, raw, compiler) -> spec`: a frozen dataclass of compiled fields;
- `targets(spec) -> [(label, target)]`: its outgoing edges, for checks and pictures;
- `calls(spec) -> [Call]`: the registry calls it runs, for effects and skills;
- `execute(node, run) -> Outcome`: run it once.

The engine only sees this table.
"""

from __future__ import annotations

from wfexec.nodes import action, conditional, reference, states, user_prompt, validation_gate
from wfexec.nodes.base import Outcome

NODE_TYPES = {m.TYPE: m for m in (action, conditional, user_prompt, validation_gate, reference, states)}

__all__ = ["NODE_TYPES", "Outcome"]
