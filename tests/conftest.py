"""Shared test helpers: write a workflow to a temp folder, run it for real."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The suite's own cache folder (every wfexec it starts inherits it): nothing of the user's ~/.cache/wfexec is
# read or written, and each session starts cold. Each pytest-xdist worker gets its own: the controller's would be
# inherited by both, and one worker's cache tests (corrupting entries, counting files) would race the other's runs.
# The folder goes at the end of the session of the process that made it (pytest_sessionfinish): one was left in
# the temporary folder by every session and every worker.
_OWN_CACHE: str | None = None
if "WFEXEC_CACHE_DIR" not in os.environ or (os.environ.get("PYTEST_XDIST_WORKER")
                                           and os.environ.get("WFEXEC_TEST_CACHE_OF") != os.environ["PYTEST_XDIST_WORKER"]):
    import tempfile

    os.environ["WFEXEC_CACHE_DIR"] = _OWN_CACHE = tempfile.mkdtemp(prefix="wfexec-test-cache-")
    os.environ["WFEXEC_TEST_CACHE_OF"] = os.environ.get("PYTEST_XDIST_WORKER", "")


@pytest.hookimpl(tryfirst=True)  # a worker's before xdist tells the controller it is done, which may then stop it
def pytest_sessionfinish(session, exitstatus):
    if _OWN_CACHE is not None:
        import shutil

        shutil.rmtree(_OWN_CACHE, ignore_errors=True)


# LangSmith's pytest plugin (langsmith comes with langgraph, the benches' peer) costs every pytest process about
# 3 s of CPU and is of no use here: pyproject's addopts leave it out of this run, and this of the pytest runs the
# tests start (a skill's own tests, the CI probe).
os.environ.setdefault("PYTEST_ADDOPTS", "-p no:langsmith_plugin")

# In CI every package `[test]` installs and every tool `.ci/run` installs is there: a test that skips for want of
# one hides a broken install, so there it fails instead. Only what a machine may lack whatever CI installs skips.
SKIPS_CI_ALLOWS = ("needs `unshare -m`",)


def _hidden_by_a_skip(report) -> str | None:
    """The reason of a skip that CI must not accept, or None."""
    if os.environ.get("CI") != "true" or not report.skipped or hasattr(report, "wasxfail"):
        return None
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    return None if any(allowed in reason for allowed in SKIPS_CI_ALLOWS) else reason


def _failed_in_ci(report, reason: str) -> None:
    report.outcome = "failed"
    report.longrepr = (f"skipped in CI: {reason} — CI installs everything the tests need (pip install -e '.[test]', "
                       "and .ci/run's apt packages), so this skip would hide a broken install")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    reason = _hidden_by_a_skip(report)
    if reason is not None:
        _failed_in_ci(report, reason)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    reason = _hidden_by_a_skip(report)  # a module-level importorskip
    if reason is not None:
        _failed_in_ci(report, reason)


# The files that take longest, longest first (seconds of a worker, summed per file from `--durations=0`, on this
# project's 2-core machines, 2026-11). pytest-xdist hands out whole files (`--dist loadfile`), and left to itself
# starts the files with the most tests first, so these, which have few tests that each wait on servers, timeouts
# and subprocesses, came last and one worker ran them alone at the end. Started first, the many short files even
# out the end. It changes the order only: a file missing here runs all the same, after these.
LONGEST_FIRST = (
    "tests/temporal/test_temporal.py",  # 103 s
    "tests/temporal/test_temporal_dying_workers.py",  # 84 s
    "tests/temporal/test_no_shared_disk.py",  # 62 s
    "tests/test_benches.py",  # 58 s
    "tests/mcp/test_v8_mcp.py",  # 53 s
    "tests/serve/test_serve_browser.py",  # 40 s
    "tests/durable/test_crash_soak.py",  # 37 s
    "tests/running/test_signals.py",  # 37 s
    "tests/language/test_fuzz_run.py",  # 34 s
    "tests/temporal/test_blob_lifecycle.py",  # 30 s
)


def pytest_collection_modifyitems(items):
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}
    files = [item.nodeid.split("::", 1)[0] for item in items]
    count = Counter(files)
    order = {name: (rank[name], 0, name) if name in rank else (len(rank), -count[name], name) for name in count}
    # Stable: each file's tests stay together and in their order (module fixtures are set up once per file).
    items[:] = [item for _, item in sorted(zip(files, items), key=lambda pair: order[pair[0]])]


class Captured:
    def __init__(self):
        self.out = io.StringIO()
        self.err = io.StringIO()

    def console(self, trace: bool = False):
        from wfexec.running.console import Console

        return Console(out=self.out, err=self.err, trace=trace, color=False)

    @property
    def text(self) -> str:
        return self.out.getvalue()


def compat_root() -> Path:
    """The real hiivmind-corpus trees (MIT), beside the project as CI has them; `WFEXEC_COMPAT` overrides.

    A user's clone has no `../shared`: tests that need the real files skip and say why.
    """
    root = Path(os.environ.get("WFEXEC_COMPAT", ROOT.parent / "shared" / "compat"))
    if not (root / "hiivmind-corpus").is_dir():
        pytest.skip(f"{root} is not here (a user's clone): these tests need the real hiivmind-corpus files")
    return root


@pytest.fixture(autouse=True)
def leaves_no_trace():
    """A test (or the in-process `wfexec` it runs) must leave the cwd and environment as it found them: the next
    test would otherwise run somewhere else. Torn down last, after monkeypatch has undone its changes."""
    cwd, environ = os.getcwd(), dict(os.environ)
    yield
    left_in = os.getcwd()
    changed = sorted(k for k in (set(environ) | set(os.environ)) - {"PYTEST_CURRENT_TEST"}
                     if environ.get(k) != os.environ.get(k))
    os.chdir(cwd)  # put back, so that only this test fails
    for key in changed:
        if key in environ:
            os.environ[key] = environ[key]
        else:
            del os.environ[key]
    assert left_in == cwd, f"the test left the working directory changed to {left_in}"
    assert not changed, f"the test left environment variables changed: {changed}"


@pytest.fixture(autouse=True)
def private_run_store(tmp_path, monkeypatch):
    """Every test's runs (in-process and in subprocesses) go to its own store, never the repository's."""
    store = tmp_path / "store" / "runs.db"
    monkeypatch.setenv("WFEXEC_STORE", str(store))
    # A plugin root inherited from a Claude Code session would move where every document path resolves.
    monkeypatch.delenv("CLAUDE_PLUGIN_ROOT", raising=False)
    # No live status line in a test's terminal (pexpect) unless the test asks for it.
    monkeypatch.setenv("WFEXEC_STATUS", "0")
    return store


@pytest.fixture
def write_workflow(tmp_path):
    """write_workflow(yaml_text, name='workflow.yaml') -> Path, dedenting the text."""

    def write(text: str, name: str = "workflow.yaml") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write


@pytest.fixture
def run_yaml(write_workflow, tmp_path):
    """run_yaml(yaml_text, answers=None, inputs=None, cwd=tmp_path) -> (Result, Captured)."""

    def run(text: str, *, answers=None, inputs=None, trace: bool = False, cwd=None, **kwargs):
        import wfexec

        path = write_workflow(text)
        captured = Captured()
        result = wfexec.run(path, answers=answers, inputs=inputs, io=captured.console(trace),
                            cwd=cwd or tmp_path, **kwargs)
        return result, captured

    return run


def one_action(*actions, initial_state=None) -> str:
    """A workflow whose node `act` runs `actions`, then ends `done`, or `failed` with the error as message."""
    import json

    doc = {"name": "one-action", "version": "1.0", "start_node": "act",
           "nodes": {"act": {"type": "action", "actions": list(actions), "on_success": "done",
                             "on_failure": "failed"}},
           "endings": {"done": {"type": "success", "message": "ok"},
                       "failed": {"type": "failure", "message": "${computed.last_error}"}}}
    if initial_state is not None:
        doc["initial_state"] = initial_state
    return json.dumps(doc, indent=2)


def with_coverage(env: dict) -> dict:
    """`env` for a process started with a clean environment, plus what lets coverage measure it (when on)."""
    return {**{k: v for k, v in os.environ.items() if k.startswith("COVERAGE_")}, **env}


def wfexec_cli(*args, cwd=None, input_text=None, env=None, timeout=60):
    """Run the real `wfexec` command in a subprocess."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "wfexec", *map(str, args)], cwd=cwd, input=input_text,
                          capture_output=True, text=True, env=full_env, timeout=timeout)


def install_plugin(package: Path, target: Path) -> Path:
    """Install a plugin package for real (pip: wheel metadata and entry points) into a private folder; a
    subprocess given `PYTHONPATH=<target>` sees it, this process does not."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(package)], check=True, capture_output=True, timeout=300)
    return target


def with_plugins(*targets: Path) -> dict:
    """The environment additions that make plugins installed by `install_plugin` visible to a subprocess."""
    return {"PYTHONPATH": os.pathsep.join([*map(str, targets), os.environ.get("PYTHONPATH", "")])}


def wfexec_in_process(*args, cwd=None, input_text=None, env=None, timeout=None):
    """Run the `wfexec` command in this process with typer's CliRunner: the same parsing, exit codes and output,
    without starting an interpreter (~0.3 s a call). For what a test checks about a command's behaviour; process
    boundaries (signals, a terminal, stdout of a child) stay with `wfexec_cli`.

    stdin, stdout, stderr and the environment are the runner's and restored after the call; so is the cwd.
    An exception the command did not handle is raised here: a real process would print a traceback.
    `timeout` is only taken for the signature of `wfexec_cli`: there is no process to stop.
    """
    from typer.testing import CliRunner

    from wfexec.cli import app

    previous = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = CliRunner().invoke(app, [str(a) for a in args], input=input_text, env=env, prog_name="wfexec")
    finally:
        os.chdir(previous)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(["wfexec", *map(str, args)], result.exit_code, result.stdout, result.stderr)


@pytest.fixture
def cli():
    """`wfexec` run in-process (see wfexec_in_process); use `wfexec_cli` for a real subprocess."""
    return wfexec_in_process


# A corpus's data/config.yaml as hiivmind-corpus writes it, comments and all (the corpus types must keep them).
CORPUS_CONFIG = (ROOT / "tests" / "fixtures" / "corpus_config.yaml").read_text(encoding="utf-8")


def comments(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("#") or "  #" in line]


class FakeBackend:
    """An LLM backend that answers from a list and remembers every prompt."""

    def __init__(self, *replies: str):
        self.replies = list(replies)
        self.prompts: list[str] = []

    def complete(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.replies.pop(0)
