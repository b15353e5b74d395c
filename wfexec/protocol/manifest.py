"""A states scope's Raymond manifest: `workflow.yaml` beside the states of a folder or in a zip, or the top-level
keys of a Raymond `.yaml` besides `states:` (`id`, `name`, `requires_human_input`, `backend`, …).

A `workflow.yaml` with `nodes:` or `start_node:` is a wfexec workflow, never a manifest.
"""

from __future__ import annotations

from wfexec.protocol.scopes import StateScope, YamlScope

MANIFEST = "workflow.yaml"


def scope_manifest(scope: StateScope) -> dict | None:
    """The manifest's mapping, or None when the scope has none (or it does not parse)."""
    if isinstance(scope, YamlScope):
        return getattr(scope, "manifest", None)
    from wfexec.protocol.scopes import DirectoryScope, ZipScope

    if isinstance(scope, DirectoryScope):
        path = scope.path / MANIFEST
        try:
            text = path.read_text(encoding="utf-8") if path.is_file() else None
        except (OSError, UnicodeDecodeError):
            return None
    elif isinstance(scope, ZipScope):
        text = scope.files.get(MANIFEST)
    else:
        return None
    if text is None:
        return None
    from wfexec.language.loader import load_text

    document = load_text(text, MANIFEST)
    data = document.data
    if document.diagnostics or not isinstance(data, dict) or "nodes" in data or "start_node" in data:
        return None
    return data
