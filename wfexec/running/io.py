"""`Io`: terminal output and prompts as a run sees them (DESIGN §1).

The run loop and the handlers print and ask only through this interface; the
command line gives them `wfexec.running.console.Console`, tests give it
captured streams, an embedder may give its own.
"""

from __future__ import annotations

from wfexec.interfaces import Output

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol, Sequence
    from wfexec.nodes.base import Question
else:  # protocols speak to mypy only: at run time they are plain classes, and typing is not imported
    Protocol = object


class Io(Output, Protocol):
    """The terminal's output (`Output`: print, error, trace), and the rest a run may need of it."""

    def markdown(self, text: str) -> None:
        """Markdown, rendered when the output is a terminal."""

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None) -> None:
        """Rows under headers."""

    def ask(self, question: "Question") -> Any:
        """Ask a person; returns an `Answer`, or an option id, a label or free text."""
