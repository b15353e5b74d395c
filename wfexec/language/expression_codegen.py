"""Plain Python functions for the common shapes of expressions.

jinja2 runs an expression as a template: a Context, a generator, a result
variable. For expressions made of names, attributes, items, constants,
operators, comparisons, calls, filters and tests, the same jinja2 AST is
turned here into one Python function that runs a few times faster. The
function keeps jinja2's semantics and its sandbox: every attribute and item
goes through the environment's `getattr`/`getitem`, every call through its
`call` (which refuses unsafe callables and format-string tricks), filters and
tests through `call_filter`/`call_test`, and a missing name is the same
StrictUndefined. Anything else (slices, `{% %}` forms, starred arguments) is
left to jinja2 itself: `compile_fast` returns None.
"""

from __future__ import annotations

from typing import Any, Callable

_BINARY = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/", "FloorDiv": "//", "Mod": "%", "Pow": "**"}
_COMPARE = {"eq": "==", "ne": "!=", "gt": ">", "gteq": ">=", "lt": "<", "lteq": "<=", "in": "in",
            "notin": "not in"}
_SIMPLE_CONSTANTS = (str, int, float, bool, type(None))


class _Unsupported(Exception):
    pass


class _Writer:
    def __init__(self):
        self.names: set[str] = set()

    def args(self, node) -> str:
        if node.dyn_args is not None or node.dyn_kwargs is not None:
            raise _Unsupported("starred arguments")
        positional = [self.expr(a) for a in node.args]
        named = [f"{k.key!r}: {self.expr(k.value)}" for k in node.kwargs]
        return f"({', '.join(positional)}{',' if len(positional) == 1 else ''}), {{{', '.join(named)}}}"

    def expr(self, node) -> str:  # noqa: C901 - one branch per node kind reads best
        kind = type(node).__name__
        if kind == "Const":
            if not isinstance(node.value, _SIMPLE_CONSTANTS):
                raise _Unsupported(kind)
            return repr(node.value)
        if kind == "Name":
            if node.ctx != "load":
                raise _Unsupported("assignment")
            self.names.add(node.name)
            return f"n_{node.name}"
        if kind == "Getattr":
            return f"_getattr({self.expr(node.node)}, {node.attr!r})"
        if kind == "Getitem":
            if type(node.arg).__name__ == "Slice":
                raise _Unsupported("slice")
            return f"_getitem({self.expr(node.node)}, {self.expr(node.arg)})"
        if kind in _BINARY:
            return f"({self.expr(node.left)} {_BINARY[kind]} {self.expr(node.right)})"
        if kind == "And":
            return f"({self.expr(node.left)} and {self.expr(node.right)})"
        if kind == "Or":
            return f"({self.expr(node.left)} or {self.expr(node.right)})"
        if kind == "Not":
            return f"(not {self.expr(node.node)})"
        if kind == "Neg":
            return f"(-{self.expr(node.node)})"
        if kind == "Pos":
            return f"(+{self.expr(node.node)})"
        if kind == "Concat":
            return f"_concat(({', '.join(self.expr(n) for n in node.nodes)},))"
        if kind == "Compare":
            parts = [self.expr(node.expr)]
            for operand in node.ops:
                parts += [_COMPARE[operand.op], self.expr(operand.expr)]
            return f"({' '.join(parts)})"
        if kind == "CondExpr":
            if node.expr2 is None:
                raise _Unsupported("if without else")
            return f"({self.expr(node.expr1)} if {self.expr(node.test)} else {self.expr(node.expr2)})"
        if kind == "List":
            return f"[{', '.join(self.expr(i) for i in node.items)}]"
        if kind == "Tuple":
            items = [self.expr(i) for i in node.items]
            return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
        if kind == "Dict":
            return "{" + ", ".join(f"{self.expr(p.key)}: {self.expr(p.value)}" for p in node.items) + "}"
        if kind == "Call":
            return f"_call({self.expr(node.node)}, {self.args(node)})"
        if kind == "Filter":
            if node.node is None:
                raise _Unsupported("filter block")
            return f"_filter({node.name!r}, {self.expr(node.node)}, {self.args(node)})"
        if kind == "Test":
            return f"_test({node.name!r}, {self.expr(node.node)}, {self.args(node)})"
        raise _Unsupported(kind)


def compile_fast(ast, env, missing: Callable[[str], Any]) -> Callable[[Callable], Any] | None:
    """A function of a name resolver (`Scope.resolve`, raising KeyError for an unknown name), or None when
    jinja2 must run this expression. `missing(name)` gives what an unknown name is (a global or an undefined)."""
    writer = _Writer()
    try:
        body = writer.expr(ast)
    except _Unsupported:
        return None
    context = env.from_string("").new_context({})
    eval_ctx = context.eval_ctx

    def call(function, args, kwargs):
        return env.call(context, function, *args, **kwargs)

    def call_filter(name, value, args, kwargs):
        return env.call_filter(name, value, args, kwargs, context=context, eval_ctx=eval_ctx)

    def call_test(name, value, args, kwargs):
        return env.call_test(name, value, args, kwargs, context=context, eval_ctx=eval_ctx)

    lines = ["def expression(resolve):"]
    for name in sorted(writer.names):
        lines += ["    try:", f"        n_{name} = resolve({name!r})", "    except KeyError:",
                  f"        n_{name} = _missing({name!r})"]
    lines.append(f"    return {body}")
    namespace = {"_getattr": env.getattr, "_getitem": env.getitem, "_missing": missing, "_call": call,
                 "_filter": call_filter, "_test": call_test, "_concat": lambda parts: "".join(map(str, parts))}
    exec(compile("\n".join(lines), "<wfexec expression>", "exec"), namespace)  # noqa: S102 - our own code
    return namespace["expression"]
