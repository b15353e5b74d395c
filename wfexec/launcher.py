"""The `wfexec` command's entry point.

A Claude skill starts `wfexec run`/`resume` once per question, and typer (with the pydantic it builds each
parameter's converter from) costs more CPU than a whole run of a cached workflow. So the common command lines of
the commands in `lean_table.json` are parsed here, from that table, and their plain functions
(`wfexec.commands.entrypoints`) are called without importing typer. Anything the table does not cover exactly
(help at a terminal, a mistake in the command line, an unknown option, the other commands) goes to the typer app in
`wfexec.cli`, which stays the one declaration of every option: the table is made from it
(`wfexec.cli.write_lean_table`), and a test fails when the two differ. The table also holds what `--help`
prints to a pipe, which is printed from there.

`WFEXEC_LEAN=0` sends every command line to typer.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

LEAN_VARIABLE = "WFEXEC_LEAN"
_TABLE = os.path.join(os.path.dirname(__file__), "lean_table.json")


def _table() -> dict:
    # json (and pathlib, for path options) are imported once `main` has the collector collect rarely
    import json

    with open(_TABLE, encoding="utf-8") as file:
        return json.load(file)


class _NotLean(Exception):
    """The command line is one for typer to parse (and, when it is wrong, to explain)."""


def parse(argv: list[str]) -> tuple[str, dict[str, Any]] | None:
    """(command, its parameters) for a command line the table covers exactly, else None."""
    try:
        return _parse(argv, _table())
    except (_NotLean, OSError, ValueError):
        return None


def _parse(argv: list[str], table: dict) -> tuple[str, dict[str, Any]]:
    debug = False
    at = 0
    while at < len(argv) and argv[at].startswith("-"):
        if argv[at] != "--debug":
            raise _NotLean
        debug = True
        at += 1
    if at >= len(argv) or argv[at] not in table:
        raise _NotLean
    command, spec = argv[at], table[argv[at]]
    params: dict[str, Any] = {}
    positionals: list[str] = []
    rest = argv[at + 1:]
    index = 0
    while index < len(rest):
        token = rest[index]
        index += 1
        if token == "--":
            positionals += rest[index:]
            break
        if not token.startswith("-") or token == "-":
            positionals.append(token)
            continue
        name, has_value, value = token.partition("=")
        option = spec["options"].get(name)
        if option is None:
            raise _NotLean
        if option["type"] == "flag":
            if has_value or option["dest"] in params:
                raise _NotLean
            params[option["dest"]] = True
            continue
        if not has_value:
            if index >= len(rest):
                raise _NotLean
            value = rest[index]
            index += 1
        converted = _convert(value, option)
        if option["multiple"]:
            params.setdefault(option["dest"], []).append(converted)
        elif option["dest"] in params:
            raise _NotLean  # given twice: typer's rules decide which wins
        else:
            params[option["dest"]] = converted
    for argument in spec["arguments"]:
        if argument["variadic"]:
            if not positionals:
                raise _NotLean
            params[argument["dest"]] = [_convert(p, argument) for p in positionals]
            positionals = []
        elif positionals:
            params[argument["dest"]] = _convert(positionals.pop(0), argument)
        else:
            raise _NotLean  # a missing argument: typer says so
    if positionals:
        raise _NotLean
    for option in spec["options"].values():
        dest = option["dest"]
        if dest in params:
            continue
        from_environment = os.environ.get(option["envvar"]) if option.get("envvar") else None
        params[dest] = _convert(from_environment, option) if from_environment else \
            (list(option["default"]) if option["multiple"] else option["default"])
    params["debug"] = debug
    return command, params


def _convert(value: str, option: dict) -> Any:
    kind = option["type"]
    if kind == "text":
        return value
    if kind == "path":
        from pathlib import Path

        return Path(value)
    if kind == "choice":
        if value not in option["choices"]:
            raise _NotLean
        return value
    try:
        number: int | float = int(value) if kind == "int" else float(value)
    except ValueError:
        raise _NotLean from None
    if option.get("min") is not None and number < option["min"]:
        raise _NotLean
    if option.get("max") is not None and number > option["max"]:
        raise _NotLean  # typer says what the range is
    return number


def piped_help(argv: list[str]) -> str | None:
    """The text `wfexec [COMMAND] --help` prints to a pipe, from the table, when that is what is asked: click
    wraps it to 80 columns there, unless $COLUMNS says fewer. At a terminal, typer draws it."""
    if not argv or argv[-1] != "--help" or len(argv) > 2 or sys.stdout.isatty():
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns and not (columns.isdigit() and int(columns) >= 80):
        return None
    try:
        return _table()["--help"].get(" ".join(argv[:-1]))
    except (OSError, ValueError, KeyError):
        return None


def main() -> None:
    from wfexec.system import collector, signals

    collector.starting()  # from here on: the modules every command imports are not walked again and again
    lean = os.environ.get(LEAN_VARIABLE) != "0"
    text = piped_help(sys.argv[1:]) if lean else None
    if text is not None:
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:
            from wfexec.commands import entrypoints

            entrypoints.exit_on_closed_output()
        sys.exit(0)
    parsed = parse(sys.argv[1:]) if lean else None
    if parsed is None:
        collector.not_starting()  # typer's commands (servers and workers among them) collect as usual
        from wfexec.cli import main as typer_main

        typer_main()
        return
    signals.install()
    command, params = parsed
    from wfexec.commands import entrypoints

    try:
        code = getattr(entrypoints, command)(**params)
    except entrypoints.CommandLineError:
        from wfexec.cli import main as typer_main

        typer_main()  # the same command line: typer reports the problem as it reports every usage error
        return
    except KeyboardInterrupt as exc:
        entrypoints.exit_interrupted(exc)
    except BrokenPipeError:
        entrypoints.exit_on_closed_output()
    entrypoints.exit_command(code)
