"""The run state.

State is a plain dict (JSON-shaped) so it can be snapshotted, diffed and
stored as is:

    {flags: {}, computed: {}, user_responses: {}, history: [], checkpoints: {},
     <every custom key of initial_state>}

Paths into it (`computed.sha`, `sources[0].id`) are `wfexec.language.paths`.
"""

from __future__ import annotations

from wfexec.errors import WfexecError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

STANDARD_KEYS = ("flags", "computed", "user_responses", "history", "checkpoints")


def new_state(initial_state: Mapping[str, Any] | None) -> dict:
    """The state a run starts with: the standard keys, then initial_state on top."""
    state: dict[str, Any] = {"flags": {}, "computed": {}, "user_responses": {}, "history": [], "checkpoints": {}}
    if not initial_state:
        return state
    import copy  # (with weakref, ~1 ms) for a workflow that has an initial_state, not at every start

    for key, value in copy.deepcopy(initial_state).items():
        if key in ("flags", "computed", "user_responses") and isinstance(value, dict):
            state[key].update(value)
        else:
            state[key] = value
    return state


class BadOverride(WfexecError):
    """A `--set PATH=VALUE` whose path cannot be set: the command line is wrong (exit 2)."""

    outcome = "invalid"


def apply_overrides(state: dict, overrides: Mapping[str, Any]) -> None:
    """`--set PATH=VALUE`, each in turn, on a run's state before its first step."""
    from wfexec.language.paths import PathError, parse_path, set_path

    for path, value in overrides.items():
        try:
            set_path(state, parse_path(path), value)
        except (PathError, ValueError) as exc:
            raise BadOverride(f"--set {path}: {exc}", "use a dotted path such as computed.x or flags.ready") from None
