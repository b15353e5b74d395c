"""Terminal output of a run: messages, tables, errors, the trace, and questions.

`Console` implements the run's `Io` interface (`wfexec.running.io`, DESIGN §1):
the engine and handlers print and ask only through it, so tests capture output
by giving it StringIO streams, and a `--format json` run keeps stdout clean by
sending messages to stderr.
"""

from __future__ import annotations

import _thread  # threading's Lock, without importing threading on a run's start
import os
import sys
import time

from wfexec.system import progress

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence, TextIO
    from rich.console import Console as RichConsole
    from rich.live import Live

# WFEXEC_STATUS=1 shows the status line wherever stderr goes, 0 never; unset: only at a terminal, outside CI.
STATUS_VARIABLE = "WFEXEC_STATUS"


def _is_tty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def wants_colour(stream) -> bool:
    """Colour at a terminal, none when piped or when NO_COLOR is set (https://no-color.org)."""
    return _is_tty(stream) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def wants_status_line(stream) -> bool:
    forced = os.environ.get(STATUS_VARIABLE)
    if forced is not None and forced != "":
        return forced not in ("0", "no", "false")
    return _is_tty(stream) and not os.environ.get("CI") and os.environ.get("TERM") != "dumb"


class _StatusView:
    """One line, redrawn a few times a second: where the run is, what runs, for how long."""

    def __init__(self, activity: progress.Activity):
        self.activity = activity

    def __rich__(self):
        from rich.text import Text

        activity = self.activity
        now = time.monotonic()
        line = Text()
        line.append("▶ ", style="cyan")
        line.append(activity.node or "starting", style="bold")
        if activity.command:
            line.append(f"  $ {activity.command}", style="yellow")
            line.append(f"  {now - activity.command_since:.0f}s", style="dim")
        line.append(f"  (run {now - activity.since:.0f}s)", style="dim")
        return line


class Console:
    def __init__(self, out: TextIO | None = None, err: TextIO | None = None, *, trace: bool = False,
                 color: bool | None = None):
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.tracing = trace
        self._color = color
        self._rich: RichConsole | None = None
        self._live: Live | None = None  # the status line while it shows
        # A command's stdout and stderr are traced from two threads, and a TextIOWrapper written from two
        # threads at once can drop a line: every write goes through this lock.
        self._writing = _thread.allocate_lock()

    def _write(self, stream: TextIO, line: str) -> None:
        with self._writing:
            if self._above_status(stream, line):
                return
            stream.write(f"{line}\n")
            stream.flush()

    def status_line(self) -> _StatusLine:
        """A live status line on stderr while a run goes on, for the time of a `with` block (at a terminal only,
        see `wants_status_line`)."""
        return _StatusLine(self)

    def _above_status(self, stream: TextIO, text: str) -> bool:
        """Print `text` above the status line when `stream` is the terminal it is drawn on."""
        live = self._live
        if live is None or not (stream is self.err or _is_tty(stream)):
            return False
        live.console.print(text, markup=False, highlight=False, soft_wrap=True)
        return True

    def _console(self):
        if self._rich is None:
            from rich.console import Console as RichConsole

            colour = self._color if self._color is not None else wants_colour(self.out)
            self._rich = RichConsole(file=self.out, force_terminal=self._color if self._color is not None else None,
                                     no_color=not colour,
                                     highlight=False, soft_wrap=True)
        return self._rich

    def print(self, text: str = "") -> None:
        self._write(self.out, text)

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
        if self._live is None and wants_colour(self.err):
            text = f"\x1b[31m{text}\x1b[0m"
        self._write(self.err, text)

    def trace(self, text: str) -> None:
        if self.tracing:
            self._write(self.err, f"[WORKFLOW] {text}")

    def ask(self, question):
        """Ask at the terminal (questionary); Ctrl-C raises KeyboardInterrupt."""
        from wfexec.running.prompts import ask_terminal

        live = self._live
        if live is not None:  # the prompt needs the terminal to itself
            live.stop()
        try:
            return ask_terminal(question)
        finally:
            if live is not None:
                live.start()


class _StatusLine:
    """The `with` block of `Console.status_line`. (A class, not a `contextlib.contextmanager`: importing contextlib
    cost every start of a run ~0.7 ms of CPU.)"""

    __slots__ = ("_console", "_live")

    def __init__(self, console: Console) -> None:
        self._console = console
        self._live: Live | None = None

    def __enter__(self) -> None:
        console = self._console
        if not wants_status_line(console.err):
            return
        from rich.console import Console as RichConsole
        from rich.live import Live

        activity = progress.Activity()
        terminal = RichConsole(file=console.err, force_terminal=True, no_color=not wants_colour(console.err),
                               highlight=False, soft_wrap=True)
        live = Live(_StatusView(activity), console=terminal, refresh_per_second=4, transient=True,
                    redirect_stdout=False, redirect_stderr=False)
        progress.current = activity
        live.start()
        console._live = self._live = live

    def __exit__(self, *exc_info: object) -> None:
        live = self._live
        if live is None:
            return
        self._live = self._console._live = None
        progress.current = None
        live.stop()
