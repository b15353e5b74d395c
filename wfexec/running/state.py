"""The run state.

State is a plain dict (JSON-shaped) so it can be snapshotted, diffed and
stored as is:

    {flags: {}, computed: {}, user_responses: {}, history: [], checkpoints: {},
     <every custom key of initial_state>}

Paths into it (`computed.sha`, `sources[0].id`) are `wfexec.language.paths`.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

STANDARD_KEYS = ("flags", "computed", "user_responses", "history", "checkpoints")


def new_state(initial_state: Mapping[str, Any] | None) -> dict:
    """The state a run starts with: the standard keys, then initial_state on top."""
    state: dict[str, Any] = {"flags": {}, "computed": {}, "user_responses": {}, "history": [], "checkpoints": {}}
    for key, value in copy.deepcopy(initial_state or {}).items():
        if key in ("flags", "computed", "user_responses") and isinstance(value, dict):
            state[key].update(value)
        else:
            state[key] = value
    return state
