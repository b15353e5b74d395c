"""Answering `user_prompt` questions (DESIGN §3).

Answers come, in order, from: answers given up front (`--answer node=id`,
`--answers FILE`, the API's `answers=`), then the person at the terminal
(questionary), and otherwise the run cannot go on: `NeedsAnswer` is raised
and the CLI exits with the waiting code, naming the node and its options.

A given answer may be an option id, an option's label, or, when the node
has an `other` handler, any free text; anything else is refused before it is
used (`match_answer`), as is a key that names no question (`check_answer_keys`).
Each given answer is used once: a list answers the same node again, in turn,
each time the run comes back to it (loops); a key ending in `*` repeats its
last answer for good.
"""

from __future__ import annotations

from pathlib import Path

from wfexec.errors import WfexecError
from wfexec.nodes.base import Answer, Question

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence

_OTHER_CHOICE = "\0other"


class NeedsAnswer(Exception):
    """No answer is available for a question and nobody can be asked."""

    outcome = "waiting"

    def __init__(self, question: Question, run_id: str | None = None, refused: "AnswerRefused | None" = None):
        super().__init__(question.node)
        self.question = question
        self.run_id = run_id  # the durable run that waits, when there is one
        self.refused = refused  # the given answer that fit none of its options, when that is why the run waits


class AnswerError(WfexecError, ValueError):
    """Answers that cannot be read (`--answer` without `=`, an answers file that is no mapping)."""


class AnswerRefused(AnswerError):
    """A given answer refused before it is used: it fits no option of its question, or its key names no question
    of the workflow. Nothing of the run changed because of it; `run_id` names the run that waits, when there is
    one."""

    def __init__(self, message: str, hint: str = "", *, key: str, question: Question | None = None,
                 run_id: str | None = None):
        super().__init__(message, hint)
        self.key = key
        self.question = question
        self.run_id = run_id

    def waiting_in(self, run_id: str) -> "AnswerRefused":
        """This refusal, for the run that still waits on its question; returns self."""
        self.run_id = run_id
        if self.question is not None and not self.hint:
            value = "<option id>" if self.question.choices else "<text>"
            self.hint = f"run {run_id} still waits: wfexec resume {run_id} --answer {self.key}={value}"
        return self


REPEAT = "*"  # `--answer 'NODE*=ID'`, `NODE*: ID`: the last answer for NODE is used every time it asks


class Answers:
    """Answers given before the run, consumed as questions come: each is used once, in the order given, unless
    its key ends in `*` (REPEAT): then the last one answers every later time too."""

    def __init__(self, given: dict[str, Any] | None = None):
        self._given: dict[str, list] = {}
        self._repeat: set[str] = set()
        self.version = 0  # counts the changes: a durable run keeps what is left with the step that took one
        for key, value in (given or {}).items():
            node = str(key)
            if node.endswith(REPEAT) and len(node) > len(REPEAT):
                node = node[: -len(REPEAT)]
                self._repeat.add(node)
            self._given.setdefault(node, []).extend(value if isinstance(value, list) else [value])

    def take(self, node: str):
        queue = self._given.get(node)
        if not queue:
            return None
        if len(queue) == 1 and node in self._repeat:
            return queue[0]
        self.version += 1
        return queue.pop(0)

    def peek(self, node: str):
        """The answer `take` would give, left in place."""
        queue = self._given.get(node)
        return queue[0] if queue else None

    def with_defaults(self, defaults: dict[str, list]) -> "Answers":
        """These answers, plus `defaults` for the nodes they do not answer (a replayed cassette's)."""
        kept = Answers()
        kept._given = {node: list(values) for node, values in defaults.items()}
        return self.over(kept)

    def give(self, node: str, value: Any) -> None:
        """One more answer for a node, taken before any given earlier (an answer that arrives while the run
        waits: wfexec.temporal)."""
        self._given.setdefault(str(node), []).insert(0, value)
        self.version += 1

    def over(self, kept: "Answers") -> "Answers":
        """These answers, and those of `kept` (a run's, left from an earlier process) for the questions these do
        not answer: answers given to `resume` replace what was given before for the same question."""
        merged = Answers()
        merged._given = {node: list(values) for node, values in kept._given.items() if node not in self._given}
        merged._given.update({node: list(values) for node, values in self._given.items()})
        merged._repeat = {node for node in kept._repeat if node not in self._given} | self._repeat
        return merged

    def to_dict(self) -> dict[str, list]:
        """The answers not yet taken, as `Answers(...)` accepts them (to send them to another process)."""
        return {node + (REPEAT if node in self._repeat else ""): list(values)
                for node, values in self._given.items() if values}

    def keys(self) -> list[str]:
        return [node for node, values in self._given.items() if values]

    def __contains__(self, node: str) -> bool:
        return bool(self._given.get(node))

    @classmethod
    def parse(cls, pairs: Sequence[str], files: Sequence[Path] = ()) -> "Answers":
        """`node=id` pairs and YAML files mapping node → answer (or a list of answers, used in turn)."""
        from wfexec.running.request import pairs_to_dict

        try:
            return cls.given(pairs_to_dict(pairs, "--answer"), files)
        except ValueError as exc:
            raise AnswerError(str(exc)) from None

    @classmethod
    def given(cls, answers: dict[str, Any], files: Sequence[Path] = ()) -> "Answers":
        """The answers of a run request (node → an answer, or the answers in turn), after those the answers
        files map their nodes to."""
        merged: dict[str, Any] = {}
        for file in files:
            from wfexec.language.loader import load_file
            from wfexec.system.files import not_a_readable_file

            why = not_a_readable_file(file)
            if why is not None:
                inside = Path(file) / "answers.yaml"
                raise AnswerError(f"the answers file {file} {why} — give the YAML file that maps node ids to answers"
                                  + (f", such as {inside}" if why.startswith("is a folder") and inside.is_file()
                                     else ""))
            doc = load_file(file)
            if doc.diagnostics:
                raise AnswerError(doc.diagnostics[0].format())
            if not isinstance(doc.data, dict):
                raise AnswerError(f"{file}: an answers file maps node ids to answers, e.g. `confirm: yes`")
            merged.update(doc.data)
        for node, value in answers.items():
            more = list(value) if isinstance(value, (list, tuple)) else [value]
            before = merged.get(node)
            merged[node] = more if node not in merged else (before if isinstance(before, list) else [before]) + more
        return cls(merged)


def match_answer(question: Question, value: Any) -> Answer:
    """Turn a given answer into a choice or free text, or refuse it (AnswerRefused), naming the options and the
    closest of them. Every door's answers go through here: the run's own questions, a waiting run's pending one
    before it is resumed (wfexec.durable.journal), a Temporal run's `answer` update."""
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
    from wfexec.language.diagnostics import did_you_mean

    ids = [c.id for c in question.choices]
    suggestion = did_you_mean(text, ids)
    raise AnswerRefused(f"'{text}' is not an option of '{question.key}' (options: {', '.join(ids) or 'none'})"
                        + (f"; {suggestion}" if suggestion else ""), key=question.key, question=question)


def check_answer_keys(workflow, answers: Answers, also: Sequence[str] = ()) -> None:
    """Refuse, before a run starts or resumes, an answer whose key names no question of the workflow (nor of a
    sub-workflow it runs, whose questions share the run's answers), nor one of `also` (the question a run waits
    on, which may be the driver's own: rerun or skip)."""
    keys = list(dict.fromkeys(answer_keys(workflow) + list(also)))
    names = [key for key in keys if isinstance(key, str)]
    for given in answers.keys():
        if any(given == key if isinstance(key, str) else key.fullmatch(given) for key in keys):
            continue
        from wfexec.language.diagnostics import did_you_mean

        suggestion = did_you_mean(given, names)
        asked = ", ".join(names) if names else "none: it asks nothing"
        raise AnswerRefused(f"the answer key '{given}' names no question of {workflow.name} (questions: {asked})"
                            + (f"; {suggestion}" if suggestion else ""), key=given)


def answer_keys(workflow, _seen: frozenset = frozenset()) -> list:
    """The keys the workflow's questions are answered by (`NodeType.answer_keys`): names, or patterns."""
    found: list = []
    for node in workflow.nodes.values():
        found.extend(node.kind.answer_keys(node))
        for sub in node.kind.subworkflows(node.spec):
            if sub.path not in _seen:
                found.extend(answer_keys(sub, _seen | {workflow.path}))
    return list(dict.fromkeys(found))


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
