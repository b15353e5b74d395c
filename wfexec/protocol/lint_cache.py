"""Raymond's lint of a states folder (wfexec.protocol.lint), kept by the folder's content.

`wfexec states` and every run of a workflow with a `states` node lint the folder before starting (a folder with
lint errors is refused), and reading and checking the state files, with the lint module and its frontmatter
reader imported for it, cost a one-script folder's start about a tenth of its CPU (issue 27). The findings depend
only on the folder's files and on wfexec itself, so they are kept in the user's cache (`wfexec.system.cache`)
under a key made as the compiled-workflow cache makes its own (`wfexec.language.workflow_cache`): the wfexec
version and its own code, the installed packages, the working directory, the folder and how messages name it,
the start state, and the digest of the folder's files (names and contents). An edit to any file of the folder
gives another key. Only a folder on disk is kept (a zip, a Raymond `.yaml`, inline states or an editor's unsaved
files are linted each time); a folder without findings is answered without importing the lint at all.
"""

from __future__ import annotations

import json

from wfexec.language.workflow_cache import cache_key, digest
from wfexec.protocol.scopes import DirectoryScope, StateScope
from wfexec.system import cache

_KIND = "states-lint"
# What this process linted already: `wfexec states` lints its folder, then the run lints its `states` node.
_this_process: dict[bytes, list] = {}


def lint_findings(scope: StateScope, start: str | None = None) -> list:
    """`lint_scope(scope, start)`: Raymond's findings for the states in `scope`, from the cache when the folder
    has not changed since they were found."""
    if type(scope) is not DirectoryScope:  # an editor's unsaved files, a zip, a YAML file: read as they are now
        return _lint(scope, start)
    before = digest(scope.path)
    key = _key(scope, start, before)
    kept = _this_process.get(key)
    if kept is None:
        kept = _read(key)
    if kept is None:
        findings = _lint(scope, start)
        kept = [[f.severity, f.file, f.message, f.check, f.line, f.column] for f in findings]
        if digest(scope.path) == before:  # not edited while it was linted
            cache.store(_KIND, key, json.dumps(kept).encode())
    _this_process[key] = kept
    if not kept:
        return []
    from wfexec.protocol.lint import Finding

    return [Finding(*fields) for fields in kept]


def _lint(scope: StateScope, start: str | None) -> list:
    from wfexec.protocol.lint import lint_scope

    return lint_scope(scope, start=start)


def _key(scope: DirectoryScope, start: str | None, folder_digest: str) -> bytes:
    return cache_key("states lint 1", str(scope.path), scope.label, start or "", folder_digest)


def _read(key: bytes) -> list | None:
    payload = cache.load(_KIND, key)
    if payload is None:
        return None
    try:
        kept = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(kept, list) or not all(isinstance(f, list) and len(f) == 6 for f in kept):
        return None  # not what this version keeps: lint afresh
    return kept
