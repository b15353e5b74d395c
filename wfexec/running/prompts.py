"""Answering `user_prompt` questions (DESIGN §3).

Answers come, in order, from: answers given up front (`--answer node=id`,
`--answers FILE`, the API's `answers=`), then the person at the terminal
(questionary), and otherwise the run cannot go on: `NeedsAnswer` is raised
and the CLI exits with the waiting code, naming the node and its options.

A given answer may be an option id, an option's label, or, when the node
has an `other` handler, any free text. A list answers the same node again
each time the run comes back to it (loops).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from wfexec.errors import WfexecError
from wfexec.nodes.base import Choice, Question

_OTHER_CHOICE = "\0other"


@dataclass(frozen=True)
class Answer:
    choice: Choice | None      # None: free text
    text: str | None = None
    source: str = "given"


class NeedsAnswer(Exception):
    """No answer is available for a question and nobody can be asked."""

    outcome = "waiting"

    def __init__(self, question: Question, run_id: str | None = None):
        super().__init__(question.node)
        self.question = question
        self.run_id = run_id  # the durable run that waits, when there is one


class AnswerError(WfexecError, ValueError):
    """A given answer that fits no option of its question."""


class Answers:
    """Answers given before the run, consumed as questions come."""

    def __init__(self, given: dict[str, Any] | None = None):
        self._given: dict[str, list] = {}
        for node, value in (given or {}).items():
            self._given[str(node)] = list(value) if isinstance(value, list) else [value]

    def take(self, node: str):
        queue = self._given.get(node)
        if not queue:
            return None
        return queue.pop(0) if len(queue) > 1 else queue[0]

    def with_defaults(self, defaults: dict[str, list]) -> "Answers":
        """These answers, plus `defaults` for the nodes they do not answer (a replayed cassette's)."""
        merged = Answers()
        merged._given = {node: list(values) for node, values in defaults.items()}
        merged._given.update({node: list(values) for node, values in self._given.items()})
        return merged

    def give(self, node: str, value: Any) -> None:
        """One more answer for a node, taken before any given earlier (an answer that arrives while the run
        waits: wfexec.temporal)."""
        self._given[str(node)] = [value]

    def to_dict(self) -> dict[str, list]:
        """The answers not yet taken, as `Answers(...)` accepts them (to send them to another process)."""
        return {node: list(values) for node, values in self._given.items() if values}

    def __contains__(self, node: str) -> bool:
        return bool(self._given.get(node))

    @classmethod
    def parse(cls, pairs: list[str], files: Sequence[Path] = ()) -> "Answers":
        """`node=id` pairs and YAML files mapping node → answer (or a list of answers)."""
        from wfexec.language.loader import load_file

        given: dict[str, Any] = {}
        for file in files:
            doc = load_file(file)
            if doc.diagnostics:
                raise AnswerError(doc.diagnostics[0].format())
            if not isinstance(doc.data, dict):
                raise AnswerError(f"{file}: an answers file maps node ids to answers, e.g. `confirm: yes`")
            given.update(doc.data)
        for pair in pairs:
            node, sep, value = pair.partition("=")
            if not sep or not node:
                raise AnswerError(f"--answer '{pair}' must look like NODE=ANSWER")
            if node in given and isinstance(given[node], list):
                given[node].append(value)
            elif node in given:
                given[node] = [given[node], value]
            else:
                given[node] = value
        return cls(given)


def match_answer(question: Question, value: Any) -> Answer:
    """Turn a given answer into a choice or free text, or explain why it fits nothing."""
    text = value if isinstance(value, str) else ("true" if value is True else "false" if value is False else str(value))
    for choice in question.choices:
        if choice.id == text:
            return Answer(choice)
    lowered = text.strip().lower()
    for choice in question.choices:
        if choice.label.strip().lower() == lowered:
            return Answer(choice)
    if question.allow_other:
        return Answer(None, text)
    ids = ", ".join(c.id for c in question.choices) or "(none)"
    raise AnswerError(f"'{text}' is not an option of '{question.node}'; the options are: {ids}")


def ask_terminal(question: Question) -> Answer:
    """Ask at the terminal with questionary; Ctrl-C raises KeyboardInterrupt."""
    import questionary

    choices = [questionary.Choice(title=c.label, value=c.id, description=c.description or None)
               for c in question.choices]
    if question.allow_other:
        choices.append(questionary.Choice(title="Other…", value=_OTHER_CHOICE,
                                          description="type your own answer"))
    title = f"[{question.header}] {question.text}" if question.header else question.text
    if not question.choices:  # free text only (an agent's <ask>): no menu with one entry
        return Answer(None, questionary.text(title).unsafe_ask(), "terminal")
    picked = questionary.select(title, choices=choices).unsafe_ask()
    if picked == _OTHER_CHOICE:
        return Answer(None, questionary.text("Your answer:").unsafe_ask(), "terminal")
    for choice in question.choices:
        if choice.id == picked:
            return Answer(choice, source="terminal")
    raise AnswerError(f"unexpected answer {picked!r}")  # pragma: no cover - questionary returns a listed value
