"""State files of a states folder (`.md` prompts, `.sh` scripts): Raymond's lint as `wfexec validate` gives it
(with the editor's unsaved text), and each transition tag's target as the state file it goes to."""

from __future__ import annotations

import os
import re
from pathlib import Path

from wfexec.lsp.index import Span

# `<goto>REVIEW</goto>`, `<call return="X">CHILD</call>`, `<ask next="REVIEW">…</ask>`: the target is the body,
# or the `next` attribute of an ask (or `return` of a call: where the callee returns to).
_TAG_BODY = re.compile(r"<(goto|reset|call|function|fork|call-workflow|function-workflow|fork-workflow|"
                       r"reset-workflow)(?=[\s>])[^>]*>\s*(?P<target>[^<\s][^<]*?)\s*</\1>")
_ATTRIBUTE_TARGET = re.compile(r"\b(?:next|return)\s*=\s*[\"'](?P<target>[^\"']+)[\"']")


def state_folder(path: Path) -> Path | None:
    """The states folder `path` is a state file of, or None (a README beside other notes is not one)."""
    from wfexec.protocol.folders import may_be_states
    from wfexec.protocol.scopes import extension

    if not extension(path.name):
        return None
    folder = path.parent
    try:  # a folder of notes is no states folder: one has its first state (START or 1_START)
        entry = any(extension(name) and name.rsplit(".", 1)[0].lower() in ("start", "1_start")
                    for name in os.listdir(folder))
    except OSError:
        return None
    return folder if entry and may_be_states(folder) else None


def diagnostics(path: Path, text: str, folder: Path) -> list:
    """The folder's lint findings that are about this file, the file read as the editor holds it."""
    from wfexec.protocol.folders import lint_diagnostics

    found = lint_diagnostics(folder, edited={path.name: text}) or []
    return [d for d in found if d.file == str(folder / path.name) and d.line]


def targets(lines: list[str]) -> list[tuple[Span, str]]:
    """Every transition target written in a state file, with where."""
    found = []
    for number, line in enumerate(lines):
        for match in _TAG_BODY.finditer(line):
            found.append((Span(number, match.start("target"), match.end("target")), match.group("target")))
        for match in _ATTRIBUTE_TARGET.finditer(line):
            found.append((Span(number, match.start("target"), match.end("target")), match.group("target")))
    return found


def target_file(folder: Path, target: str) -> Path | None:
    """The state file (or, for a cross-workflow tag, the folder's entry state) a target names."""
    from wfexec.protocol.errors import ProtocolError
    from wfexec.protocol.scopes import entry_point, open_scope, resolve_state

    try:
        if "/" in target or target.endswith((".zip", ".yaml", ".yml")):  # another states folder
            other = (folder / target).resolve()
            return other / entry_point(open_scope(other)) if other.is_dir() else other
        return folder / resolve_state(open_scope(folder), target)
    except (ProtocolError, OSError):
        return None


def entry_file(folder: Path) -> Path:
    """A states folder's first state, where going to the folder lands (the folder itself when it has none)."""
    from wfexec.protocol.errors import ProtocolError
    from wfexec.protocol.scopes import entry_point, open_scope

    try:
        return folder / entry_point(open_scope(folder))
    except (ProtocolError, OSError):
        return folder
