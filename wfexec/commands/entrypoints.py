"""The commands a skill calls once per question (run, resume, validate, states, runs, show, cancel), as plain
functions of their parsed options that return the exit code.

`wfexec.cli` declares each one's options with typer and calls it; `wfexec.launcher` calls it directly from
argv for the common command lines, without importing typer, whose start-up costs more than a whole cached run.
Parameter names are the typer parameters' names. A problem with the command line itself raises
`CommandLineError`, which each front end reports in its own way.
"""

from __future__ import annotations

import sys
from pathlib import Path

from wfexec.commands.reporting import print_json
from wfexec.exit_codes import exit_code_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence

__all__ = ["print_json"]  # `wfexec.cli` and `wfexec test` print JSON the one way


class CommandLineError(ValueError):
    """The options contradict each other: a usage error (exit 2), reported against `param_hint`."""

    def __init__(self, message: str, param_hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.param_hint = param_hint


def exit_interrupted(exc: KeyboardInterrupt) -> None:
    """Ctrl-C, SIGTERM or SIGHUP stopped the command (the run, if any, said how to resume it)."""
    sys.stderr.write(f"interrupted ({exc})\n" if str(exc) else "interrupted\n")
    sys.exit(exit_code_for(exc))


def exit_on_closed_output() -> None:
    """The reader of stdout went away (`wfexec runs | head`): stop quietly with exit 1, as click does for the
    commands typer runs."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's last flush at exit cannot fail again
    sys.exit(1)


def exit_command(code: Any) -> None:
    """End the `wfexec` process with this code, without the interpreter's teardown when nothing is left for it to
    do but give memory back: no atexit handler (a temporary folder's removal, coverage's report) and no thread but
    this one (or daemons). Freeing every module, class and the compiled workflow one by one cost a short command
    a third of the bare interpreter's start (issue 27). After talking to a Temporal cluster, always without it:
    the SDK's Rust threads can outlive it and abort the process while it finalizes (temporalio/sdk-python issue
    300: "PyGILState_Release: thread state must be current"), turning a finished command into exit -6."""
    import gc

    # When the teardown does run, its full collection leaves out what is frozen: the whole start's objects.
    gc.freeze()
    plain = code is None or isinstance(code, int)  # sys.exit prints any other code: it takes those
    if "wfexec.temporal.client" in sys.modules or (plain and _only_memory_left()):
        import os

        flushed = True
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                flushed = False
        if flushed or "wfexec.temporal.client" in sys.modules:
            os._exit(code if isinstance(code, int) else (0 if code is None else 1))
    sys.exit(code)  # a stream that could not be flushed is the interpreter's to report, as ever


def _only_memory_left() -> bool:
    """No atexit handler is registered and no thread but this one (or a daemon) runs: what the interpreter's
    teardown would still do is free memory."""
    import atexit

    handlers = getattr(atexit, "_ncallbacks", None)  # CPython's count; elsewhere, assume there are some
    if handlers is None or handlers():
        return False
    threading = sys.modules.get("threading")
    return threading is None or all(t.daemon for t in threading.enumerate() if t is not threading.main_thread())


def refuse_broken_plugins() -> int:
    """0, or exit 2 after naming each plugin's distribution and entry point when an installed plugin cannot be
    used."""
    from wfexec.types.registry import BrokenPlugins, check_plugins

    try:
        check_plugins()
    except BrokenPlugins as exc:
        print(exc.format(), file=sys.stderr)
        return exit_code_for(exc)
    return 0


def interactive(non_interactive: bool) -> bool:
    return not non_interactive and sys.stdin.isatty() and sys.stdout.isatty()


def validate(paths: Sequence[Path], format: str = "text", strict: bool = False, debug: bool = False) -> int:
    from wfexec.records import replace

    from wfexec.api import validation
    from wfexec.language.diagnostics import ERROR, WARNING
    from wfexec.protocol.folders import states_line
    from wfexec.types.registry import BrokenPlugins

    everything = []
    files = []
    for path in paths:
        try:
            # A workflow from the compiled cache was kept when every plugin loaded (and the installed plugins
            # are in its key); any other is checked after the plugins are (BrokenPlugins).
            found = validation(path)
        except BrokenPlugins as exc:
            print(exc.format(), file=sys.stderr)
            return exit_code_for(exc)
        diagnostics = found.diagnostics
        if strict:
            diagnostics = [d if d.severity == ERROR else replace(d, severity=ERROR) for d in diagnostics]
        everything.extend(diagnostics)
        shown = str(found.file)
        if found.summary is not None:
            files.append({"file": shown, "summary": found.summary.to_json()})
        if format == "text":
            for d in diagnostics:
                print(states_line(d) if found.states else d.format())
            if not any(d.severity == ERROR for d in diagnostics):
                warnings = sum(1 for d in diagnostics if d.severity == WARNING)
                note = f" ({warnings} warning{'s' if warnings != 1 else ''})" if warnings else ""
                print(f"{shown}: valid{' states' if found.states else ''}{note}", file=sys.stderr)
            if found.summary is not None:
                print(f"{shown}: {found.summary.line()}", file=sys.stderr)
                for line in found.summary.step_lines():
                    print(line, file=sys.stderr)
    errors = sum(1 for d in everything if d.severity == ERROR)
    if format == "json":
        print_json({"diagnostics": [d.to_json() for d in everything], "files": files})
    elif errors:
        print(f"{errors} error{'s' if errors != 1 else ''} in {len(paths)} file{'s' if len(paths) != 1 else ''}",
              file=sys.stderr)
    return exit_code_for("invalid" if errors else "completed")


def run(**given: Any) -> int:
    from wfexec.commands.run import execute_run

    request = request_from_command_line("run", given)
    return request if isinstance(request, int) else execute_run(request)


def resume(**given: Any) -> int:
    from wfexec.commands.run import execute_resume

    if given.get("rerun") and given.get("skip"):
        raise CommandLineError("--rerun and --skip exclude each other")
    if given.get("dry_run"):  # its placeholders would land in the recorded run's state and journal
        raise CommandLineError("a recorded run cannot continue dry; `wfexec run WORKFLOW --dry-run` shows what a "
                               "run would do", param_hint="--dry-run")
    request = request_from_command_line("resume", given)
    return request if isinstance(request, int) else execute_resume(request)


def states(**given: Any) -> int:
    from wfexec.commands.run import execute_states

    request = request_from_command_line("states", given)
    return request if isinstance(request, int) else execute_states(request)


def request_from_command_line(command: str, given: dict[str, Any]) -> Any:
    """The run request of `wfexec COMMAND` with these parsed options (typer's or the launcher's, named as the
    request's fields), or exit 2 after saying which `KEY=VALUE` is malformed. Each option's reading is its
    declaration's (wfexec.running.request): `--answer` and `--set` pairs become mappings, `--non-interactive` at
    a terminal is the request's `interactive`."""
    from wfexec.running.request import OptionError, RunRequest, options, options_of, pairs_to_dict

    values: dict[str, Any] = {"debug": bool(given.get("debug"))}
    if "path" in given:
        values["path"] = given["path"]
    if "run_id" in given:
        values["run_id"] = given["run_id"]
    try:
        for spec in options_of("cli", command):
            if spec.name not in given:
                continue
            value = _value(given[spec.name])
            if spec.name == "overrides":
                value = _overrides(value)
            elif spec.form == "pairs":
                value = pairs_to_dict(value, spec.flag or spec.name)
            elif spec.form == "list":
                value = list(value)
            values[spec.name] = value
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exit_code_for("invalid")
    values["interactive"] = interactive(bool(values.get("non_interactive")))
    try:
        return RunRequest(**values)
    except OptionError as exc:  # the value was parsed, but its declaration refuses it (`--timeout nan`)
        print(f"error: {exc.named(options()[exc.option].flag or exc.option)}", file=sys.stderr)
        return exit_code_for(exc)


def _overrides(pairs: Sequence[str]) -> dict[str, Any]:
    """`--set PATH=VALUE`: each value read as YAML (3 is a number, [a, b] a list), the last of a path's winning."""
    if not pairs:
        return {}
    from wfexec.language.inputs import parse_scalar, split_pairs

    return {key: parse_scalar(value) for key, value in split_pairs(list(pairs), "--set")}


def _value(choice) -> Any:
    """An option's value as text, whether typer gave its Enum member or the launcher the text."""
    return getattr(choice, "value", choice)


def runs(status: str | None = None, limit: int = 50, format: str = "text", store: Path | None = None,
         temporal: str | None = None, debug: bool = False) -> int:
    from wfexec.commands.runs import list_runs

    if temporal:
        from wfexec.commands.temporal_runs import list_on_cluster

        return list_on_cluster(temporal, getattr(status, "value", status) or None, format == "json", limit, debug)

    return _store_command(lambda: list_runs(store, getattr(status, "value", status) or None, format == "json",
                                            limit=limit))


def show(run_id: str, state: bool = False, agent: str | None = None, format: str = "text",
         store: Path | None = None, temporal: str | None = None, debug: bool = False, output: bool = False) -> int:
    from wfexec.commands.runs import show_agent, show_output, show_run

    if temporal:
        if output:
            raise CommandLineError("--output reads a run store; a cluster run's output is in its history, which "
                                   "`wfexec serve --temporal` shows", param_hint="--output")
        if agent is not None:
            raise CommandLineError("--agent shows a states node's agents, which do not run on a Temporal cluster yet",
                                   param_hint="--agent")
        from wfexec.commands.temporal_runs import show_on_cluster

        return show_on_cluster(temporal, run_id, state, format == "json", debug)

    if output:
        return _store_command(lambda: show_output(store, run_id, as_json=format == "json"))
    if agent is not None:
        return _store_command(lambda: show_agent(store, run_id, agent, as_json=format == "json"))
    return _store_command(lambda: show_run(store, run_id, with_state=state, as_json=format == "json"))


def cancel(run_id: str, store: Path | None = None, temporal: str | None = None, debug: bool = False,
           take_over: bool = False) -> int:
    from wfexec.commands.runs import cancel_run

    if temporal:
        from wfexec.commands.temporal_runs import cancel_on_cluster

        return cancel_on_cluster(temporal, run_id, debug)

    return _store_command(lambda: cancel_run(store, run_id, take_over=take_over))


def _store_command(body) -> int:
    from wfexec.durable.store import StoreError

    try:
        return body()
    except StoreError as exc:
        print(exc.format(), file=sys.stderr)
        return exit_code_for(exc)
