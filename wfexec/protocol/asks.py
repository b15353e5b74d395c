"""Whether a states workflow may ask a person (`ray`'s launch check for `--on-ask=reject`).

A manifest's `requires_human_input: true` or `false` decides. Otherwise (no manifest: the states themselves) a
state whose policy allows `<ask>` makes it ask; with a manifest (`auto`, the default), so does a workflow its
states' policies `<call-workflow>` or `<function-workflow>`, followed as far as they go.
"""

from __future__ import annotations

from wfexec.protocol.errors import ProtocolError
from wfexec.protocol.manifest import scope_manifest
from wfexec.protocol.scopes import MARKDOWN, StateScope, extension

_CALLS = ("call-workflow", "function-workflow")


def asking_states(scope: StateScope) -> str:
    """The states (or the manifest) that make the workflow ask, as one line naming them; "" when it never asks."""
    return _asking(scope, set())


def _asking(scope: StateScope, seen: set) -> str:
    key = str(scope.location)
    if key in seen:
        return ""
    seen.add(key)
    manifest = scope_manifest(scope)
    required = str((manifest or {}).get("requires_human_input", "auto")).lower()
    if required == "true":
        return "its manifest says requires_human_input: true"
    if required == "false":
        return ""
    from wfexec.protocol.policy import PolicyError, parse_frontmatter

    asking, called = [], []
    for name in scope.names():
        if extension(name) != MARKDOWN:
            continue
        try:
            policy, _ = parse_frontmatter(scope.read_text(name))
        except (ProtocolError, PolicyError):
            continue
        for entry in (policy.allowed if policy is not None else []):
            if entry.get("tag") == "ask":
                asking.append(name)
                break
            if entry.get("tag") in _CALLS and entry.get("target"):
                called.append(entry["target"])
    if asking:
        return f"{', '.join(asking)} {'allows' if len(asking) == 1 else 'allow'} <ask>"
    if manifest is None:
        return ""
    from wfexec.protocol.workflows import resolve_workflow
    from wfexec.protocol.scopes import open_scope

    for target in called:
        try:
            where = resolve_workflow(target, scope)
            found = _asking(open_scope(where.scope, where.scope), seen)
        except ProtocolError:
            continue
        if found:
            return f"{target}, which it calls: {found}"
    return ""
