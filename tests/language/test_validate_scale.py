"""Big-workflow validation (issue 27), at a small size: the bench's shapes validate, and a size limit that refuses
a file names itself, its value and how to raise it. The timings are bench/bench_validate.py's job."""

from __future__ import annotations

import sys

import pytest

import wfexec
from conftest import ROOT, wfexec_in_process as cli
from wfexec.api import validate_text

sys.path.insert(0, str(ROOT / "bench"))

from workloads import VALIDATION_SHAPES, validation_workflow  # noqa: E402


@pytest.mark.parametrize("shape", sorted(VALIDATION_SHAPES))
def test_each_bench_shape_validates_without_a_problem(tmp_path, shape):
    path = tmp_path / "workflow.yaml"
    path.write_text(validation_workflow(shape, 40))
    assert wfexec.validate(path) == []
    assert validate_text(path.read_text(), path) == []


def test_a_broken_node_deep_in_a_v8_workflow_keeps_its_line_and_column(tmp_path):
    """Positions survive the per-subtree copying of the v8 rewrite and composite expansion."""
    lines = validation_workflow("conditionals", 40).splitlines()
    case = next(i for i, line in enumerate(lines) if line == "  n31:")
    target = next(i for i in range(case, len(lines)) if lines[i].lstrip().startswith("next_node:"))
    lines[target] = lines[target].replace("next_node: ", "next_node: nowhere_")
    errors = [d for d in validate_text("\n".join(lines) + "\n", tmp_path / "workflow.yaml") if d.severity == "error"]
    assert errors and all(d.line == target + 1 for d in errors), errors
    assert errors[0].column == lines[target].index("nowhere_") + 1, errors


def test_checking_expressions_keeps_none_compiled_and_a_run_keeps_a_bounded_number(tmp_path, monkeypatch):
    """A long-lived process (`wfexec serve`, `lsp`) checks ever new workflows: a compiled expression kept for each
    would hold memory and Python objects the collector walks, for nothing until it runs."""
    from wfexec.language import expressions, javascript

    expressions._analysed.clear()  # analysed in an earlier test: nothing would be compiled again
    engine = javascript.current()
    kept_before = set(engine.functions)
    path = tmp_path / "workflow.yaml"
    path.write_text(validation_workflow("long_expressions", 60))
    assert wfexec.validate(path) == []
    assert set(engine.functions) == kept_before
    with pytest.raises(javascript.JavaScriptError, match="SyntaxError"):  # the check still compiles each one
        javascript.compile_source("a +* b", ("a", "b"))

    monkeypatch.setattr(javascript, "FUNCTIONS_KEPT", 5)
    for number in range(12):
        compiled = javascript.compile_source(f"x + {number}", ("x",))
        assert engine.call(engine.function(compiled.text, f"x + {number}"), '{"x": 1}', 0) == 1 + number
        assert len(engine.functions) <= 5


def test_a_cold_validate_digests_the_workflow_once_and_asks_what_replies_fill_only_of_judgement_steps(
        tmp_path, monkeypatch):
    """What only a run of a judgement step needs (the paths its reply fills) is not worked out for a workflow
    without one, and the file's digest that keys the cache entry is made once, for looking it up and keeping it."""
    from wfexec.language import compiler, workflow_cache

    monkeypatch.setenv("WFEXEC_CACHE_DIR", str(tmp_path / "cache"))
    workflow_cache._this_process.clear()
    path = tmp_path / "workflow.yaml"
    path.write_text(validation_workflow("chain", 40))
    content = path.read_bytes()
    digested: list = []
    real_sha256 = workflow_cache.sha256
    monkeypatch.setattr(workflow_cache, "sha256", lambda data=b"": digested.append(data) or real_sha256(data))
    asked: list = []
    real_unwritten_reads = compiler.unwritten_reads
    monkeypatch.setattr(compiler, "unwritten_reads", lambda *a, **k: asked.append(a) or real_unwritten_reads(*a, **k))
    assert wfexec.validate(path) == []
    assert digested.count(content) == 1 and asked == []
    assert list((tmp_path / "cache" / "workflows").glob("*.bin"))  # kept, under the key of that one digest
    workflow_cache._this_process.clear()
    assert workflow_cache.load(path) is not None

    judged = tmp_path / "judged.yaml"  # a judgement step, whose reply fills what the node after it reads
    judged.write_text("name: judged\nversion: 1\nstart_node: scan\nnodes:\n"
                      "  scan: {type: reference, doc: notes.md, next_node: use}\n"
                      "  use: {type: action, actions: [{type: compute, expression: 'computed.found + 1', "
                      "store_as: computed.n}], on_success: done}\n"
                      "endings:\n  done: {type: success, message: done}\n")
    (tmp_path / "notes.md").write_text("Find it.\n")
    assert wfexec.load(judged).reply_paths == {"scan": ("computed.found",)} and asked


def _refusal(result) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    errors = [line for line in result.stdout.splitlines() if ": error: " in line]
    assert len(errors) == 1, result.stdout
    return errors[0]


ALIASES = """\
a: &a [1, 2, 3, 4, 5]
b: &b [*a, *a, *a, *a, *a]
c: [*b, *b, *b, *b, *b]
"""


def test_the_alias_limit_names_itself_its_value_and_how_to_raise_it(tmp_path):
    (tmp_path / "aliases.yaml").write_text(ALIASES)
    line = _refusal(cli("validate", "aliases.yaml", cwd=tmp_path, env={"WFEXEC_MAX_ALIAS_VALUES": "100"}))
    assert "aliases.yaml:1:4:" in line  # the anchored value the aliases repeat
    assert "more than 100 values through aliases" in line and "WFEXEC_MAX_ALIAS_VALUES=100" in line
    assert "raise the limit: WFEXEC_MAX_ALIAS_VALUES=" in line
    raised = cli("validate", "aliases.yaml", cwd=tmp_path, env={"WFEXEC_MAX_ALIAS_VALUES": "1000"})
    assert "through aliases" not in raised.stdout, raised.stdout


def test_values_written_out_do_not_count_against_the_alias_limit(tmp_path):
    """A big workflow without aliases was refused as an alias bomb: only repeated values count."""
    (tmp_path / "workflow.yaml").write_text(validation_workflow("chain", 60))  # about 600 values, no alias
    result = cli("validate", "workflow.yaml", cwd=tmp_path, env={"WFEXEC_MAX_ALIAS_VALUES": "10"})
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_file_size_limit_names_itself_its_value_and_how_to_raise_it(tmp_path):
    text = validation_workflow("chain", 40)
    (tmp_path / "workflow.yaml").write_text(text)
    line = _refusal(cli("validate", "workflow.yaml", cwd=tmp_path, env={"WFEXEC_MAX_FILE_BYTES": "1000"}))
    assert f"{len(text):,} bytes, more than the 1,000" in line
    assert "WFEXEC_MAX_FILE_BYTES=1000" in line and "raise it by setting WFEXEC_MAX_FILE_BYTES=" in line
    raised = cli("validate", "workflow.yaml", cwd=tmp_path, env={"WFEXEC_MAX_FILE_BYTES": str(len(text))})
    assert raised.returncode == 0, raised.stdout + raised.stderr


def test_the_depth_limit_says_it_is_fixed(tmp_path):
    (tmp_path / "deep.yaml").write_text("a: " + "[" * 300 + "]" * 300 + "\n")
    line = _refusal(cli("validate", "deep.yaml", cwd=tmp_path))
    assert "nests deeper than 200 levels (a fixed limit" in line
