"""Is this path a workflow or a states folder? `wfexec run` asks on every start, so this module is light: it
reads the file only when the compiled-workflow cache does not know it, and imports the md/sh protocol only for a
folder whose workflow.yaml may be Raymond's manifest."""

from __future__ import annotations

from pathlib import Path

__all__ = ["raymond_manifest", "unreadable_diagnostic", "workflow_document"]


def workflow_document(path):
    """The loaded workflow file `wfexec run` was given (or its path, when it is in the compiled-workflow cache),
    or None when the path is a states scope instead: a folder with no workflow.yaml, a .zip, or a Raymond .yaml
    (`states:` and no `nodes:`)."""
    p = Path(path)
    if (p.is_dir() and not (p / "workflow.yaml").exists()) or p.suffix.lower() == ".zip":
        return None
    from wfexec.api import resolve_workflow_path
    from wfexec.language import workflow_cache

    file = resolve_workflow_path(p)
    if workflow_cache.load(file) is not None:
        return file  # compiled before, so a workflow: `check` takes it from the cache again
    from wfexec.language.loader import load_file

    document = load_file(file)
    data = document.data
    if isinstance(data, dict) and "states" in data and "nodes" not in data:
        return None
    if p.is_dir() and isinstance(data, dict) and "nodes" not in data and "start_node" not in data:
        if raymond_manifest(p) is not None:  # Raymond's workflow.yaml, describing the states beside it
            return None
    return document


def raymond_manifest(folder: Path) -> dict | None:
    """The Raymond manifest (`workflow.yaml` beside the states: name, description, default_budget, backend…) of a
    states folder, or None when `folder/workflow.yaml` is a wfexec workflow (it has `nodes:` or `start_node:`) or
    the folder has no entry state."""
    manifest = folder / "workflow.yaml"
    if not manifest.is_file():
        return None
    from wfexec.language.loader import load_file
    from wfexec.protocol.errors import ScopeError
    from wfexec.protocol.scopes import entry_point, open_scope

    data = load_file(manifest).data
    if not isinstance(data, dict) or "nodes" in data or "start_node" in data:
        return None
    try:
        entry_point(open_scope(folder, str(folder)))
    except ScopeError:
        return None
    return dict(data)


def unreadable_diagnostic(path):
    """The error diagnostic for a path this user cannot examine (a folder on the way they may not enter, a folder
    they may not list, a file they may not read), or None. Asked before anything looks at the path: pathlib's
    is_file and is_dir raise PermissionError there."""
    from wfexec.system.files import unreadable

    why = unreadable(path)
    if why is None:
        return None
    from wfexec.language.diagnostics import Diagnostic

    return Diagnostic(str(path), 1, 1, "", "error", "file-unreadable", f"cannot read {path}: it {why}",
                      "ask the owner for access (chmod), or run wfexec as a user who may read it")
