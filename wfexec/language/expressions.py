"""`${...}` templates and expressions, compiled once and evaluated many times.

The language is JavaScript, run in a sandboxed QuickJS engine (`javascript.py`).
An expression reads the run state and returns a value; only consequences write
state, so an expression gets a JSON copy of exactly the names it reads
(`js_source.py` finds them). A name resolves as the hiivmind seed says:

- a local (`item` in `foreach`) first;
- an explicit namespace: `computed`, `flags`, `user_responses` (in the state),
  `input`, `env`, `imports`;
- a bare name is looked up in `computed`, then `flags`, then `user_responses`,
  then the top-level state; last, an UPPER_CASE name falls back to the
  environment (`${HOME}`);
- anything else is `undefined`, as in JavaScript (`computed.x || 'default'`).

The helpers `len`, `contains`, `startswith`, `endswith`, `parseYaml` and
`serializeYaml` exist beside JavaScript's own globals. `Date.now()` and
`new Date()` read the scope's clock, which the run records per step.
Lines that start with `#` are comments. Simple expressions
(`computed.count < 10`) take a Python fast path that agrees with the engine
(`expression_fastpath.py`). Values cross exactly or not at all (`javascript.py`):
an integer beyond 2**53 - 1 is a BigInt in an expression, from state or
written as a literal, and a result that is not data is an ExpressionError.
"""

from __future__ import annotations

import json
import os
import re
import time
# collections.abc re-exports these ABCs from here: one module fewer for every start to import.
from _collections_abc import Mapping
from wfexec.records import dataclass, field

from wfexec.errors import WfexecError
from wfexec.system.patterns import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable
    # Imported where an expression is compiled or run in the engine: a cached workflow whose expressions all
    # take the fast path, or a run with none (`wfexec states`), never needs them.
    from wfexec.language import javascript

NAMESPACES_IN_STATE = ("computed", "flags", "user_responses")
NAMESPACES_OUTSIDE_STATE = ("imports", "env", "input")
_IN_STATE = frozenset(NAMESPACES_IN_STATE)
_ENV_NAME = lazy(r"^[A-Z_][A-Z0-9_]*$")
# The key in a scope's extras of what the run says about itself (RUNTIME_NAMES), as hiivmind's state model has
# them at its top level: read-only, and never stored in state.
RUNTIME = "__runtime__"
# `error` is the last failure as blueprint-lib's engine hands it to `on_failure` ({message, hint, node}; its
# fields null before any), so an ending's `${error.message}` reads what `computed.last_error` holds.
RUNTIME_NAMES = ("workflow_name", "workflow_version", "current_node", "previous_node", "error")
# Present in a scope's extras when a bare name means the state's top level before `computed`, `flags` and
# `user_responses`: blueprint-lib's engine (v3 on, so every v8 file) dispatches on the prefix, and v8 files keep
# a parent's inputs at the top level beside results of the same name in `computed` (`intent_flags`).
TOP_LEVEL_FIRST = "__top_level_first__"
HELPERS = ("len", "contains", "startswith", "endswith", "parseYaml", "serializeYaml")
_CLOCK_NAMES = frozenset({"Date", "performance", "globalThis", "eval", "Function", "Reflect", "Object"})

LANGUAGE_HINT = (
    "wfexec expressions are JavaScript: `computed.items.length > 0 && flags.ready`, "
    "`ok ? 'yes' : 'no'`, `computed.name || 'none'`, `items.map(i => i.id)`"
)


class ExpressionError(WfexecError):
    """A template or expression that does not compile, or fails when evaluated.

    For a syntax error, `line` and `column` (1-based) point inside `source`."""

    def __init__(self, message: str, hint: str = "", source: str = "", line: int = 0, column: int = 0):
        super().__init__(message, hint)
        self.source = source
        self.line = line
        self.column = column
        self.path: tuple = ()  # where in a value given to compile_value the failing string is


def _short(source: str, limit: int = 60) -> str:
    one_line = " ".join(source.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


# --------------------------------------------------------------------------- #
# Comments and prose.

_COMMENT_LINE = lazy(r"^[ \t]*#(?!!).*$", re.MULTILINE)
# Three or more words of letters (with ' and -), each perhaps ending in punctuation: what prose is made of, read in
# one match (most fields an expression is asked of fail at their first operator).
_WORDS = lazy(r"\s*[A-Za-z][A-Za-z'\-]*[.,;:!?]?(?:\s+[A-Za-z][A-Za-z'\-]*[.,;:!?]?){2,}\s*")
# Words of English sentences that no expression uses as an operator.
_FUNCTION_WORDS = {"the", "a", "an", "of", "to", "for", "with", "from", "each", "every", "this", "that", "it", "its",
                   "into", "then", "all", "any", "by", "on", "at", "whether", "which", "when", "should", "must",
                   "their", "them", "they", "we", "you", "be", "are", "was", "using", "use", "and"}


def strip_comments(source: str) -> str:
    """The source with its `#` comment lines blanked (lines keep their numbers)."""
    return _COMMENT_LINE.sub("", source) if "#" in source else source


def is_prose(source: object) -> bool:
    """True for a field that describes a step instead of computing it: only `#` comment lines, or a sentence
    (three or more plain words, one of them an English function word) that is not JavaScript."""
    if not isinstance(source, str):
        return False
    code = strip_comments(source).strip()
    if not code:
        return bool(source.strip())
    if not _reads_as_words(code):
        return False
    try:
        Expression(source)
    except ExpressionError:
        return True
    return False


def _reads_as_words(code: str) -> bool:
    return _WORDS.fullmatch(code) is not None and \
        any(w.lower().strip(".,;:!?") in _FUNCTION_WORDS for w in code.split())


# --------------------------------------------------------------------------- #
# Scopes.

MISSING = object()


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class Scope:
    """The names an expression can see: the run state, a few outside namespaces, locals, and the clock
    `Date.now()` reads (milliseconds since the epoch; the run supplies the time it recorded for the step)."""

    state: Mapping[str, Any]
    extras: Mapping[str, Any]  # imports, env, input
    locals: Mapping[str, Any] | None = None
    clock: Callable[[], float] = field(default=wall_clock_ms, compare=False)

    def lookup(self, name: str) -> Any:
        """The value of a bare name, or MISSING."""
        local_values = self.locals
        if local_values and name in local_values:
            return local_values[name]
        state = self.state
        if name in _IN_STATE:
            return state.get(name, {})
        extras = self.extras
        if name in extras:
            return extras[name]
        if TOP_LEVEL_FIRST in extras and name in state:
            return state[name]
        # computed, flags, user_responses (NAMESPACES_IN_STATE), in that order; written out: this runs per read
        space = state.get("computed")
        if space.__class__ is dict and name in space:
            return space[name]
        space = state.get("flags")
        if space.__class__ is dict and name in space:
            return space[name]
        space = state.get("user_responses")
        if space.__class__ is dict and name in space:
            return space[name]
        if name in state:
            return state[name]
        runtime = extras.get(RUNTIME)  # after state, so a workflow's own `current_node` wins
        if runtime is not None and name in runtime:
            return runtime[name]
        if name == "env":
            return os.environ
        if _ENV_NAME.match(name) and name in os.environ:
            return os.environ[name]
        return MISSING

    def resolve(self, name: str) -> Any:
        """The value of a bare name, or raise KeyError."""
        value = self.lookup(name)
        if value is MISSING:
            raise KeyError(name)
        return value

    def child(self, **local_values) -> "Scope":
        merged = dict(self.locals or {})
        merged.update(local_values)
        return Scope(self.state, self.extras, merged, self.clock)


def truthy(value: Any) -> bool:
    """JavaScript's truthiness of a JSON value: `[]` and `{}` are true, `0`, `''`, `null`, NaN false."""
    if value is None or value is False:
        return False
    cls = value.__class__
    if cls is int or cls is float:
        return value != 0 and value == value
    if cls is str:
        return value != ""
    return True


def _jsonable(value: Any) -> Any:
    """State values JSON does not know (sets, dates, paths) cross as lists and text."""
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)


def _dumps(values: dict) -> str:
    try:
        return json.dumps(values, default=_jsonable, allow_nan=False)
    except ValueError:  # NaN or an infinity somewhere in the state: JSON.stringify writes null for those
        return json.dumps(_finite(values), default=_jsonable)


def _finite(value: Any) -> Any:
    import math  # a shared library: imported when a state holds NaN or an infinity, not at every start

    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


# --------------------------------------------------------------------------- #
# Expressions.

# Set while a blueprint-lib v8 document compiles: there a read below a missing value is null, not an error.
_missing_reads_null = [False]


class _Switched:
    """A process-wide setting (the one item of `setting`) changed for the time of a `with` block, and put back
    after. (Not a `contextlib.contextmanager`: importing contextlib cost every start of a run ~0.7 ms.)"""

    __slots__ = ("_setting", "_value", "_before")

    def __init__(self, setting: list[bool], value: bool) -> None:
        self._setting, self._value = setting, value

    def __enter__(self) -> None:
        self._before, self._setting[0] = self._setting[0], self._value

    def __exit__(self, *exc_info: object) -> None:
        self._setting[0] = self._before


def missing_reads_null(enabled: bool) -> _Switched:
    return _Switched(_missing_reads_null, enabled)


class Expression:
    """A compiled expression. `evaluate(scope)` returns its value.

    `names` are the names it reads (what validation checks something writes); `program` says it is
    several statements whose value is the last one's."""

    __slots__ = ("source", "code", "names", "program", "_reads", "_function_text", "_engine_code", "_evaluator",
                 "_fast_text", "_reads_clock")

    def __init__(self, source: str):
        known = _analysed.get((source, _missing_reads_null[0]))
        if known is not None:
            _fill(self, *known)
            return
        self._analyse(source)
        if len(_analysed) >= _ANALYSED_KEPT:
            _analysed.clear()
        _analysed[(source, _missing_reads_null[0])] = self.__reduce__()[1]

    def _analyse(self, source: str) -> None:
        self.source = source
        code = strip_comments(source)
        if not code.strip():
            raise ExpressionError("the expression is empty" if not source.strip() else
                                  f"`{_short(source)}` holds only `#` comments, no code", LANGUAGE_HINT, source)
        javascript, js_source, expression_fastpath = _analysers or _analysing_modules()
        code = _exact_integers(_interpolated_strings(code))
        self.code = code
        tokens = None  # a simple source's names are found without its tokens, which only the fast path reads
        found = js_source.simple_usage(code)
        try:
            if found is None:
                tokens = js_source.scan(code)
                found = js_source.usage(code, tokens)
        except js_source.TokenError as exc:
            try:  # the engine's own words, when it agrees the source is broken
                javascript.compile_source(code, ())
            except javascript.JavaScriptError as syntax:
                raise self._invalid(syntax) from None
            raise ExpressionError(f"wfexec cannot read the names in `{_short(source)}`: {exc}", LANGUAGE_HINT,
                                  source, *_line_column(code, exc.offset)) from None
        builtins = javascript.global_names()
        keywords = js_source.KEYWORDS
        reads = {name: keys for name, keys in found.reads.items() if name not in builtins and name not in keywords}
        if tokens is not None and "|" in code.replace("||", "").replace("|=", "") and "|" in tokens.texts and \
                _reads_a_jq_filter(code, reads):
            # `x | tojson` is JavaScript too (0, silently); `||` and `|=` are tokens of their own
            _refuse_foreign_idiom(source)
        free = found.free
        self.names = tuple(sorted(free.intersection(reads)))
        unknown_calls = _unknown_calls(found, builtins, keywords)
        if unknown_calls:
            if tokens is None:  # where the call stands is a token's place
                tokens = js_source.scan(code)
                found = js_source.usage(code, tokens)
                unknown_calls = _unknown_calls(found, builtins, keywords)
            name, at = min(unknown_calls.items(), key=lambda item: item[1])
            from wfexec.language.diagnostics import did_you_mean

            line, column = _line_column(code, tokens.starts[at])
            _refuse_foreign_idiom(source)
            hint = did_you_mean(name, [*HELPERS, *sorted(n for n in builtins if not n.startswith("__"))]) or \
                f"the functions are JavaScript's own ({', '.join(('Math.max', 'JSON.stringify', 'String'))}, …) " \
                f"and the helpers {', '.join(HELPERS)}; call methods on values: `s.trim()`, `items.map(...)`"
            raise ExpressionError(f"unknown function '{name}' called in `{_short(source)}`", hint, source,
                                  line, column)
        # A simple source holds `,`, `[` or `=>`, which no expression of the fast path's grammar does.
        fast_text = expression_fastpath.fast_source(code, builtins, tokens) if tokens is not None else None
        engine_code, names = js_source.optional_members(code) if _missing_reads_null[0] else code, \
            tuple(sorted(reads))
        # A program's function text is kept as checked, so a cached workflow unpickles without the JavaScript
        # modules; an expression's is made from the code the engine runs and the names it reads (`function_text`),
        # which a cached workflow keeps anyway: its text was a third of the cache entry.
        self.program, self._function_text = False, None
        if fast_text is None:
            try:
                compiled = javascript.compile_source(engine_code, names)
            except javascript.JavaScriptError as exc:
                raise self._invalid(exc) from None
            if compiled.program:
                self.program, self._function_text = True, compiled.text
        # Otherwise the fast path's reader took the whole source in a subset of JavaScript's grammar: it is one valid
        # expression, which the engine's syntax check would only confirm (a third of checking a short one).
        self._engine_code = engine_code if engine_code is not code else None  # v8's `a?.b` for `a.b`
        self._reads = tuple([(name, tuple(sorted(keys)) if keys is not None else None) for name, keys in reads.items()])
        # Only an expression that can reach the clock asks the run for it, so a run records (and a replay
        # serves) a time only for the steps that read one. Reaching `Date` sideways counts too.
        self._reads_clock = not _CLOCK_NAMES.isdisjoint(free) or "this" in code or "constructor" in code
        self._fast_text = fast_text
        # Compiled on the first evaluation: `validate` never evaluates, and compiling costs more than writing.
        self._evaluator: Callable[[Scope], Any] | None = None

    @property
    def _fast(self) -> Callable[[Scope], Any] | None:
        """The fast path alone: the value, or MISSING where the engine must answer (None: it answers
        everything). For tests; evaluation goes through `evaluator`."""
        if self._fast_text is None:
            return None
        from wfexec.language.fast_evaluation import fast_function

        return fast_function(self._fast_text)

    def evaluator(self) -> Callable[[Scope], Any]:
        """`evaluate` as one function, made on the first call: a caller that evaluates at every step keeps it."""
        made = self._evaluator
        if made is None:
            if self._fast_text is None:
                made = self.evaluate_in_engine
            else:
                from wfexec.language.fast_evaluation import fast_evaluator

                made = fast_evaluator(self._fast_text, self.evaluate_in_engine, _fast_path_on)
            self._evaluator = made
        return made

    def __reduce__(self):
        # What was checked and derived at load, without the engine's function (bound per engine on first use):
        # a cached workflow builds its expressions again without the JavaScript engine.
        return _restored_expression, (self.source, self.code, self.names, self.program, self._reads,
                                      self._function_text if self.program else None, self._fast_text,
                                      self._reads_clock, self._engine_code)

    def function_text(self) -> str:
        """The JavaScript function the engine compiles for this expression: a program's as checked, an expression's
        made from its engine code and every name it reads, the first time it is asked for."""
        text = self._function_text
        if text is None:
            import wfexec.language.javascript as javascript

            names = tuple(sorted(name for name, _keys in self._reads))
            text = self._function_text = javascript.expression_function(self._engine_code or self.code, names).text
        return text

    @property
    def reads(self) -> dict[str, tuple[str, ...] | None]:
        """Each name read (not declared in the source) -> the keys read below it (None: used as a whole)."""
        names = self.names
        return {name: keys for name, keys in self._reads if name in names}

    def _invalid(self, exc: javascript.JavaScriptError) -> ExpressionError:
        _refuse_foreign_idiom(self.source)
        prose = " (this reads as prose, not code)" if _reads_as_words(self.code) else ""
        return ExpressionError(f"invalid JavaScript in `{_short(self.source)}`: {exc.message}{prose}", LANGUAGE_HINT,
                               self.source, exc.line, exc.column)

    def arguments(self, scope: Scope) -> str:
        """The JSON text of the names this expression reads (only the keys it reads below a name, when it
        reads keys only)."""
        values = {}
        lookup = scope.lookup
        for name, keys in self._reads:
            value = lookup(name)
            if value is MISSING:
                continue
            if keys is not None and isinstance(value, Mapping):
                value = {k: value[k] for k in keys if k in value}
            values[name] = value
        return _dumps(values) if values else ""

    def evaluate(self, scope: Scope) -> Any:
        """The value: from the Python fast path where it answers, else from the engine."""
        return (self._evaluator or self.evaluator())(scope)

    def evaluate_in_engine(self, scope: Scope) -> Any:
        import wfexec.language.javascript as javascript  # a third of `from wfexec.language import javascript`

        engine = javascript.current()
        # Looked up in the engine's own table each time, never kept here: a retired engine (a promise job left
        # queued, memory exhausted) must go with everything it holds, and each thread has its own.
        function = engine.function(self._function_text or self.function_text(), self.code)
        try:
            return engine.call(function, self.arguments(scope), scope.clock() if self._reads_clock else 0)
        except javascript.JavaScriptError as exc:
            hint = {"time": "look for a loop that never ends", "memory": "build smaller values",
                    "value": "return plain data: objects, arrays, strings, numbers, booleans or null (a BigInt "
                             "comes back as an integer)"}.get(exc.kind, "")
            if "BigInt" in exc.message and not hint:
                hint = "an integer beyond 2**53 is a BigInt in an expression: compute with BigInts (`x + 1n`), " \
                       "or convert (`Number(x)`, which rounds)"
            raise ExpressionError(f"`{_short(self.source)}` failed: {exc.message}", hint, self.source) from None

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"


# Whether evaluation tries the Python fast path first (in a list: every evaluator reads this one); off
# (`fast_path(False)`), the engine answers everything. Tests run each rule both ways, so a rule the fast path
# answers still has the engine's side tested.
_fast_path_on = [True]


def fast_path(enabled: bool) -> _Switched:
    """Evaluate with the Python fast path on (as runs do) or off, for the time of the block (process-wide)."""
    return _Switched(_fast_path_on, enabled)


def _unknown_calls(found, builtins: frozenset[str], keywords: frozenset[str]) -> dict[str, int]:
    """The bare names `found` (a js_source.Usage) calls that nothing defines -> where each is called."""
    return {name: at for name, at in found.calls.items()
            if name not in builtins and name not in found.declared and name not in keywords}


def _restored_expression(source, code, names, program, reads, function_text, fast_text, reads_clock,
                         engine_code) -> Expression:
    expression = Expression.__new__(Expression)
    _fill(expression, source, code, names, program, reads, function_text, fast_text, reads_clock, engine_code)
    return expression


def _fill(expression: Expression, source, code, names, program, reads, function_text, fast_text,
          reads_clock, engine_code) -> None:
    expression.source, expression.code, expression.names, expression.program = source, code, names, program
    expression._reads, expression._function_text, expression._reads_clock = reads, function_text, reads_clock
    expression._engine_code = engine_code
    expression._fast_text = fast_text
    expression._evaluator = None


# What reading an expression's source found (the `_fill` arguments), by (source, missing reads are null): a
# workflow repeats the same expressions and `${...}` templates, and each analysis tokenises the source and asks
# the engine to compile it. Bounded, so a long-lived server (MCP, the language server) does not grow with it.
_analysed: dict[tuple[str, bool], tuple] = {}
_ANALYSED_KEPT = 100_000

# The modules that analyse a source, imported by the first analysis (a cached workflow runs without them) and kept
# here: an `import` statement in `_analyse` ran the import machinery for each expression, ~6,000 instructions (2% of
# checking a long one).
_analysers: tuple = ()


def _analysing_modules() -> tuple:
    global _analysers
    import wfexec.language.expression_fastpath as expression_fastpath
    import wfexec.language.javascript as javascript
    import wfexec.language.js_source as js_source

    _analysers = (javascript, js_source, expression_fastpath)
    return _analysers


def _interpolated_strings(code: str) -> str:
    """`code` with each quoted string that holds `${...}` written as a template literal: hiivmind interpolates
    `${...}` in every string value, its expressions too, so `'${HOME}/.claude/skills'` means the folder
    (the real init workflow). Lines stay, so error positions keep their line."""
    if "${" not in code:
        return code

    def as_template_literal(token) -> str | None:
        if token.kind != "string" or "${" not in token.text:
            return None
        quote, body = token.text[0], token.text[1:-1].replace("`", "\\`")
        return "`" + body.replace("\\" + quote, quote) + "`"

    return _tokens_rewritten(code, as_template_literal)


def _tokens_rewritten(code: str, rewrite) -> str:
    """`code` with each token for which `rewrite(token)` gives text written as that text (the rest as it was)."""
    from wfexec.language.js_source import TokenError, tokenize

    try:
        tokens = tokenize(code)
    except TokenError:
        return code  # the syntax check reports it
    pieces, last = [], 0
    for token in tokens:
        replaced = rewrite(token)
        if replaced is not None:
            pieces += [code[last:token.start], replaced]
            last = token.start + len(token.text)
    return "".join(pieces) + code[last:]


_LONG_DIGITS = lazy(r"[0-9]{16}")
_DECIMAL_INTEGER = lazy(r"^[1-9][0-9_]*$")
MAX_SAFE_INTEGER = 2 ** 53 - 1


# Each ASCII digit as `0`, every other byte a blank: 16 digits in a row are then a `bytes` search, in C at a few
# instructions a byte, where the regex `[0-9]{16}` took a twentieth of checking a long expression.
_DIGITS_AS_ZEROS = b" " * 48 + b"0" * 10 + b" " * 198


def _has_long_digit_run(code: str) -> bool:
    """Whether `code` holds 16 ASCII digits in a row (`_LONG_DIGITS`); characters past ASCII encode to bytes past
    it, which are blanks here."""
    return b"0000000000000000" in code.encode("utf-8", "surrogatepass").translate(_DIGITS_AS_ZEROS)


def _exact_integers(code: str) -> str:
    """`code` with each integer literal beyond Number.MAX_SAFE_INTEGER written as a BigInt (`...n`), as an
    integer that large from state arrives: `12345678901234567890123` keeps its digits, and equals the same
    number read from state."""
    if not _has_long_digit_run(code) or _LONG_DIGITS.search(code) is None:
        return code

    def as_bigint(token) -> str | None:
        if token.kind == "number" and _DECIMAL_INTEGER.match(token.text) and \
                int(token.text.replace("_", "")) > MAX_SAFE_INTEGER and \
                not code.startswith("n", token.start + len(token.text)):
            return token.text + "n"
        return None

    return _tokens_rewritten(code, as_bigint)


def _line_column(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


# --------------------------------------------------------------------------- #
# Templates: strings containing ${...}.

def _skip_quoted(text: str, start: int) -> int:
    """Index after the string or template literal that starts at `start` (len(text) when unclosed)."""
    quote = text[start]
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == quote:
            return i + 1
        if quote == "`" and text.startswith("${", i):
            close = _find_close(text, i + 2)
            if close < 0:
                return len(text)
            i = close + 1
            continue
        i += 1
    return len(text)


def _find_close(text: str, start: int) -> int:
    """Index of the `}` closing the `${` whose body starts at `start`, or -1."""
    depth = 0
    i = start
    while i < len(text):
        ch = text[i]
        if ch in "'\"`":
            i = _skip_quoted(text, i)
            continue
        if ch in "{[(":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "}":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    return -1


def _reads_a_jq_filter(code: str, reads: dict) -> bool:
    from wfexec.language.foreign_syntax import jq_filters

    return any(name in reads for name in jq_filters(code))


def _shell_default(inside: str, javascript_failed: bool) -> bool:
    from wfexec.language.foreign_syntax import is_shell_expansion

    return is_shell_expansion(inside, javascript_failed)


def _refuse_foreign_idiom(source: str) -> None:
    """A jq filter or a shell operator where JavaScript is expected: say what to write instead."""
    from wfexec.language.foreign_syntax import javascript_for

    found = javascript_for(source)
    if found is not None:
        what, instead = found
        raise ExpressionError(f"{what} in `{_short(source)}`", f"in JavaScript: {instead}", source)


class Template:
    """A string with `${...}` parts. A string that is one `${...}` yields the value itself."""

    __slots__ = ("source", "parts", "whole", "render")
    # `render(scope)`: the value; for a template that is one `${...}` (a target, a value that keeps its type), the
    # expression's own evaluator once it has rendered (`_render_first`).
    render: Callable[[Scope], Any]

    def __init__(self, source: str):
        parts: list[str | Expression] = []
        literal = []
        i = 0
        n = len(source)
        while i < n:
            if source.startswith("$${", i):
                literal.append("${")
                i += 3
                continue
            if source.startswith("${", i):
                close = _find_close(source, i + 2)
                if close < 0:
                    raise ExpressionError(f"unclosed `${{` in `{_short(source)}`", "add the closing `}`, or write "
                                          "`$${` for a literal `${`", source, *_line_column(source, i))
                inside = source[i + 2: close]
                try:
                    if ":" in inside and _shell_default(inside, False):
                        raise ExpressionError("the shell's", "", inside)
                    expression = Expression(inside)
                except ExpressionError as exc:
                    if _shell_default(inside, True):  # `${name##*-}`, `${x:-y}`: the script's shell expands it
                        literal.append(source[i: close + 1])
                        i = close + 1
                        continue
                    raise _shifted(exc, source, i + 2) from None
                if literal:
                    parts.append("".join(literal))
                    literal = []
                parts.append(expression)
                i = close + 1
                continue
            literal.append(source[i])
            i += 1
        if literal:
            parts.append("".join(literal))
        self._settle(source, tuple(parts))

    def _settle(self, source: str, parts: tuple) -> None:
        self.source = source
        self.parts = parts
        self.whole = len(parts) == 1 and isinstance(parts[0], Expression)
        if self.whole:
            self.render = self._render_first
        elif len(parts) == 2 and parts[0].__class__ is str and isinstance(parts[1], Expression):
            self.render = self._after_text  # `step ${count}`: the commonest template that is not one `${...}`
        else:
            self.render = self._joined

    def _render_first(self, scope: Scope) -> Any:
        # From now on `render` is the expression's own evaluator: rendering a target costs no call of its own.
        render = self.render = self.parts[0].evaluator()
        return render(scope)

    def __reduce__(self):
        return _template_again, (self.source, self.parts)  # `render` is bound to these parts, made again

    @property
    def expressions(self) -> tuple[Expression, ...]:
        return tuple(p for p in self.parts if isinstance(p, Expression))

    def _after_text(self, scope: Scope) -> str:
        # What `_joined` makes of a text and then an expression, without its loop.
        text, expression = self.parts
        return text + to_text(expression.evaluate(scope))

    def as_function(self) -> Callable[[Scope], Any]:
        """`render` as one function of the scope, for a caller that renders this template at every step (a direct
        write): the expression's own evaluator when the template is one `${...}`, and for `text ${...}` a function
        of that evaluator, two calls less than `render` (`evaluate`, then `to_text` for a string or an integer)."""
        if self.whole:
            return self.parts[0].evaluator()
        if self.render != self._after_text:
            return self.render
        text, expression = self.parts
        evaluate = expression.evaluator()

        def after_text(scope: Scope) -> str:
            value = evaluate(scope)
            kind = value.__class__
            if kind is str:
                return text + value
            if kind is int:
                return text + str(value)
            return text + to_text(value)

        return after_text

    def _joined(self, scope: Scope) -> str:
        # Added up, not joined: a template has a few parts, and a list comprehension costs a function call more.
        # `__class__ is str`: cheaper than isinstance on this hot path.
        text = ""
        for part in self.parts:
            text += part if part.__class__ is str else to_text(part.evaluate(scope))
        return text

    def __repr__(self) -> str:
        return f"Template({self.source!r})"


def _template_again(source: str, parts: tuple) -> Template:
    template = Template.__new__(Template)
    template._settle(source, parts)
    return template


def _shifted(exc: ExpressionError, template: str, offset: int) -> ExpressionError:
    """An error inside the `${...}` at `offset`, positioned in the whole template."""
    if not exc.line:
        return ExpressionError(exc.message, exc.hint, template)
    start_line, start_column = _line_column(template, offset)
    column = exc.column + start_column - 1 if exc.line == 1 else exc.column
    return ExpressionError(exc.message, exc.hint, template, start_line + exc.line - 1, column)


def to_text(value: Any) -> str:
    """How a value reads inside a larger string."""
    cls = value.__class__
    if cls is str:
        return value
    if cls is int:
        return str(value)
    if cls is float:
        return number_text(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def number_text(value: float) -> str:
    """A float as JavaScript writes a number in a string (`${x}`, `String(x)`), so the fast path and the engine
    give one text: `1e-7`, `0.000001`, `1152921504606847000` (2 ** 60), `-0` as `0`, where Python writes `1e-07`,
    `1e-06`, `1.152921504606847e+18`, `-0.0`. Both take the shortest digits that read back as the number; only
    where the point goes differs (ECMA-262 Number::toString)."""
    if value != value:
        return "NaN"
    if value == 0:
        return "0"
    if value < 0:
        return "-" + number_text(-value)
    if value == float("inf"):
        return "Infinity"
    mantissa, _, exponent = repr(value).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + int(exponent or 0)  # the decimal point's place from the start of `digits`
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    count = len(digits)
    if count <= point <= 21:
        return digits + "0" * (point - count)
    if 0 < point <= 21:
        return digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return "0." + "0" * -point + digits
    power = point - 1
    return (digits if count == 1 else digits[0] + "." + digits[1:]) + ("e+" if power >= 0 else "e-") + \
        str(abs(power))


def compile_value(value: Any) -> Any:
    """Compile every string with `${` inside a value (deeply); other values stay as they are.

    Strings without templates are returned unchanged, so rendering a compiled
    value that has no templates costs nothing.
    """
    if isinstance(value, str):
        if "${" in value:
            template = Template(value)
            if len(template.parts) == 1 and isinstance(template.parts[0], str):
                return template.parts[0]  # only `$${` escapes
            return template
        return value
    if isinstance(value, (dict, list)):
        compiled: Any = {} if isinstance(value, dict) else [None] * len(value)
        for key, item in (value.items() if isinstance(value, dict) else enumerate(value)):
            try:
                compiled[key] = compile_value(item)
            except ExpressionError as exc:
                exc.path = (key,) + exc.path
                raise
        if isinstance(value, dict) and any(isinstance(key, str) and "${" in key for key in value):
            return _with_key_templates(compiled)
        return compiled
    return value


class KeyTemplates(dict):
    """A mapping some of whose keys are templates (`{"${source.id}": ...}`, as hiivmind writes a result keyed by
    a value): the keys stay as written, for every reader of the compiled value; rendering fills them in."""

    __slots__ = ("templates",)
    templates: dict

    def __reduce__(self):
        return _key_templates_again, (dict(self), self.templates)


def _key_templates_again(items: dict, templates: dict) -> KeyTemplates:
    mapping = KeyTemplates(items)
    mapping.templates = templates
    return mapping


def _with_key_templates(compiled: dict) -> KeyTemplates:
    templates = {}
    for key in compiled:
        if isinstance(key, str) and "${" in key:
            try:
                template = compile_value(key)
            except ExpressionError as exc:
                exc.path = (key,) + exc.path
                raise
            templates[key] = template
    return _key_templates_again(compiled, templates)


def has_templates(value: Any) -> bool:
    if isinstance(value, (Template, KeyTemplates)):
        return True
    if isinstance(value, dict):
        return any(has_templates(v) for v in value.values())
    if isinstance(value, list):
        return any(has_templates(v) for v in value)
    return False


def renderer(value: Any) -> Callable[[Scope], Any]:
    """`render_value(value, scope)` as a function of the scope, with what `value` is settled once: a template's
    (`Template.as_function`), or the value itself when it holds no template."""
    if value.__class__ is Template:
        return value.as_function()
    if not has_templates(value):
        return lambda scope: value
    return lambda scope: render_value(value, scope)


def render_value(value: Any, scope: Scope) -> Any:
    """Render a value compiled by `compile_value`."""
    cls = type(value)
    if cls is Template:
        return value.render(scope)
    if cls is str:
        return value
    if cls is KeyTemplates:
        return {to_text(render_value(value.templates.get(k, k), scope)): render_value(v, scope)
                for k, v in value.items()}
    if isinstance(value, dict):
        return {k: render_value(v, scope) for k, v in value.items()}
    if isinstance(value, list):
        return [render_value(v, scope) for v in value]
    return value
