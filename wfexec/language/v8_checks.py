"""Blueprint-lib v8's workflow-level declarations, checked against the steps that use them (at validate time, so
before every run):

- `payload_types`: each field descriptor can be read (`wfexec.language.payloads`); a call's `params_type` names a
  declared type; the call's literal `params` have its shape (values with `${...}` are checked when the call runs).
- `data_mcps`: every `mcp_tool_call` names an alias it declares.
- `declared_effects`, per key:
  - an alias of `data_mcps` set to `forbidden`: no step may call it; `{tools: [...]}`: no step may call a tool
    outside the list; `{max_call_count: 0}`: no step may call it (a larger count is enforced while the run goes);
  - a key that is not an alias: only `forbidden` is allowed (blueprint-lib: documentation). When the key is one of
    wfexec's effects (`files`, `process`, `network`, `git`, `llm`, `display`, `mcp`; `shell` is `process`), every
    step whose type has that effect is refused: calls, and nodes that have it themselves (a `states` node runs
    processes, a `reference` node runs what its sub-workflow runs).

Each error names the node, the step and the effect, at the step's line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

from wfexec.language.diagnostics import Reporter, did_you_mean, format_yaml_path
from wfexec.language.expressions import has_templates
from wfexec.language.model import Call, Node
from wfexec.types.registry import EFFECTS

if TYPE_CHECKING:
    from wfexec.language.payloads import PayloadType

MCP_CALL = "mcp_tool_call"
EFFECT_ALIASES = {"shell": "process"}


def _step(path: tuple, call: Call | None, v8: bool) -> str:
    """`node 'search', step consequences[0] (mcp_tool_call crm.find)` — what the author will look for."""
    if path[:1] in (("nodes",), ("endings",)) and len(path) >= 2:
        owner = f"{'node' if path[0] == 'nodes' else 'ending'} '{path[1]}'"
        rest = path[2:]
    else:
        owner, rest = "the workflow", path
    if v8 and rest[:1] == ("actions",):
        rest = ("consequences",) + rest[1:]
    written = format_yaml_path(rest) if rest else ""
    what = f" ({call.type}{' ' + str(call.raw.get('tool')) if call is not None and call.raw.get('tool') else ''})" \
        if call is not None else ""
    return f"{owner}, step {written}{what}" if written else f"{owner}{what}"


def check(data: Mapping[str, Any], calls: Iterable[tuple[tuple, Call]], nodes: Mapping[str, Node],
          report: Reporter, v8: bool) -> None:
    servers: Mapping[str, Any] = _mapping(data.get("data_mcps"))
    declared: Mapping[str, Any] = _mapping(data.get("declared_effects"))
    types = _payload_types(data.get("payload_types"), report)
    calls = list(calls)

    forbidden_effects: dict[str, str] = {}  # effect → the key that forbids it
    for key, rule in declared.items():
        if key in servers:
            continue
        effect = EFFECT_ALIASES.get(key, key)
        if rule != "forbidden":
            report.error(("declared_effects", key), "declared-effects-alias",
                         f"declared_effects.{key} limits '{key}', which data_mcps does not declare",
                         f"declare it in data_mcps ({key}: \"server-name@range\"), or write `{key}: forbidden` "
                         "(documentation, or an effect wfexec forbids)" + _suggest(key, servers), at_key=True)
        elif effect in EFFECTS:
            forbidden_effects[effect] = key

    for path, call in calls:
        if call.type == MCP_CALL:
            _check_mcp_call(path, call, servers, declared, types, report, v8)
        for effect in call.spec.effects:
            if effect in forbidden_effects:
                key = forbidden_effects[effect]
                report.error(path, "declared-effects-forbidden",
                             f"{_step(path, call, v8)} has the effect '{effect}', which declared_effects forbids "
                             f"(`{key}: forbidden`)",
                             "remove the step, or the `forbidden` entry")
    for node in nodes.values():
        for effect in dict.fromkeys(node.kind.effects(node.spec)):
            if effect in forbidden_effects:
                key = forbidden_effects[effect]
                report.error(("nodes", node.id), "declared-effects-forbidden",
                             f"node '{node.id}' ({node.type}) has the effect '{effect}', which declared_effects "
                             f"forbids (`{key}: forbidden`)", "remove the node, or the `forbidden` entry",
                             at_key=True)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _suggest(name: str, names: Iterable[str]) -> str:
    hint = did_you_mean(name, list(names))
    return f"; {hint}" if hint else ""


def _payload_types(raw: Any, report: Reporter) -> dict[str, PayloadType]:
    from wfexec.language.payloads import parse_type  # only a v8 file with payload types or MCP calls needs it

    types: dict[str, PayloadType] = {}
    if not isinstance(raw, dict):
        return types
    for name, fields in raw.items():
        if not isinstance(fields, dict):
            continue  # the schema says so
        parsed, problems = parse_type(str(name), fields)
        for field, message in problems:
            report.error(("payload_types", name, field), "payload-field",
                         f"payload type {name}, field `{field}`: {message}",
                         "write a type such as `string (min_length=1)`, `integer (min=0, optional)`, "
                         "`array<string>` or `enum{a, b}`")
        types[str(name)] = parsed
    return types


def _check_mcp_call(path: tuple, call: Call, servers: Mapping, declared: Mapping,
                    types: Mapping[str, PayloadType], report: Reporter, v8: bool) -> None:
    tool_text = call.raw.get("tool")
    if not isinstance(tool_text, str) or "." not in tool_text:
        return  # the parameter schema reported it
    alias, _, tool = tool_text.partition(".")
    step = _step(path, call, v8)
    if alias not in servers:
        report.error(path + ("tool",), "mcp-alias",
                     f"{step}: the alias '{alias}' is not declared in data_mcps",
                     f"add it: data_mcps: {{{alias}: \"server-name@version-range\"}}" + _suggest(alias, servers))
    rule = declared.get(alias)
    if rule == "forbidden":
        report.error(path, "declared-effects-forbidden",
                     f"{step} calls the alias '{alias}', which declared_effects forbids (`{alias}: forbidden`)",
                     "remove the call, or the `forbidden` entry")
    elif isinstance(rule, dict):
        tools = rule.get("tools")
        if isinstance(tools, list) and tool not in tools:
            report.error(path, "declared-effects-tool",
                         f"{step} calls '{tool}', which is not among declared_effects.{alias}.tools "
                         f"({', '.join(map(str, tools)) or 'none'})",
                         f"add '{tool}' to declared_effects.{alias}.tools, or call one of those" +
                         _suggest(tool, map(str, tools)))
        if rule.get("max_call_count") == 0 and not isinstance(rule.get("max_call_count"), bool):
            report.error(path, "declared-effects-count",
                         f"{step} calls '{alias}', whose declared_effects.{alias}.max_call_count is 0",
                         "remove the call, or raise max_call_count")
    type_name = call.raw.get("params_type")
    if type_name is None:
        return
    shape = types.get(str(type_name))
    if shape is None:
        report.error(path + ("params_type",), "unresolved-params-type",
                     f"{step}: params_type '{type_name}' is not declared in payload_types",
                     "declare it under payload_types (name@N: {field: type}), or fix the name" +
                     _suggest(str(type_name), types))
        return
    _check_literal_params(path, call, shape, step, report)


def _check_literal_params(path: tuple, call: Call, shape: PayloadType, step: str, report: Reporter) -> None:
    """What can be told before the run: fields present or missing, and values written without `${...}`."""
    compiled = call.params.get("params")
    if "params" in call.raw and not isinstance(compiled, dict):
        return  # one `${...}` for the whole mapping: checked when the call runs
    values = compiled if isinstance(compiled, dict) else {}
    literal = {key: value for key, value in values.items() if not has_templates(value)}
    for field, message in shape.check(literal, complete=False):
        at = path + ("params", field) if field is not None else path + ("params",)
        report.error(at, "payload-params", f"{step}: params.{field}: {message}" if field else f"{step}: {message}",
                     f"give params the shape {shape.name} declares")
    for field, message in shape.check(values, complete=True):
        if field is None:  # a missing field: the keys are known even when the values are templates
            report.error(path + ("params",) if "params" in call.raw else path, "payload-params",
                         f"{step}: {message}", f"add it to params, or mark it optional in {shape.name}")
