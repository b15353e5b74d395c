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
from dataclasses import dataclass

# --------------------------------------------------------------------------- #
# TEMPORARY, until the JavaScript expression engine lands: it brings
# `is_prose(source)` in wfexec/language/expressions.py. At merge, replace this
# function by an import of that one; `Compiler.call` is the only caller.

_WORD = re.compile(r"^[A-Za-z][A-Za-z'\-]*[.,;:!?]?$")
# Words of English sentences that no expression uses as an operator.
_FUNCTION_WORDS = {"the", "a", "an", "of", "to", "for", "with", "from", "each", "every", "this", "that", "it", "its",
                   "into", "then", "all", "any", "by", "on", "at", "whether", "which", "when", "should", "must",
                   "their", "them", "they", "we", "you", "be", "are", "was", "using", "use"}


def is_prose(source: object) -> bool:
    """Text that describes a step instead of computing it: only `#` comment lines, or a sentence (three or more
    plain words, at least one of them an English function word, and no operator)."""
    if not isinstance(source, str):
        return False
    lines = [line.strip() for line in source.strip().splitlines() if line.strip()]
    if not lines:
        return False
    if all(line.startswith("#") for line in lines):
        return True
    words = " ".join(lines).split()
    return (len(words) >= 3 and all(_WORD.match(w) for w in words)
            and any(w.lower().strip(".,;:!?") in _FUNCTION_WORDS for w in words))

# --------------------------------------------------------------------------- #


# A state path named in the text: `computed.config`, `config.sources[0].id`, `source_url`.
_NAME = re.compile(r"(?<![\w.$])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[\d+\])*)")


@dataclass(frozen=True)
class Prose:
    """A field written as prose; evaluating it is a judgement step (see `Run.judge_prose`)."""

    text: str
    names: tuple[str, ...]   # the words of the text that may name state, in order, each once
    answer: str              # "boolean" (a condition, a flag) or "value" (anything JSON)

    @classmethod
    def of(cls, text: str, answer: str) -> "Prose":
        return cls(text=text.strip(), names=tuple(dict.fromkeys(_NAME.findall(text))), answer=answer)
