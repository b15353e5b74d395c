"""Hostile input is refused with a one-line error and a position, in bounded time and memory, never a traceback.

Each case runs the real `wfexec` in a subprocess with a timeout and a memory limit: a parser crash (segfault), a
hang (FIFO) or a blow-up (alias bomb) would show as a signal, a timeout or a MemoryError instead of exit 2.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from conftest import ROOT, one_action, wfexec_cli

ALIAS_BOMB = "".join(
    [f"{chr(97 + i)}: &{chr(97 + i)} [" + ",".join([f"*{chr(96 + i)}"] * 9 if i else ['"lol"'] * 9) + "]\n"
     for i in range(9)])
MEMORY_LIMIT = 1 << 30


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def wfexec_limited(*args, cwd, timeout=30):
    return subprocess.run([sys.executable, "-m", "wfexec", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, preexec_fn=_limited)


def assert_refused(result, *words):
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    errors = [line for line in (result.stdout + result.stderr).splitlines() if ": error: " in line]
    assert len(errors) == 1, result.stdout + result.stderr
    for word in words:
        assert word in errors[0]


@pytest.mark.parametrize("command", ["validate", "run"])
def test_an_alias_bomb_is_refused_in_bounded_memory(tmp_path, command):
    (tmp_path / "bomb.yaml").write_text(ALIAS_BOMB)
    assert len(ALIAS_BOMB) < 400
    assert_refused(wfexec_limited(command, "bomb.yaml", cwd=tmp_path), "bomb.yaml:1:", "expands to more than")


@pytest.mark.parametrize("text", ["a: " + "[" * 30000 + "]" * 30000 + "\n", "a:\n  " + "- " * 30000 + "x\n",
                                  "a: " + "{b: " * 30000 + "}" * 30000 + "\n"],
                         ids=["flow-sequences", "block-sequences", "flow-mappings"])
def test_deep_nesting_is_refused_before_the_parser_recurses(tmp_path, text):
    (tmp_path / "deep.yaml").write_text(text)
    assert_refused(wfexec_limited("validate", "deep.yaml", cwd=tmp_path), "deep.yaml:", "nests deeper than 200")


def test_a_fifo_as_the_workflow_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "workflow.yaml")
    assert_refused(wfexec_limited("run", "workflow.yaml", cwd=tmp_path, timeout=20), "not a regular file")


def test_dev_zero_as_the_workflow_is_refused(tmp_path):
    assert_refused(wfexec_limited("validate", "/dev/zero", cwd=tmp_path, timeout=20), "not a regular file")


def test_a_huge_file_is_refused_unread(tmp_path):
    with open(tmp_path / "huge.yaml", "wb") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse: costs no disk
    assert_refused(wfexec_limited("validate", "huge.yaml", cwd=tmp_path), "bytes, more than")


def test_ordinary_files_keep_validating(tmp_path):
    """The depth pre-scan only refuses depth: a big flat workflow with many colons still passes."""
    result = wfexec_cli("validate", ROOT / "skills" / "release-checklist", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_files_written_by_a_run_honour_the_umask(tmp_path, umask):
    """write_atomic's temporary file is 0600; the file it leaves must have what a plain write gives."""
    (tmp_path / "workflow.yaml").write_text(one_action({"type": "write_file", "path": "out.txt", "content": "x"}))
    result = subprocess.run([sys.executable, "-m", "wfexec", "run", "workflow.yaml"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60, preexec_fn=lambda: os.umask(umask))
    assert result.returncode == 0, result.stdout + result.stderr
    plain = tmp_path / "plain.txt"
    old = os.umask(umask)
    try:
        plain.write_text("x")
    finally:
        os.umask(old)
    assert oct((tmp_path / "out.txt").stat().st_mode & 0o777) == oct(plain.stat().st_mode & 0o777) \
        == oct(0o666 & ~umask)


def _write_file_workflow(path, content="x"):
    return one_action({"type": "write_file", "path": path, "content": content})


@pytest.mark.parametrize("path,message", [
    ("a\x00b", "holds a NUL character"),
    ("x" * 5000, "a name may have at most 255 bytes"),
    (["a", "b"], "must be a string, not a list"),
], ids=["nul", "5000-chars", "list"])
def test_an_impossible_file_path_is_an_error_not_a_traceback(tmp_path, path, message):
    (tmp_path / "workflow.yaml").write_text(_write_file_workflow(path))
    result = wfexec_cli("run", "workflow.yaml", cwd=tmp_path, timeout=60)
    assert result.returncode in (1, 2), result.stdout + result.stderr
    assert message in result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stdout + result.stderr


def test_a_file_size_limit_while_writing_is_a_run_error(tmp_path):
    (tmp_path / "workflow.yaml").write_text(_write_file_workflow("big.txt", "x" * 100_000))

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (10_000, 10_000))

    result = subprocess.run([sys.executable, "-m", "wfexec", "run", "workflow.yaml", "--ephemeral"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=60, preexec_fn=small_files)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "cannot write 'big.txt': File too large" in result.stdout
    assert not (tmp_path / "big.txt").exists() and not list(tmp_path.glob(".big.txt.*"))


@pytest.mark.parametrize("expression", ["+".join(["1"] * 1000) + " > 2", "(" * 3000 + "1" + ")" * 3000],
                         ids=["1000-additions", "3000-parentheses"])
def test_a_huge_expression_is_an_answer_not_a_traceback(tmp_path, expression):
    import json

    doc = {"name": "x", "version": "1.0", "start_node": "a",
           "nodes": {"a": {"type": "conditional", "branches": {"true": "done", "false": "done"},
                           "condition": {"type": "evaluate_expression", "expression": expression}}},
           "endings": {"done": {"type": "success", "message": "ok"}}}
    (tmp_path / "workflow.yaml").write_text(json.dumps(doc))
    result = wfexec_cli("run", "workflow.yaml", cwd=tmp_path, timeout=60)
    assert result.returncode in (0, 2), result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stdout + result.stderr
    if result.returncode == 2:
        assert "workflow.yaml:1:" in result.stderr


@pytest.mark.parametrize("action, message", [
    ({"type": "run_command", "command": ["true"], "timeout": int("9" * 400)},
     "`timeout` must be a positive number of seconds up to 2,592,000 (30 days), got 99999"),
    ({"type": "delete_file", "path": "x" * 5000},
     "`path` names a file or folder 5,000 characters long ('xxxx"),
    ({"type": "write_file", "path": "a/" * 3000 + "f", "content": "x"},
     "`path` is a path of 6,001 characters; a path may have at most 4096 bytes"),
])
def test_an_out_of_range_value_from_a_workflow_is_a_run_error_saying_which(tmp_path, action, message):
    path = tmp_path / "workflow.yaml"
    path.write_text(one_action(action))
    ran = wfexec_cli("run", path, "--ephemeral", cwd=tmp_path)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert message in ran.stdout and "internal error" not in ran.stdout + ran.stderr


def test_a_path_two_thousand_folders_deep_is_made_one_level_at_a_time(tmp_path):
    """pathlib's mkdir recurses once per level: such a path used to end in a RecursionError."""
    path = tmp_path / "workflow.yaml"
    path.write_text(one_action({"type": "write_file", "path": "d/" * 2000 + "f", "content": "deep"}))
    deepest = tmp_path.joinpath(*["d"] * 2000)
    try:
        ran = wfexec_cli("run", path, "--ephemeral", cwd=tmp_path)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert (deepest / "f").read_text() == "deep"
    finally:  # shutil.rmtree, as pytest cleans up, recurses once per level too: a leftover would break it
        subprocess.run(["find", str(tmp_path / "d"), "-depth", "-delete"], check=False, capture_output=True)


def test_an_object_with_accessors_and_methods_is_not_a_call_of_their_names(tmp_path):
    path = tmp_path / "workflow.yaml"
    path.write_text(one_action({"type": "compute", "store_as": "computed.x",
                                "expression": "({get a() { return 1 }, set b(v) { }, c(w) { return w }}).a"}))
    checked = wfexec_cli("validate", "--strict", path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert wfexec_cli("run", path, "--ephemeral", cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("args, message", [
    (("--set", "computed..x=1"), "error: --set computed..x: invalid state path `computed..x`: empty segment"),
    (("--max-steps", "99999999999999999999999"), "Invalid value for '--max-steps'"),
])
@pytest.mark.parametrize("store", [("--ephemeral",), ()])
def test_a_wrong_command_line_value_exits_2_before_any_run(tmp_path, args, message, store):
    ran = wfexec_cli("run", ROOT / "skills" / "quickstart", "--answer", "ask_mood=plain", *store, *args, cwd=tmp_path)
    assert ran.returncode == 2 and message in ran.stderr, ran.stderr
    assert not (tmp_path / ".wfexec").exists() or "no runs" in wfexec_cli("runs", cwd=tmp_path).stdout


@pytest.mark.parametrize("script, stream", [
    ("head -c 20000000 /dev/zero | tr '\\0' x", "stdout"),           # one endless line
    ("yes to-stderr 1>&2", "stderr"),                                 # never stops by itself
])
def test_a_command_writing_more_than_the_output_cap_is_stopped_with_a_located_error(tmp_path, script, stream):
    path = tmp_path / "workflow.yaml"
    path.write_text(one_action({"type": "run_command", "command": ["bash", "-c", script],
                                "store_as": "computed.out", "timeout": 120}))
    ran = wfexec_cli("run", path, "--ephemeral", cwd=tmp_path, timeout=120)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert f"wrote more than 16 MiB to {stream} and was stopped: a command's output is kept in the run's state" \
        in ran.stdout


def test_an_llm_reply_over_the_cap_is_a_run_error_not_state(tmp_path):
    import wfexec
    from wfexec.running.engine import MAX_REPLY, RunError

    path = tmp_path / "workflow.yaml"
    path.write_text(one_action({"type": "compute", "expression": "# Summarise the notes", "store_as": "computed.s"}))

    class Flood:
        def complete(self, prompt):
            return '"' + "x" * MAX_REPLY + '"'

    with pytest.raises(RunError, match=r"the LLM's reply is 4,194,306 characters, over the 4,194,304 a step keeps"):
        wfexec.run(path, backend=Flood())
