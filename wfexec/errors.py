"""The one shape of every error wfexec reports to a person: what is wrong, how to
fix it, and where (file:line:col and the node).

Every error class of the package derives from `WfexecError`, so the command
line prints any of them the same way (`format()`) and maps them to exit codes
in one place (`wfexec.exit_codes.exit_code_for`). This module imports nothing of
wfexec: every layer may use it.
"""

from __future__ import annotations

from wfexec.records import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True)
class Position:
    """Where a problem is: a file position, a node, or both (any part may be unknown)."""

    file: str | None = None
    line: int | None = None
    column: int | None = None
    node: str | None = None

    def place(self) -> str:
        """`file:line:col`, as much of it as is known."""
        if not self.file:
            return ""
        return ":".join(str(part) for part in (self.file, self.line, self.column) if part is not None)


class WfexecError(Exception):
    """A problem a person can fix: `message` says what, `hint` how, `where`/`node` where.

    `where` is anything with `file`, `line` and `column` (a `language.model.Where`,
    a `Diagnostic`), or None.

    `outcome` says how the command that met it ends, in the words of `wfexec.exit_codes`
    (`invalid`, `failed`, `stopped`, `waiting`): each class says it of itself, so the mapping to
    numbers needs to import none of them.
    """

    outcome = "invalid"

    def __init__(self, message: str = "", hint: str = "", where: Any = None, node: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.where = where
        self.node = node

    @property
    def position(self) -> Position:
        where = self.where
        return Position(getattr(where, "file", None), getattr(where, "line", None), getattr(where, "column", None),
                        self.node)

    def located(self, where: Any = None, node: str | None = None) -> "WfexecError":
        """This error with a position filled in where it had none (the caller knows more); returns self."""
        if self.where is None:
            self.where = where
        if self.node is None:
            self.node = node
        return self

    def format(self) -> str:
        """One line: `path:line:col: error: node 'x': what — how to fix`."""
        place = self.position.place()
        node = f"node '{self.node}': " if self.node else ""
        text = f"{place + ': ' if place else ''}error: {node}{self.message}"
        return text + (f" — {self.hint}" if self.hint else "")

    def to_json(self) -> dict:
        position = self.position
        return {"error": type(self).__name__, "message": self.message, "hint": self.hint, "file": position.file,
                "line": position.line, "column": position.column, "node": position.node}


class ActionFailed(WfexecError):
    """Raised by a consequence handler (or what it calls): the action failed, the node routes `on_failure`.

    Defined here, the lowest layer, so file and process helpers can raise it; plugins import it from
    `wfexec.types`."""


class CannotWrite(WfexecError):
    """A file or folder the command line named cannot be written there (exit 2): the message names the path and
    why (it is a folder, it lies under a file, this user may not write there, or what the OS said). Raised by
    `wfexec.system.files.check_writable` and `write_output`; the command line prints it in one line."""


class CannotRead(WfexecError):
    """A path the command line named cannot be examined by this user (exit 2): a folder on the way they may not
    enter, a folder they may not list, a file they may not read. Raised by `wfexec.system.files.check_readable`."""


class Refused(WfexecError):
    """A step asked for what no workflow may do (write, move or delete wfexec's run store): the run ends with
    this error at the step, whatever its `on_failure` says (exit 1). Raised by the file guard
    (`wfexec.system.files.guarded_path`); the run loop locates it at the call."""

    outcome = "failed"


class PluginError(WfexecError):
    """An installed plugin that cannot be used, named by its distribution and entry point (exit 2)."""

    def __init__(self, dist: str, entry_point: str, message: str, hint: str = ""):
        super().__init__(f"plugin {dist} (entry point '{entry_point}'): {message}", hint)
        self.dist = dist
        self.entry_point = entry_point


class BrokenPlugins(WfexecError):
    """Every unusable plugin, reported together: one line each. (Here, with PluginError, so that a command can
    catch it without importing the registry (`wfexec.types.registry`) that raises it.)"""

    def __init__(self, errors: list[PluginError]):
        super().__init__(errors[0].message, errors[0].hint)
        self.errors = errors

    def format(self) -> str:
        return "\n".join(error.format() for error in self.errors)
