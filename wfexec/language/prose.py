"""Prose where code was expected: a judgement step for the LLM, not an error.

Real hiivmind files write some `compute`/`evaluate` fields as a description of
what to do (`# Parse config.yaml and extract the corpus metadata`) rather than
code. Such a field compiles to `Prose`: at run time its text, with the state
values it names, goes to the LLM backend, and the reply (a JSON value) is the
field's value. `wfexec validate` lists each one (a warning; an error with
`--strict`).
"""

from __future__ import annotations

import re

from wfexec.records import dataclass

from wfexec.language.expressions import is_prose
from wfexec.system.patterns import lazy

__all__ = ["Prose", "fenced_data", "is_prose"]


# A fenced block of a model's reply: the word after its opening fence (`json`, `yaml`, none) and its text.
_FENCED = lazy(r"^[ \t]*```[ \t]*([\w+-]*)[^\n]*\n(.*?)```[ \t]*$", re.S | re.M)
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


def fenced_data(reply: str, formats: tuple[str, ...] = ("json",)) -> str:
    """The data of a model's reply. Models wrap it in a fence and often say a sentence before it ("Here is the
    result:") or after it: the first block marked with one of `formats`, else the first unmarked block, else
    the reply as it is (stripped; one fenced block and nothing else is unwrapped, whatever its mark)."""
    blocks = list(_FENCED.finditer(reply))
    for wanted in (lambda word: word in formats, lambda word: not word):
        for block in blocks:
            if wanted(block.group(1).lower()):
                return block.group(2).strip()
    if len(blocks) == 1 and not (reply[:blocks[0].start()] + reply[blocks[0].end():]).strip():
        return blocks[0].group(2).strip()
    return reply.strip()
