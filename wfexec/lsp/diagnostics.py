"""wfexec's diagnostics as LSP diagnostics (same line, column and code as `wfexec validate`), and the quick fixes
their did-you-mean hints offer."""

from __future__ import annotations

import re
from typing import Any, Sequence

from lsprotocol import types as lsp

from wfexec.lsp.text import inside_template, scalar_range, word_range

_SUGGESTION = re.compile(r"'([^']+)'")
_READ = re.compile(r"`([^`]+)` is read")
_SEVERITY = {"error": lsp.DiagnosticSeverity.Error, "warning": lsp.DiagnosticSeverity.Warning}


def to_lsp(diagnostics: list, lines: list[str]) -> list[lsp.Diagnostic]:
    """Each at the key or value `validate` points at, spanning it (a finding about the whole file: line 1)."""
    found = []
    for d in diagnostics:
        line = max(d.line - 1, 0)
        text = lines[line] if line < len(lines) else ""
        start = max(d.column - 1, 0) if d.line else 0
        if not d.line:
            start, end = 0, len(text)
        elif inside_template(text, start):  # a name an expression reads: just that name
            start, end = word_range(text, start)
        else:
            start, end = scalar_range(text, start)
        if end == start:
            end = len(text.rstrip()) if len(text.rstrip()) > start else start
        message = f"{d.message} — {d.hint}" if d.hint else d.message
        fixes = [[*(_utf16(text, at) for at in _replaced(text, start, end, d.message, name)), name]
                 for name in suggestions(d.hint)]
        found.append(lsp.Diagnostic(
            range=lsp.Range(lsp.Position(line, _utf16(text, start)), lsp.Position(line, _utf16(text, end))),
            message=message,
            severity=_SEVERITY.get(d.severity, lsp.DiagnosticSeverity.Information), code=d.code, source="wfexec",
            data={"fixes": fixes} if fixes else None))
    return found


def _utf16(text: str, index: int) -> int:
    """A position in `text` (a character index, as validate's columns count) as LSP counts it by default: in UTF-16
    code units, two for a character past U+FFFF (an emoji)."""
    return index + sum(1 for char in text[:index] if ord(char) > 0xFFFF)


def _replaced(text: str, start: int, end: int, message: str, suggestion: str) -> tuple[int, int]:
    """What a suggestion replaces: the whole key or value, or, when the message names a path read inside it
    (`computed.greting` in "Hello ${computed.greting}"), the part of that path the suggestion is closest to."""
    import difflib

    read = _READ.search(message)
    at = text.find(read.group(1), start, end) if read else -1
    if read is None or at < 0:
        return start, end
    best, offset = (0.0, 0, len(read.group(1))), 0
    for part in read.group(1).split("."):
        ratio = difflib.SequenceMatcher(None, part, suggestion).ratio()
        if ratio > best[0]:
            best = (ratio, offset, offset + len(part))
        offset += len(part) + 1
    return at + best[1], at + best[2]


def suggestions(hint: str) -> list[str]:
    """The names a did-you-mean hint offers ("did you mean 'on_success'?")."""
    if "did you mean" not in hint:
        return []
    return _SUGGESTION.findall(hint[hint.index("did you mean"):].split("?")[0])


def quick_fixes(uri: str, diagnostics: Sequence[lsp.Diagnostic]) -> list[lsp.CodeAction]:
    fixes: list[lsp.CodeAction] = []
    for diagnostic in diagnostics:
        data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
        line = diagnostic.range.start.line
        # A client that keeps no `data` still gets the fix, over the diagnostic's range.
        whole: list[list[Any]] = [[diagnostic.range.start.character, diagnostic.range.end.character, name]
                 for name in suggestions(diagnostic.message)]
        for start, end, suggestion in data.get("fixes") or whole:
            edit = lsp.TextEdit(range=lsp.Range(lsp.Position(line, start), lsp.Position(line, end)),
                                new_text=suggestion)
            fixes.append(lsp.CodeAction(
                title=f"Change to '{suggestion}'", kind=lsp.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                edit=lsp.WorkspaceEdit(changes={uri: [edit]}), is_preferred=len(fixes) == 0))
    return fixes
