"""Consequences that change the run state (seed names and v3 `mutate_state`)."""

from __future__ import annotations

import copy
import json
import re

from wfexec.language.expressions import Expression, renderer, truthy
from wfexec.language.paths import written_path
from wfexec.types.registry import ActionFailed, TypeList
from wfexec.system.digest import sha256
from wfexec.system.patterns import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any, Callable, Mapping

    from wfexec.language.paths import StatePath

    from wfexec.interfaces import StateWrites

    DirectWrite = Callable[[StateWrites, Any], None]

TYPES = TypeList()

# v8 `mcp_tool_call`: the calls made to each `data_mcps` alias in this run (`declared_effects` max_call_count),
# kept in state so a resumed run goes on counting, and left alone by checkpoints and rollbacks.
MCP_CALLS = "mcp_calls"

FIELD = {"type": "string", "description": "a state path from the root, e.g. computed.result or config"}
STORE_AS = {"type": "string", "description": "the state path to store the result at, e.g. computed.sha"}


def snapshot_for_checkpoint(state: dict) -> dict:
    """A deep copy of state without `checkpoints`, `history` and the MCP call counts (DESIGN §2)."""
    return {k: copy.deepcopy(v) for k, v in state.items() if k not in ("checkpoints", "history", MCP_CALLS)}


# Each type below that only writes state has a direct form (TypeSpec.direct) beside its handler: the same writes,
# made from the compiled parameters once, so a step renders its values and writes them, nothing more. A call whose
# path is computed (`field: "${...}"`) or whose expression is prose takes the handler.

def _writing(path: StatePath | None, value_of: Callable[[Any], Any], appending: bool = False) -> DirectWrite | None:
    """The direct form that sets `path` to `value_of(scope)` (appending: appends it to the list there)."""
    if path is None:
        return None
    if appending:
        def write(run: StateWrites, scope: Any) -> None:
            run.append(path, value_of(scope))
    else:
        def write(run: StateWrites, scope: Any) -> None:
            run.write(path, value_of(scope))
    return write


def _evaluated(params: Mapping[str, Any]) -> Callable[[Any], Any] | None:
    """The value of the `expression` parameter as a function of the scope (None: prose, which the LLM answers)."""
    expression = params.get("expression")
    return expression.evaluator() if isinstance(expression, Expression) else None


def _set_flag_direct(params):
    flag = written_path(params, "flag")
    value_of = renderer(params.get("value", True))
    return _writing(("flags",) + flag if flag is not None else None, lambda scope: bool(value_of(scope)))


@TYPES.consequence("set_flag", {"flag": {"type": "string"}, "value": {"type": "boolean"}}, ["flag"],
                   direct=_set_flag_direct)
def set_flag(params, ctx):
    """Set `flags.<flag>` to `value` (default true)."""
    ctx.set(("flags",) + ctx.path(params["flag"]), bool(params.get("value", True)))


def _set_state_direct(params):
    return _writing(written_path(params, "field"), renderer(params["value"]))


@TYPES.consequence("set_state", {"field": FIELD, "value": {}}, ["field", "value"], paths=("field",),
                   direct=_set_state_direct)
def set_state(params, ctx):
    """Set the value at `field`; a value that is one `${...}` keeps its type."""
    ctx.set(params["field"], params["value"])


def _append_state_direct(params):
    return _writing(written_path(params, "field"), renderer(params["value"]), appending=True)


@TYPES.consequence("append_state", {"field": FIELD, "value": {}}, ["field", "value"], paths=("field",),
                   direct=_append_state_direct)
def append_state(params, ctx):
    """Append `value` to the list at `field` (created when missing)."""
    ctx.append(params["field"], params["value"])


def _clear_state_direct(params):
    return _writing(written_path(params, "field"), lambda scope: None)


@TYPES.consequence("clear_state", {"field": FIELD}, ["field"], paths=("field",), direct=_clear_state_direct)
def clear_state(params, ctx):
    """Set the value at `field` to null."""
    ctx.set(params["field"], None)


@TYPES.consequence("merge_state", {"field": FIELD, "value": {"type": "object"}}, ["field", "value"],
                   paths=("field",))
def merge_state(params, ctx):
    """Shallow-merge the mapping `value` into the mapping at `field`."""
    current = ctx.get(params["field"])
    if current is None:
        current = {}
    if not isinstance(current, dict) or not isinstance(params["value"], dict):
        raise ActionFailed(f"merge_state needs mappings on both sides (`{params['field']}` holds "
                           f"{type(current).__name__})")
    ctx.set(params["field"], {**current, **params["value"]})


def _increment(params, ctx):
    """Add `value` (default 1) to the number at `field`; a missing or null field counts as 0."""
    step = params.get("value", 1)
    current = ctx.get(params["field"])
    if current is None:
        current = 0
    for what, number in (("the step `value`", step), (f"`{params['field']}`", current)):
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise ActionFailed(f"mutate_state increment: {what} holds {type(number).__name__} {number!r:.40}, "
                               "not a number", "increment counts numbers; set the field to a number first")
    ctx.set(params["field"], current + step)


_MUTATORS = {"set": set_state, "append": append_state, "clear": clear_state, "merge": merge_state,
             "increment": _increment}
_DIRECT_MUTATORS = {"set": _set_state_direct, "append": _append_state_direct, "clear": _clear_state_direct}


def _mutate_state_direct(params):
    """set, append and clear written out, with the value the operation needs given; the rest take the handler."""
    operation = params.get("operation")
    make = _DIRECT_MUTATORS.get(operation) if operation.__class__ is str else None
    if make is None or (operation != "clear" and "value" not in params):
        return None
    return make(params)


_VALUE_OPTIONAL = ("clear", "increment")


@TYPES.consequence("mutate_state", {
    "operation": {"enum": list(_MUTATORS),
                  "description": "set, append, clear, merge, or increment (add `value`, default 1, to a number)"},
    "field": FIELD,
    "value": {"description": "the value to set, append or merge in; for increment, the step (default 1)"}},
    ["operation", "field"], paths=("field",), rules=(
        {"if": {"properties": {"operation": {"enum": ["set", "append", "merge"]}}, "required": ["operation"]},
         "then": {"required": ["value"],
                  "properties": {"value": {"description": "set, append and merge need it"}}}},
        {"if": {"properties": {"operation": {"const": "increment"}}, "required": ["operation"]},
         "then": {"properties": {"value": {
             "anyOf": [{"type": "number"}, {"type": "string", "pattern": r"^\s*\$\{.*\}\s*$"}],
             "description": "for increment: the number to add (default 1)"}}}},),
    direct=_mutate_state_direct)
def mutate_state(params, ctx):
    """v3/v8: set, append, clear, merge or increment at `field`."""
    operation = params["operation"]
    if operation not in _MUTATORS:  # a `${...}` operation, rendered at run time
        raise ActionFailed(f"mutate_state has no operation {operation!r}", f"use one of: {', '.join(_MUTATORS)}")
    if operation not in _VALUE_OPTIONAL and "value" not in params:
        raise ActionFailed(f"mutate_state {operation} needs a `value`")
    _MUTATORS[operation](params, ctx)


def _evaluate_direct(params):
    value_of = _evaluated(params)
    flag = written_path(params, "set_flag") if "set_flag" in params else ()
    store = written_path(params, "store_as") if "store_as" in params else ()
    if value_of is None or flag is None or store is None or not (flag or store):
        return None
    flag = ("flags",) + flag if flag else ()

    def write(run: StateWrites, scope: Any) -> None:
        value = value_of(scope)
        if flag:
            run.write(flag, truthy(value))
        if store:
            run.write(store, value)
    return write


@TYPES.consequence("evaluate", {"expression": {"type": ["string", "boolean"]}, "set_flag": {"type": "string"},
                                "store_as": STORE_AS},
                   ["expression"], expressions=("expression",), paths=("store_as",), direct=_evaluate_direct)
def evaluate(params, ctx):
    """Evaluate an expression: its truth into `flags.<set_flag>`, its value as it is at `store_as`.

    The catalogue's `evaluate` has only `set_flag`; files that give it `store_as` keep a count or a name there
    (`len(sources)` as `computed.source_count`), so that result is the value, not its truth."""
    if "set_flag" not in params and "store_as" not in params:
        raise ActionFailed("evaluate needs `set_flag` or `store_as` to keep its result")
    value = ctx.evaluate(params["expression"])
    if "set_flag" in params:
        ctx.set(("flags",) + ctx.path(params["set_flag"]), truthy(value))
    if "store_as" in params:
        ctx.set(params["store_as"], value)


def _compute_direct(params):
    value_of = _evaluated(params)
    return _writing(written_path(params, "store_as"), value_of) if value_of is not None else None


@TYPES.consequence("compute", {"expression": {"type": ["string", "boolean", "number"]}, "store_as": STORE_AS},
                   ["expression", "store_as"], expressions=("expression",), paths=("store_as",),
                   direct=_compute_direct)
def compute(params, ctx):
    """Evaluate an expression and store its value (any type) at `store_as`."""
    ctx.set(params["store_as"], ctx.evaluate(params["expression"]))


# moment.js tokens, as hiivmind writes formats ("YYYY-MM-DD-HHmmss"), longest first; `[...]` is literal text.
_MOMENT_TOKENS = {"YYYY": "%Y", "YY": "%y", "MM": "%m", "DD": "%d", "HH": "%H", "hh": "%I", "mm": "%M",
                  "ss": "%S", "SSS": "{ms}", "A": "%p", "Z": "+00:00", "ZZ": "+0000"}
# Compiled when a time is first formatted, not at every start of a run that loads these consequences.
_MOMENT = lazy(r"\[[^\]]*\]|YYYY|YY|MM|DD|HH|hh|mm|ss|SSS|ZZ|Z|A")
ISO_FORMATS = ("iso", "iso8601", "iso-8601")


def format_time(now: datetime, fmt: str | None) -> str:
    """`fmt` in moment.js tokens (YYYY MM DD HH hh mm ss SSS A Z ZZ, `[literal]`), or strftime when it holds
    `%`; empty or `ISO`: ISO-8601 UTC to the second."""
    if not fmt or fmt.strip().lower() in ISO_FORMATS:
        return now.isoformat(timespec="seconds").replace("+00:00", "Z")
    if "%" in fmt:
        return now.strftime(fmt)

    def token(match: re.Match) -> str:
        text = match.group(0)
        if text.startswith("["):
            return text[1:-1]
        return now.strftime(_MOMENT_TOKENS[text]).replace("{ms}", f"{now.microsecond // 1000:03d}")

    return _MOMENT.sub(token, fmt)


@TYPES.consequence("set_timestamp", {"store_as": STORE_AS, "format": {
    "type": "string", "description": "moment.js tokens (`YYYY-MM-DD-HHmmss`: YYYY YY MM DD HH hh mm ss SSS A Z, "
                                     "`[text]` literal) or strftime (`%Y-%m-%d`); default (or `ISO`): ISO-8601 UTC"}},
                   ["store_as"], paths=("store_as",), idempotent=False)
def set_timestamp(params, ctx):
    """Store the current UTC time: ISO-8601, or `format` (moment.js tokens or strftime)."""
    from datetime import datetime, timezone

    ctx.set(params["store_as"], format_time(datetime.now(timezone.utc), params.get("format")))


@TYPES.consequence("compute_hash", {"from": {"description": "a value, or a state path"}, "content": {},
                                    "store_as": STORE_AS}, ["store_as"], paths=("store_as",))
def compute_hash(params, ctx):
    """Store `sha256:<hex>` of a value (`content`, or the value at the path `from`)."""
    if "content" in params:
        value = params["content"]
    elif "from" in params:
        source = params["from"]
        value = ctx.get(source) if isinstance(source, str) else source
    else:
        raise ActionFailed("compute_hash needs `from` (a state path) or `content`")
    data = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    ctx.set(params["store_as"], "sha256:" + sha256(data.encode("utf-8")).hexdigest())


@TYPES.consequence("create_checkpoint", {"name": {"type": "string"}}, ["name"])
def create_checkpoint(params, ctx):
    """Save a deep copy of the state (without history and checkpoints) as `checkpoints.<name>`."""
    ctx.set(("checkpoints", params["name"]), snapshot_for_checkpoint(ctx.state))


@TYPES.consequence("rollback_checkpoint", {"name": {"type": "string"}}, ["name"])
def rollback_checkpoint(params, ctx):
    """Restore the state saved by create_checkpoint (files are not rolled back)."""
    saved = ctx.state.get("checkpoints", {}).get(params["name"])
    if saved is None:
        known = ", ".join(ctx.state.get("checkpoints", {})) or "none"
        raise ActionFailed(f"no checkpoint named '{params['name']}' (checkpoints: {known})")
    restored = copy.deepcopy(saved)
    restored["checkpoints"] = ctx.state["checkpoints"]
    restored["history"] = ctx.state.get("history", [])
    if MCP_CALLS in ctx.state:  # calls made are made: a rollback does not give back max_call_count
        restored[MCP_CALLS] = ctx.state[MCP_CALLS]
    ctx.replace_state(restored)
