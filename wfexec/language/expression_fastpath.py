"""Plain Python functions for the simplest expressions, with the engine's exact semantics.

Crossing into the JavaScript engine costs a few microseconds; `count < limit`
in Python costs a fraction of one. The shapes handled here are the ones whose
JavaScript meaning Python can match exactly, checked on the values at hand:

- literals: decimal numbers, strings without escapes, `true`, `false`, `null`;
- names and member reads `a.b.c` (through mappings only);
- `!`, `&&`, `||` (JavaScript truthiness; they return an operand);
- `===`, `!==`, and `==`, `!=` between values of one type (no coercion);
- `<`, `<=`, `>`, `>=`, `-`, unary `-` on numbers; `+` on two numbers or two strings;
- parentheses.

Anything else, at compile time or on the values of one evaluation (an
`undefined`, a number beyond 2**53, a string compared with `<`, an object as the
result), gives MISSING and the caller asks the engine. A differential test over
generated expressions and states holds this module to the engine's answers.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from wfexec.language.js_source import TokenError, tokenize

_SAFE_INTEGER = 2 ** 53
_DECIMAL = re.compile(r"^(?:0|[1-9][0-9]{0,14})(?:\.[0-9]{1,15})?$")
_LITERALS = {"true": "True", "false": "False", "null": "None"}
_RESERVED_NAMES = frozenset(("undefined", "NaN", "Infinity", "this", "arguments", "globalThis"))


class _Unsupported(Exception):
    pass


def compile_fast(code: str, builtins: frozenset[str] = frozenset()) -> Callable[[Callable], Any] | None:
    """A function of `lookup` (Scope.lookup) giving the value of `code`, or MISSING when the engine must
    answer; None when `code` is not a shape handled here."""
    try:
        tokens = [t for t in tokenize(code)]
    except TokenError:
        return None
    if not tokens or len(tokens) > 40:
        return None
    try:
        writer = _Writer(tokens, builtins)
        result = writer.or_()
        if writer.at < len(tokens):
            raise _Unsupported("text after the expression")
    except _Unsupported:
        return None
    body = "\n".join("    " + line for line in writer.lines)
    text = (f"def fast(lookup):\n{body}\n"
            f"    r = {result}\n"
            f"    c = r.__class__\n"
            f"    if c is float:\n"
            f"        if r != r or r in (INF, -INF): return None\n"
            f"        if r.is_integer(): return int(r)\n"
            f"        return r\n"
            f"    if c is int or c is str or c is bool or r is None: return r\n"
            f"    return MISSING\n")
    from wfexec.language.expressions import MISSING, truthy

    namespace = {"MISSING": MISSING, "truthy": truthy, "INF": float("inf"), "SAFE": _SAFE_INTEGER}
    exec(compile(text, f"<fast path: {code[:40]}>", "exec"), namespace)  # noqa: S102 - our own generated code
    return namespace["fast"]


class _Writer:
    """A recursive-descent reader of the supported grammar that writes Python statements. Every value
    is in a local `vN`; a guard that fails returns MISSING."""

    def __init__(self, tokens, builtins):
        self.tokens = tokens
        self.builtins = builtins
        self.at = 0
        self.lines: list[str] = []
        self.indent = ""
        self.count = 0

    # -- tokens -------------------------------------------------------------
    def peek(self) -> str | None:
        return self.tokens[self.at].text if self.at < len(self.tokens) else None

    def take(self):
        token = self.tokens[self.at]
        self.at += 1
        return token

    def var(self) -> str:
        self.count += 1
        return f"v{self.count}"

    def emit(self, line: str) -> None:
        self.lines.append(self.indent + line)

    def guard_number(self, name: str) -> None:
        self.emit(f"if {name}.__class__ is not int and {name}.__class__ is not float: return MISSING")

    # -- grammar ------------------------------------------------------------
    def or_(self) -> str:
        return self.logical("||", self.and_, "not truthy")

    def and_(self) -> str:
        return self.logical("&&", self.equality, "truthy")

    def logical(self, operator: str, operand, keep_going_when: str) -> str:
        left = operand()
        while self.peek() == operator:
            self.take()
            result = self.var()
            self.emit(f"{result} = {left}")
            self.emit(f"if {keep_going_when}({left}):")
            outer = self.indent
            self.indent += "    "
            right = operand()
            self.emit(f"{result} = {right}")
            self.indent = outer
            left = result
        return left

    def equality(self) -> str:
        left = self.relational()
        while self.peek() in ("===", "!==", "==", "!="):
            operator = self.take().text
            right = self.relational()
            result = self.var()
            loose = operator in ("==", "!=")
            # One type on both sides (bool, number, string, null): JavaScript compares the values.
            self.emit(f"c1 = {left}.__class__; c2 = {right}.__class__")
            self.emit("k1 = 1 if c1 is float else (c1 is int or c1 is bool or c1 is str or c1 is type(None) "
                      "or 2)")
            self.emit("k2 = 1 if c2 is float else (c2 is int or c2 is bool or c2 is str or c2 is type(None) "
                      "or 2)")
            self.emit("if k1 == 2 or k2 == 2: return MISSING")  # objects: identity, left to the engine
            self.emit("c1 = int if c1 is float else c1; c2 = int if c2 is float else c2")
            if loose:
                self.emit("if c1 is not c2: return MISSING")  # == between types coerces
            equal = f"(c1 is c2 and {left} == {right})"
            self.emit(f"{result} = {equal}" if operator in ("===", "==") else f"{result} = not {equal}")
            left = result
        return left

    def relational(self) -> str:
        left = self.additive()
        if self.peek() in ("<", "<=", ">", ">="):
            operator = self.take().text
            right = self.additive()
            self.guard_number(left)
            self.guard_number(right)
            result = self.var()
            self.emit(f"{result} = {left} {operator} {right}")
            if self.peek() in ("<", "<=", ">", ">="):
                raise _Unsupported("chained comparison")
            return result
        return left

    def additive(self) -> str:
        left = self.unary()
        while self.peek() in ("+", "-"):
            operator = self.take().text
            right = self.unary()
            result = self.var()
            if operator == "+":
                self.emit(f"if {left}.__class__ is str and {right}.__class__ is str: {result} = {left} + {right}")
                self.emit("else:")
                self.emit(f"    if ({left}.__class__ is not int and {left}.__class__ is not float) or "
                          f"({right}.__class__ is not int and {right}.__class__ is not float): return MISSING")
                self.emit(f"    {result} = {left} + {right}")
            else:
                self.guard_number(left)
                self.guard_number(right)
                self.emit(f"{result} = {left} - {right}")
            self.emit(f"if {result}.__class__ is int and not -SAFE <= {result} <= SAFE: return MISSING")
            left = result
        return left

    def unary(self) -> str:
        operator = self.peek()
        if operator == "!":
            self.take()
            operand = self.unary()
            result = self.var()
            self.emit(f"{result} = not truthy({operand})")
            return result
        if operator == "-":
            self.take()
            operand = self.unary()
            self.guard_number(operand)
            result = self.var()
            self.emit(f"{result} = -{operand}")
            self.emit(f"if {result} == 0: {result} = 0")  # -0 reads as 0 once it is JSON
            return result
        return self.primary()

    def primary(self) -> str:
        if self.at >= len(self.tokens):
            raise _Unsupported("end")
        token = self.take()
        text = token.text
        if text == "(":
            inner = self.or_()
            if self.peek() != ")":
                raise _Unsupported("bracket")
            self.take()
            return inner
        if token.kind == "number":
            if not _DECIMAL.match(text):
                raise _Unsupported("number form")
            return f"({float(text)!r})" if "." in text else f"({text})"
        if token.kind == "string":
            body = text[1:-1]
            if "\\" in body or not body.isprintable():
                raise _Unsupported("escape")
            return f"({body!r})"
        if token.kind != "name":
            raise _Unsupported(text)
        if text in _LITERALS:
            return f"({_LITERALS[text]})"
        if text in _RESERVED_NAMES or text in self.builtins or not text.isidentifier() or text.isascii() is False:
            raise _Unsupported("global")
        from wfexec.language.js_source import KEYWORDS

        if text in KEYWORDS:
            raise _Unsupported("keyword")
        value = self.var()
        self.emit(f"{value} = lookup({text!r})")
        self.guard_value(value)
        while self.peek() == ".":
            self.take()
            if self.at >= len(self.tokens) or self.tokens[self.at].kind != "name":
                raise _Unsupported("member")
            key = self.take().text
            if self.peek() == "(":
                raise _Unsupported("call")
            self.emit(f"if {value}.__class__ is not dict or {key!r} not in {value}: return MISSING")
            self.emit(f"{value} = {value}[{key!r}]")
            self.guard_value(value)
        if self.peek() in ("(", "[", "?.", "`"):
            raise _Unsupported("call or index")
        return value

    def guard_value(self, value: str) -> None:
        """Only JSON values Python and the engine see alike: no undefined, no unsafe integers."""
        self.emit(f"c = {value}.__class__")
        self.emit(f"if c is int and not -SAFE <= {value} <= SAFE: return MISSING")
        self.emit(f"if c is float and ({value} != {value} or {value} in (INF, -INF)): return MISSING")
        self.emit("if c is not int and c is not str and c is not bool and c is not float and c is not dict "
                  f"and c is not list and {value} is not None: return MISSING")
