"""Diagnostics: what is wrong with a workflow, where, and how to fix it.

Every problem wfexec finds in a user's file becomes a `Diagnostic` value rather
than an exception, so one pass can report all of them at once and the CLI can
print them as lines or JSON.
"""

from __future__ import annotations

from wfexec.records import asdict, dataclass

from wfexec.errors import Position, WfexecError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable, Sequence

ERROR = "error"
WARNING = "warning"

YamlPath = tuple  # of str | int


def format_yaml_path(path: Sequence) -> str:
    """Render ('nodes', 'a', 'actions', 0) as `nodes.a.actions[0]`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


@dataclass(frozen=True)
class Diagnostic:
    """One problem found in a workflow file, kept as a value (the shape of WfexecError: message, hint, position)."""

    file: str
    line: int
    column: int
    yaml_path: str
    severity: str
    code: str
    message: str
    hint: str = ""

    @property
    def position(self) -> Position:
        return Position(self.file, self.line, self.column)

    def format(self) -> str:
        text = f"{self.file}:{self.line}:{self.column}: {self.severity}: {self.message}"
        if self.hint:
            text += f" — {self.hint}"
        return text

    def to_json(self) -> dict:
        return asdict(self)


class WorkflowError(WfexecError):
    """Raised by `wfexec.load` when a workflow has errors; carries every diagnostic.

    Its message, hint and position are the first diagnostic's."""

    def __init__(self, diagnostics: list[Diagnostic] | None = None):
        self.diagnostics = list(diagnostics or [])
        first = self.diagnostics[0] if self.diagnostics else None
        super().__init__(first.message if first else "the workflow is invalid", first.hint if first else "", first)

    def __str__(self) -> str:
        return "\n".join(d.format() for d in self.diagnostics)

    def format(self) -> str:
        return str(self)


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(d.severity == ERROR for d in diagnostics)


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """A hint naming the closest candidate(s), or '' when nothing is close."""
    import difflib  # only when there is something to suggest

    matches = difflib.get_close_matches(str(word), [str(c) for c in candidates], n=3, cutoff=0.6)
    if not matches:
        return ""
    if len(matches) == 1:
        return f"did you mean '{matches[0]}'?"
    return "did you mean " + " or ".join(f"'{m}'" for m in matches) + "?"


class Reporter:
    """Collects diagnostics for one file, turning YAML paths into positions."""

    def __init__(self, file: str, positions: dict | None = None):
        self.file = file
        # Keep the caller's dict even when it is still empty: the loader fills it
        # after creating the reporter.
        self.positions = positions if positions is not None else {}
        self.diagnostics: list[Diagnostic] = []

    def position(self, path: Sequence) -> tuple[int, int]:
        path = tuple(path)
        # A path may point below what the document has (a missing key): use the
        # nearest ancestor that exists.
        while path:
            pos = self.positions.get(path)
            if pos is not None:
                return pos
            path = path[:-1]
        return self.positions.get((), (1, 1))

    def add(self, path: Sequence, code: str, message: str, hint: str = "", severity: str = ERROR,
            at_key: bool = False, at: tuple[int, int] | None = None) -> Diagnostic:
        """Record a diagnostic at `at`, else at the key (`at_key`) or the value under `path`."""
        path = tuple(path)
        pos = at
        if at_key and pos is None:
            pos = self.positions.get(("@key",) + path)
        line, column = pos or self.position(path)
        diag = Diagnostic(self.file, line, column, format_yaml_path(path), severity, code, message, hint)
        self.diagnostics.append(diag)
        return diag

    def error(self, path: Sequence, code: str, message: str, hint: str = "", at_key: bool = False,
              at: tuple[int, int] | None = None):
        return self.add(path, code, message, hint, ERROR, at_key, at)

    def warning(self, path: Sequence, code: str, message: str, hint: str = "", at_key: bool = False,
                at: tuple[int, int] | None = None):
        return self.add(path, code, message, hint, WARNING, at_key, at)
