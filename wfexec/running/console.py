"""Terminal output of a run: messages, tables, errors, the trace, and questions.

`Console` implements the run's `Io` interface (`wfexec.running.io`, DESIGN §1):
the engine and handlers print and ask only through it, so tests capture output
by giving it StringIO streams, and a `--format json` run keeps stdout clean by
sending messages to stderr.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Sequence, TextIO

if TYPE_CHECKING:
    from rich.console import Console as RichConsole


class Console:
    def __init__(self, out: TextIO | None = None, err: TextIO | None = None, *, trace: bool = False,
                 color: bool | None = None):
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.tracing = trace
        self._color = color
        self._rich: RichConsole | None = None

    def _console(self):
        if self._rich is None:
            from rich.console import Console as RichConsole

            is_tty = hasattr(self.out, "isatty") and self.out.isatty()
            self._rich = RichConsole(file=self.out, force_terminal=self._color if self._color is not None else None,
                                     no_color=not (self._color if self._color is not None else is_tty),
                                     highlight=False, soft_wrap=True)
        return self._rich

    def print(self, text: str = "") -> None:
        self.out.write(f"{text}\n")
        self.out.flush()

    def markdown(self, text: str) -> None:
        from rich.markdown import Markdown

        self._console().print(Markdown(text))

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None) -> None:
        from rich.table import Table

        table = Table(title=title, show_lines=False)
        for header in headers:
            table.add_column(str(header))
        for row in rows:
            table.add_row(*("" if cell is None else str(cell) for cell in row))
        self._console().print(table)

    def error(self, text: str) -> None:
        self.err.write(f"{text}\n")
        self.err.flush()

    def trace(self, text: str) -> None:
        if self.tracing:
            self.err.write(f"[WORKFLOW] {text}\n")
            self.err.flush()

    def ask(self, question):
        """Ask at the terminal (questionary); Ctrl-C raises KeyboardInterrupt."""
        from wfexec.running.prompts import ask_terminal

        return ask_terminal(question)
