"""Consequences that steer other consequences or the route: `foreach`, `dynamic_route`."""

from __future__ import annotations

import re
from typing import Any

from wfexec.language.diagnostics import did_you_mean
from wfexec.language.expressions import to_text
from wfexec.types.registry import NESTED_CONSEQUENCES, ActionFailed, TypeList

TYPES = TypeList()

DYNAMIC_TARGET = "computed.dynamic_target"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
LOCAL_NAME = {"type": "string", "pattern": _NAME.pattern,
              "description": "a name the nested actions read as `${name}`"}


@TYPES.consequence(
    "foreach",
    {"items": {"type": ["array", "object"], "description": "a list, or a mapping (iterated as {key, value})"},
     "actions": {"type": "array", "items": {"$ref": "#/$defs/consequence"}, "minItems": 1,
                 "description": "consequences run for every item"},
     "as": {**LOCAL_NAME, "default": "item"},
     "index_as": {**LOCAL_NAME, "default": "index"}},
    ["items", "actions"], nested={"actions": NESTED_CONSEQUENCES}, raw=("actions", "as", "index_as"))
def foreach(params, ctx):
    """Run the nested `actions` once per item, with `${item}` and `${index}` set."""
    item_name = params.get("as", "item")
    index_name = params.get("index_as", "index")
    if item_name == index_name:
        raise ActionFailed(f"`as` and `index_as` are both '{item_name}'", "give them different names")
    elements = _elements(params["items"])
    for index, element in enumerate(elements):
        ctx.trace(f"foreach {item_name}[{index}]")
        for call in params["actions"]:
            try:
                ctx.apply(call, **{item_name: element, index_name: index})
            except ActionFailed as failure:
                raise ActionFailed(f"item {index} ({_brief(element)}): {call.type} failed: {failure.message}",
                                   failure.hint) from None


def _elements(items: Any) -> list:
    # A copy: nested actions may append to the very list being walked, which must not extend the loop.
    if isinstance(items, list):
        return list(items)
    if isinstance(items, dict):
        return [{"key": key, "value": value} for key, value in items.items()]
    shown = "null" if items is None else f"a {type(items).__name__} ({_brief(items)})"
    raise ActionFailed(f"foreach needs a list (or a mapping) as `items`, got {shown}",
                       "give `items:` a list, or one `${...}` that yields a list, e.g. ${computed.things}")


def _brief(value: Any, limit: int = 40) -> str:
    text = " ".join(to_text(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@TYPES.consequence("dynamic_route", {"action": {"type": "string", "description": "the node (or ending) to go to"}},
                   ["action"], writes=(DYNAMIC_TARGET,))
def dynamic_route(params, ctx):
    """Store a node name at `computed.dynamic_target`; route with `on_success: "${computed.dynamic_target}"`."""
    target = to_text(params["action"]).strip()
    if not target:
        raise ActionFailed("`action` is empty", "it must name a node or an ending")
    if not ctx.workflow.is_target(target):
        hint = did_you_mean(target, [*ctx.workflow.nodes, *ctx.workflow.endings])
        raise ActionFailed(f"'{target}' is neither a node nor an ending", hint)
    ctx.set(DYNAMIC_TARGET, target)
    ctx.trace(f"dynamic route → {target}")
