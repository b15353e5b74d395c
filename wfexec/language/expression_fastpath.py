"""Plain Python functions for the simplest expressions, with the engine's exact semantics.

Crossing into the JavaScript engine costs a few microseconds; `count < limit`
in Python costs a fraction of one. The shapes handled here are the ones whose
JavaScript meaning Python can match exactly, checked on the values at hand:

- literals: decimal numbers, strings without escapes, `true`, `false`, `null`;
- names and member reads `a.b.c` (through mappings only);
- `!`, `&&`, `||` (JavaScript truthiness; they return an operand), and `test ? a : b`;
- `===`, `!==`, and `==`, `!=` between values of one type (no coercion);
- `<`, `<=`, `>`, `>=`, `-`, unary `-` on numbers; `+` on two numbers or two strings;
- parentheses.

Anything else, at compile time or on the values of one evaluation (an
`undefined`, an integer beyond 2**53 - 1 (a BigInt there), a string compared with `<`, an object as the
result), gives MISSING (`FALL()` in the text written) and the engine answers. A differential test over
generated expressions and states holds this module to the engine's answers.

The grammar read here is a subset of JavaScript's, so a source it reads whole is valid JavaScript: checking a
workflow does not ask the engine to compile it too (its names are identifiers to Python, and so to JavaScript).
"""

from __future__ import annotations

from wfexec.system.patterns import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from wfexec.language.js_source import Scanned

_DECIMAL = lazy(r"^(?:0|[1-9][0-9]{0,14})(?:\.[0-9]{1,15})?$")
_LITERALS = {"true": "True", "false": "False", "null": "None"}
_RESERVED_NAMES = frozenset(("undefined", "NaN", "Infinity", "this", "arguments", "globalThis"))


class _Unsupported(Exception):
    pass


def fast_source(code: str, builtins: frozenset[str] = frozenset(), tokens: Scanned | None = None) -> str | None:
    """The Python source of a function of a Scope giving the value of `code`, or MISSING where the engine must
    answer, with the steps every expression repeats in one line each (wfexec.language.fast_evaluation writes them
    out and runs it; the compiled-workflow cache keeps the text); None when `code` is not a shape handled here.
    `tokens`: `code`'s, when the caller has them."""
    if tokens is None:
        from wfexec.language.js_source import TokenError, scan  # writing the fast path, not running it

        try:
            tokens = scan(code)
        except TokenError:
            return None
    if not tokens or len(tokens) > 40:
        return None
    try:
        writer = _Writer(tokens, builtins)
        result, kind = writer.conditional()
        if writer.at < len(tokens):
            raise _Unsupported("text after the expression")
    except _Unsupported:
        return None
    body = "\n".join(writer.lines)
    if kind in ("bool", "str", "null"):
        ending = f"    return {result}\n"
    elif kind == "num":  # an integer here is a safe one already
        ending = f"    {RETURN_NUMBER} {result}\n"
    else:  # a value read from the state, or either of two kinds: as JSON would carry it
        ending = f"    {RETURN_JSON} {result}\n"
    return f"def fast(scope):\n    st = scope.state; loc = scope.locals; ex = scope.extras\n{body}\n{ending}"


# The static kind of a value in generated code: "raw" (read from the state, unchecked: it may be MISSING,
# NaN or an unsafe integer), "json" (checked: what JSON carries to the engine unchanged), "num" (a safe
# integer or a float), "str", "bool", "null".
_CHECKED = ("json", "num", "str", "bool", "null")


# Imported below the definitions above: expressions imports this module lazily. What runs the functions written
# here (fast_evaluation) is a module of its own: a run of a cached workflow imports only that one. Writing one
# follows tokenizing, so js_source is imported already.
from wfexec.language.expressions import NAMESPACES_IN_STATE  # noqa: E402
from wfexec.language.fast_evaluation import LOOKUP, NEED_JSON, NEED_NUMBER, RETURN_JSON, RETURN_NUMBER  # noqa: E402
from wfexec.language.js_source import KEYWORDS  # noqa: E402


class _Writer:
    """A recursive-descent reader of the supported grammar that writes Python statements. Every value
    is in a local `vN` or is a literal; a guard that fails returns `FALL()`: MISSING, or the
    engine's answer (`fast_evaluator`)."""

    def __init__(self, tokens: Scanned, builtins):
        self.kinds = tokens.kinds
        self.size = len(tokens)
        self.builtins = builtins
        self.at = 0
        # The next token's text (None at the end), kept as an attribute: every level of the grammar looks at it,
        # about twenty looks per operand, and a method call for each cost a tenth of writing the function.
        self._texts = [*tokens.texts, None]
        self.ahead: str | None = self._texts[0]
        self.lines: list[str] = []
        self.indent = "    "  # the function's body
        self.count = 0

    # -- tokens -------------------------------------------------------------
    def take(self) -> str:
        """The next token's text, moving past it."""
        text = self._texts[self.at]
        self.at += 1
        self.ahead = self._texts[self.at]
        return text  # type: ignore[return-value]  # never past the end: callers look ahead first

    def var(self) -> str:
        self.count += 1
        return f"v{self.count}"

    def emit(self, line: str) -> None:
        self.lines.append(self.indent + line)

    def lookup(self, name: str, value: str) -> None:
        """Scope.lookup for one name (a call costs more than the rest of most expressions), written out in full by
        fast_evaluation."""
        n = repr(name)
        if name in NAMESPACES_IN_STATE:
            self.emit(f"{value} = loc[{n}] if loc and {n} in loc else st.get({n}, EMPTY)")
            return
        self.emit(f"{LOOKUP} {value} {n}")

    # -- guards -------------------------------------------------------------
    def need_json(self, value: str, kind: str) -> str:
        """Only values Python and the engine see alike: no undefined, no unsafe integer, no NaN."""
        if kind in _CHECKED:
            return kind
        self.emit(f"{NEED_JSON} {value}")
        return "json"

    def need_number(self, value: str, kind: str) -> None:
        if kind == "num":
            return
        if kind in ("str", "bool", "null"):
            raise _Unsupported("a number operator on another type: JavaScript converts")
        if kind == "json":
            self.emit(f"c = {value}.__class__")
            self.emit("if c is not int and c is not float: return FALL()")
            return
        self.emit(f"{NEED_NUMBER} {value}")

    @staticmethod
    def truth(value: str, kind: str) -> str:
        """JavaScript's truth of a checked value: a boolean is its own."""
        return value if kind == "bool" else f"truthy({value})"

    def safe_result(self, value: str) -> None:
        self.emit(f"if {value}.__class__ is int and not -SAFE <= {value} <= SAFE: return FALL()")

    # -- grammar ------------------------------------------------------------
    def conditional(self) -> tuple[str, str]:
        """`test ? a : b` (what routes a step: `on_success: ${n < limit ? 'again' : 'done'}`)."""
        test, kind = self.or_()
        if self.ahead != "?":
            return test, kind
        self.take()
        self.need_json(test, kind)
        result = self.var()
        outer = self.indent
        self.emit(f"if {self.truth(test, kind)}:")
        self.indent += "    "
        chosen, chosen_kind = self.conditional()
        self.emit(f"{result} = {chosen}")
        self.indent = outer
        if self.ahead != ":":
            raise _Unsupported("conditional without `:`")
        self.take()
        self.emit("else:")
        self.indent += "    "
        other, other_kind = self.conditional()
        self.emit(f"{result} = {other}")
        self.indent = outer
        # Either branch may be the value: a kind both share, else one checked where it is used.
        return result, (chosen_kind if chosen_kind == other_kind else "raw")

    def or_(self) -> tuple[str, str]:
        return self.logical("||", self.and_, "not ")

    def and_(self) -> tuple[str, str]:
        return self.logical("&&", self.equality, "")

    def logical(self, operator: str, operand, keep_going_when: str) -> tuple[str, str]:
        """`a && b` (keep_going_when "": go on to b when a is true), `a || b` ("not ": when a is false)."""
        left, kind = operand()
        while self.ahead == operator:
            self.take()
            left_kind = self.need_json(left, kind)
            result = self.var()
            self.emit(f"{result} = {left}")
            self.emit(f"if {keep_going_when}{self.truth(left, left_kind)}:")
            outer = self.indent
            self.indent += "    "
            right, right_kind = operand()
            right_kind = self.need_json(right, right_kind)
            self.emit(f"{result} = {right}")
            self.indent = outer
            left, kind = result, (left_kind if left_kind == right_kind else "json")
        return left, kind

    def equality(self) -> tuple[str, str]:
        left, left_kind = self.relational()
        while self.ahead in ("===", "!==", "==", "!="):
            operator = self.take()
            right, right_kind = self.relational()
            left_kind = self.need_json(left, left_kind)
            right_kind = self.need_json(right, right_kind)
            result = self.var()
            # Objects compare by identity: left to the engine. A float and an int are one type (number).
            self.emit(f"c1 = {left}.__class__; c2 = {right}.__class__")
            self.emit("if c1 is dict or c1 is list or c2 is dict or c2 is list: return FALL()")
            self.emit("if c1 is float: c1 = int")
            self.emit("if c2 is float: c2 = int")
            if operator in ("==", "!="):
                self.emit("if c1 is not c2: return FALL()")  # == between types converts
            equal = f"(c1 is c2 and {left} == {right})"
            self.emit(f"{result} = {equal}" if operator in ("===", "==") else f"{result} = not {equal}")
            left, left_kind = result, "bool"
        return left, left_kind

    def relational(self) -> tuple[str, str]:
        left, left_kind = self.additive()
        if self.ahead in ("<", "<=", ">", ">="):
            operator = self.take()
            right, right_kind = self.additive()
            self.need_number(left, left_kind)
            self.need_number(right, right_kind)
            result = self.var()
            self.emit(f"{result} = {left} {operator} {right}")
            if self.ahead in ("<", "<=", ">", ">="):
                raise _Unsupported("chained comparison")
            return result, "bool"
        return left, left_kind

    def additive(self) -> tuple[str, str]:
        left, left_kind = self.unary()
        while self.ahead in ("+", "-"):
            operator = self.take()
            right, right_kind = self.unary()
            result = self.var()
            if operator == "+" and left_kind == right_kind == "str":
                self.emit(f"{result} = {left} + {right}")
                left, left_kind = result, "str"
                continue
            if operator == "+" and "num" not in (left_kind, right_kind):
                left_kind = self.need_json(left, left_kind)
                right_kind = self.need_json(right, right_kind)
                self.emit(f"c1 = {left}.__class__; c2 = {right}.__class__")
                self.emit("if (c1 is not int and c1 is not float or c2 is not int and c2 is not float) and "
                          "(c1 is not str or c2 is not str): return FALL()")
                self.emit(f"{result} = {left} + {right}")
                self.safe_result(result)
                left, left_kind = result, "json"
                continue
            self.need_number(left, left_kind)
            self.need_number(right, right_kind)
            self.emit(f"{result} = {left} {operator} {right}")
            self.safe_result(result)
            left, left_kind = result, "num"
        return left, left_kind

    def unary(self) -> tuple[str, str]:
        operator = self.ahead
        if operator == "!":
            self.take()
            operand, kind = self.unary()
            self.need_json(operand, kind)
            result = self.var()
            self.emit(f"{result} = not {self.truth(operand, kind)}")
            return result, "bool"
        if operator == "-":
            self.take()
            operand, kind = self.unary()
            self.need_number(operand, kind)
            result = self.var()
            self.emit(f"{result} = -{operand}")
            self.emit(f"if {result} == 0: {result} = 0")  # -0 reads as 0 once it is JSON
            return result, "num"
        return self.primary()

    def primary(self) -> tuple[str, str]:
        if self.at >= self.size:
            raise _Unsupported("end")
        kind = self.kinds[self.at]
        text = self.take()
        if text == "(":
            inner = self.conditional()
            if self.ahead != ")":
                raise _Unsupported("bracket")
            self.take()
            return inner
        if kind == "number":
            if not _DECIMAL.match(text):
                raise _Unsupported("number form")
            return (f"({float(text)!r})" if "." in text else f"({text})"), "num"
        if kind == "string":
            body = text[1:-1]
            if "\\" in body or not body.isprintable():
                raise _Unsupported("escape")
            return f"({body!r})", "str"
        if kind != "name":
            raise _Unsupported(text)
        if text in _LITERALS:
            return f"({_LITERALS[text]})", ("null" if text == "null" else "bool")
        if text == "len" and self.ahead == "(":  # the prelude's helper: helpers are never state names
            self.take()
            argument, _kind = self.conditional()
            if self.ahead != ")":
                raise _Unsupported("len with more than one argument")
            self.take()
            return f"LEN({argument})", "num"
        if text in _RESERVED_NAMES or text in self.builtins or text in KEYWORDS or not text.isidentifier() \
                or not text.isascii():
            raise _Unsupported("a global or keyword")
        value = self.var()
        self.lookup(text, value)
        while self.ahead == ".":
            self.take()
            if self.at >= self.size or self.kinds[self.at] != "name":
                raise _Unsupported("member")
            key = self.take()
            # The tokenizer's names take in characters past ASCII that JavaScript's do not (an em space, `×`).
            if not (key.isascii() or key.isidentifier()):
                raise _Unsupported("not a name to JavaScript")
            if self.ahead == "(":
                raise _Unsupported("call")
            self.emit(f"if {value}.__class__ is not dict or {key!r} not in {value}: return FALL()")
            self.emit(f"{value} = {value}[{key!r}]")
        if self.ahead in ("(", "[", "?.", "`"):
            raise _Unsupported("call or index")
        return value, "raw"
