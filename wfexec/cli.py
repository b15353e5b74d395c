"""The `wfexec` command. Parses flags, calls the API, maps results to exit codes.

Exit codes (DESIGN §7): 0 success ending; 1 failure/error/cancelled ending or
a run error; 2 invalid workflow or command line; 3 waiting for an answer;
4 stopped (step budget, interrupt, no backend).
"""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from wfexec import __version__

from wfexec.exit_codes import exit_code_for

app = typer.Typer(
    name="wfexec",
    help="Run YAML agent workflows deterministically: validate, run, inspect.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


STORE_OPTION = typer.Option(None, "--store", metavar="FILE", envvar="WFEXEC_STORE",
                            help="The run store (default .wfexec/runs.db; env WFEXEC_STORE).")


BACKEND_OPTION = typer.Option(None, "--backend", metavar="SPEC", envvar="WFEXEC_BACKEND",
                              help="The LLM backend: claude, claude:model=opus, command:PROGRAM ARGS, replay:FILE.")
RECORD_OPTION = typer.Option(None, "--record", metavar="FILE", help="Write every LLM reply and answer to a cassette.")
REPLAY_OPTION = typer.Option(None, "--replay", metavar="FILE", help="Answer LLM steps and questions from a cassette.")


class OutputFormat(str, Enum):
    text = "text"
    json = "json"


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


def _print_json(data) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


# --------------------------------------------------------------------------- #
@app.command()
def validate(
    paths: List[Path] = typer.Argument(..., help="workflow.yaml files or skill folders containing one."),
    format: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json."),
    strict: bool = typer.Option(False, "--strict", help="Treat warnings as errors."),
):
    """Check workflows against the schema and the semantic rules; say how much of each runs as code."""
    from wfexec.api import check_with_summary, resolve_workflow_path
    from wfexec.language.diagnostics import ERROR, WARNING

    _refuse_broken_plugins()
    everything = []
    files = []
    for path in paths:
        checked = check_with_summary(path)
        diagnostics = checked.diagnostics
        if strict:
            diagnostics = [d if d.severity == ERROR else _as_error(d) for d in diagnostics]
        everything.extend(diagnostics)
        shown = str(resolve_workflow_path(path))
        if checked.summary is not None:
            files.append({"file": shown, "summary": checked.summary.to_json()})
        if format == OutputFormat.text:
            for d in diagnostics:
                typer.echo(d.format())
            if not any(d.severity == ERROR for d in diagnostics):
                warnings = sum(1 for d in diagnostics if d.severity == WARNING)
                note = f" ({warnings} warning{'s' if warnings != 1 else ''})" if warnings else ""
                typer.echo(f"{shown}: valid{note}", err=True)
            if checked.summary is not None:
                typer.echo(f"{shown}: {checked.summary.line()}", err=True)
                for line in checked.summary.step_lines():
                    typer.echo(line, err=True)
    errors = sum(1 for d in everything if d.severity == ERROR)
    if format == OutputFormat.json:
        _print_json({"diagnostics": [d.to_json() for d in everything], "files": files})
    elif errors:
        typer.echo(f"{errors} error{'s' if errors != 1 else ''} in {len(paths)} file{'s' if len(paths) != 1 else ''}",
                   err=True)
    raise typer.Exit(exit_code_for("invalid" if errors else "completed"))


def _refuse_broken_plugins() -> None:
    """Exit 2, naming each plugin's distribution and entry point, when an installed plugin cannot be used."""
    from wfexec.types.registry import BrokenPlugins, check_plugins

    try:
        check_plugins()
    except BrokenPlugins as exc:
        typer.echo(exc.format(), err=True)
        raise typer.Exit(exit_code_for(exc))


def _as_error(diagnostic):
    from dataclasses import replace

    return replace(diagnostic, severity="error")


# --------------------------------------------------------------------------- #
@app.command()
def run(
    path: Path = typer.Argument(..., help="A workflow.yaml file or a skill folder containing one."),
    input: List[str] = typer.Option([], "--input", "-i", metavar="KEY=VALUE", help="An input as KEY=VALUE (repeatable)."),
    input_file: Optional[Path] = typer.Option(None, "--input-file", metavar="FILE", help="A YAML/JSON file of inputs."),
    set_: List[str] = typer.Option([], "--set", metavar="PATH=VALUE", help="Set a state path before the run: PATH=VALUE (repeatable)."),
    answer: List[str] = typer.Option([], "--answer", "-a", metavar="NODE=ANSWER", help="Answer a question: NODE=OPTION_ID (repeatable)."),
    answers: List[Path] = typer.Option([], "--answers", metavar="FILE", help="A YAML file mapping node ids to answers."),
    non_interactive: bool = typer.Option(False, "--non-interactive",
                                         help="Never prompt; a question without an answer exits 3."),
    max_steps: int = typer.Option(10_000, "--max-steps", min=1, metavar="N", help="Stop after this many steps (exit 4)."),
    trace: bool = typer.Option(False, "--trace", help="Print each node, action, condition and route to stderr."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Run only what changes nothing outside the run: print what each effect would do, and the LLM prompts."),
    state_out: Optional[Path] = typer.Option(None, "--state-out", metavar="FILE", help="Write the final state as JSON here."),
    format: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json."),
    store: Optional[Path] = STORE_OPTION,
    ephemeral: bool = typer.Option(False, "--ephemeral", help="Do not record the run in the store (no resume)."),
    backend: Optional[str] = BACKEND_OPTION,
    record: Optional[Path] = RECORD_OPTION,
    replay: Optional[Path] = REPLAY_OPTION,
):
    """Run a workflow to one of its endings. The run is recorded so it can be resumed."""
    from wfexec.commands.run import RunRequest, execute_run

    request = RunRequest(path=path, inputs=input, input_file=input_file, overrides=set_, answers=answer,
                         answer_files=answers, interactive=_interactive(non_interactive), max_steps=max_steps,
                         trace=trace, dry_run=dry_run, state_out=state_out, json_output=format == OutputFormat.json,
                         debug=_state["debug"], store=store, ephemeral=ephemeral, backend=backend, record=record,
                         replay=replay)
    raise typer.Exit(execute_run(request))


def _interactive(non_interactive: bool) -> bool:
    return not non_interactive and sys.stdin.isatty() and sys.stdout.isatty()


@app.command()
def resume(
    run_id: str = typer.Argument(..., metavar="RUN", help="The run's id (or a unique prefix of it)."),
    answer: List[str] = typer.Option([], "--answer", "-a", metavar="NODE=ANSWER", help="Answer a question (repeatable)."),
    answers: List[Path] = typer.Option([], "--answers", metavar="FILE", help="A YAML file mapping node ids to answers."),
    non_interactive: bool = typer.Option(False, "--non-interactive", help="Never prompt."),
    rerun: bool = typer.Option(False, "--rerun", help="Run again the step that was in flight when the run stopped."),
    skip: bool = typer.Option(False, "--skip", help="Skip the step that was in flight, as if it succeeded."),
    accept_changes: bool = typer.Option(False, "--accept-changes",
                                        help="Continue although nodes that already ran have changed."),
    max_steps: int = typer.Option(10_000, "--max-steps", min=1, metavar="N", help="Step budget, counting earlier steps."),
    trace: bool = typer.Option(False, "--trace", help="Print each node, action, condition and route to stderr."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Run only what changes nothing outside the run: print what each effect would do, and the LLM prompts."),
    state_out: Optional[Path] = typer.Option(None, "--state-out", metavar="FILE", help="Write the final state as JSON here."),
    format: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json."),
    store: Optional[Path] = STORE_OPTION,
    backend: Optional[str] = BACKEND_OPTION,
    record: Optional[Path] = RECORD_OPTION,
    replay: Optional[Path] = REPLAY_OPTION,
):
    """Continue a run that is waiting for an answer or was stopped."""
    from wfexec.commands.run import RunRequest, execute_resume

    if rerun and skip:
        raise typer.BadParameter("--rerun and --skip exclude each other")
    if dry_run:  # its placeholders would land in the recorded run's state and journal
        raise typer.BadParameter("a recorded run cannot continue dry; `wfexec run WORKFLOW --dry-run` shows what "
                                 "a run would do", param_hint="--dry-run")
    request = RunRequest(run_id=run_id, answers=answer, answer_files=answers, interactive=_interactive(non_interactive),
                         max_steps=max_steps, trace=trace, dry_run=dry_run, state_out=state_out,
                         json_output=format == OutputFormat.json, debug=_state["debug"], store=store, rerun=rerun,
                         skip=skip, accept_changes=accept_changes, backend=backend, record=record, replay=replay)
    raise typer.Exit(execute_resume(request))


@app.command()
def states(
    path: Path = typer.Argument(..., help="A folder of .md/.sh states, a .zip, a Raymond .yaml, or one state file."),
    input: Optional[str] = typer.Option(None, "--input", "-i", metavar="TEXT", help="{{input}} of the first state."),
    start: Optional[str] = typer.Option(None, "--start", metavar="STATE", help="The first state (default START)."),
    budget_usd: Optional[float] = typer.Option(None, "--budget-usd", metavar="USD", help="Stop before LLM calls "
                                               "once this much was spent."),
    timeout: Optional[float] = typer.Option(None, "--timeout", metavar="SECONDS", help="Inactivity timeout per state."),
    model: Optional[str] = typer.Option(None, "--model", help="The model for .md states (backend permitting)."),
    max_steps: int = typer.Option(10_000, "--max-steps", min=1, metavar="N", help="Stop after this many states."),
    trace: bool = typer.Option(False, "--trace", help="Print each state, tag and script output to stderr."),
    format: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json."),
    backend: Optional[str] = BACKEND_OPTION,
    record: Optional[Path] = RECORD_OPTION,
    replay: Optional[Path] = REPLAY_OPTION,
):
    """Run a folder of md/sh states on its own, without a workflow.yaml."""
    from wfexec.commands.run import execute_states

    raise typer.Exit(execute_states(path, input=input, start=start, budget_usd=budget_usd, timeout=timeout,
                                    model=model, max_steps=max_steps, trace=trace,
                                    json_output=format == OutputFormat.json, backend=backend, record=record,
                                    replay=replay))


class RunStatus(str, Enum):
    running = "running"
    waiting = "waiting"
    interrupted = "interrupted"
    completed = "completed"
    failed = "failed"
    stopped = "stopped"
    cancelled = "cancelled"


@app.command()
def runs(
    status: Optional[RunStatus] = typer.Option(None, "--status", help="Only runs with this status."),
    format: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json."),
    store: Optional[Path] = STORE_OPTION,
):
    """List recorded runs, newest first."""
    from wfexec.commands.runs import list_runs

    raise typer.Exit(_store_command(lambda: list_runs(store, status.value if status else None,
                                                      format == OutputFormat.json)))


@app.command()
def show(
    run_id: str = typer.Argument(..., metavar="RUN", help="The run's id (or a unique prefix of it)."),
    state: bool = typer.Option(False, "--state", help="Also print the run's state as YAML."),
    format: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json."),
    store: Optional[Path] = STORE_OPTION,
):
    """Show a run: status, current node, pending question, last error, history with timings."""
    from wfexec.commands.runs import show_run

    raise typer.Exit(_store_command(lambda: show_run(store, run_id, with_state=state,
                                                     as_json=format == OutputFormat.json)))


@app.command()
def cancel(
    run_id: str = typer.Argument(..., metavar="RUN", help="The run's id (or a unique prefix of it)."),
    store: Optional[Path] = STORE_OPTION,
):
    """Cancel a run that is waiting or stopped, so it is never resumed."""
    from wfexec.commands.runs import cancel_run

    raise typer.Exit(_store_command(lambda: cancel_run(store, run_id)))


def _store_command(body) -> int:
    from wfexec.durable.store import StoreError

    try:
        return body()
    except StoreError as exc:
        typer.echo(exc.format(), err=True)
        return exit_code_for(exc)


# --------------------------------------------------------------------------- #
@app.command()
def schema(
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout."),
    plugins: bool = typer.Option(False, "--plugins", help="Also include the types of installed plugins."),
):
    """Print the workflow JSON Schema, with every built-in (and with --plugins, plugin) type's parameters."""
    from wfexec.types.registry import BUILTIN_PACKAGE, Registry, consequences, preconditions
    from wfexec.language.schema import published_schema

    def published(registry):
        if plugins:
            return registry
        return Registry(registry.kind, [s for s in registry.specs() if s.package == BUILTIN_PACKAGE])

    text = json.dumps(published_schema(published(preconditions()), published(consequences())),
                      indent=2, ensure_ascii=False) + "\n"
    if output:
        from wfexec.system.files import write_atomic

        write_atomic(output, text)
    else:
        sys.stdout.write(text)


class Kind(str, Enum):
    all = "all"
    precondition = "precondition"
    consequence = "consequence"


@app.command()
def types(
    kind: Kind = typer.Option(Kind.all, "--kind", help="precondition, consequence or all."),
    format: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json."),
):
    """List every registered precondition and consequence type, and the package each comes from."""
    from wfexec.types.registry import consequences, preconditions

    registries = [r for r in (preconditions(), consequences()) if kind in (Kind.all, r.kind)]
    if format == OutputFormat.json:
        _print_json([{"kind": s.kind, "name": s.name, "doc": s.doc, "parameters": s.params,
                      "required": list(s.required), "effects": list(s.effects), "idempotent": s.idempotent,
                      "source": s.source, "package": s.package} for r in registries for s in r.specs()])
        _refuse_broken_plugins()
        return
    for registry in registries:
        typer.echo(f"{registry.kind}s:")
        for spec in registry.specs():
            params = ", ".join(p + ("*" if p in spec.required else "") for p in spec.params)
            effects = f" [{', '.join(spec.effects)}]" if spec.effects else ""
            typer.echo(f"  {spec.name}({params}){effects}  from {spec.package}\n      {spec.doc}")
        for problem in registry.problems:
            typer.echo(f"  warning: {problem}", err=True)
    typer.echo("(* required)")
    _refuse_broken_plugins()


# --------------------------------------------------------------------------- #
# Skills, pictures and the language reference: wfexec.outputs.skillgen, wfexec.outputs.graph, wfexec.outputs.docgen, wfexec.outputs.scaffold.

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
    from wfexec.language.diagnostics import WorkflowError
    from wfexec.outputs.skillgen import SkillError, check as check_skill, write as write_skill

    code = exit_code_for("completed")
    for path in paths:
        try:
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
        except SkillError as exc:
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


@app.command()
def graph(
    path: Path = typer.Argument(..., help="A workflow.yaml file or a skill folder containing one."),
    format: GraphFormat = typer.Option(GraphFormat.mermaid, "--format", help="mermaid, dot, or svg/png (needs Graphviz)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="FILE", help="Write here instead of stdout."),
):
    """Draw a workflow: node shapes by type, edges by branch, endings coloured by type."""
    from wfexec.api import load
    from wfexec.language.diagnostics import WorkflowError
    from wfexec.outputs.graph import GraphvizFailed, GraphvizMissing, render, to_dot, to_mermaid

    try:
        workflow = load(path)
    except WorkflowError as exc:
        _print_workflow_errors(exc, path)
        raise typer.Exit(exit_code_for(exc))
    if format == GraphFormat.mermaid:
        data: bytes = to_mermaid(workflow).encode("utf-8")
    else:
        data = to_dot(workflow).encode("utf-8")
    if format in (GraphFormat.svg, GraphFormat.png):
        try:
            data = render(data.decode("utf-8"), format.value)
        except GraphvizMissing as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(exit_code_for("invalid"))
        except GraphvizFailed as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(exit_code_for("failed"))
    if output is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    from wfexec.system.files import write_atomic

    write_atomic(output, data)
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
    output: Path = typer.Option(Path("lib"), "--output", "-o", metavar="DIR", help="Where the reference goes."),
    check: bool = typer.Option(False, "--check", help="Write nothing; exit 1 and print a diff when a file is stale."),
    plugins: bool = typer.Option(False, "--plugins", help="Also document the types of installed plugins."),
):
    """Write the language reference (DIR/workflow/*.md) from the schema and the registries."""
    from wfexec.outputs.docgen import stale, write

    if check:
        found = stale(output, include_plugins=plugins)
        for target, diff in found:
            sys.stdout.write(diff)
            typer.echo(f"{target}: stale — regenerate it with: wfexec docs --output {output}", err=True)
        if not found:
            typer.echo(f"{output}: up to date", err=True)
        raise typer.Exit(exit_code_for("failed" if found else "completed"))
    for target, changed in write(output, include_plugins=plugins):
        typer.echo(f"{target}: {'written' if changed else 'up to date'}", err=True)


new_app = typer.Typer(help="Create things from templates.", no_args_is_help=True)
app.add_typer(new_app, name="new")


@new_app.callback()
def new_options():
    """Create things from templates."""


@new_app.command("skill")
def new_skill(
    name: str = typer.Argument(..., help="The skill's name: lowercase letters, digits and hyphens."),
    dir: Path = typer.Option(Path("skills"), "--dir", metavar="DIR", help="The folder the skill folder goes in."),
):
    """Scaffold DIR/NAME/: workflow.yaml, answers.yaml (so it runs end to end) and SKILL.md."""
    from wfexec.language.diagnostics import WorkflowError
    from wfexec.outputs.scaffold import new_skill as scaffold_skill
    from wfexec.outputs.skillgen import SkillError

    try:
        written = scaffold_skill(name, dir)
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


def main() -> None:
    from wfexec.system import signals

    signals.install()
    try:
        app()
    except KeyboardInterrupt as exc:
        sys.stderr.write(f"interrupted ({exc})\n" if str(exc) else "interrupted\n")
        sys.exit(exit_code_for(exc))


if __name__ == "__main__":  # pragma: no cover
    main()
