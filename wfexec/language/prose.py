"""Prose where code was expected: a judgement step for the LLM, not an error.

Real hiivmind files write some `compute`/`evaluate` fields as a description of
what to do (`# Parse config.yaml and extract the corpus metadata`) rather than
code. Such a field compiles to `Prose`: at run time its text, with the state
values it names, goes to the LLM backend, and the reply (a JSON value) is the
field's value. `wfexec validate` lists each one (a warning; an error with
`--strict`).
"""

from __future__ import annotations

from wfexec.records import dataclass

from wfexec.language.expressions import is_prose
from wfexec.system.patterns import lazy

__all__ = ["Prose", "is_prose"]


# A state path named in the text: `computed.config`, `config.sources[0].id`, `source_url`.
_NAME = lazy(r"(?<![\w.$])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[\d+\])*)")


@dataclass(frozen=True)
class Prose:
    """A field written as prose; evaluating it is a judgement step (see `Run.judge_prose`)."""

    text: str
    names: tuple[str, ...]   # the words of the text that may name state, in order, each once
    answer: str              # "boolean" (a condition, a flag) or "value" (anything JSON)

    @classmethod
    def of(cls, text: str, answer: str) -> "Prose":
        return cls(text=text.strip(), names=tuple(dict.fromkeys(_NAME.findall(text))), answer=answer)
