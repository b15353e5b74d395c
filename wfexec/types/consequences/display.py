"""Consequences that show things to the person running the workflow, and the run log.

`display_message`, `display_table` (seed) and `display` (v3) print through the
run's console; `log_entry` (v3) and `log_event` (blueprint-lib v2) append to
the `log` list in the run state and print nothing.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from wfexec.language.expressions import to_text
from wfexec.types.registry import ActionFailed, TypeList

TYPES = TypeList()

DISPLAY = ("display",)
LOG_PATH = "log"
LEVELS = ["debug", "info", "warning", "error"]
FORMATS = ["text", "table", "json", "markdown"]

HEADERS = {"type": "array", "items": {"type": "string"}, "description": "column titles"}
ROWS = {"type": "array", "items": {"type": ["array", "object"]},
        "description": "a list of lists, or a list of mappings (values taken in header order)"}


@TYPES.consequence("display_message", {"message": {"type": "string"}}, ["message"], effects=DISPLAY)
def display_message(params, ctx):
    """Print a message (templates rendered) as plain text."""
    ctx.io.print(to_text(params["message"]))


@TYPES.consequence("display_table", {"headers": HEADERS, "rows": ROWS, "title": {"type": "string"}},
                   ["headers", "rows"], effects=DISPLAY)
def display_table(params, ctx):
    """Print a table; rows are lists, or mappings read in header order."""
    headers = _headers(params["headers"])
    ctx.io.table(headers, _table_rows(params["rows"], headers), _title(params))


@TYPES.consequence("display", {"format": {"enum": FORMATS}, "content": {}, "title": {"type": "string"},
                               "headers": HEADERS}, ["content"], effects=DISPLAY)
def display(params, ctx):
    """v3: show `content` as text (default), markdown, pretty JSON, or a table."""
    fmt = _one_of(params.get("format", "text"), FORMATS, "format")
    content = params["content"]
    title = _title(params)
    if fmt == "table":
        rows = _rows_list(content)
        headers = _headers(params["headers"]) if "headers" in params else _headers_from_mappings(rows)
        ctx.io.table(headers, _table_rows(rows, headers), title)
    elif fmt == "markdown":
        ctx.io.markdown((f"## {title}\n\n" if title else "") + to_text(content))
    elif fmt == "json":
        _print_titled(ctx, title, json.dumps(_json_value(content), indent=2, ensure_ascii=False, default=str))
    else:
        _print_titled(ctx, title, to_text(content))


def _one_of(value: Any, allowed: list[str], name: str) -> str:
    """An enum parameter given as a template is checked once rendered."""
    if value not in allowed:
        raise ActionFailed(f"`{name}` is {to_text(value)!r}; it must be one of {', '.join(allowed)}")
    return value


def _title(params) -> str | None:
    title = params.get("title")
    return to_text(title) if title not in (None, "") else None


def _print_titled(ctx, title: str | None, text: str) -> None:
    if title:
        ctx.io.print(title)
    ctx.io.print(text)


def _json_value(content: Any) -> Any:
    """A string holding JSON is shown re-indented; any other string is shown as a JSON string."""
    if isinstance(content, str):
        try:
            return json.loads(content)
        except ValueError:
            return content
    return content


def _headers(value: Any) -> list[str]:
    if not isinstance(value, list) or not value:
        raise ActionFailed(f"table headers must be a non-empty list of column titles, got {_kind(value)}")
    return [to_text(h) for h in value]


def _rows_list(value: Any) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ActionFailed(f"table rows must be a list (of lists or of mappings), got {_kind(value)}",
                           "give `rows:` a list, or one `${...}` that yields a list")
    return value


def _headers_from_mappings(rows: list) -> list[str]:
    """Without `headers`, a table of mappings takes its columns from their keys, first seen first."""
    keys: dict[str, None] = {}
    for row in rows:
        if not isinstance(row, dict):
            raise ActionFailed("a table of lists needs `headers`", "add `headers: [..]`, or give mappings as rows")
        keys.update((str(k), None) for k in row)
    if not keys:
        raise ActionFailed("a table needs `headers` when it has no rows to take them from")
    return list(keys)


def _table_rows(value: Any, headers: list[str]) -> list[list[str]]:
    rows = []
    for index, row in enumerate(_rows_list(value)):
        if isinstance(row, dict):
            cells = [_cell_of_mapping(row, header) for header in headers]
        elif isinstance(row, (list, tuple)):
            if len(row) > len(headers):
                raise ActionFailed(f"table row {index} has {len(row)} cells but there are {len(headers)} headers")
            cells = list(row) + [None] * (len(headers) - len(row))
        else:
            raise ActionFailed(f"table row {index} is {_kind(row)}; a row must be a list or a mapping")
        rows.append([to_text(cell) for cell in cells])
    return rows


def _cell_of_mapping(row: dict, header: str) -> Any:
    """The value under `header`; titles like "Last Commit" also find the key `last_commit`."""
    if header in row:
        return row[header]
    wanted = header.strip().lower().replace(" ", "_")
    for key, value in row.items():
        if str(key).lower().replace(" ", "_") == wanted:
            return value
    return None


def _kind(value: Any) -> str:
    return "null" if value is None else f"a {type(value).__name__} ({to_text(value)[:40]!r})"


# --------------------------------------------------------------------------- #
# The run log: a list of entries at state `log`.

def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _append_log(ctx, entry: dict) -> None:
    current = ctx.get(LOG_PATH)
    if current is None:
        current = []
    elif not isinstance(current, list):
        raise ActionFailed(f"state `log` holds {type(current).__name__}, not a list of log entries",
                           "leave the top-level `log` key to log_entry/log_event, or rename your own key")
    ctx.set(LOG_PATH, current + [entry])


_ENTRY_EXTRAS = ("context", "event_type", "error_type", "recoverable")


@TYPES.consequence("log_entry", {"level": {"enum": LEVELS}, "message": {"type": "string"},
                                 "context": {"type": "object"}, "event_type": {"type": "string"},
                                 "error_type": {"type": "string"}, "recoverable": {"type": "boolean"},
                                 "node": {"type": "string"}},
                   ["level", "message"])
def log_entry(params, ctx):
    """v3: append `{level, message, at, node, ...}` to the run log at state `log`."""
    node = params.get("node") or (ctx.node.id if ctx.node is not None else None)
    entry = {"level": _one_of(params["level"], LEVELS, "level"), "message": to_text(params["message"]), "at": _now(), "node": node}
    entry.update((key, params[key]) for key in _ENTRY_EXTRAS if key in params)
    _append_log(ctx, entry)
    ctx.trace(f"Log [{entry['level']}]: {entry['message']}")


@TYPES.consequence("log_event", {"event_type": {"type": "string"}, "data": {}}, ["event_type"])
def log_event(params, ctx):
    """Append `{event_type, data, at, node}` to the run log at state `log`."""
    entry = {"event_type": params["event_type"], "data": params.get("data"), "at": _now(),
             "node": ctx.node.id if ctx.node is not None else None}
    _append_log(ctx, entry)
    ctx.trace(f"Log event: {entry['event_type']}")
