"""Running the Python functions `wfexec.language.expression_fastpath` writes for the simplest expressions.

The writing happens when a workflow compiles, and its text is kept with the compiled workflow, in a shorthand for
the steps every expression repeats; a run writes those out and turns the text into functions here, so a run of a
cached workflow does not import the module that writes them (its reader and writer are most of its size).
"""

from __future__ import annotations

import functools

from wfexec.language.expressions import MAX_SAFE_INTEGER, MISSING, NAMESPACES_IN_STATE, TOP_LEVEL_FIRST, truthy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable


def fast_function(text: str) -> Callable[[Any], Any]:
    """The function `fast_source` wrote: the value, or MISSING where the engine must answer."""
    namespace = _namespace(lambda: MISSING)
    source = "\n".join(_written_out(text))
    exec(compile(source, "<fast path>", "exec"), namespace)  # noqa: S102 - our own generated code
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
    lines = _written_out(text)
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


# The text `fast_source` writes says each of the steps every expression repeats (a name's look-up, a guard on a
# value read, the return of a result) in one line of its own words, written out in full here, when a run first
# evaluates the expression: written out, they were most of a big workflow's compiled-workflow cache entry. None is
# Python, so a text compiled without `_written_out` fails at once.
LOOKUP = "LOOKUP"  # `LOOKUP v1 'name'`: v1 is the name's value (Scope.lookup, or MISSING)
NEED_NUMBER = "NEED_NUMBER"  # `NEED_NUMBER v1`: v1 is a safe integer or a finite float, else the engine answers
NEED_JSON = "NEED_JSON"  # `NEED_JSON v1`: v1 is a value JSON carries to the engine unchanged, else it answers
RETURN_NUMBER = "RETURN_NUMBER"  # `RETURN_NUMBER v1`: return the number v1 as the engine gives it back
RETURN_JSON = "RETURN_JSON"  # `RETURN_JSON v1`: return v1 as JSON would carry it, else the engine answers


def _written_out(text: str) -> list[str]:
    """The lines of `text`, each of those replaced by the Python lines it stands for."""
    lines: list[str] = []
    for line in text.split("\n"):
        statement = line.lstrip(" ")
        word, _, rest = statement.partition(" ")
        indent = line[:len(line) - len(statement)]
        if word == LOOKUP:
            lines += _lookup(indent, rest)
        elif word in _ONE_VALUE_FORMS:
            lines += [indent + form.format(v=rest) for form in _ONE_VALUE_FORMS[word]]
        else:
            lines.append(line)
    return lines


# By (its arguments): the same few names are read by many expressions of a workflow, at the same place in each.
@functools.lru_cache(maxsize=4096)
def _lookup(indent: str, value_and_name: str) -> tuple[str, ...]:
    # A run's state always has the three namespaces; a scope without one raises KeyError, and the
    # caller asks the engine (as for a namespace that is not a container: TypeError).
    value, n = value_and_name.split(" ", 1)  # v1 'name': a variable, and a repr of an identifier
    return (
        f"{indent}if loc and {n} in loc: {value} = loc[{n}]",
        f"{indent}elif {n} in ex: {value} = ex[{n}]",
        f"{indent}elif TOP_LEVEL_FIRST in ex and {n} in st: {value} = st[{n}]",
        *[f"{indent}elif {n} in (s := st[{namespace!r}]) and s.__class__ is dict: {value} = s[{n}]"
          for namespace in NAMESPACES_IN_STATE],
        f"{indent}elif {n} in st: {value} = st[{n}]",
        f"{indent}else: {value} = scope.lookup({n})",  # the environment, or MISSING
    )


# The lines a form of one value stands for, `{v}` the value.
_ONE_VALUE_FORMS = {
    NEED_NUMBER: ("c = {v}.__class__",
                  "if c is int:",
                  "    if not -SAFE <= {v} <= SAFE: return FALL()",
                  "elif c is not float or {v} != {v} or {v} in (INF, -INF): return FALL()"),
    NEED_JSON: ("c = {v}.__class__",
                "if c is int:",
                "    if not -SAFE <= {v} <= SAFE: return FALL()",
                "elif c is float:",
                "    if {v} != {v} or {v} in (INF, -INF): return FALL()",
                "elif c is not str and c is not bool and c is not dict and c is not list and {v} is not None:",
                "    return FALL()"),
    RETURN_NUMBER: ("r = {v}",  # an integer here is a safe one already
                    "if r.__class__ is int: return r",
                    "if r != r or r in (INF, -INF): return None",
                    "return int(r) if r.is_integer() and -SAFE <= r <= SAFE else r"),
    RETURN_JSON: ("r = {v}",
                  "c = r.__class__",
                  "if c is int: return r if -SAFE <= r <= SAFE else FALL()",
                  "if c is float:",
                  "    if r != r or r in (INF, -INF): return None",
                  "    return int(r) if r.is_integer() and -SAFE <= r <= SAFE else r",
                  "if c is str or c is bool or r is None: return r",
                  "return FALL()"),
}


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
