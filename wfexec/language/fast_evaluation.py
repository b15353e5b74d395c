"""Running the Python functions `wfexec.language.expression_fastpath` writes for the simplest expressions.

The writing happens when a workflow compiles, and its text is kept with the compiled workflow; a run turns that
text into functions here, so a run of a cached workflow does not import the module that writes them (its reader
and writer are most of its size).
"""

from __future__ import annotations

from wfexec.language.expressions import MAX_SAFE_INTEGER, MISSING, TOP_LEVEL_FIRST, truthy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable


def fast_function(text: str) -> Callable[[Any], Any]:
    """The function `fast_source` wrote: the value, or MISSING where the engine must answer."""
    namespace = _namespace(lambda: MISSING)
    exec(compile(text, "<fast path>", "exec"), namespace)  # noqa: S102 - our own generated code
    fast: Callable[[Any], Any] = namespace["fast"]  # defined by the code above
    return fast


class _EngineAnswers(Exception):
    """Raised where the fast path cannot answer (`FALL()` in the text `fast_source` wrote)."""


def _engine_answers() -> Any:
    raise _EngineAnswers


def fast_evaluator(text: str, engine: Callable[[Any], Any], switch: list[bool]) -> Callable[[Any], Any]:
    """The whole evaluation as one function: what `fast_source` wrote, asking `engine` itself where that cannot
    answer (or reads a state that is not as it assumes: TypeError, KeyError), and always while `switch[0]` is
    false. An expression is evaluated at every step, and a call less is a good part of its cost."""
    lines = text.splitlines()
    assert lines[0] == "def fast(scope):", lines[0]
    body = "\n".join("        " + line for line in lines[1:] if line)
    source = ("def made(ENGINE, ON):\n"
              "    def fast(scope):\n"
              "        if not ON[0]: return ENGINE(scope)\n"
              "        try:\n"
              f"{body}\n"
              "        except (TypeError, KeyError, EngineAnswers):\n"
              "            return ENGINE(scope)\n"
              "    return fast\n")
    namespace = _namespace(_engine_answers)
    namespace["EngineAnswers"] = _EngineAnswers
    exec(compile(source, "<fast path>", "exec"), namespace)  # noqa: S102 - our own generated code
    return namespace["made"](engine, switch)  # defined by the code above


def _namespace(fall: Callable[[], Any]) -> dict[str, Any]:
    # Beyond Number.MAX_SAFE_INTEGER an integer is a BigInt in the engine (javascript.py): the engine's business.
    return {"FALL": fall, "truthy": truthy, "INF": float("inf"), "SAFE": MAX_SAFE_INTEGER, "EMPTY": {}, "LEN": js_len,
            "TOP_LEVEL_FIRST": TOP_LEVEL_FIRST}


def js_len(value: Any) -> int:
    """The prelude's `len(x)`: 0 for null and undefined, the keys of an object, the length of an array, a
    string's length in UTF-16 code units as JavaScript counts it, and 0 for anything else."""
    if value.__class__ is dict:
        return len(value)
    if value.__class__ is list:
        return len(value)
    if value.__class__ is str:  # ASCII (a flag CPython keeps): one code unit each, without looking up a codec
        return len(value) if value.isascii() else len(value.encode("utf-16-le", "surrogatepass")) // 2
    return 0
