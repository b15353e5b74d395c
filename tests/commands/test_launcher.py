"""The `wfexec` command's fast path (wfexec/launcher.py): the command lines a skill runs once per question start
without typer, and behave exactly as the typer app does. Every case runs the installed console script twice, with
the fast path and with `WFEXEC_LEAN=0`, and compares exit code, stdout and stderr."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, with_coverage

QUICKSTART = str(ROOT / "skills" / "quickstart")
WFEXEC = shutil.which("wfexec", path=str(Path(sys.executable).parent))
pytestmark = pytest.mark.skipif(WFEXEC is None, reason="the wfexec console script is not installed beside python")
RUN_ID = re.compile(r"\b0[0-9a-z]{14}\b")
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?")


DURATION = re.compile(r"\d+(\.\d+)? ms\b")


def _same_every_time(text: str) -> str:
    return DURATION.sub("N ms", TIME.sub("TIME", RUN_ID.sub("RUN", text)))


def wfexec(args: list[str], cwd: Path, lean: bool, **env: str) -> tuple[int, str, str]:
    environment = with_coverage({**os.environ, "WFEXEC_LEAN": "1" if lean else "0", "NO_COLOR": "1", **env})
    environment.pop("WFEXEC_STORE", None)
    environment.update(env)
    done = subprocess.run([WFEXEC, *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=120)
    return done.returncode, _same_every_time(done.stdout), _same_every_time(done.stderr)


def test_the_table_is_what_the_typer_app_declares():
    from wfexec.cli import LEAN_TABLE, lean_table

    assert json.loads(LEAN_TABLE.read_text()) == json.loads(json.dumps(lean_table())), \
        "wfexec/lean_table.json is stale: python -c 'from wfexec.cli import write_lean_table; write_lean_table()'"


CASES = [
    ["run", QUICKSTART, "--answer", "ask_mood=cheerful", "--ephemeral"],
    ["run", QUICKSTART, "-a", "ask_mood=plain", "-i", "name=Ada", "--ephemeral", "--format", "json"],
    ["run", QUICKSTART, "--answer=ask_mood=plain", "--input=name=Bo", "--ephemeral", "--trace"],
    ["--debug", "run", QUICKSTART, "--ephemeral", "--non-interactive"],
    ["run", QUICKSTART, "--ephemeral", "--max-steps", "1", "--answer", "ask_mood=plain"],
    ["run", QUICKSTART, "--ephemeral", "--max-steps", "0"],            # below its minimum: typer's error
    ["run", QUICKSTART, "--ephemeral", "--max-steps", "many"],         # not a number: typer's error
    ["run", QUICKSTART, "--ephemeral", "--format", "yaml"],            # not a choice: typer's error
    ["run", QUICKSTART, "--ephemeral", "--no-such-option"],
    ["run"],
    ["run", "--help"],                                                 # printed from the table
    ["--help"],
    ["states", "--help"],
    ["validate", "--help", "--strict"],                                # not only --help: typer's
    ["run", QUICKSTART, "extra-argument", "--ephemeral"],
    ["validate", QUICKSTART, str(ROOT / "skills" / "triage")],
    ["validate", "--strict", "--format", "json", QUICKSTART],
    ["validate", "missing-folder"],
    ["runs"],
    ["runs", "--status", "waiting", "--format", "json"],
    ["runs", "--limit", "0"],
    ["runs", "--limit", "-1"],                                           # below its minimum: typer's error
    ["show", "nothing-like-it"],
    ["cancel", "nothing-like-it"],
    ["resume", "nothing-like-it", "--rerun", "--skip"],               # contradictory: typer's usage error
    ["resume", "nothing-like-it", "--answer", "ask_mood=plain"],
]


@pytest.mark.parametrize("args", CASES, ids=lambda args: " ".join(a.replace(str(ROOT), "") for a in args)[:60])
def test_the_fast_path_and_typer_give_the_same_result(args, tmp_path):
    assert wfexec(args, tmp_path, lean=True) == wfexec(args, tmp_path, lean=False)


def test_help_for_a_narrow_pipe_is_left_to_click(tmp_path):
    """The table holds help 80 columns wide: $COLUMNS below that makes click wrap it narrower."""
    narrow = wfexec(["--help"], tmp_path, lean=True, COLUMNS="60")
    assert narrow == wfexec(["--help"], tmp_path, lean=False, COLUMNS="60")
    assert narrow != wfexec(["--help"], tmp_path, lean=True)


def test_a_parked_run_resumes_the_same_way_on_both_paths(tmp_path):
    for lean in (True, False):
        store = tmp_path / f"runs-{lean}.db"
        code, out, _ = wfexec(["run", QUICKSTART, "--store", str(store)], tmp_path, lean)
        assert code == 3
        with_store = ["--store", str(store)]
        listed = subprocess.run([WFEXEC, "runs", "--format", "json", *with_store], capture_output=True, text=True)
        [run_id] = [r["id"] for r in json.loads(listed.stdout)]
        shown = subprocess.run([WFEXEC, "resume", run_id, "--answer", "ask_mood=cheerful", *with_store],
                               cwd=tmp_path, capture_output=True, text=True,
                               env={**os.environ, "WFEXEC_LEAN": "1" if lean else "0"})
        assert (shown.returncode, shown.stdout) == (0, "Hello, world!\n  letters: 5\n"), shown.stderr


def run_probed(argv: list, watched: tuple, cwd, env: dict | None = None, starts: int = 2):
    """`wfexec ARGV` through the launcher in a fresh interpreter, run `starts` times (the later ones find the
    caches filled); its last stdout line is `LOADED [...]`, the watched modules it imported. A watched module the
    interpreter's own start loaded (this venv's editable-install hooks load contextlib and importlib) is taken out
    of `sys.modules` first, so that wfexec importing it shows."""
    probe = ("import atexit, sys\n"
             f"for m in [m for m in {watched!r} if m in sys.modules]: del sys.modules[m]\n"
             f"atexit.register(lambda: print('LOADED', sorted(m for m in {watched!r} if m in sys.modules)))\n"
             f"sys.argv = ['wfexec', *{[str(a) for a in argv]!r}]\n"
             "from wfexec.launcher import main\nmain()\n")
    # Measured coverage loads modules of its own (socket among them) into every process it follows.
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("COV_CORE", "COVERAGE"))}
    for _ in range(starts):
        done = subprocess.run([sys.executable, "-c", probe], cwd=cwd, capture_output=True, text=True, timeout=60,
                              env={**environment, **(env or {})})
    return done


# What no start of a cached run, resume or states run needs (issue 27: start-up within 6x the bare interpreter):
# the command line's and the terminal's libraries, the loader, the checks and the JavaScript engine, and the
# standard modules the start-up path was taken off (typing: its names are imported for mypy only; pickle, sqlite3
# and signal: their C modules, without the Python around them; datetime; contextlib: the few `with` blocks are
# classes; math). The YAML loader is imported only to read a file, and what writes the expressions' fast path only
# while compiling (a run uses wfexec.language.fast_evaluation). orjson writes journal rows only after a process's
# first few hundred (wfexec.durable.store).
NOT_ON_A_CACHED_START = ("orjson", "typer", "click", "rich", "quickjs", "jsonschema", "fastjsonschema", "ruamel.yaml", "yaml",
                         "jinja2", "tomllib", "tempfile", "shlex", "dataclasses", "inspect", "importlib.metadata",
                         "wfexec.language.compiler", "wfexec.language.checks", "typing", "pickle", "sqlite3",
                         "signal", "datetime", "contextlib", "math", "wfexec.language.loader",
                         "wfexec.language.expression_fastpath")


def test_a_run_through_the_fast_path_imports_neither_typer_nor_what_it_does_not_use(tmp_path):
    heavy = ("typer", "pydantic", "jsonschema", "asyncio", "urllib.request", "jinja2", "subprocess", "socket",
             "quickjs", "tempfile", *NOT_ON_A_CACHED_START, "threading",
             # node and registry types the quickstart does not call: a cached workflow imports only its own
             "wfexec.nodes.states", "wfexec.nodes.reference", "wfexec.types.consequences.corpus",
             "wfexec.types.consequences.process", "wfexec.types.preconditions.files")
    done = run_probed(["run", QUICKSTART, "--answer", "ask_mood=cheerful", "--ephemeral"], heavy, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Hello, world!" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "LOADED []"



@pytest.mark.parametrize("path, explained_by", [
    ("notes.txt", []),                      # only a field the type does not have: said without jsonschema
    ("[not, a, string]", ["jsonschema"]),   # something else wrong too: jsonschema explains all of it
])
def test_a_misplaced_field_is_explained_without_importing_jsonschema(tmp_path, path, explained_by):
    (tmp_path / "workflow.yaml").write_text(
        "name: t\nversion: '1'\nstart_node: a\nnodes:\n  a:\n    type: action\n    actions:\n"
        f"      - type: read_file\n        path: {path}\n        store_as: computed.notes\n"
        "        on_success: elsewhere\n    on_success: done\nendings:\n  done: {type: success, message: ok}\n")
    # the first start checks the type library's own schemas once, and caches that
    done = run_probed(["validate", "workflow.yaml"], ("jsonschema",), tmp_path,
                      env={"WFEXEC_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 2, done.stdout + done.stderr
    error = next(line for line in done.stdout.splitlines() if ": error:" in line)
    if explained_by:
        assert "`path` in consequence 'read_file'" in done.stdout and "unknown field 'on_success'" in done.stdout
    else:
        assert error.endswith("unknown field 'on_success' in consequence 'read_file' — allowed here: type, "
                              "description, path, store_as, on_failure; keys starting with x- are free for tools")
        assert error.startswith("workflow.yaml:11:9: ")
    assert done.stdout.strip().splitlines()[-1] == f"LOADED {explained_by}"


def test_a_lone_agent_runs_its_scripts_without_asyncio_and_a_fork_hands_over_to_the_loop(tmp_path):
    flow = tmp_path / "flow"
    flow.mkdir()
    (flow / "START.sh").write_text('echo "<goto>NEXT.sh</goto>"\n')
    (flow / "NEXT.sh").write_text('if [ -n "$FORKED" ]; then echo "<result>worker</result>"; exit 0; fi\n'
                                  'echo "<result>alone</result>"\n')
    done = run_probed(["states", "flow"], ("asyncio",), tmp_path, starts=1)
    assert (done.returncode, done.stdout.splitlines()) == (0, ["alone", "LOADED []"]), done.stderr
    # a fork needs agents side by side: the event loop takes over from there, and both finish
    (flow / "START.sh").write_text('echo "<fork next=\\"NEXT.sh\\" FORKED=\\"1\\">NEXT.sh</fork>"\n')
    done = run_probed(["states", "flow", "--format", "json"], ("asyncio",), tmp_path, starts=1)
    assert done.returncode == 0, done.stdout + done.stderr
    computed = json.loads(done.stdout.rsplit("LOADED", 1)[0])["state"]["computed"]
    assert (computed["result"], [f["result"] for f in computed["result_forks"]]) == ("alone", ["worker"])
    assert done.stdout.strip().endswith("LOADED ['asyncio']")


def test_a_resume_imports_only_what_the_rest_of_the_run_needs(tmp_path):
    """Resuming a parked run reads the workflow from the compiled-workflow cache and the run from the store: no
    command-line library, no compiler, no program started (so neither subprocess nor threading)."""
    cache = {"WFEXEC_CACHE_DIR": str(tmp_path / "cache")}
    parked = subprocess.run([WFEXEC, "run", QUICKSTART, "--store", "runs.db", "--format", "json"], cwd=tmp_path,
                            env={**os.environ, **cache}, capture_output=True, text=True, timeout=120)
    assert parked.returncode == 3, parked.stderr
    run_id = json.loads(parked.stdout)["run_id"]
    watched = (*NOT_ON_A_CACHED_START, "asyncio", "subprocess", "threading")
    done = run_probed(["resume", run_id, "--answer", "ask_mood=cheerful", "--store", "runs.db"], watched, tmp_path,
                      env=cache, starts=1)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Hello, world!", "  letters: 5", "LOADED []"]


def test_the_collector_runs_rarely_while_a_run_starts_and_as_usual_during_it(tmp_path):
    """The start's objects (modules, the cached workflow) are frozen when the first step runs, and the usual
    thresholds are back for the run's own; the process ends without the final collection over them."""
    import gc

    probe = ("import atexit, gc, sys\n"
             "atexit.register(lambda: print('GC', gc.get_threshold(), gc.get_freeze_count() > 1000))\n"
             f"sys.argv = ['wfexec', 'run', {QUICKSTART!r}, '--answer', 'ask_mood=cheerful', '--ephemeral']\n"
             "from wfexec.launcher import main\nmain()\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"GC {gc.get_threshold()} True"


def test_a_command_typer_parses_collects_as_usual(tmp_path):
    """The launcher has the collector run rarely from its first line (json and pathlib load after it); a command
    line it hands to typer (a server's, a worker's, a mistake) gets the usual thresholds back."""
    import gc

    probe = ("import atexit, gc, sys\n"
             "atexit.register(lambda: print('GC', gc.get_threshold()))\n"
             "sys.argv = ['wfexec', 'validate', 'missing-folder', '--strict']\n"
             "from wfexec.launcher import main\nmain()\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "WFEXEC_LEAN": "0"})
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == f"GC {gc.get_threshold()}"


def test_a_states_run_of_an_unchanged_folder_imports_neither_the_compiler_nor_a_toml_parser(tmp_path):
    """`wfexec states` runs a generated one-node workflow: from the second start on it comes from the
    compiled-workflow cache (no YAML parser, no compiler, no JavaScript engine), a project without a
    `.raymond/config.toml` has no TOML to parse, and its script starts without the subprocess module."""
    flow = tmp_path / "flow"
    flow.mkdir()
    (flow / "START.sh").write_text('echo "<result>ok</result>"\n')
    # its script and the watchdog start through posix_spawn (wfexec.system.spawn): not through subprocess
    # the folder's lint comes from the cache when its files have not changed (wfexec.protocol.lint_cache)
    # nothing of the run is copied (copy and weakref), no module is looked up by name (importlib), and the run
    # calls no precondition or consequence type (the registry)
    watched = ("tomli", *NOT_ON_A_CACHED_START, "subprocess", "threading", "locale", "wfexec.protocol.lint",
               "wfexec.protocol.policy", "wfexec.protocol.yamlscope", "heapq", "copy", "weakref", "importlib",
               "wfexec.types", "wfexec.types.registry")
    done = run_probed(["states", "flow"], watched, tmp_path, env={"WFEXEC_CACHE_DIR": str(tmp_path / "cache")})
    assert (done.returncode, done.stdout.splitlines()) == (0, ["ok", "LOADED []"]), done.stderr
