"""What a path names: a wfexec workflow, or a states folder (a directory of `.md`/`.sh` states, a `.zip`, a Raymond
`.yaml`); and what Raymond's lint says of a states folder, as diagnostics.

Every door asks this the one way (DESIGN §1: one engine, many doors): `wfexec validate` and `wfexec.validate`,
`wfexec run` and `wfexec.run`, MCP's `validate` and `run`, the language server. `wfexec run` asks on every start,
so this module is light: it reads the file only when the compiled-workflow cache does not know it, and imports
the md/sh protocol only for a path that may be a states folder.
"""

from __future__ import annotations

import os
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["WORKFLOW_FILE", "lint_diagnostics", "manifest_warnings", "may_be_states", "raymond_manifest",
           "resolve_workflow_path", "split_path", "state_diagnostic", "states_line", "states_workflow",
           "workflow_document"]

WORKFLOW_FILE = "workflow.yaml"


def resolve_workflow_path(path: str | os.PathLike) -> Path:
    """A workflow file, or a skill folder holding workflow.yaml."""
    p = Path(path)
    if p.is_dir():
        return p / WORKFLOW_FILE
    return p


def workflow_document(path) -> Any:
    """The loaded workflow file at `path` (or its path, when it is in the compiled-workflow cache), or None when
    the path is a states scope instead: a folder with no workflow.yaml (or with Raymond's manifest as its
    workflow.yaml), a .zip, or a Raymond .yaml (`states:` and no `nodes:`)."""
    p = Path(path)
    if (p.is_dir() and not (p / WORKFLOW_FILE).exists()) or p.suffix.lower() == ".zip":
        return None
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
    manifest = folder / WORKFLOW_FILE
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


def split_path(path: str | os.PathLike) -> tuple[Path, str | None]:
    """(scope path, start state or None) for the forms `wfexec states` accepts: a folder, a .zip, a Raymond
    .yaml, `FLOW.yaml/STATE` (start at STATE), or one state file (its folder, starting there)."""
    from wfexec.protocol.scopes import KNOWN, extension

    text = os.fspath(path)
    p = Path(text)
    if p.is_file() and extension(p.name) in KNOWN:
        return p.parent, p.name
    if not p.exists():
        lowered = text.replace("\\", "/").lower()
        for suffix in (".yaml/", ".yml/"):
            at = lowered.rfind(suffix)
            if at >= 0:
                head, state = text[: at + len(suffix) - 1], text[at + len(suffix):]
                if state and "/" not in state and Path(head).is_file():
                    return Path(head), state
    return p, None


def may_be_states(p: Path) -> bool:
    """Whether `p` can be a states folder, decided without reading YAML: a folder holding state files (with no
    workflow.yaml, or next to an entry state, where the workflow.yaml may be Raymond's manifest), a .zip, or a
    .yaml with a top-level `states:` and no `nodes:`."""
    import re

    if p.suffix.lower() == ".zip":
        return True
    if p.is_dir():
        from wfexec.protocol.scopes import KNOWN, extension

        names = os.listdir(p)
        if not any(extension(n) in KNOWN for n in names):
            return False
        return WORKFLOW_FILE not in names or any(os.path.splitext(n)[0].lower() in ("start", "1_start")
                                                 for n in names if extension(n) in KNOWN)
    if p.suffix.lower() in (".yaml", ".yml") and p.is_file():
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
        # A line starting `states` looked for first: the multi-line regex tries every line start of the file, a
        # fiftieth of a big workflow's validate.
        if not (text.startswith("states") or "\nstates" in text):
            return False
        return bool(re.search(r"^states\s*:", text, re.M)) and not re.search(r"^nodes\s*:", text, re.M)
    return False


def state_diagnostic(finding, scope, shown: str, at=None, prefix: str = ""):
    """A lint finding (wfexec.protocol.lint) as a diagnostic at the state file's line and column (a folder's or a
    zip's state: the file is there as written), else at `at` (the node, for states held in a YAML file or
    inline), else the scope."""
    from wfexec.language.diagnostics import Diagnostic

    message = f"{prefix}{finding.message} [{finding.check}]"
    if finding.file and scope.kind in ("folder", "zip"):
        return Diagnostic(f"{shown}/{finding.file}", finding.line, finding.column, "", finding.severity,
                          finding.check, message)
    if at is not None:
        state = f"{finding.file}: " if finding.file and finding.file not in finding.message else ""
        return Diagnostic(at.file, at.line, at.column, at.yaml_path, finding.severity, finding.check,
                          f"{prefix}{state}{finding.message} [{finding.check}]")
    at = 0 if scope.kind in ("folder", "zip") else 1  # a Raymond .yaml: its start; a folder: no line of any file
    return Diagnostic(f"{shown}/{finding.file}" if finding.file else shown, at, at, "", finding.severity,
                      finding.check, message)


# The lint findings a run of a states folder cannot start past (it has no first state to run, or a folder that is
# none); every other one is `ray lint`'s verdict on what the states may do, which `ray` itself never checks before
# it runs them.
STARTS_NOWHERE = frozenset({"no-entry-point", "ambiguous-entry-point", "states-scope"})


def run_anyway(diagnostics: list) -> list:
    """A states folder's lint as a run sees it, `ray`'s way: its errors are warnings, but for STARTS_NOWHERE."""
    from wfexec.language.diagnostics import ERROR, WARNING
    from wfexec.records import replace

    return [replace(d, severity=WARNING) if d.severity == ERROR and d.code not in STARTS_NOWHERE else d
            for d in diagnostics]


def states_line(d) -> str:
    """A states lint diagnostic in one line: `path:line:col: error: ...` when it has a line, else `path: error: ...`
    (a finding about the folder as a whole)."""
    if d.line:
        return d.format()
    return f"{d.file}: {d.severity}: {d.message}" + (f" — {d.hint}" if d.hint else "")


def lint_diagnostics(path: str | os.PathLike, edited: dict[str, str] | None = None) -> list | None:
    """Raymond's lint findings for a states folder (a directory without a wfexec workflow.yaml, a .zip or a
    Raymond .yaml), as diagnostics naming each state file at the line of the finding; None when `path` is not
    one. `wfexec validate` reports them, and every door refuses to start a run on their errors. `edited`
    (state file name → text) is what an editor holds unsaved of a folder's files (`wfexec lsp`)."""
    from wfexec.protocol.scopes import KNOWN, extension

    p = Path(path)
    if p.is_file() and extension(p.name) in KNOWN:
        p = p.parent
    if not may_be_states(p):
        return None  # a workflow (or nothing): the workflow check says what it is
    try:
        if workflow_document(p) is not None:
            return None
    except (OSError, ValueError):
        return None
    from wfexec.protocol.errors import ScopeError
    from wfexec.protocol.lint_cache import lint_findings
    from wfexec.protocol.scopes import DirectoryScope, EditedScope, open_scope

    try:
        scope = open_scope(p, str(p))
        if edited and isinstance(scope, DirectoryScope):
            scope = EditedScope(scope.path, scope.label, edited)
    except ScopeError as exc:
        from wfexec.language.diagnostics import Diagnostic

        at = 1 if p.is_file() else 0  # a file's problem is said at its start; a folder's at no line of any file
        return [Diagnostic(str(p), at, at, "", "error", "states-scope", exc.message, exc.hint)]
    return [state_diagnostic(finding, scope, str(p)) for finding in lint_findings(scope)]


def manifest_warnings(manifest: dict | None) -> list[str]:
    """What a Raymond manifest asks for that wfexec does not do (a backend other than Claude Code and pi)."""
    backend = (manifest or {}).get("backend")
    name = backend if isinstance(backend, str) else backend.get("name") if isinstance(backend, dict) else None
    if backend is None or name in ("", "claude", "pi"):
        return []
    return [f"warning: the workflow's manifest asks for the {name or 'given'!s} backend, which wfexec does not "
            "have (claude or pi); its .md states stop at their first LLM call"]


def states_workflow(path: str | os.PathLike, into: Path, *, start: str | None, with_input: bool,
                    budget_usd: float | None, timeout: float | None, model: str | None,
                    warn=None, relative_folder: bool = False, start_option: str = "--start", **fields: Any) -> Path:
    """A workflow of one `states` node running PATH, written into `into` (named by its content, so the same
    command line finds the same file): what `wfexec states` runs, so that its run is recorded and resumed like
    any other, with what it was launched with (`fields`: the node's effort, on_ask, no_wait, …; a None or false
    one is left out). `relative_folder`: the folder is named from where the workflow is written, so the two
    travel together (a run on a Temporal cluster bundles both). Raises ScopeError when PATH is not a states
    folder, or `start` (the option `start_option`, as the door names it) or the state PATH names is none of its
    states."""
    from wfexec.system.digest import sha256
    import json

    from wfexec.protocol.errors import ProtocolError, ScopeError
    from wfexec.protocol.scopes import open_scope, resolve_state

    scope_path, named_start = split_path(path)
    scope = open_scope(scope_path, str(scope_path))  # a missing or malformed folder: said of what was given
    first = start or named_start
    if first:  # said of the option (or the path) that named it, not of the workflow written below: a file of ours
        try:
            resolve_state(scope, first)
        except ProtocolError as exc:
            raise ScopeError(f"{f'{start_option} {start}' if start else path}: {exc.message}", exc.hint) from None
    folder = scope_path.resolve()
    manifest = raymond_manifest(folder) if folder.is_dir() else None
    for text in manifest_warnings(manifest):
        if warn is not None:
            warn(text)
    named = os.path.relpath(folder, into.resolve()) if relative_folder else str(folder)
    node: dict[str, Any] = {"type": "states", "folder": named, "lint": "warn"}
    if start or named_start:
        node["start"] = start or named_start
    if with_input:  # the text goes in as the workflow's input: a `${` in it stays text
        node["input"] = "${input.input}"
    budget = budget_usd if budget_usd is not None else (manifest or {}).get("default_budget")
    for key, value in (("budget_usd", budget), ("timeout", timeout), ("model", model), *fields.items()):
        if value is not None and value is not False:
            node[key] = value
    # No on_failure: a failed state is the run's error (stderr, exit 1), as it was before runs were recorded.
    node.update({"store_as": "computed.result", "on_success": "done"})
    name = str((manifest or {}).get("id") or folder.stem or "states")
    workflow = {
        "name": name, "version": "1",
        "description": f"`wfexec states {path}`: the states at {folder}, run as a one-node workflow",
        "start_node": "agents",
        **({"input_schema": {"input": {"type": "string", "required": True}}} if with_input else {}),
        "nodes": {"agents": node},
        "endings": {"done": {"type": "success", "message": "${computed.result}"}},
    }
    text = "# Written by wfexec: what `wfexec states` runs (and `wfexec resume` reads again).\n" + \
        json.dumps(workflow, indent=2, ensure_ascii=False) + "\n"
    into.mkdir(parents=True, exist_ok=True)
    target = into / f"{''.join(c if c.isalnum() or c in '-_' else '-' for c in name)[:40]}-" \
                    f"{sha256(text.encode()).hexdigest()[:12]}.yaml"
    if not target.exists():
        from wfexec.system.files import write_atomic

        write_atomic(target, text)
    return target


def unreadable_diagnostic(path: str | os.PathLike) -> Any:
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
