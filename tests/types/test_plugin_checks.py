"""Plugins are checked when they register: effects from the known vocabulary, a parameter schema that is
JSON Schema, a handler callable as handler(params, ctx). A bad plugin is named by distribution and entry
point, exit 2, never a traceback. A plugin's bug met in a run is an internal error that leaves the run
`failed`. Real packages, installed with pip into private folders."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, wfexec_cli

PLUGINS = ROOT / "tests" / "plugins"

WORKFLOW = """
name: w
version: 1
start_node: act
nodes:
  act:
    type: action
    actions: [{type: set_flag, flag: x}]
    on_success: done
endings:
  done: {type: success, message: ok}
"""

BUGGY = """
name: w
version: 1
start_node: count
nodes:
  count:
    type: action
    actions: [{type: tally, key: visits}]
    on_success: done
endings:
  done: {type: success, message: ok}
"""


def install(name: str, tmp_path_factory):
    """The package installed for real (wheel metadata, entry points) into a private folder; built from a
    copy so the source tree stays clean."""
    source = tmp_path_factory.mktemp("src") / name
    shutil.copytree(PLUGINS / name, source)
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(source)], check=True, capture_output=True, timeout=300)
    return target


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    return install("wfexec-broken", tmp_path_factory)


@pytest.fixture(scope="module")
def buggy(tmp_path_factory):
    return install("wfexec-buggy", tmp_path_factory)


def with_plugins(site, *args, cwd):
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    return wfexec_cli(*args, cwd=cwd, env=env)


@pytest.mark.parametrize("command", [["validate", "workflow.yaml"], ["run", "workflow.yaml"], ["types"],
                                     ["types", "--format", "json"]])
def test_a_broken_plugin_is_named_by_distribution_and_entry_point_and_exits_2(command, broken, tmp_path):
    (tmp_path / "workflow.yaml").write_text(WORKFLOW)
    done = with_plugins(broken, *command, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("error: plugin wfexec-broken")]
    assert len(lines) == 4, done.stderr
    typo, = [line for line in lines if "(entry point 'typo')" in line]
    assert "consequence type 'scribble' declares the effect 'file'" in typo and "did you mean 'files'?" in typo
    schema, = [line for line in lines if "(entry point 'schema')" in line]
    assert "'count_up': the parameter schema is not valid JSON Schema at by/type" in schema
    signature, = [line for line in lines if "(entry point 'signature')" in line]
    assert "handler shout(params) cannot be called as handler(params, ctx)" in signature
    crash, = [line for line in lines if "(entry point 'crash')" in line]
    assert "RuntimeError: the plugin's configuration file is missing" in crash


def test_the_built_in_types_pass_the_plugin_checks():
    from wfexec.types.registry import consequences, preconditions, spec_problems

    assert {spec.name: spec_problems(spec) for r in (preconditions(), consequences()) for spec in r.specs()
            if spec_problems(spec)} == {}


def test_a_bug_in_a_plugin_handler_is_an_internal_error_that_leaves_the_run_failed(buggy, tmp_path):
    (tmp_path / "workflow.yaml").write_text(BUGGY)
    done = with_plugins(buggy, "run", "workflow.yaml", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("workflow.yaml:7:5: error: node 'count': internal error: KeyError: 'visits'")
    assert "please report it with the output of --debug" in done.stderr and "Traceback" not in done.stderr
    runs = json.loads(with_plugins(buggy, "runs", "--format", "json", cwd=tmp_path).stdout)
    assert [(r["status"], r["current_node"]) for r in runs] == [("failed", "count")]
    shown = with_plugins(buggy, "show", runs[0]["id"], cwd=tmp_path).stdout
    assert "internal error: KeyError" in shown

    debugged = with_plugins(buggy, "--debug", "run", "workflow.yaml", cwd=tmp_path)
    assert debugged.returncode == 1
    assert "Traceback" in debugged.stderr and 'counters[params["key"]] += 1' in debugged.stderr
