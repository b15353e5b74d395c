"""A third-party plugin package registers types through entry points, validated and run like built-ins."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT, install_plugin, wfexec_cli, with_plugins

PLUGIN = ROOT / "tests" / "plugins" / "wfexec-hello"

WORKFLOW = """
name: plugged
version: 1
start_node: greet
initial_state: {n: 4}
nodes:
  greet:
    type: action
    actions:
      - {type: greet, name: "${who}", times: 2, store_as: computed.greeting}
    on_success: check
    on_failure: failed
  check:
    type: conditional
    condition: {type: is_even, value: "${n}"}
    branches: {true: done, false: failed}
endings:
  done: {type: success, message: "${computed.greeting}"}
  failed: {type: error, message: "${computed.last_error ?? 'odd'}"}
"""


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory):
    """The plugin installed for real (pip, wheel metadata and entry points) into a private folder."""
    return install_plugin(PLUGIN, tmp_path_factory.mktemp("site"))


def run_with_plugin(plugin_path, *args, cwd):
    return wfexec_cli(*args, cwd=cwd, env=with_plugins(plugin_path))


def test_plugin_types_are_listed(plugin_path, tmp_path):
    listed = json.loads(run_with_plugin(plugin_path, "types", "--format", "json", cwd=tmp_path).stdout)
    greet = next(t for t in listed if t["name"] == "greet")
    assert greet["kind"] == "consequence" and greet["source"] == "wfexec_hello.types"
    assert greet["package"] == "wfexec-hello"  # the distribution whose entry point registered it
    assert greet["doc"] == "Store a greeting for `name`, repeated `times` times."
    assert any(t["name"] == "is_even" and t["kind"] == "precondition" for t in listed)


def test_plugin_consequence_runs_and_its_precondition_routes(plugin_path, tmp_path):
    (tmp_path / "workflow.yaml").write_text(WORKFLOW)
    done = run_with_plugin(plugin_path, "run", ".", "--input", "who=Ada", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hello Ada hello Ada"
    failed = run_with_plugin(plugin_path, "run", ".", "--input", "who=nobody", cwd=tmp_path)
    assert failed.returncode == 1
    assert "nobody cannot be greeted" in failed.stdout


def test_plugin_parameters_are_validated_at_load(plugin_path, tmp_path):
    (tmp_path / "workflow.yaml").write_text(WORKFLOW.replace("times: 2", "times: many"))
    done = run_with_plugin(plugin_path, "validate", ".", cwd=tmp_path)
    assert done.returncode == 2
    assert "`times` in consequence 'greet' must be a whole number, not a string" in done.stdout


def test_without_the_plugin_its_types_are_unknown(tmp_path):
    (tmp_path / "workflow.yaml").write_text(WORKFLOW)
    done = wfexec_cli("validate", ".", cwd=tmp_path)
    assert done.returncode == 2
    assert "unknown consequence type 'greet'" in done.stdout


def test_every_type_s_one_line_doc_is_a_whole_sentence():
    """The doc `wfexec types`, the schemas and lib/ show is the docstring's first paragraph: a sentence that runs
    over the docstring's first line is shown whole."""
    from wfexec.types.registry import consequences, preconditions

    cut = [f"{spec.kind} {spec.name}: {spec.doc}" for registry in (preconditions(), consequences())
           for spec in registry.specs() if not spec.doc.rstrip().endswith((".", ")", "`", "!", "?"))]
    assert cut == []


def test_a_plugin_type_s_doc_ends_at_its_docstring_s_first_blank_line_even_one_of_spaces():
    from wfexec.types.registry import one_line

    assert one_line("Greet someone by name,\n    twice.\n    \n    Details only `types greet` shows.") == \
        "Greet someone by name, twice."
