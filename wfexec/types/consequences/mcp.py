"""Blueprint-lib v8 `mcp_tool_call`: call a tool of an MCP server the workflow declares in `data_mcps`.

    data_mcps:
      crm: "internal-crm@^2"          # alias: server name @ version range
    ...
      - type: mcp_tool_call
        tool: crm.search_customers    # alias.tool
        params: {q: "${computed.query}"}
        params_type: search@1         # optional: a key of payload_types, checked before the call
        store_as: computed.hits

How a server name becomes a program: the first `.mcp.json` (Claude Code's format,
`{"mcpServers": {name: {command, args, env}}}`) that names it, looked for in the file `$WFEXEC_MCP_CONFIG`,
then in the workflow's folder and each folder above it, then in the working directory. `${VAR}` and
`${VAR:-default}` in `command`, `args` and `env` are read from the environment, and `${CLAUDE_PLUGIN_ROOT}`
(when unset) is the folder of that `.mcp.json`. Only stdio servers are started. The server gets the SDK's
safe environment (PATH, HOME, ...) plus its `env`, and runs in the run's working directory.

Each call starts the server, checks its reported version against the range, checks that it lists the tool,
calls it, and stops it. What is stored: the result's structured content (a value the SDK wrapped as
`{"result": value}`, with an output schema holding only `result`, is unwrapped), else the text of its one text
block, else its content blocks as mappings.

What comes from the server is bounded: a message (the handshake, the tool list, the result) is at most
MAX_MESSAGE_BYTES; a longer one ends the call with an error naming the limit, having read no more of it. The
server runs in a process group of its own under the orphan watchdog, and carries a tag of this call in its
environment: when the call ends, the group and every process still carrying the tag go, a child the server
moved to a session of its own (`setsid`) included.

The MCP SDK (`pip install 'wfexec[mcp]'`) is imported only when a call runs.
"""

from __future__ import annotations

import json
import os
import re
from contextlib import asynccontextmanager, contextmanager
from wfexec.records import dataclass
from pathlib import Path
from typing import Any

from wfexec.language.diagnostics import did_you_mean
from wfexec.language.payloads import payload_type
from wfexec.system.patterns import lazy
from wfexec.types.consequences.state import MCP_CALLS
from wfexec.types.registry import ActionFailed, TypeList

TYPES = TypeList()

CONFIG_FILE = ".mcp.json"
CONFIG_ENV = "WFEXEC_MCP_CONFIG"
DEFAULT_TIMEOUT = 60
ERROR_LINES = 5
TOOL_PATTERN = r"^[a-z_][a-z0-9_-]*\.[A-Za-z0-9_][A-Za-z0-9_.\-]*$"
PARAMS_TYPE_PATTERN = r"^[a-z_][a-z0-9_]*@\d+$"
INSTALL_HINT = "pip install 'wfexec[mcp]'"
# One message from a server, at most: a result is stored in the run's state and journal, and a hostile server's
# endless line must not become the run's memory.
STDERR_KEPT = 64 * 1024  # bytes of a server's stderr kept for a failure message: its last lines
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
CALL_TAG_VARIABLE = "WFEXEC_MCP_CALL"


# -- finding the server --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Server:
    name: str
    command: str
    args: tuple
    env: dict
    config: Path


def config_files(workflow_dir: Path, cwd: Path) -> list[Path]:
    """Where server names are looked up, in order (existing files only)."""
    places: list[Path] = []
    chosen = os.environ.get(CONFIG_ENV)
    if chosen:
        places.append(Path(chosen).expanduser())
    folder = workflow_dir.resolve()
    places.extend(parent / CONFIG_FILE for parent in (folder, *folder.parents))
    places.append(cwd.resolve() / CONFIG_FILE)
    seen: list[Path] = []
    for place in places:
        if place not in seen and place.is_file():
            seen.append(place)
    return seen


_VARIABLE = lazy(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _expand(text: Any, config: Path, where: str) -> str:
    if not isinstance(text, (str, int, float)) or isinstance(text, bool):
        raise ActionFailed(f"{config}: `{where}` must be text, not {json.dumps(text)}", "fix the server's entry")

    def value(match: re.Match) -> str:
        name, default = match.group(1), match.group(2)
        found = os.environ.get(name)
        if found is None and name == "CLAUDE_PLUGIN_ROOT":
            found = str(config.parent)
        if found is None:
            if default is None:
                raise ActionFailed(f"{config}: `{where}` uses ${{{name}}}, which is not set",
                                   f"set {name} in the environment, or write ${{{name}:-default}}")
            found = default
        return found

    return _VARIABLE.sub(value, str(text))


def find_server(name: str, workflow_dir: Path, cwd: Path, alias: str) -> Server:
    files = config_files(workflow_dir, cwd)
    for config in files:
        try:
            data = json.loads(config.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ActionFailed(f"{config} cannot be read as JSON: {exc}", "fix the file, or point "
                               f"{CONFIG_ENV} at another one") from None
        servers = data.get("mcpServers") if isinstance(data, dict) else None
        if not isinstance(servers, dict) or name not in servers:
            continue
        entry = servers[name]
        if not isinstance(entry, dict):
            raise ActionFailed(f"{config}: mcpServers.{name} must be a mapping with `command`", "fix the entry")
        if entry.get("url") or entry.get("type", "stdio") != "stdio":
            raise ActionFailed(f"{config}: MCP server '{name}' is a {entry.get('type') or 'remote'} server; wfexec "
                               "starts stdio servers only (`command`, `args`)", "give the server a stdio entry")
        if not entry.get("command"):
            raise ActionFailed(f"{config}: mcpServers.{name} has no `command`", "add the program that starts it")
        args = entry.get("args") or []
        env = entry.get("env") or {}
        if not isinstance(args, list) or not isinstance(env, dict):
            raise ActionFailed(f"{config}: mcpServers.{name}: `args` must be a list and `env` a mapping",
                               "fix the entry")
        return Server(name=name, command=_expand(entry["command"], config, "command"),
                      args=tuple(_expand(a, config, f"args[{i}]") for i, a in enumerate(args)),
                      env={str(k): _expand(v, config, f"env.{k}") for k, v in env.items()}, config=config)
    looked = ", ".join(str(f) for f in files) or f"no {CONFIG_FILE} found"
    raise ActionFailed(f"MCP server '{name}' (data_mcps.{alias}) is not configured (looked in: {looked})",
                       f"add it to a {CONFIG_FILE} beside the workflow or in the working directory, as "
                       f'{{"mcpServers": {{"{name}": {{"command": "...", "args": [...]}}}}}}, or set {CONFIG_ENV}')


# -- version ranges --------------------------------------------------------------------------------------------

# A server may report its version short ("2", "2.1"); npm reads only full versions, so those are padded with zeros.
_SHORT_VERSION = lazy(r"^v?\d+(?:\.\d+)?$")


def version_in_range(version: str, wanted: str) -> bool | None:
    """Whether a reported version is in a semver range, as npm decides it (node-semver, a port of npm's `semver`
    package: ^ ~ x-ranges, hyphen ranges, prereleases only within their own version); a comma between comparators
    reads as a space. None when either cannot be read."""
    import nodesemver

    text = version.strip()
    if _SHORT_VERSION.match(text):
        text = text.lstrip("v") + ".0" * (2 - text.count("."))
    exact = nodesemver.valid(text, loose=True)
    wanted = wanted.replace(",", " ")
    if exact is None or nodesemver.valid_range(wanted, loose=False) is None:
        return None
    return bool(nodesemver.satisfies(exact, wanted, loose=False))


# -- calling ---------------------------------------------------------------------------------------------------

class _StderrTail:
    """The end of a server's stderr, all that a failure message quotes: a server may write to it without end,
    so only the last STDERR_KEPT bytes are kept."""

    def __init__(self) -> None:
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > STDERR_KEPT:
            del self.data[:-STDERR_KEPT]


def _stderr_tail(errors: _StderrTail) -> str:
    text = errors.data.decode("utf-8", "replace")
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    return "\n".join(lines[-ERROR_LINES:])


def _result_value(result: Any, tool_schema: Any) -> Any:
    structured = result.structured_content
    if structured is not None:
        properties = (tool_schema or {}).get("properties") if isinstance(tool_schema, dict) else None
        if isinstance(structured, dict) and list(structured) == ["result"] and isinstance(properties, dict) \
                and list(properties) == ["result"]:
            return structured["result"]
        return structured
    blocks = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]
    if len(blocks) == 1 and blocks[0].get("type") == "text":
        return blocks[0].get("text", "")
    return blocks


def _error_text(result: Any) -> str:
    texts = [getattr(block, "text", "") for block in result.content if getattr(block, "type", "") == "text"]
    return " ".join(" ".join(texts).split())[:500] or "(no message)"


class _Limits:
    """What the transport saw go over a limit, for the error the step ends with."""

    too_big: int | None = None  # the size read of a message over MAX_MESSAGE_BYTES


@asynccontextmanager
async def _bounded_stdio(server: Server, cwd: Path, errors, limits: _Limits):
    """The SDK's stdio transport, with each message from the server bounded (MAX_MESSAGE_BYTES) and the server's
    processes ended with the call (see the module's doc)."""
    import uuid

    import anyio
    import mcp.types as types
    from anyio.streams.buffered import BufferedByteReceiveStream
    from mcp.client.stdio import get_default_environment
    from mcp.shared.message import SessionMessage

    from wfexec.system import subprocesses

    tag = uuid.uuid4().hex
    env = {**get_default_environment(), **server.env, CALL_TAG_VARIABLE: tag}
    if subprocesses.run_tag is not None:
        env[subprocesses.RUN_TAG_VARIABLE] = subprocesses.run_tag
    process = await anyio.open_process([server.command, *server.args], env=env, cwd=str(cwd),
                                       start_new_session=True)
    subprocesses.watch(process.pid)
    # open_process with the default pipes always gives both streams
    assert process.stdout is not None and process.stdin is not None and process.stderr is not None
    stdout, stdin, stderr = process.stdout, process.stdin, process.stderr
    incoming_writer: Any
    incoming: Any
    outgoing: Any
    outgoing_reader: Any
    incoming_writer, incoming = anyio.create_memory_object_stream(0)
    outgoing, outgoing_reader = anyio.create_memory_object_stream(0)

    async def read_server() -> None:
        lines = BufferedByteReceiveStream(stdout)
        async with incoming_writer:
            while True:
                try:
                    line = await lines.receive_until(b"\n", MAX_MESSAGE_BYTES)
                except anyio.DelimiterNotFound:
                    limits.too_big = MAX_MESSAGE_BYTES
                    return  # the session sees the connection end; the caller says why
                except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError,
                        anyio.BrokenResourceError):
                    return
                if not line.strip():
                    continue
                try:
                    message: Any = SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
                except ValueError as exc:
                    message = exc
                await incoming_writer.send(message)

    async def read_errors() -> None:
        try:
            async for chunk in stderr:
                errors.add(chunk)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            return

    async def write_server() -> None:
        async with outgoing_reader:
            async for message in outgoing_reader:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                try:
                    await stdin.send(data.encode())
                except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                    return

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(read_server)
            group.start_soon(write_server)
            group.start_soon(read_errors)
            try:
                yield incoming, outgoing
            finally:
                group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            try:
                await stdin.aclose()  # the spec's way to end a stdio server: it may exit on its own
            except (OSError, anyio.BrokenResourceError):
                pass
            with anyio.move_on_after(2):
                await process.wait()
            subprocesses.done_with(process)
            subprocesses.kill_tagged(tag, CALL_TAG_VARIABLE)
            with anyio.move_on_after(2):
                await process.aclose()  # reaped and its pipes closed while the event loop still runs


async def _call(server: Server, tool: str, arguments: dict, timeout: float, wanted: str, cwd: Path,
                errors, limits: _Limits) -> tuple[str | None, bool, Any, Any, list[str]]:
    """(server version, whether it is in `wanted`, CallToolResult or None when not called, the tool's output
    schema, the tool names the server lists)."""
    from mcp import ClientSession
    from mcp.types import PaginatedRequestParams

    async with _bounded_stdio(server, cwd, errors, limits) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=timeout) as session:
            started = await session.initialize()
            version = getattr(getattr(started, "server_info", None), "version", None)
            if version and wanted and version_in_range(str(version), wanted) is False:
                return version, False, None, None, []
            names: list[str] = []
            schema = None
            cursor = None
            while True:
                listed = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
                for item in listed.tools:
                    names.append(item.name)
                    if item.name == tool:
                        schema = item.output_schema
                cursor = listed.next_cursor
                if not cursor:
                    break
            if tool not in names:
                return version, True, None, None, names
            result = await session.call_tool(tool, arguments, read_timeout_seconds=timeout)
            return version, True, result, schema, names


def _run_async(coroutine_factory, timeout: float):
    import asyncio

    async def bounded():
        return await asyncio.wait_for(coroutine_factory(), timeout)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(bounded())
    # Called from inside an event loop (an embedding program): the call gets a thread of its own.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, bounded()).result()


def _declared(workflow_raw: dict, alias: str) -> Any:
    effects = workflow_raw.get("declared_effects")
    return effects.get(alias) if isinstance(effects, dict) else None


@TYPES.consequence("mcp_tool_call", {
    "tool": {"type": "string", "pattern": TOOL_PATTERN,
             "description": "`alias.tool_name`: an alias of `data_mcps` and a tool its server lists"},
    "params": {"type": "object", "description": "the tool's arguments (values may hold `${...}`)"},
    "params_type": {"type": "string", "pattern": PARAMS_TYPE_PATTERN,
                    "description": "a key of `payload_types` (`name@N`): `params` must have that shape"},
    "store_as": {"type": "string", "description": "the state path for the tool's result (its structured content, "
                                                  "else its text)"},
    "timeout": {"type": "number", "exclusiveMinimum": 0,
                "description": f"seconds for starting the server and the call together (default {DEFAULT_TIMEOUT})"},
}, ["tool"], raw=("tool", "params_type"), paths=("store_as",), effects=("mcp",), idempotent=False,
    example={"tool": "crm.search_customers", "params": {"q": "${computed.query}"}, "store_as": "computed.hits"})
def mcp_tool_call(params, ctx):
    """v8: call a tool of an MCP server declared in `data_mcps` (started over stdio from `.mcp.json`); keep its result."""
    written = params["tool"]
    alias, _, tool = written.partition(".")
    raw = ctx.workflow.raw
    servers = raw.get("data_mcps") if isinstance(raw.get("data_mcps"), dict) else {}
    declared = servers.get(alias)
    if not isinstance(declared, str):
        raise ActionFailed(f"mcp_tool_call {written}: the alias '{alias}' is not in data_mcps",
                           f"declare it: data_mcps: {{{alias}: \"server-name@range\"}}")
    name, _, wanted = declared.partition("@")
    name, wanted = name.strip(), wanted.strip()
    arguments = params.get("params") or {}
    if not isinstance(arguments, dict):
        raise ActionFailed(f"mcp_tool_call {written}: params must be a mapping, not {type(arguments).__name__}",
                           "give `params:` as field: value pairs")
    type_name = params.get("params_type")
    if type_name:
        types = raw.get("payload_types") if isinstance(raw.get("payload_types"), dict) else {}
        if type_name not in types:
            raise ActionFailed(f"mcp_tool_call {written}: params_type '{type_name}' is not in payload_types",
                               "declare it under payload_types, or fix the name")
        shape = payload_type(type_name, types[type_name])
        problems = shape.check(arguments)
        if problems:
            field, message = problems[0]
            raise ActionFailed(f"mcp_tool_call {written}: params{'.' + field if field else ''}: {message}",
                               f"give params the shape {type_name} declares")
        arguments = shape.with_defaults(arguments)
    rule = _declared(raw, alias)
    if rule == "forbidden":
        raise ActionFailed(f"mcp_tool_call {written}: declared_effects forbids the alias '{alias}'",
                           "remove the call, or the `forbidden` entry")
    if isinstance(rule, dict):
        tools = rule.get("tools")
        if isinstance(tools, list) and tool not in tools:
            raise ActionFailed(f"mcp_tool_call {written}: '{tool}' is not among declared_effects.{alias}.tools "
                               f"({', '.join(map(str, tools)) or 'none'})", "add it to `tools`, or call another one")
        limit = rule.get("max_call_count")
        if isinstance(limit, int) and not isinstance(limit, bool):
            done = ctx.get((MCP_CALLS, alias)) or 0
            if done >= limit:
                raise ActionFailed(f"mcp_tool_call {written}: this would be call {done + 1} to '{alias}' in this "
                                   f"run; declared_effects.{alias}.max_call_count allows {limit}",
                                   "raise max_call_count, or change the workflow so it calls the tool less often")
    try:
        import mcp  # noqa: F401  (the SDK, imported only when a call runs)
    except ImportError:
        raise ActionFailed("mcp_tool_call needs the MCP SDK, which is not installed", INSTALL_HINT) from None
    server = find_server(name, ctx.workflow.base_dir, ctx.cwd, alias)
    timeout = float(params.get("timeout", DEFAULT_TIMEOUT))
    ctx.set((MCP_CALLS, alias), (ctx.get((MCP_CALLS, alias)) or 0) + 1)
    ctx.trace(f"  MCP {written}: server '{name}' ({server.command} {' '.join(server.args)}, from {server.config})")
    version, fits, outcome, schema, names = _call_server(server, alias, tool, written, arguments, timeout, wanted,
                                                         ctx)
    if not fits:
        raise ActionFailed(f"mcp_tool_call {written}: server '{name}' reports version {version}, outside "
                           f"{wanted} (data_mcps.{alias}); the tool was not called",
                           f"install a version in {wanted}, or widen the range")
    if outcome is None:
        raise ActionFailed(f"mcp_tool_call {written}: server '{name}' (alias {alias}) has no tool '{tool}' "
                           f"(it lists: {', '.join(names) or 'none'})",
                           did_you_mean(tool, names) or "call one of the tools it lists")
    if outcome.is_error:
        raise ActionFailed(f"mcp_tool_call {written}: the tool returned an error: {_error_text(outcome)}",
                           f"check the params it was given, or the server '{name}'")
    value = _result_value(outcome, schema)
    ctx.trace(f"  MCP {written} → {json.dumps(value, default=str)[:200]}")
    if params.get("store_as"):
        ctx.set(params["store_as"], value)


def _call_server(server: Server, alias: str, tool: str, written: str, arguments: dict, timeout: float,
                 wanted: str, ctx):
    from mcp.shared.exceptions import MCPError

    limits = _Limits()
    errors = _StderrTail()
    with _sdk_log() as logged:
        try:
            return _run_async(lambda: _call(server, tool, arguments, timeout, wanted, ctx.cwd, errors, limits),
                              timeout)
        except TimeoutError:
            raise ActionFailed(f"mcp_tool_call {written}: server '{server.name}' (alias {alias}) did not answer "
                               f"within {timeout:g} s", "raise `timeout:`, or check the server") from None
        except FileNotFoundError:
            raise ActionFailed(f"mcp_tool_call {written}: cannot start server '{server.name}' (alias {alias}): "
                               f"no program '{server.command}'", f"install it, or fix `command` in {server.config}") \
                from None
        except BaseException as exc:  # an exception group from the SDK's task group, an MCP error, a broken pipe
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            if limits.too_big is not None:
                raise ActionFailed(f"mcp_tool_call {written}: server '{server.name}' (alias {alias}) sent a message "
                                   f"of more than {MAX_MESSAGE_BYTES:,} bytes, the most one may have; the call was "
                                   "ended there", "ask the tool for less (its params), or check the server") \
                    from None
            leaf = _leaf(exc)
            if isinstance(leaf, TimeoutError) or (isinstance(leaf, MCPError) and "timed out" in str(leaf)):
                raise ActionFailed(f"mcp_tool_call {written}: server '{server.name}' (alias {alias}) did not answer "
                                   f"within {timeout:g} s", "raise `timeout:`, or check the server") from None
            if isinstance(leaf, FileNotFoundError):
                raise ActionFailed(f"mcp_tool_call {written}: cannot start server '{server.name}' (alias {alias}): "
                                   f"no program '{server.command}'",
                                   f"install it, or fix `command` in {server.config}") from None
            tail = "\n".join(part for part in (_stderr_tail(errors), "\n".join(logged[-ERROR_LINES:])) if part)
            raise ActionFailed(f"mcp_tool_call {written}: server '{server.name}' (alias {alias}) failed: "
                               f"{str(leaf) or type(leaf).__name__}" + (f"\n{tail}" if tail else ""),
                               f"check that `{server.command} {' '.join(server.args)}` (from {server.config}) "
                               "starts an MCP server on stdio") from None


@contextmanager
def _sdk_log():
    """The SDK's log records (a line it could not parse, a broken pipe) kept as lines for the error message,
    not printed with their tracebacks."""
    import logging

    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage().splitlines()[0] if record.getMessage() else record.levelname)

    logger = logging.getLogger("mcp")
    handler, propagate = Keep(logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (possibly nested) exception groups."""
    inner = getattr(exc, "exceptions", None)
    while isinstance(inner, tuple) and inner and isinstance(inner[0], BaseException):
        exc = inner[0]
        inner = getattr(exc, "exceptions", None)
    return exc
