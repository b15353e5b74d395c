"""`Io`: terminal output and prompts as a run sees them (DESIGN §1).

The run loop and the handlers print and ask only through this interface; the
command line gives them `wfexec.running.console.Console`, tests give it
captured streams, an embedder may give its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, Sequence

if TYPE_CHECKING:
    from wfexec.nodes.user_prompt import Question


class Io(Protocol):
    tracing: bool  # whether `trace` shows anything (the loop skips building trace text otherwise)

    def print(self, text: str = "") -> None:
        """A message for the person running the workflow."""

    def markdown(self, text: str) -> None:
        """Markdown, rendered when the output is a terminal."""

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None) -> None:
        """Rows under headers."""

    def error(self, text: str) -> None:
        """A warning or error, apart from the run's output."""

    def trace(self, text: str) -> None:
        """One line of the `--trace` log (nothing when not tracing)."""

    def ask(self, question: "Question") -> Any:
        """Ask a person; returns an `Answer`, or an option id, a label or free text."""
