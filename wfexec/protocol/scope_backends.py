"""Which LLM backend a states scope's `.md` states go to (Raymond resolves it per workflow scope, so a nested
workflow called with `<call-workflow>` & co. runs on its own).

A scope whose manifest (`workflow.yaml` beside the states, in the zip, or the keys of a Raymond `.yaml`) says
`backend: pi` or `backend: {name: pi, options: {...}}` runs on pi with those options; `claude`, an empty name or
no manifest runs on the run's backend (`--backend`, or the node's). A replay answers for every scope, as it
recorded them; a recording records every scope's replies into the one cassette.
"""

from __future__ import annotations

from wfexec.protocol.errors import ScopeError
from wfexec.protocol.manifest import scope_manifest
from wfexec.protocol.scopes import StateScope

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def declared_backend(scope: StateScope) -> tuple[str, dict] | None:
    """(name, options) of the backend the scope's manifest declares, or None."""
    spec = (scope_manifest(scope) or {}).get("backend")
    if spec is None:
        return None
    if isinstance(spec, str):
        return spec.strip(), {}
    if isinstance(spec, dict) and isinstance(spec.get("options") or {}, dict):
        return str(spec.get("name") or "").strip(), dict(spec.get("options") or {})
    raise ScopeError(f"{scope.describe()}: the manifest's `backend` must be a name or {{name, options}}",
                     "write `backend: pi`, or `backend: {name: pi, options: {provider: anthropic}}`")


def scope_backend(scope: StateScope, run_backend: Any) -> Any:
    """The backend for `.md` states of `scope`, given the run's."""
    from wfexec.backends.replay import RecordingBackend, ReplayBackend

    declared = declared_backend(scope)
    if declared is None or declared[0] in ("", "claude") or isinstance(run_backend, ReplayBackend):
        return run_backend
    name, options = declared
    if name != "pi":
        raise ScopeError(f"{scope.describe()}: the manifest asks for the '{name}' backend, which wfexec does not "
                         "have", "use `backend: pi`, or leave `backend` out for the run's --backend")
    from wfexec.backends.pi import PiBackend

    if "skip_permissions" not in options and _asks_permission(run_backend):
        options = {**options, "skip_permissions": False}  # the run's choice of permission prompts holds here too
    try:
        backend = PiBackend.from_options(options)
    except ValueError as exc:
        raise ScopeError(f"{scope.describe()}: {exc}") from None
    return run_backend.recording(backend) if isinstance(run_backend, RecordingBackend) else backend


def _asks_permission(backend: Any) -> bool:
    """Whether the run's backend was told to keep permission prompts (claude's acceptEdits, pi's false)."""
    backend = getattr(backend, "inner", backend)  # a recording
    from wfexec.backends.claude import BYPASS

    mode = getattr(backend, "permission_mode", None)
    return (mode is not None and mode not in BYPASS) or getattr(backend, "skip_permissions", True) is False
