"""The `wfexec` command. Parses flags, calls the API, maps results to exit codes.

Exit codes (DESIGN §7): 0 success ending; 1 failure/error/cancelled ending or
a run error; 2 invalid workflow or command line; 3 waiting for an answer;
4 stopped (step budget, interrupt, no backend).
"""

from __future__ import annotations

import json
import os
import sys
from enum import Enum
from pathlib import Path
from typing import Any, List, Optional

import typer
from typer.core import TyperGroup

from wfexec import __version__
from wfexec.commands import entrypoints

from wfexec.exit_codes import exit_code_for

def _rich_help() -> Any:
    """typer's boxed, coloured help at a terminal; click's plain text for a pipe, a program reading `--help` (and
    without rich's Markdown renderer to import, a third of the command's start-up)."""
    return "rich" if sys.stdout.isatty() and os.environ.get("TERM") != "dumb" else None


class _Commands(TyperGroup):
    """wfexec's commands. A WfexecError a command did not handle itself (a path its command line named that cannot
    be read or written, …) ends it here, in the error's one line and with its exit code: never a traceback (with
    --debug, the traceback too)."""

    def invoke(self, ctx):
        from wfexec.errors import WfexecError

        try:
            return super().invoke(ctx)
        except WfexecError as exc:
            if _state["debug"]:
                import traceback

                typer.echo("".join(traceback.format_exception(exc)).rstrip(), err=True)
            typer.echo(exc.format(), err=True)
            raise typer.Exit(exit_code_for(exc)) from None


app = typer.Typer(
    cls=_Commands,
    name="wfexec",
    help="Run YAML agent workflows deterministically: validate, run, inspect.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=_rich_help(),
)


class OutputFormat(str, Enum):
    text = "text"
    json = "json"


class Durability(str, Enum):
    normal = "normal"
    full = "full"


class OnAsk(str, Enum):
    pause = "pause"
    reject = "reject"


def _version(value: bool):
    if value:
        typer.echo(f"wfexec {__version__}")
        raise typer.Exit(0)


@app.callback()
def main_options(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
    debug: bool = typer.Option(False, "--debug", help="Show Python tracebacks for internal errors."),
):
    """Run YAML agent workflows deterministically."""
    _state["debug"] = debug


_state = {"debug": False}


_print_json = entrypoints.print_json


def _call(command, **params) -> int:
    """Run one of the plain command functions, with typer's report of a command-line problem."""
    try:
        return command(**params, debug=_state["debug"])
    except entrypoints.CommandLineError as exc:
        raise typer.BadParameter(exc.message, param_hint=exc.param_hint) from None


# --------------------------------------------------------------------------- #
@app.command()
def validate(
    paths: List[Path] = typer.Argument(..., help="workflow.yaml files or skill folders containing one."),
    format: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json."),
    strict: bool = typer.Option(False, "--strict", help="Treat warnings as errors."),
):
    """Check workflows against the schema and the semantic rules; say how much of each runs as code."""
    raise typer.Exit(_call(entrypoints.validate, paths=paths, format=format, strict=strict))


@app.command()
def test(
    paths: Optional[List[Path]] = typer.Argument(None, help="Skill folders, workflow files, test files, or folders "
                                                            "of skills (default: the current folder)."),
    coverage: bool = typer.Option(False, "--coverage", help="Print node and branch coverage per workflow, and "
                                                            "every branch no case took."),
    format: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json."),
    junit: Optional[Path] = typer.Option(None, "--junit", metavar="FILE", help="Also write the results as JUnit "
                                                                             "XML, for CI."),
    fail_under: Optional[float] = typer.Option(None, "--fail-under", min=0, max=100, metavar="N",
                                               help="Exit 1 when branch coverage is below N percent."),
):
    """Run the test cases in each skill's tests/*.yaml; exit 1 when one fails, 2 when a test file is invalid."""
    from wfexec.commands.testing import test_command

    raise typer.Exit(test_command(paths or [], coverage=coverage, format=format.value, junit=junit,
                                  fail_under=fail_under, debug=_state["debug"]))


# --------------------------------------------------------------------------- #
def _run_command(name: str, argument: Any, call, doc: str) -> None:
    """The command `name` (run, resume, states), its options made from their one declaration
    (`wfexec.running.request`): each declared option the command takes, with its flag, type, default and help.
    `argument` is the command's positional parameter: (its name, its type, its typer.Argument)."""
    import inspect

    from wfexec.running.request import options_of

    parameters = [inspect.Parameter(argument[0], inspect.Parameter.KEYWORD_ONLY, default=argument[2],
                                    annotation=argument[1])]
    for spec in options_of("cli", name):
        annotation, default = _typer_option(spec)
        parameters.append(inspect.Parameter(spec.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                            annotation=annotation))

    def command(**given: Any) -> None:
        raise typer.Exit(_call(call, **given))

    command.__name__ = command.__qualname__ = name
    command.__doc__ = doc
    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in parameters}
    app.command(name)(command)


_CHOICES: dict[tuple[str, ...], type[Enum]] = {("text", "json"): OutputFormat, ("normal", "full"): Durability,
                                                ("pause", "reject"): OnAsk}
_TYPES: dict[str, Any] = {"int": int, "bool": bool, "str": str, "bool | None": Optional[bool],
                          "float | None": Optional[float], "str | None": Optional[str], "Any": Optional[str],
                          "Path | None": Optional[Path], "list[str]": List[str], "list[Path]": List[Path],
                          "dict[str, Any]": List[str]}


def _typer_option(spec) -> tuple[Any, Any]:
    """(annotation, typer.Option) of a declared run option; a mapping is written as repeatable KEY=VALUE."""
    from wfexec.running.request import RunRequest

    declared = RunRequest.__annotations__[spec.name]
    flags = [spec.flag + (f"/{spec.secondary}" if spec.secondary else "")] + ([spec.short] if spec.short else [])
    how = {"help": spec.help, "metavar": spec.metavar, "envvar": spec.envvar, "min": spec.min, "max": spec.max}
    if spec.choices:
        choice = _CHOICES[spec.choices]
        if spec.default is None:
            return Optional[choice], typer.Option(None, *flags, **how)
        return choice, typer.Option(choice(spec.default), *flags, **how)
    annotation = _TYPES[declared]
    default = [] if spec.form in ("pairs", "list") else spec.default
    return annotation, typer.Option(default, *flags, **how)


def _declared(name: str) -> Any:
    """The typer.Option of a run option other commands share (`--store`, `--temporal`), from its declaration."""
    from wfexec.running.request import options

    return _typer_option(options()[name])[1]


STORE_OPTION = _declared("store")
TEMPORAL_OPTION = _declared("temporal")
TASK_QUEUE_OPTION = _declared("task_queue")


_run_command("run", ("path", Path, typer.Argument(..., help="A workflow.yaml file or a skill folder containing one.")),
             entrypoints.run, "Run a workflow to one of its endings. The run is recorded so it can be resumed.")
_run_command("resume", ("run_id", str, typer.Argument(..., metavar="RUN", help="The run's id (or a unique prefix of "
                                                                               "4 characters or more).")),
             entrypoints.resume, "Continue a run that is waiting for an answer or was stopped.")
_run_command("states", ("path", Path, typer.Argument(..., help="A folder of .md/.sh states, a .zip, a Raymond .yaml, "
                                                              "or one state file.")),
             entrypoints.states, "Run a folder of md/sh states on its own, recorded like a run (resume, show, cancel).")


class RunStatus(str, Enum):
    running = "running"
    waiting = "waiting"
    interrupted = "interrupted"
    completed = "completed"
    failed = "failed"
    stopped = "stopped"
    cancelled = "cancelled"


# The most `runs --limit` takes: a store holds fewer runs, and past 2**63-1 SQLite cannot take the number at all.
RUNS_LIMIT = 1_000_000_000


@app.command()
def runs(
    status: Optional[RunStatus] = typer.Option(None, "--status", help="Only runs with this status."),
    limit: int = typer.Option(50, "--limit", min=0, max=RUNS_LIMIT, metavar="N",
                              help="List the newest N runs (0: all of them)."),
    format: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json."),
    store: Optional[Path] = STORE_OPTION,
    temporal: Optional[str] = TEMPORAL_OPTION,
):
    """List recorded runs, newest first."""
    raise typer.Exit(_call(entrypoints.runs, **locals()))


@app.command()
def show(
    run_id: str = typer.Argument(..., metavar="RUN", help="The run's id (or a unique prefix of 4 characters or more)."),
    state: bool = typer.Option(False, "--state", help="Also print the run's state as YAML."),
    agent: Optional[str] = typer.Option(None, "--agent", metavar="NAME",
                                        help="Print what a states agent was sent and replied, state by state."),
    output: bool = typer.Option(False, "--output",
                                help="Print what the run's commands and scripts wrote, step by step (the store "
                                     "keeps the last 64 KiB of each step)."),
    format: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json."),
    store: Optional[Path] = STORE_OPTION,
    temporal: Optional[str] = TEMPORAL_OPTION,
):
    """Show a run: status, current node, pending question, last error, history with timings."""
    raise typer.Exit(_call(entrypoints.show, **locals()))


@app.command()
def mcp(
    store: Optional[Path] = STORE_OPTION,
    root: Optional[List[Path]] = typer.Option(
        None, "--root", metavar="DIR",
        help="A folder the tools may read workflows under (repeatable; default: the working directory, "
             "~/.claude/skills and ~/.claude/plugins)."),
):
    """Serve wfexec's commands as MCP tools over stdio (`claude mcp add wfexec -- wfexec mcp`)."""
    from wfexec.mcp_server import serve

    raise typer.Exit(serve(store, root or None))


@app.command()
def lsp():
    """Serve a language server over stdio for workflow files, states folders and their state files (needs
    wfexec[lsp]): validate's diagnostics as you type, hover, completion, go to definition, references, rename."""
    try:
        import pygls  # noqa: F401
    except ImportError:
        typer.echo("error: `wfexec lsp` needs pygls — pip install 'wfexec[lsp]'", err=True)
        raise typer.Exit(exit_code_for("unavailable"))
    from wfexec.lsp.server import serve as serve_lsp

    raise typer.Exit(serve_lsp())


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", "--host", metavar="ADDRESS",
                             help="Listen here (another address than 127.0.0.1 needs --token-file)."),
    port: int = typer.Option(8765, "--port", min=0, max=65535, metavar="N", help="The port (0: any free one)."),
    store: Optional[Path] = STORE_OPTION,
    root: List[Path] = typer.Option([], "--root", metavar="DIR",
                                    help="Offer the workflows under DIR to launch (repeatable)."),
    read_only: bool = typer.Option(False, "--read-only", help="Show runs; refuse to launch, answer or cancel."),
    token_file: Optional[Path] = typer.Option(None, "--token-file", metavar="FILE",
                                              help="Use the token in FILE instead of a new one each start."),
    temporal: Optional[str] = TEMPORAL_OPTION,
):
    """Watch, answer and launch runs in the browser (needs wfexec[serve]); prints the address to open."""
    from wfexec.serve.command import serve as serve_web

    raise typer.Exit(serve_web(host=host, port=port, store=store, roots=root, read_only=read_only,
                               token_file=token_file, temporal=temporal, debug=_state["debug"]))


@app.command()
def cancel(
    run_id: str = typer.Argument(..., metavar="RUN", help="The run's id (or a unique prefix of 4 characters or more)."),
    store: Optional[Path] = STORE_OPTION,
    temporal: Optional[str] = TEMPORAL_OPTION,
    take_over: bool = typer.Option(False, "--take-over", help="Cancel a run whose lease names a process on another "
                                   "machine, once that process is surely gone (a replaced container)."),
):
    """Cancel a run that is waiting or stopped, so it is never resumed."""
    raise typer.Exit(_call(entrypoints.cancel, **locals()))


@app.command()
def worker(
    temporal: str = typer.Option(..., "--temporal", metavar="HOST:PORT", envvar="WFEXEC_TEMPORAL",
                                 help="The Temporal cluster to serve (env WFEXEC_TEMPORAL)."),
    task_queue: str = TASK_QUEUE_OPTION,
    workdir: Optional[Path] = typer.Option(None, "--workdir", metavar="DIR",
                                           help="Where runs' relative paths resolve and their workflow bundles are "
                                                "unpacked (default: the folder each run was started from)."),
    blob_retention: str = typer.Option(
        "7d", "--blob-retention", metavar="DURATION", envvar="WFEXEC_BLOB_RETENTION",
        help="Remove a run's stored large state this long after it ended (7d, 12h, 30m, 0; off: never; "
             "env WFEXEC_BLOB_RETENTION)."),
):
    """Run the steps of runs started with --temporal, until Ctrl-C (needs wfexec[temporal])."""
    from wfexec.commands.temporal_runs import worker as serve_worker

    retention = None if blob_retention.strip().lower() == "off" else _duration(blob_retention, "--blob-retention")
    raise typer.Exit(serve_worker(temporal, task_queue, _state["debug"], workdir, blob_retention=retention))


def _duration(text: str, option: str) -> float:
    from wfexec.commands.gc import duration_option

    try:
        return duration_option(text, option)
    except entrypoints.CommandLineError as exc:
        raise typer.BadParameter(exc.message, param_hint=exc.param_hint) from None


@app.command()
def gc(
    temporal: str = typer.Option(..., "--temporal", metavar="HOST:PORT", envvar="WFEXEC_TEMPORAL",
                                 help="The Temporal cluster whose live runs are kept (env WFEXEC_TEMPORAL)."),
    retention: str = typer.Option("0", "--retention", metavar="DURATION",
                                  help="Keep the blobs of runs that ended less than this long ago (default 0)."),
    grace: str = typer.Option("1h", "--grace", metavar="DURATION",
                              help="Keep the blobs of runs the server does not know (yet) if this recent."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Say what would be removed; remove nothing."),
    format: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json."),
):
    """Remove the stored large state (blobs) that no live run on the Temporal cluster refers to."""
    from wfexec.commands.gc import gc as collect

    retention_seconds, grace_seconds = _duration(retention, "--retention"), _duration(grace, "--grace")
    raise typer.Exit(collect(temporal, retention_seconds, grace_seconds, dry_run, format.value, _state["debug"]))


# --------------------------------------------------------------------------- #
@app.command()
def schema(
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout."),
    plugins: bool = typer.Option(False, "--plugins", help="Also include the types of installed plugins."),
    v8: bool = typer.Option(False, "--v8", help="The schema of blueprint-lib v8 files (ending nodes, default_error, "
                                                "composites), as their authors write them."),
):
    """Print the workflow JSON Schema, with every built-in (and with --plugins, plugin) type's parameters."""
    from wfexec.outputs.scaffold import published_schema_text

    text = published_schema_text(plugins, v8)
    if output:
        from wfexec.system.files import write_output

        write_output(output, text, option="--output")
    else:
        sys.stdout.write(text)


class Kind(str, Enum):
    all = "all"
    precondition = "precondition"
    consequence = "consequence"


@app.command()
def types(
    name: Optional[str] = typer.Argument(None, metavar="[NAME]", help="Show this one type in full."),
    kind: Kind = typer.Option(Kind.all, "--kind", help="precondition, consequence or all."),
    filter: Optional[str] = typer.Option(None, "--filter", metavar="TEXT",
                                         help="Only types whose name, description, domain or package holds TEXT."),
    format: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json."),
):
    """List every registered precondition and consequence type, by package and domain (files, git, process, …);
    with NAME, one type's parameters, effects and an example."""
    from wfexec.types.registry import consequences, preconditions

    registries = [r for r in (preconditions(), consequences()) if kind in (Kind.all, r.kind)]
    if name is not None:
        raise typer.Exit(_show_type(name, registries, format == OutputFormat.json))
    wanted = (filter or "").casefold()

    def shown(spec) -> bool:
        return not wanted or any(wanted in text.casefold() for text in (spec.name, spec.doc, _domain(spec),
                                                                         spec.package))

    if format == OutputFormat.json:
        _print_json([{"kind": s.kind, "name": s.name, "doc": s.doc, "parameters": s.params,
                      "required": list(s.required), "effects": list(s.effects), "idempotent": s.idempotent,
                      "source": s.source, "package": s.package, "domain": _domain(s)}
                     for r in registries for s in r.specs() if shown(s)])
        raise typer.Exit(entrypoints.refuse_broken_plugins())
    for registry in registries:
        groups: dict[tuple[str, str], list] = {}
        for spec in registry.specs():
            if shown(spec):
                groups.setdefault((spec.package, _domain(spec)), []).append(spec)
        typer.echo(f"{registry.kind}s:")
        # wfexec's own first, then each plugin's; within a package, by domain
        for package, domain in sorted(groups, key=lambda key: (key[0] != "wfexec", key)):
            typer.echo(f"  {domain} ({package}):")
            for spec in groups[(package, domain)]:
                params = ", ".join(p + ("*" if p in spec.required else "") for p in spec.params)
                effects = f" [{', '.join(spec.effects)}]" if spec.effects else ""
                typer.echo(f"    {spec.name}({params}){effects}\n        {spec.doc}")
        for problem in registry.problems:
            typer.echo(f"  warning: {problem}", err=True)
    typer.echo("(* required)")
    raise typer.Exit(entrypoints.refuse_broken_plugins())


def _domain(spec) -> str:
    """What a type is about, from the module that defines it: `wfexec.types.consequences.git` → git."""
    return spec.source.rsplit(".", 1)[-1] if "." in spec.source else spec.source


# --------------------------------------------------------------------------- #
# Skills, pictures and the language reference: wfexec.outputs.skillgen, wfexec.outputs.graph, wfexec.outputs.docgen, wfexec.outputs.scaffold.

def _show_type(name: str, registries: list, as_json: bool) -> int:
    from wfexec.language.diagnostics import did_you_mean
    from wfexec.outputs.docgen import type_context, yaml_block

    found = [(r.kind, r.get(name)) for r in registries if r.get(name) is not None]
    if not found:
        names = [n for r in registries for n in r.names()]
        typer.echo(f"error: no type '{name}' — " + (did_you_mean(name, names) or "`wfexec types` lists them"),
                   err=True)
        return exit_code_for("invalid")
    shown = []
    for kind, spec in found:  # a name may be both a precondition and a consequence
        entry = type_context(kind, [spec])["types"][0]
        shown.append({"kind": kind, **entry, "package": spec.package})
        if as_json:
            continue
        typer.echo(f"{kind} {spec.name}  (from {spec.package})\n  {entry['doc']}\n")
        if entry["params"]:
            width = max(len(p["name"]) for p in entry["params"]) + 1
            typer.echo("parameters (* required):")
            for p in entry["params"]:
                mark = "*" if p["required"] else " "
                typer.echo(f"  {p['name'] + mark:<{width}}  {p['type']}  {p['description']}".rstrip())
        else:
            typer.echo("no parameters")
        typer.echo(f"effects: {', '.join(entry['effects']) or 'none'}; idempotent: "
                   f"{'yes' if entry['idempotent'] else 'no'}\nexample:\n" +
                   "\n".join("  " + line for line in yaml_block(entry["example"]).splitlines()))
    if as_json:
        _print_json(shown)
    return 0


def _picture_despite_errors(path, expand: bool):
    """The picture of a workflow with errors (graph.picture_with_errors), or None when it is not one at all."""
    from wfexec.api import check_with_summary
    from wfexec.outputs.graph import collapsed, picture_with_errors

    checked = check_with_summary(path)
    if checked.raw_nodes is None or not isinstance(checked.data, dict):
        return None
    drawn = picture_with_errors(checked, checked.data)
    return drawn if expand else collapsed(drawn, checked.composite_of or {})


def _print_workflow_errors(error, path) -> None:
    for diagnostic in error.diagnostics:
        typer.echo(diagnostic.format(), err=True)
    count = len(error.diagnostics)
    typer.echo(f"{path}: the workflow has {count} error{'s' if count != 1 else ''} (wfexec validate shows them all)",
               err=True)


@app.command()
def skill(
    paths: List[Path] = typer.Argument(..., help="Skill folders holding a workflow.yaml (or the workflow.yaml files)."),
    check: bool = typer.Option(False, "--check", help="Write nothing; exit 1 and print a diff when SKILL.md is stale."),
    force: bool = typer.Option(False, "--force", help="Replace a SKILL.md that wfexec did not write."),
):
    """Write a skill's SKILL.md from its workflow.yaml (frontmatter, how to run it, rules without wfexec)."""
    from wfexec.errors import CannotRead, CannotWrite
    from wfexec.language.diagnostics import WorkflowError
    from wfexec.outputs.skillgen import SkillError, check as check_skill, write as write_skill

    from wfexec.system.files import check_readable

    code = exit_code_for("completed")
    for path in paths:
        try:
            check_readable(path)  # CannotRead, before pathlib's is_dir raises PermissionError
            if check:
                target, diff = check_skill(path)
                if diff is None:
                    typer.echo(f"{target}: up to date", err=True)
                    continue
                sys.stdout.write(diff)
                typer.echo(f"{target}: stale — regenerate it with: wfexec skill {path}", err=True)
                code = max(code, exit_code_for("failed"))
            else:
                target, changed = write_skill(path, force=force)
                typer.echo(f"{target}: {'written' if changed else 'up to date'}", err=True)
        except (SkillError, CannotRead, CannotWrite) as exc:  # the next skill is still written
            typer.echo(exc.format(), err=True)
            code = exit_code_for(exc)
        except WorkflowError as exc:
            _print_workflow_errors(exc, path)
            code = exit_code_for(exc)
    raise typer.Exit(code)


class GraphFormat(str, Enum):
    mermaid = "mermaid"
    dot = "dot"
    svg = "svg"
    png = "png"
    html = "html"


@app.command()
def expand(
    path: Path = typer.Argument(..., help="A workflow.yaml, or a skill folder containing one."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="FILE", help="Write here instead of stdout."),
):
    """Print a v8 workflow with its composites (confirm, gated_action, goal_seek) expanded into the nodes that
    run, as YAML."""
    from wfexec.api import resolve_workflow_path
    from wfexec.language.diagnostics import ERROR
    from wfexec.outputs.expansion import expanded
    from wfexec.system.files import check_readable, check_writable, write_output

    check_readable(path)  # CannotRead, before pathlib's is_dir raises PermissionError
    if output:
        check_writable(output, option="--output")
    text, problems = expanded(resolve_workflow_path(path))
    for diagnostic in problems:
        typer.echo(diagnostic.format(), err=True)
    if text is None or any(d.severity == ERROR for d in problems):
        raise typer.Exit(exit_code_for("invalid"))
    if output:
        write_output(output, text, option="--output")
    else:
        sys.stdout.write(text)


@app.command()
def convert(
    path: Path = typer.Argument(..., help="A states folder or .zip, or a Raymond .yaml."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="PATH",
                                          help="The .yaml to write (default: stdout), or the folder to make from a "
                                               ".yaml (default: its name without .yaml)."),
):
    """Turn a states folder or .zip into one Raymond .yaml (`ray convert`), or a .yaml back into a folder.
    `wfexec states convert` is the same command."""
    from wfexec.commands.states_convert import convert_command

    raise typer.Exit(convert_command(path, output))


@app.command()
def graph(
    path: Path = typer.Argument(..., help="A workflow.yaml, a skill folder containing one, or a states folder."),
    format: GraphFormat = typer.Option(GraphFormat.mermaid, "--format", help="mermaid, dot, or svg/png (needs "
                                       "Graphviz); html for a states folder: the diagram and each state's file."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="FILE", help="Write here instead of stdout."),
    expand: bool = typer.Option(False, "--expand", help="Draw each v8 composite as the nodes it expands into."),
):
    """Draw a workflow (node shapes by type, edges by branch, endings coloured by type) or a states folder."""
    from wfexec.api import load
    from wfexec.protocol.folders import workflow_document
    from wfexec.language.diagnostics import WorkflowError
    from wfexec.outputs.graph import (GraphvizFailed, GraphvizMissing, collapsed, dot_of, mermaid_of, picture,
                                      render)
    from wfexec.system.files import check_readable, check_writable

    check_readable(path)  # CannotRead, before pathlib's is_dir raises PermissionError
    if output is not None:
        check_writable(output, option="--output")  # before drawing (Graphviz may take a while)
    from wfexec.protocol.folders import may_be_states

    # A states folder, .zip or Raymond .yaml; a folder with neither workflow.yaml nor state files is drawn as the
    # workflow it lacks, which says so, as validate, plan and expand do.
    if workflow_document(path) is None and may_be_states(Path(path)):
        from wfexec.outputs.states_graph import states_picture
        from wfexec.protocol.errors import ScopeError
        from wfexec.protocol.scopes import open_scope

        try:
            scope = open_scope(path, str(path))
            drawn = states_picture(scope, Path(path).name)
        except ScopeError as exc:
            typer.echo(exc.format(), err=True)
            raise typer.Exit(exit_code_for("invalid"))
        if format == GraphFormat.html:  # `ray diagram --html`: the diagram and each state's file, in one page
            from wfexec.outputs.states_html import states_html

            try:
                page = states_html(scope, Path(path).name)
            except (GraphvizMissing, GraphvizFailed) as exc:
                typer.echo(f"error: {exc}", err=True)
                raise typer.Exit(exit_code_for("invalid" if isinstance(exc, GraphvizMissing) else "failed"))
            _write_output(page.encode("utf-8"), output)
            return
    elif format == GraphFormat.html:
        typer.echo("error: --format html draws a states folder; for a workflow use svg, png, dot or mermaid", err=True)
        raise typer.Exit(exit_code_for("invalid"))
    else:
        try:
            workflow = load(path)
            drawn = picture(workflow) if expand else collapsed(picture(workflow), dict(workflow.composite_of))
        except WorkflowError as exc:
            drawn = _picture_despite_errors(path, expand)
            _print_workflow_errors(exc, path)
            if drawn is None:
                raise typer.Exit(exit_code_for(exc))
            typer.echo(f"{path}: drawn as far as it goes; nodes that did not compile and targets that do not exist "
                       "are marked", err=True)
    if format == GraphFormat.mermaid:
        data: bytes = mermaid_of(drawn).encode("utf-8")
    else:
        data = dot_of(drawn).encode("utf-8")
    if format in (GraphFormat.svg, GraphFormat.png):
        try:
            data = render(data.decode("utf-8"), format.value)
        except GraphvizMissing as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(exit_code_for("invalid"))
        except GraphvizFailed as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(exit_code_for("failed"))
    _write_output(data, output)


def _write_output(data: bytes, output: Optional[Path]) -> None:
    """The bytes to stdout, or to the file (saying so)."""
    if output is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    from wfexec.system.files import write_output

    write_output(output, data, option="--output")
    typer.echo(f"{output}: written", err=True)


@app.command()
def plan(
    path: Path = typer.Argument(..., help="A workflow.yaml file or a skill folder containing one."),
    format: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json."),
):
    """List what a run may do outside its state (files, commands, git, URLs, LLM calls, questions); runs nothing."""
    from wfexec.api import load
    from wfexec.language.diagnostics import WorkflowError
    from wfexec.outputs.plan import plan as side_effects, plan_text
    from wfexec.system.files import check_readable

    check_readable(path)  # CannotRead, before pathlib's is_dir raises PermissionError
    try:
        workflow = load(path)
    except WorkflowError as exc:
        _print_workflow_errors(exc, path)
        raise typer.Exit(exit_code_for(exc))
    manifest = side_effects(workflow)
    if format == OutputFormat.json:
        _print_json(manifest)
    else:
        typer.echo(plan_text(manifest), nl=False)


@app.command()
def docs(
    topic: Optional[str] = typer.Argument(None, metavar="[TOPIC]",
                                          help="A page (schema, preconditions, consequences, execution) or a word "
                                               "of a heading (user_prompt, append_state, exit codes)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="DIR",
                                          help="Build the reference as Markdown files into DIR/workflow/ instead."),
    check: bool = typer.Option(False, "--check", help="Write nothing; exit 1 and print a diff when a file in DIR "
                                                      "(default lib) is stale."),
    plugins: bool = typer.Option(False, "--plugins", help="Also document the types of installed plugins."),
):
    """Show the language reference at the terminal (its contents; a page; the sections a word names), or build it
    into a folder with --output DIR."""
    from wfexec.outputs.docgen import UnknownTopic, contents, stale, topic_text, write

    if check:
        output = output or Path("lib")
        found = stale(output, include_plugins=plugins)
        for target, diff in found:
            sys.stdout.write(diff)
            typer.echo(f"{target}: stale — regenerate it with: wfexec docs --output {output}", err=True)
        if not found:
            typer.echo(f"{output}: up to date", err=True)
        raise typer.Exit(exit_code_for("failed" if found else "completed"))
    if output is not None:
        if topic is not None:
            typer.echo("error: --output builds the whole reference; leave out the topic", err=True)
            raise typer.Exit(exit_code_for("invalid"))
        from wfexec.system.files import check_writable

        check_writable(output, folder=True, option="--output")
        for target, changed in write(output, include_plugins=plugins):
            typer.echo(f"{target}: {'written' if changed else 'up to date'}", err=True)
        return
    try:
        text = contents(plugins) if topic is None else topic_text(topic, plugins)
    except UnknownTopic as exc:
        typer.echo(f"error: nothing in the reference is called '{topic}' — {exc.args[0]}", err=True)
        raise typer.Exit(exit_code_for("invalid"))
    sys.stdout.write(text)


new_app = typer.Typer(help="Create things from templates.", no_args_is_help=True, rich_markup_mode=_rich_help())
app.add_typer(new_app, name="new")


@new_app.callback()
def new_options():
    """Create things from templates."""


@new_app.command("skill")
def new_skill(
    name: str = typer.Argument(..., help="The skill's name: lowercase letters, digits and hyphens."),
    dir: Path = typer.Option(Path("skills"), "--dir", metavar="DIR", help="The folder the skill folder goes in."),
    v8: bool = typer.Option(False, "--v8", help="Write the workflow as a blueprint-lib v8 file (ending nodes, "
                                                 "default_error)."),
):
    """Scaffold DIR/NAME/: workflow.yaml, answers.yaml (so it runs end to end), tests/NAME.yaml (so `wfexec test`
    checks it) and SKILL.md."""
    from wfexec.language.diagnostics import WorkflowError
    from wfexec.outputs.scaffold import new_skill as scaffold_skill
    from wfexec.outputs.skillgen import SkillError

    try:
        written = scaffold_skill(name, dir, v8=v8)
    except SkillError as exc:
        typer.echo(exc.format(), err=True)
        raise typer.Exit(exit_code_for(exc))
    except WorkflowError as exc:  # the template itself is broken: a bug, but say what
        _print_workflow_errors(exc, dir / name)
        raise typer.Exit(exit_code_for(exc))
    for path in written:
        typer.echo(f"{path}: written", err=True)
    folder = written[0].parent.as_posix()
    typer.echo(f"next: wfexec run {folder} --answers {folder}/answers.yaml", err=True)
    typer.echo(f"      wfexec test {folder} --coverage", err=True)


# --------------------------------------------------------------------------- #
# The table `wfexec.launcher` parses the common command lines with, made from the declarations above.

LEAN_COMMANDS = ("run", "resume", "validate", "states", "runs", "show", "cancel")
LEAN_TABLE = Path(__file__).with_name("lean_table.json")


def lean_table() -> dict:
    """For each command in LEAN_COMMANDS: its arguments and options as typer declares them."""
    import typing

    import typer.main

    def kind(annotation) -> dict:
        inner = typing.get_args(annotation)[0] if typing.get_origin(annotation) in (list, List) else annotation
        if isinstance(inner, type) and issubclass(inner, Enum):
            return {"type": "choice", "choices": [member.value for member in inner]}
        names = {str: "text", Path: "path", int: "int", float: "float", bool: "flag"}
        return {"type": names[inner]}

    group = typer.main.get_command(app)
    table: dict[str, Any] = {}
    for name in LEAN_COMMANDS:
        command = group.commands[name]  # type: ignore[attr-defined]  # a group's commands
        arguments, options = [], {}
        for param in command.params:
            described = {"dest": param.name, **kind(param.type_descriptor.annotation)}
            if isinstance(param.default, Enum):
                described["default"] = param.default.value
            else:
                described["default"] = param.default
            if param.param_type_name == "argument":
                arguments.append({**described, "variadic": param.nargs == -1})
                continue
            described.update(multiple=param.multiple, envvar=param.envvar, min=param.min, max=param.max)
            for opt in param.opts:
                options[opt] = described
        table[name] = {"arguments": arguments, "options": options}
    table["--help"] = piped_help()
    return table


def piped_help() -> dict[str, str]:
    """What `wfexec --help` and `wfexec COMMAND --help` (for LEAN_COMMANDS) print to a pipe, keyed by the
    words before `--help`: click's plain text, 80 columns wide, as a process that is not at a terminal gets it."""
    import subprocess

    environment = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    printed = {}
    for words in ([], *([name] for name in LEAN_COMMANDS)):
        done = subprocess.run([sys.executable, "-c", "import sys; from wfexec.cli import app; "
                               "app(args=sys.argv[1:], prog_name='wfexec')", *words, "--help"],
                              capture_output=True, text=True, env=environment, check=True)
        printed[" ".join(words)] = done.stdout
    return printed


def write_lean_table() -> None:
    LEAN_TABLE.write_text(json.dumps(lean_table(), indent=1, sort_keys=True) + "\n", encoding="utf-8")


def main() -> None:
    from wfexec.system import signals

    if sys.argv[1:3] == ["states", "convert"] and not os.path.exists("convert"):
        del sys.argv[1]  # `wfexec states convert PATH` (a states folder named `convert` still runs)
    signals.install()
    try:
        app()
    except SystemExit as exc:
        entrypoints.exit_command(exc.code)
    except KeyboardInterrupt as exc:
        entrypoints.exit_interrupted(exc)
    except BrokenPipeError:
        entrypoints.exit_on_closed_output()


if __name__ == "__main__":  # pragma: no cover
    main()
