"""Where a cross-workflow tag goes (`<call-workflow>`, `<function-workflow>`, `<fork-workflow>`,
`<reset-workflow>`; reference §1.9, Raymond's specifier.Resolve).

The tag's content names another states folder, relative to the scope of the agent
that emits it (a `.zip` or `.yaml` scope counts as the folder of its name without
the extension), or absolute:

| content | scope | first state |
|---|---|---|
| `child/` or `child` (a folder) | the folder | its entry point (1_START, else START) |
| `child.zip`, `child.yaml` | the archive or file | its entry point |
| `child/REVIEW.md` (a file) | the folder | that file |
| `child/REVIEW`, `child.yaml/REVIEW` | the folder, archive or file | that state |

The agent IDs of forked workflows use the scope's name, cut to six lower-case
characters, as forks use their target's.
"""

from __future__ import annotations

import os
from wfexec.records import dataclass
from pathlib import Path

from wfexec.protocol.errors import ProtocolError
from wfexec.protocol.scopes import MARKDOWN, StateScope, entry_point, open_scope, resolve_state

_FILE_SCOPES = (".zip", ".yaml", ".yml")


@dataclass(frozen=True)
class WorkflowTarget:
    scope: str   # absolute path of the folder, .zip or .yaml
    entry: str   # the state it starts at
    abbrev: str  # for worker ids


def abbrev(name: str) -> str:
    return name.lower()[:6]


def _url_file_name(url: str) -> str:
    """The file name a URL ends with."""
    from urllib.parse import urlparse

    return urlparse(url).path.rsplit("/", 1)[-1]


def _stem(path: Path) -> str:
    return path.stem if path.suffix.lower() in _FILE_SCOPES else path.name


def resolve_workflow(specifier: str, caller: StateScope) -> WorkflowTarget:
    """The scope and first state `specifier` names, seen from an agent in `caller`. Raises ProtocolError."""
    text = os.path.expanduser(specifier.strip())
    if not text:
        raise ProtocolError("names no workflow: write a folder, .zip or .yaml between the tags")
    from wfexec.protocol.remote import as_url

    url = as_url(text)
    if url is not None:  # https://…/NAME-<sha256>.zip: fetched once, then a local zip
        from wfexec.protocol.remote import fetch_zip

        path = fetch_zip(url)
        scope = open_scope(path, url)
        return WorkflowTarget(str(path), entry_point(scope), abbrev(_stem(Path(_url_file_name(url)))))
    if not os.path.isabs(text):
        base = caller.location
        if base.suffix.lower() in _FILE_SCOPES:
            base = base.with_suffix("")
        text = os.path.join(base, text)
    path = Path(os.path.normpath(text))
    suffix = path.suffix.lower()
    if suffix in _FILE_SCOPES or path.is_dir():
        scope = open_scope(path, str(path))
        return WorkflowTarget(str(path), entry_point(scope), abbrev(_stem(path)))
    if suffix == MARKDOWN and path.is_file():
        return WorkflowTarget(str(path.parent), path.name, abbrev(path.stem))
    # FOLDER/STATE, ARCHIVE.zip/STATE or FILE.yaml/STATE
    folder, state = path.parent, path.name
    if not folder.exists():
        raise ProtocolError(f"workflow '{specifier}' not found ({folder} does not exist)")
    scope = open_scope(folder, str(folder))
    try:
        entry = resolve_state(scope, state)
    except ProtocolError:
        raise ProtocolError(f"'{specifier}' is no states folder, .zip or .yaml, and {scope.describe()} has no "
                            f"state '{state}'", "give the path of the workflow's folder, .zip or .yaml, from this "
                            "folder or absolute") from None
    return WorkflowTarget(str(folder), entry, abbrev(_stem(folder)))
