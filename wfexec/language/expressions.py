"""`${...}` templates and expressions, compiled once and evaluated many times.

The language is Jinja2's expression syntax, evaluated in jinja2's immutable
sandbox (expressions read state; only consequences write it) with
StrictUndefined, so a misspelt name is an error instead of an empty string.

On top of Jinja2, for workflows written against the hiivmind seed:
- the operators `&&`, `||`, `!` mean `and`, `or`, `not`; `null` means none;
- the functions `len`, `contains`, `startswith`, `endswith` exist;
- a bare name resolves, in order: a local (`item` in `foreach`), an explicit
  namespace (`computed`, `flags`, `user_responses`, `imports`, `env`, `input`),
  a top-level state key, then a key of `computed`, `flags`, `user_responses`,
  and last, an UPPER_CASE name falls back to the environment (`${HOME}`).
JavaScript (arrow functions, `.map(`, `===`, regex literals) and prose are
rejected when the workflow loads, with a message that says what to write.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Mapping

from wfexec.errors import WfexecError

NAMESPACES_IN_STATE = ("computed", "flags", "user_responses")
NAMESPACES_OUTSIDE_STATE = ("imports", "env", "input")
_FALLBACK_NAMESPACES = NAMESPACES_IN_STATE
_IN_STATE = frozenset(NAMESPACES_IN_STATE)
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")

LANGUAGE_HINT = (
    "wfexec expressions are Jinja2 expressions: `len(items) > 0 and flags.ready`, "
    "`x if cond else y`, `name | default('none')`, `items | map(attribute='id') | list`"
)


class ExpressionError(WfexecError):
    """A template or expression that does not compile, or fails when evaluated."""

    def __init__(self, message: str, hint: str = "", source: str = ""):
        super().__init__(message, hint)
        self.source = source


# --------------------------------------------------------------------------- #
# Rejections: things people write that are not this language.

_JS_PATTERNS: list[tuple[re.Pattern, str, str]] = [
    # `/.../` holding `\`, `$` or `^` after an operator or a space: division never looks like that.
    (re.compile(r"(?:^|[(,=:&|!\s])/(?:[^/\s]|\\/)(?:[^/\n]|\\/)*[\\$^][^/\n]*/[gimsuy]*"),
     "regular expression literals (`/.../`) are JavaScript",
     "use a string test: `s.endswith('.git')`, `'x' in s`"),
    (re.compile(r"=>"), "arrow functions (`=>`) are JavaScript",
     "use a filter instead: `items | map(attribute='id') | list`, `items | selectattr('ok') | list`"),
    (re.compile(r"[!=]=="), "`===`/`!==` are JavaScript", "use `==` or `!=`"),
    (re.compile(r"\.(map|filter|reduce|some|every|flatMap|forEach|push|includes|indexOf|toLowerCase|"
                r"toUpperCase|trim|toISOString|test|match|startsWith|endsWith|substring|slice|charAt|"
                r"toString)\s*\("),
     "JavaScript array/string methods are not available",
     "use Jinja2 filters: `items | map(...)`, `items | select(...)`, `x in items`, `s | lower`, `s | trim`"),
    (re.compile(r"\.length\b"), "`.length` is JavaScript", "use `len(x)` or `x | length`"),
    (re.compile(r"\bnew\s+[A-Z]\w*\s*\("), "JavaScript constructors (`new X(...)`) are not available",
     "use a consequence such as set_timestamp"),
    (re.compile(r"\b(Object|Math|JSON|Array|Date)\.\w+"), "JavaScript globals are not available",
     "use Jinja2 filters: `d | dictsort`, `x | tojson`, `x | round`"),
    (re.compile(r"\?\?"), "`??` is JavaScript", "use `x | default(y)`"),
    (re.compile(r"(?<![?\w])\?(?![?])[^:]*:"), "the `a ? b : c` conditional is JavaScript",
     "use `b if a else c`"),
]


def _looks_like_prose(source: str) -> bool:
    if any(line.lstrip().startswith(("#", "//")) for line in source.splitlines()):
        return True
    return bool(re.search(r"[A-Za-z]+(?: +[a-z]{2,}){3,}", source)) and not re.search(r"[=<>()|]", source)


def _reject_foreign(source: str) -> None:
    for pattern, what, hint in _JS_PATTERNS:
        if pattern.search(_strip_strings(source)):
            raise ExpressionError(f"{what}: `{_short(source)}`", hint + "; " + LANGUAGE_HINT, source)
    if _looks_like_prose(source):
        raise ExpressionError(f"this looks like prose or a comment, not an expression: `{_short(source)}`",
                              "an expression computes a value; move explanations to `description`. " + LANGUAGE_HINT,
                              source)


_STRING_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")


def _strip_strings(source: str) -> str:
    return _STRING_LITERAL.sub("''", source)


def _short(source: str, limit: int = 60) -> str:
    one_line = " ".join(source.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


# --------------------------------------------------------------------------- #
# Seed operators → Jinja2.

_SEED_TOKEN = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|&&|\|\||!(?!=)")


def _translate_seed_operators(source: str) -> str:
    def swap(match: re.Match) -> str:
        token = match.group(0)
        if token == "&&":
            return " and "
        if token == "||":
            return " or "
        if token == "!":
            return " not "
        return token

    return _SEED_TOKEN.sub(swap, source)


# --------------------------------------------------------------------------- #
# The environment.

def _contains(container, item) -> bool:
    return container is not None and item in container


def _startswith(text, prefix) -> bool:
    return isinstance(text, str) and text.startswith(prefix)


def _endswith(text, suffix) -> bool:
    return isinstance(text, str) and text.endswith(suffix)


_env = None
_GLOBALS: dict = {}
_Undefined: type = type(None)  # jinja2.Undefined, once the environment exists


def environment():
    global _env
    if _env is None:
        from jinja2 import StrictUndefined
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        class WorkflowEnvironment(ImmutableSandboxedEnvironment):
            def getattr(self, obj, attribute):
                # `computed.items` means the key "items", not dict.items: in workflow
                # state a mapping's keys always win over Python methods.
                if isinstance(obj, dict) and attribute in obj:
                    return obj[attribute]
                return super().getattr(obj, attribute)

        env = WorkflowEnvironment(undefined=StrictUndefined, autoescape=False)
        env.globals.update(
            len=len, contains=_contains, startswith=_startswith, endswith=_endswith,
            null=None, str=str, int=int, float=float, bool=bool, min=min, max=max, sum=sum,
            sorted=sorted, abs=abs, round=round, list=list, dict=dict,
        )
        global _Undefined
        from jinja2 import Undefined

        _GLOBALS.update(env.globals)
        _Undefined = Undefined
        _env = env
    return _env


@dataclass(frozen=True)
class Scope:
    """The names an expression can see: the run state plus a few outside namespaces."""

    state: Mapping[str, Any]
    extras: Mapping[str, Any]  # imports, env, input
    locals: Mapping[str, Any] | None = None

    def resolve(self, name: str) -> Any:
        """The value of a bare name, or raise KeyError."""
        if self.locals and name in self.locals:
            return self.locals[name]
        state = self.state
        if name in _IN_STATE:
            return state.get(name, {})
        if name in self.extras:
            return self.extras[name]
        if name in state:
            return state[name]
        for namespace in _FALLBACK_NAMESPACES:
            space = state.get(namespace)
            if isinstance(space, dict) and name in space:
                return space[name]
        if name == "env":
            return os.environ
        if _ENV_NAME.match(name) and name in os.environ:
            return os.environ[name]
        raise KeyError(name)

    def child(self, **local_values) -> "Scope":
        merged = dict(self.locals or {})
        merged.update(local_values)
        return Scope(self.state, self.extras, merged)


class Expression:
    """A compiled expression. `evaluate(scope)` returns its value."""

    __slots__ = ("source", "names", "_ast", "_context", "_root", "_run")

    def __init__(self, source: str):
        self.source = source
        text = source.strip()
        if not text:
            raise ExpressionError("the expression is empty", LANGUAGE_HINT, source)
        _reject_foreign(text)
        text = _translate_seed_operators(text)
        env = environment()
        from jinja2 import TemplateSyntaxError, nodes
        from jinja2.parser import Parser

        try:
            parser = Parser(env, text, state="variable")
            ast = parser.parse_expression()
            if not parser.stream.eos:
                raise TemplateSyntaxError("unexpected text after the expression", parser.stream.current.lineno,
                                          None, None)
        except TemplateSyntaxError as exc:
            raise ExpressionError(f"invalid expression `{_short(source)}`: {_syntax_problem(exc.message)}",
                                  LANGUAGE_HINT, source) from None
        except Exception as exc:  # jinja raises assorted errors on odd input
            raise ExpressionError(f"invalid expression `{_short(source)}`: {exc}", LANGUAGE_HINT, source) from None
        _check_filters_and_tests(ast, env, source)
        self._ast = ast
        self._context = None
        self._root = None
        self._run = self._compile
        found = [ast, *ast.find_all(nodes.Name)]  # find_all skips the root itself
        self.names = tuple(sorted({n.name for n in found if isinstance(n, nodes.Name) and n.ctx == "load"}))

    def _compile(self, resolve):
        # Parsing (above) finds every error a workflow author can make; turning the
        # tree into Python code is the costly half, done once, on first evaluation.
        from jinja2 import nodes

        from wfexec.language.expression_codegen import compile_fast

        fast = compile_fast(self._ast, environment(), _missing)
        if fast is not None:
            self._run = fast
        else:
            body = nodes.Template([nodes.Assign(nodes.Name("result", "store"), self._ast, lineno=1)], lineno=1)
            template = environment().from_string(body)
            self._root = template.root_render_func
            self._context = template.new_context({}, shared=True)
            self._run = self._run_template
        return self._run(resolve)

    def _run_template(self, resolve):
        # One jinja2 Context per expression, re-pointed at this evaluation's names:
        # building a Context costs more than most expressions. The engine evaluates
        # on one thread and an expression never evaluates itself, so reuse is safe.
        values = {}
        for name in self.names:
            try:
                values[name] = resolve(name)
            except KeyError:
                if name in _GLOBALS:
                    values[name] = _GLOBALS[name]
                # else left undefined: StrictUndefined reports it when used
        context = self._context
        context.parent = values
        context.vars = {}
        for _ in self._root(context):
            pass
        return context.vars["result"]

    def evaluate(self, scope: Scope) -> Any:
        try:
            result = self._run(scope.resolve)
            if isinstance(result, _Undefined):
                result._fail_with_undefined_error()
        except Exception as exc:
            raise self._explain(exc) from None
        return result

    def _explain(self, exc: Exception) -> ExpressionError:
        from jinja2.exceptions import SecurityError, UndefinedError

        # The sandbox answers an unsafe attribute with an Undefined that raises SecurityError.
        if isinstance(exc, SecurityError):
            return ExpressionError(f"`{_short(self.source)}` is not allowed: {exc}",
                                   "expressions can read values, not reach into Python internals", self.source)
        if isinstance(exc, UndefinedError):
            return ExpressionError(_undefined_message(exc, self.source), "set it earlier in the workflow, or use "
                                   "`x | default(...)` / `x is defined`", self.source)
        return ExpressionError(f"`{_short(self.source)}` failed: {type(exc).__name__}: {exc}", "", self.source)

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"


def _syntax_problem(message: str | None) -> str:
    """Jinja's parser words, said in terms of an expression."""
    message = message or "syntax error"
    if message.startswith(("chunk after expression", "unexpected text after the expression")):
        return "unexpected text after a complete expression (an operator missing, or prose?)"
    return message.replace("'end of template'", "end of expression").replace("end of template", "end of expression")


def _missing(name: str) -> Any:
    """An unknown name: one of the language's functions, else an undefined that fails when used."""
    if name in _GLOBALS:
        return _GLOBALS[name]
    return environment().undefined(name=name)


def _check_filters_and_tests(ast, env, source: str) -> None:
    from jinja2 import nodes

    for node in [ast, *ast.find_all((nodes.Filter, nodes.Test))]:
        if not isinstance(node, (nodes.Filter, nodes.Test)):
            continue
        known = env.filters if isinstance(node, nodes.Filter) else env.tests
        if node.name not in known:
            what = "filter" if isinstance(node, nodes.Filter) else "test"
            from wfexec.language.diagnostics import did_you_mean

            hint = did_you_mean(node.name, known) or f"Jinja2's built-in {what}s are available"
            raise ExpressionError(f"unknown {what} '{node.name}' in `{_short(source)}`", hint, source)


def _undefined_message(exc: Exception, source: str) -> str:
    text = str(exc)
    match = re.match(r"'(\w+)' is undefined", text)
    if match:
        return f"unknown name '{match.group(1)}' in `{_short(source)}`"
    match = re.match(r"'(.+)' has no attribute '(.+)'", text)
    if match:
        return f"no value '{match.group(2)}' in `{_short(source)}` ({match.group(1)} has no such key)"
    return f"`{_short(source)}`: {text}"


# --------------------------------------------------------------------------- #
# Templates: strings containing ${...}.

def _find_close(text: str, start: int) -> int:
    """Index of the `}` closing the `${` whose body starts at `start`, or -1."""
    depth = 0
    quote = ""
    i = start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "{[(":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "}":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    return -1


class Template:
    """A string with `${...}` parts. A string that is one `${...}` yields the value itself."""

    __slots__ = ("source", "parts", "whole")

    def __init__(self, source: str):
        self.source = source
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
                                          "`$${` for a literal `${`", source)
                if literal:
                    parts.append("".join(literal))
                    literal = []
                parts.append(Expression(source[i + 2: close]))
                i = close + 1
                continue
            literal.append(source[i])
            i += 1
        if literal:
            parts.append("".join(literal))
        self.parts = tuple(parts)
        self.whole = len(parts) == 1 and isinstance(parts[0], Expression)

    @property
    def expressions(self) -> tuple[Expression, ...]:
        return tuple(p for p in self.parts if isinstance(p, Expression))

    def render(self, scope: Scope) -> Any:
        if self.whole:
            return self.parts[0].evaluate(scope)
        return "".join([part if part.__class__ is str else to_text(part.evaluate(scope)) for part in self.parts])

    def __repr__(self) -> str:
        return f"Template({self.source!r})"


def to_text(value: Any) -> str:
    """How a value reads inside a larger string."""
    cls = value.__class__
    if cls is str:
        return value
    if cls is int or cls is float:
        return str(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        import json

        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


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
    if isinstance(value, dict):
        return {k: compile_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [compile_value(v) for v in value]
    return value


def has_templates(value: Any) -> bool:
    if isinstance(value, Template):
        return True
    if isinstance(value, dict):
        return any(has_templates(v) for v in value.values())
    if isinstance(value, list):
        return any(has_templates(v) for v in value)
    return False


def render_value(value: Any, scope: Scope) -> Any:
    """Render a value compiled by `compile_value`."""
    cls = type(value)
    if cls is Template:
        return value.render(scope)
    if cls is str:
        return value
    if isinstance(value, dict):
        return {k: render_value(v, scope) for k, v in value.items()}
    if isinstance(value, list):
        return [render_value(v, scope) for v in value]
    return value

