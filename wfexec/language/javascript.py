"""The JavaScript engine behind expressions: one sandboxed QuickJS context per thread.

quickjs-ng (from PyPI) embeds the QuickJS engine. Measured against mini-racer
(V8) on `computed.count < input.limit` with the names passed as JSON: a call
from Python costs 1.5 µs in QuickJS and 234 µs in mini-racer, and a new context
0.2 ms against 3.3 ms. wfexec's expressions are short and called millions of
times, so the call cost decides. QuickJS has no file, network, process or host
access unless the embedder adds it; wfexec adds none (the helpers are written in
JavaScript, prelude.js, and YAML is the vendored js-yaml, because QuickJS refuses
calls into Python while a time limit is set), and sets a time, memory and stack limit. One evaluation cannot
change what the next sees: the prelude freezes every intrinsic and the global
object, which costs nothing per call, where a fresh context with the prelude
costs 6 ms per evaluation.

An expression is compiled once per context into a function of the JSON text of
the names it reads (parsed by JSON.parse inside the function: measured faster
than building the objects with the wrapper's parse_json) and of the clock. Values come back as JSON types (objects
through JSON, so nothing the expression returns shares structure with the run
state); a whole number is a Python int.

Values cross exactly or not at all. The wrapper's string converter ends a string at a NUL and cannot
read a lone surrogate, and JSON.parse rounds an integer beyond 2**53, so: a result that is not a number,
a boolean, null or a plain string leaves the engine as JSON text behind a "\x01" or "\x02" (prelude.js,
`toHost`), where a cyclic value, a throwing `toJSON` or a function fails inside the call, at the
expression. Python ints beyond Number.MAX_SAFE_INTEGER are BigInts in the engine (the JSON text is parsed
with a reviver only when it holds a run of 16 digits) and BigInts come back as ints; floats are Numbers
both ways, so a double beyond 2**53 comes back a float, not an int that would return as a BigInt.
What Python cannot keep (nesting
deeper than VALUE_DEPTH_LIMIT, a lone surrogate) is refused here, and a promise job an evaluation leaves
queued retires the whole context, so nothing it holds reaches the next evaluation.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import threading
from typing import Any

from wfexec.records import dataclass


TIME_LIMIT_SECONDS = 2.0
MEMORY_LIMIT_BYTES = 256 * 1024 * 1024
# The compiled functions an engine keeps; past this many it starts again (a long-lived process, `wfexec serve` or
# `lsp`, evaluates ever new expressions, and each one kept holds JavaScript memory and a few Python objects).
FUNCTIONS_KEPT = 10_000
STACK_LIMIT_BYTES = 512 * 1024
MAX_SAFE_INTEGER = 2 ** 53 - 1  # Number.MAX_SAFE_INTEGER: beyond it an integer is a BigInt in the engine
VALUE_DEPTH_LIMIT = 200  # as for YAML: deeper values break Python's recursive copies and JSON writers

# The compiled function's first line; the source starts on line 2, column 1.
_HEAD = ("(function(__wfexec_args, __wfexec_now, __wfexec_big){__wfexec_clock(__wfexec_now);"
         "var {%s}=__wfexec_args?JSON.parse(__wfexec_args,__wfexec_big?__wfexec_revive:undefined):{};")
_AS_EXPRESSION = _HEAD + "return __wfexec_out((\n%s\n));})"
# What checking an expression compiles: _AS_EXPRESSION around the source, token for token, with the names as
# parameters instead of destructured from JSON (a name the source declares with `let` clashes with either alike):
# destructuring and the clock's call cost the engine's compile over half its time on a short expression.
_CHECK_EXPRESSION = "(function(__wfexec_args, __wfexec_now, __wfexec_big%s){return __wfexec_out((\n%s\n));})"
_AS_PROGRAM = _HEAD + "return __wfexec_out(eval(%s));})"
# Every integer beyond Number.MAX_SAFE_INTEGER has 16 digits or more; a string holding such a run only costs
# the slower parse.
_LONG_DIGITS = re.compile(r"[0-9]{16}")
# Lone surrogates are the only \ud escapes JSON.stringify writes; a literal backslash before "ud" only costs
# the check.
_SURROGATE_ESCAPE = "\\ud"
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_SYNTAX_CHECK = "(function(){\n%s\n})"
_POSITION = re.compile(r"at (?:[^\n(]*\()?<input>:(\d+):(\d+)")


class JavaScriptError(Exception):
    """A source that does not compile (with its 1-based line and column in the source), or an evaluation
    that threw, ran too long or used too much memory."""

    def __init__(self, message: str, line: int = 0, column: int = 0, kind: str = "error"):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.kind = kind  # syntax, error, time, memory, value (a result that cannot be stored)


@dataclass(frozen=True)
class Compiled:
    """The JavaScript text of one expression's function (shared by every context that runs it)."""

    text: str
    program: bool


def expression_function(source: str, names: tuple[str, ...]) -> Compiled:
    """The function text of `source`, one expression known to be valid JavaScript, not compiled to check it."""
    return Compiled(_AS_EXPRESSION % (",".join(names), source), False)


def check_text(source: str, names: tuple[str, ...]) -> str:
    """What checking `source` compiles: `expression_function`'s text, lighter (the names as parameters, no clock),
    accepting and refusing the same sources."""
    return _CHECK_EXPRESSION % (", " + ", ".join(names) if names else "", source)


def compile_source(source: str, names: tuple[str, ...]) -> Compiled:
    """Check `source` and build its function text. A source that is one expression returns its value;
    otherwise it is a program whose value is its completion value (as `eval` gives it).
    Raises JavaScriptError with the position of a syntax error inside `source`."""
    engine = current()
    as_expression = expression_function(source, names)
    try:
        engine.check(as_expression.text, source, check_text(source, names))
        return as_expression
    except JavaScriptError as exc:
        expression_error = exc
    try:
        engine.context.eval(_SYNTAX_CHECK % source)
    except Exception as exc:  # noqa: BLE001 - quickjs raises its own exception classes
        program_error = _syntax_error(exc, source)
        as_object = _final_object_literal(source)
        if as_object is None or not _compiles(engine, as_object):
            # One line that is not a program either: the expression reading explains it best.
            raise expression_error if "\n" not in source.strip() and ";" not in source else program_error from None
        source = as_object
    as_program = _AS_PROGRAM % (",".join(names), json.dumps(source))
    engine.check(as_program, source)
    return Compiled(as_program, True)


def _compiles(engine: "Engine", source: str) -> bool:
    try:
        engine.context.eval(_SYNTAX_CHECK % source)
    except Exception:  # noqa: BLE001
        return False
    return True


def _final_object_literal(source: str) -> str | None:
    """`source` with its last statement in parentheses, when that statement is `{...}` starting its own line or
    following a `;`: a program would read it as a block (a syntax error for `{ a, b: 1 }`), where the Node REPL
    and the real hiivmind files mean the object, the program's value. None when the source does not end so."""
    end = len(source.rstrip())
    if not source[:end].endswith("}"):
        return None
    from wfexec.language.js_source import TokenError, tokenize  # only a program's compile comes here

    try:
        tokens = tokenize(source[:end])
    except TokenError:
        return None
    depth = 0
    for token in reversed(tokens):
        if token.kind != "punct":
            continue
        if token.text in (")", "]", "}"):
            depth += 1
        elif token.text in ("(", "[", "{"):
            depth -= 1
            if depth == 0:
                break
    else:
        return None
    if token.text != "{" or token.start == 0:
        return None
    before = source[:token.start].rstrip(" \t")
    if not before.endswith(("\n", ";")):
        return None
    return f"{source[:token.start]}({source[token.start:end]}){source[end:]}"


def _syntax_error(exc: Exception, source: str) -> JavaScriptError:
    text = str(exc)
    first = text.split("\n", 1)[0]
    match = _POSITION.search(text)
    lines = source.split("\n")
    line, column = (int(match.group(1)) - 1, int(match.group(2))) if match else (1, 1)
    if line < 1:
        line, column = 1, 1
    if line > len(lines):  # the error is at the wrapper's closing bracket: the source ended too soon
        line, column = len(lines), len(lines[-1]) + 1
        first = "SyntaxError: the expression ends too soon (an operand or a closing bracket is missing)"
    elif match:
        column = _column_in_characters(lines[line - 1], column)
    return JavaScriptError(first, line, column, "syntax")


def _column_in_characters(line: str, byte_column: int) -> int:
    """QuickJS counts a column in UTF-8 bytes of the line (`é` is 2, `😀` is 4); the rest of wfexec in characters,
    so past any character beyond ASCII its column would point that much too far to the right."""
    if line.isascii():
        return byte_column
    wanted, seen = byte_column - 1, 0
    for index, character in enumerate(line):
        if seen >= wanted:
            return index + 1
        seen += len(character.encode("utf-8", "surrogatepass"))
    return len(line) + 1 + max(wanted - seen, 0)


def _package_text(*parts: str) -> str:
    with open(os.path.join(os.path.dirname(__file__), *parts), encoding="utf-8") as file:
        return file.read()


class Engine:
    """One QuickJS context and the functions compiled in it. Used from one thread only."""

    def __init__(self):
        try:
            # The extension itself: the `quickjs` package around it re-exports these names and adds a `Function`
            # helper that runs JavaScript on a thread pool, which wfexec does not use; importing it brings in
            # concurrent.futures and logging, ~8 ms of each process that makes an engine.
            import _quickjs as quickjs
        except ImportError:  # a quickjs-ng that names its extension otherwise
            import quickjs
        self.context = quickjs.Context()
        self.functions: dict[str, Any] = {}
        self._object = quickjs.Object
        self._stack_overflow = quickjs.StackOverflow
        # Read beside this file, as the launcher reads its table: importlib.resources (with tempfile, shutil and
        # the compressors) cost each process that makes an engine ~7 ms, as much as the engine itself.
        self.context.eval(_package_text("vendor", "js-yaml.min.js"))
        self.context.eval(_package_text("prelude.js"))
        self.context.set_memory_limit(MEMORY_LIMIT_BYTES)
        self.context.set_max_stack_size(STACK_LIMIT_BYTES)
        self.context.set_time_limit(TIME_LIMIT_SECONDS)

    def function(self, text: str, source: str):
        """The function compiled from `text`, which holds `source` from its second line."""
        fn = self.functions.get(text)
        if fn is None:
            fn = self._compile(text, source)
            if len(self.functions) >= FUNCTIONS_KEPT:
                self.functions.clear()
            self.functions[text] = fn
        return fn

    def check(self, text: str, source: str, lighter: str | None = None) -> None:
        """Raise what `function` would for `text`, keeping nothing: checking a workflow compiles every expression
        in it, and a run evaluates few of them (kept, 50,000 compiled functions held 200,000 Python objects, which
        made every later collection of the process's garbage walk them). `lighter`: a text the engine compiles
        faster that holds `source` where `text` does, with the same syntax around it."""
        if text not in self.functions:
            # `void`: the function is made and dropped in the engine; handing it to Python and back was a fifth of
            # checking a long expression. Both texts start `(function`, so `void` takes that function alone: a
            # source within its wrapper compiles or fails as before (at the same place). One that closes the wrapper
            # early may read otherwise (`0));}).x = (function(){return((0` is refused now): a failure at check time
            # rather than at run time.
            self._compile("void " + (lighter or text), source)

    def _compile(self, text: str, source: str):
        try:
            return self.context.eval(text)
        except Exception as exc:  # noqa: BLE001
            raise _syntax_error(exc, source) from None

    def call(self, fn, arguments: str, now_ms: float) -> Any:
        big = len(arguments) >= 16 and _LONG_DIGITS.search(arguments) is not None
        try:
            result = fn(arguments, float(now_ms), big)  # a Python int crosses as a 32-bit integer
        except self._stack_overflow:
            self.settle()
            raise JavaScriptError("RangeError: too much recursion (the stack limit was reached)", kind="memory") \
                from None
        except Exception as exc:  # noqa: BLE001 - JSException: the expression threw
            error = _runtime_error(exc)
            if error.kind == "memory":
                self.recover()
            else:
                self.settle()
            raise error from None
        self.settle()
        return from_js(result, self._object)

    def settle(self) -> None:
        """Retire this context when the evaluation left a promise job queued: the job (and all it holds)
        would otherwise live on into later evaluations. Running one to find out is harmless, the context
        being dropped either way; a context with nothing queued costs one check."""
        try:
            pending = self.context.execute_pending_job()
        except Exception:  # noqa: BLE001 - the job threw, or ran out of time: it was there all the same
            pending = True
        if pending:
            self.retire()

    def recover(self) -> None:
        """After running out of memory: free what the failed call left, or give up this context (the
        expressions compile again in a new one)."""
        try:
            self.context.gc()
            self.context.eval("0")
        except Exception:  # noqa: BLE001
            self.retire()
            return
        self.settle()

    def retire(self) -> None:
        """The next evaluation on this thread gets a new context; this one goes with its last reference."""
        self.functions = {}
        if getattr(_local, "engine", None) is self:
            _local.engine = None


def _runtime_error(exc: Exception) -> JavaScriptError:
    text = str(exc)
    first = text.split("\n", 1)[0]
    if "InternalError: interrupted" in first:
        return JavaScriptError(f"the expression ran longer than {TIME_LIMIT_SECONDS:g} s and was stopped", kind="time")
    # An allocation that fails while the error itself is built leaves no message at all ("null").
    if "out of memory" in first or "string too long" in first or "invalid array length" in first or \
            first.strip() in ("null", ""):
        return JavaScriptError(f"the expression used more than {MEMORY_LIMIT_BYTES >> 20} MB and was stopped "
                               f"({first})", kind="memory")
    if "the value cannot be stored" in first:
        return JavaScriptError(first.removeprefix("TypeError: "), kind="value")
    return JavaScriptError(first)


def from_js(value: Any, object_type: type) -> Any:
    """A value from the engine as a JSON type: "\x01"-marked JSON text decoded, whole numbers as ints, NaN
    and infinities as None (what JSON.stringify makes of them)."""
    cls = value.__class__
    if cls is float:
        if value.is_integer() and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return int(value)
        return value if math.isfinite(value) else None
    if cls is str:
        if value:
            marker = value[0]
            if marker == "\x01" or marker == "\x02":
                return _from_text(value[1:], marker == "\x02")
        return value
    if cls is object_type:  # only when the expression replaced the converter (`var __wfexec_out` in a program)
        try:
            text = value.json()
        except Exception as exc:  # noqa: BLE001
            raise JavaScriptError(f"the value cannot be stored: {str(exc).split(chr(10), 1)[0]}", kind="value") \
                from None
        return None if text is None else _from_text(text, False)
    return value


def _from_text(text: str, bigints: bool) -> Any:
    if text.count("[") + text.count("{") > VALUE_DEPTH_LIMIT and _depth(text) > VALUE_DEPTH_LIMIT:
        raise JavaScriptError(f"the value cannot be stored: it nests deeper than {VALUE_DEPTH_LIMIT} levels",
                              kind="value")
    if bigints:
        value = json.loads(text, parse_int=_number, parse_float=_bigint_or_number)
    elif _LONG_DIGITS.search(text) is not None:
        value = json.loads(text, parse_int=_number)
    else:
        value = json.loads(text)
    if _SURROGATE_ESCAPE in text:
        try:  # json.loads joins the halves of a pair; what stays a surrogate was alone
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise JavaScriptError("the value cannot be stored: a string holds a lone UTF-16 surrogate (half of a "
                                  "character), which no text encoding can write", kind="value") from None
    return value


def _number(digits: str) -> int | float:
    """A whole Number as JSON.stringify writes it: an int while exact, else the double it is."""
    whole = int(digits)
    return whole if -MAX_SAFE_INTEGER <= whole <= MAX_SAFE_INTEGER else float(digits)


def _bigint_or_number(text: str) -> int | float:
    return int(text[:-2]) if text.endswith("e0") else float(text)


def _depth(text: str) -> int:
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(itertools.accumulate(1 if bracket in "[{" else -1 for bracket in brackets), default=0)


_local = threading.local()


def current() -> Engine:
    """This thread's engine (QuickJS contexts must stay on the thread that made them)."""
    engine = getattr(_local, "engine", None)
    if engine is None:
        engine = _local.engine = Engine()
    return engine


def global_names() -> frozenset[str]:
    """Every name the global object has (JavaScript's built-ins and wfexec's helpers)."""
    names = getattr(_local, "globals", None)
    if names is None:
        names = _local.globals = frozenset(current().context.eval("Reflect.ownKeys(globalThis).filter("
                                                                   "k => typeof k === 'string').join(' ')").split())
    return names
