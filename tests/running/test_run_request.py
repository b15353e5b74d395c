"""One run request, many doors (issue 23, point 3): each run option is declared once (wfexec.running.request), and
the command line's help, the MCP tools' input schemas and the API's signatures carry each option their door takes,
with the declared default; the doors build the same request for the same things asked."""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys

import pytest
from pathlib import Path

import wfexec
from conftest import ROOT, with_coverage
from wfexec.running.request import API_FUNCTIONS, CLI_COMMANDS, MCP_TOOLS, RunRequest, options, options_of

QUICKSTART = ROOT / "skills" / "quickstart"

DECLARED = [(door, name, spec.name) for spec in options().values()
            for door, names in (("cli", spec.cli), ("api", spec.api), ("mcp", spec.mcp)) for name in names]


def _plain(value):
    """A default as the door shows it, compared as the declaration writes it (an Enum member by its value)."""
    return getattr(value, "value", value)


@pytest.fixture(scope="module")
def cli_help() -> dict[str, tuple[dict, str]]:
    """Per command: its click parameters by name, and what `wfexec COMMAND --help` prints (typer's own, through
    the real console script's module)."""
    import typer.main

    from wfexec.cli import app

    group = typer.main.get_command(app)
    environment = with_coverage({**os.environ, "WFEXEC_LEAN": "0", "COLUMNS": "200"})
    shown = {}
    for command in CLI_COMMANDS:
        printed = subprocess.run([sys.executable, "-m", "wfexec", command, "--help"], capture_output=True,
                                 text=True, env=environment, timeout=120, check=True).stdout
        params = {param.name: param for param in group.commands[command].params}  # type: ignore[attr-defined]
        shown[command] = (params, printed)
    return shown


@pytest.fixture(scope="module")
def mcp_schemas(tmp_path_factory) -> dict[str, dict]:
    """The input schema of each MCP tool, as the SDK's own client lists them from `wfexec mcp`."""
    mcp = pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'wfexec[mcp]')")
    from mcp.client.stdio import StdioServerParameters, stdio_client

    folder = tmp_path_factory.mktemp("mcp")
    params = StdioServerParameters(command=sys.executable, args=["-m", "wfexec", "mcp", "--root", str(folder)],
                                   cwd=str(folder), env=with_coverage(dict(os.environ)))

    async def listed():
        async with stdio_client(params) as (read, write):
            async with mcp.ClientSession(read, write) as session:
                await session.initialize()
                return {tool.name: tool.input_schema for tool in (await session.list_tools()).tools}

    return asyncio.run(listed())


@pytest.mark.parametrize("door,name,option", DECLARED, ids=lambda value: str(value))
def test_each_door_carries_each_declared_option_with_its_default(door, name, option, cli_help, mcp_schemas):
    spec = options()[option]
    if door == "cli":
        params, printed = cli_help[name]
        param = params[option]
        assert spec.flag in param.opts + param.secondary_opts
        expected = [] if spec.form in ("pairs", "list") else spec.default
        assert _plain(param.default) == expected, (name, option, param.default)
        assert spec.flag in printed and " ".join(spec.help.split()[:4]) in " ".join(printed.split())
        if spec.default not in (None, False, [], {}, ()):
            assert f"default: {spec.default}" in " ".join(printed.split())
    elif door == "api":
        parameter = inspect.signature(getattr(wfexec, name)).parameters[option]
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY
        assert parameter.default == spec.default
    else:
        schema = mcp_schemas[name]["properties"][option]
        assert schema.get("default") == spec.default, (name, option, schema)
        assert schema.get("description") == spec.help
        if spec.min is not None:
            assert schema.get("minimum") == spec.min


def test_each_door_takes_only_its_declared_options(cli_help, mcp_schemas):
    """Nothing is offered that is not declared: the run options of each command, tool and function are exactly
    the declared ones (plus the command's argument, the tool's path or run id, and the API's Python objects)."""
    for command in CLI_COMMANDS:
        params, _ = cli_help[command]
        assert set(params) == {spec.name for spec in options_of("cli", command)} | {
            "run_id" if command == "resume" else "path"}
    for tool in MCP_TOOLS:
        assert set(mcp_schemas[tool]["properties"]) == {spec.name for spec in options_of("mcp", tool)} | {
            "path" if tool == "run" else "run_id"}
    for function in API_FUNCTIONS:
        assert set(inspect.signature(getattr(wfexec, function)).parameters) == {
            spec.name for spec in options_of("api", function)} | {
            "workflow" if function == "run" else "run_id", "io", "cwd", "ask"}
    with pytest.raises(TypeError, match="unexpected keyword argument 'trace'"):
        wfexec.run(QUICKSTART, trace=True)


def _captured(monkeypatch, module, name) -> list:
    """Each run request `module.name` (start_recorded, resume_recorded) is called with, the call going through."""
    seen = []
    real = getattr(module, name)

    def spy(request, *args, **kwargs):
        seen.append(request)
        return real(request, *args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return seen


def test_the_doors_build_the_same_request(tmp_path, monkeypatch):
    """The same run asked at the command line, the API and MCP: answers, a step budget and a store. Each door
    builds the same request; the run it starts ends the same way."""
    import wfexec.api
    from conftest import wfexec_in_process
    from wfexec.mcp_server import Server

    store = tmp_path / "runs.db"
    started = _captured(monkeypatch, wfexec.api, "start_recorded")
    monkeypatch.chdir(tmp_path)

    done = wfexec_in_process("run", QUICKSTART, "--answer", "ask_mood=plain", "--max-steps", "50", "--store", store)
    assert done.returncode == 0, done.stderr
    wfexec.run(QUICKSTART, answers={"ask_mood": "plain"}, max_steps=50, store=store,
               io=_quiet())
    result = Server(store, [ROOT]).run(str(QUICKSTART), answers={"ask_mood": "plain"}, max_steps=50)
    assert result["status"] == "completed", result

    from wfexec.api import resolve_workflow_path

    assert {resolve_workflow_path(request.path).resolve() for request in started} == {QUICKSTART / "workflow.yaml"}
    expected = RunRequest(answers={"ask_mood": ["plain"]}, max_steps=50, store=store)
    assert [request.replace(path=None) for request in started] == [expected] * 3


def test_the_doors_continue_a_run_with_the_same_request(tmp_path, monkeypatch):
    import wfexec.api
    from conftest import wfexec_in_process
    from wfexec.mcp_server import Server

    store = tmp_path / "runs.db"
    monkeypatch.chdir(tmp_path)
    waiting = []
    for _ in range(3):
        with pytest.raises(wfexec.NeedsAnswer) as parked:
            wfexec.run(QUICKSTART, store=store, io=_quiet())
        waiting.append(parked.value.run_id)
    resumed = _captured(monkeypatch, wfexec.api, "resume_recorded")

    done = wfexec_in_process("resume", waiting[0], "--answer", "ask_mood=cheerful", "--store", store)
    assert done.returncode == 0, done.stderr
    wfexec.resume(waiting[1], answers={"ask_mood": "cheerful"}, store=store, io=_quiet())
    assert Server(store, [ROOT]).resume(waiting[2], answers={"ask_mood": "cheerful"})["status"] == "completed"

    assert [r.replace(run_id=None) for r in resumed] == [RunRequest(answers={"ask_mood": ["cheerful"]},
                                                                    store=store)] * 3


def test_a_run_is_recorded_by_default_at_every_door(tmp_path, monkeypatch):
    """The one default: a run is recorded in the store (else $WFEXEC_STORE, else .wfexec/runs.db), so that it can be
    resumed from another process; `ephemeral` records nothing."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WFEXEC_STORE", raising=False)
    with pytest.raises(wfexec.NeedsAnswer) as parked:
        wfexec.run(QUICKSTART, io=_quiet())
    assert parked.value.run_id is not None and (tmp_path / ".wfexec" / "runs.db").is_file()
    assert wfexec.resume(parked.value.run_id, answers={"ask_mood": "plain"}, io=_quiet()).ending == "done"
    with pytest.raises(wfexec.NeedsAnswer) as unrecorded:
        wfexec.run(QUICKSTART, ephemeral=True, io=_quiet())
    assert unrecorded.value.run_id is None


def _quiet():
    import io

    from wfexec.running.console import Console

    return Console(out=io.StringIO(), err=io.StringIO())


@pytest.mark.parametrize("command,request_", [
    ("run", RunRequest(path=QUICKSTART, text_inputs=["name=Ada", "n=3"], answers={"ask_mood": "plain", "retry*": "no"},
                       overrides={"computed.x": "y"}, max_steps=7, non_interactive=True, format="json", trace=True,
                       temporal="localhost:7233", task_queue="q", ephemeral=True, durability="full")),
    ("resume", RunRequest(run_id="0abc", answers={"ask_mood": ["plain", "cheerful"]}, skip=True, accept_changes=True,
                          non_interactive=True, format="json", store=Path("x.db"))),
    ("states", RunRequest(path=QUICKSTART, agent_input="go", on_ask="reject", dangerously_skip_permissions=True,
                          budget_usd=1.5, timeout=0.0, no_wait=True)),
], ids=["run", "resume", "states"])
def test_a_request_given_as_a_command_line_is_read_back_the_same(command, request_, monkeypatch):
    """The web page launches a run as `wfexec run` processes (wfexec.serve.processes): the command line it writes
    for a request is read back, by the command line's own parser, as that request."""
    from wfexec import launcher
    from wfexec.commands.entrypoints import request_from_command_line
    from wfexec.running.request import command_line

    for name in ("WFEXEC_STORE", "WFEXEC_BACKEND", "WFEXEC_TEMPORAL", "WFEXEC_DURABILITY"):
        monkeypatch.delenv(name, raising=False)
    words = command_line(request_, command)
    parsed = launcher.parse(words)
    assert parsed is not None and parsed[0] == command, words
    assert request_from_command_line(command, parsed[1]) == request_


def test_each_declared_default_fits_its_own_declaration():
    """The request checks each given value against its option's type, bounds and choices (OptionError): a door
    passing an option's default explicitly is never refused."""
    for name, spec in options().items():
        assert RunRequest(**{name: spec.fresh_default()}).asked() == {}, name
