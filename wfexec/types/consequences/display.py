"""Consequences that show things to the person running the workflow.

`display_message`, `display_table` (seed) and `display` (v3) print through the
run's console. The run log (`log_entry`, `log_event` and the other log types)
is kept by wfexec.types.consequences.runlog.
"""

from __future__ import annotations

import json
from typing import Any

from wfexec.language.expressions import to_text
from wfexec.types.registry import ActionFailed, TypeList

TYPES = TypeList()

DISPLAY = ("display",)
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
