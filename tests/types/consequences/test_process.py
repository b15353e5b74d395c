"""run_command and the v2 run_script / run_bash / run_python, run for real with real subprocesses."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time

import pytest

from wfexec.types.registry import consequences
from conftest import one_action

PY = sys.executable
# A program that prints its arguments, stdin and one environment variable as JSON.
ECHO_ARGV = "import json, os, sys; print(json.dumps({'argv': sys.argv[1:], 'stdin': sys.stdin.read(), " \
            "'env': os.environ.get('WF_VALUE'), 'cwd': os.getcwd()}))"
# What a shell would make of it: delete ./victim, write ./pwned.txt. No shell runs, so nothing happens.
EVIL = "it's \"quoted\"; rm -rf victim && echo $(whoami) | cat > pwned.txt `id` *"


def echoed(result, path="computed.out"):
    stored = result.state
    for key in path.split("."):
        stored = stored[key]
    return json.loads(stored["stdout"])


# --------------------------------------------------------------------------- #
# command as a list: no shell

def test_state_value_reaches_the_program_verbatim_as_one_argument(run_yaml, tmp_path):
    (tmp_path / "victim").mkdir()
    result, _ = run_yaml(one_action({"type": "run_command", "command": [PY, "-c", ECHO_ARGV, "--name=${evil}",
                                                                         "${evil}"],
                                     "store_as": "computed.out"}), inputs={"evil": EVIL})
    assert result.ending == "done"
    assert echoed(result)["argv"] == [f"--name={EVIL}", EVIL]
    assert result.state["computed"]["out"]["exit_code"] == 0
    assert result.state["computed"]["out"]["stderr"] == ""
    assert (tmp_path / "victim").is_dir()
    assert not (tmp_path / "pwned.txt").exists()


def test_a_list_value_in_one_item_becomes_several_arguments(run_yaml):
    result, _ = run_yaml(one_action({"type": "run_command", "command": [PY, "-c", ECHO_ARGV, "${files}", 7],
                                     "args": ["--flag", "${files[0]}"], "store_as": "computed.out"}),
                         inputs={"files": ["a b.txt", "c;d.txt"]})
    assert result.ending == "done"
    assert echoed(result)["argv"] == ["a b.txt", "c;d.txt", "7", "--flag", "a b.txt"]


def test_a_command_computed_whole_as_a_list(run_yaml):
    result, _ = run_yaml(one_action({"type": "run_command", "command": "${argv}", "store_as": "computed.out"}),
                         inputs={"argv": [PY, "-c", ECHO_ARGV, EVIL]})
    assert result.ending == "done"
    assert echoed(result)["argv"] == [EVIL]


def test_input_env_and_working_directory(run_yaml, tmp_path):
    (tmp_path / "sub").mkdir()
    result, _ = run_yaml(one_action({"type": "run_command", "command": [PY, "-c", ECHO_ARGV],
                                     "input": "line from ${who}\n", "env": {"WF_VALUE": 42},
                                     "working_directory": "sub", "store_as": "computed.out"}),
                         inputs={"who": "state"})
    assert result.ending == "done"
    out = echoed(result)
    assert out["stdin"] == "line from state\n"
    assert out["env"] == "42"
    assert out["cwd"] == str((tmp_path / "sub").resolve())


def test_missing_working_directory_fails(run_yaml):
    result, _ = run_yaml(one_action({"type": "run_command", "command": [PY, "-V"], "cwd": "nowhere"}))
    assert result.ending == "failed"
    assert "working directory 'nowhere' does not exist" in result.message


# --------------------------------------------------------------------------- #
# command as a string: split like a shell would, but no shell runs it

def test_string_command_splits_before_filling_in_values(run_yaml):
    command = f"{shlex.quote(PY)} -c {shlex.quote(ECHO_ARGV)} 'two words' --v=${{evil}} ${{evil}}"
    result, _ = run_yaml(one_action({"type": "run_command", "command": command, "store_as": "computed.out"}),
                         inputs={"evil": EVIL})
    assert result.ending == "done"
    assert echoed(result)["argv"] == ["two words", f"--v={EVIL}", EVIL]


@pytest.mark.parametrize("command", ["ls | wc -l", "echo hi > out.txt", "make && make install", "a; b",
                                     "sort < in.txt"])
def test_string_command_with_shell_syntax_is_refused(run_yaml, tmp_path, command):
    result, _ = run_yaml(one_action({"type": "run_command", "command": command}))
    assert result.ending == "failed"
    assert "uses shell syntax" in result.message
    assert "no shell runs it" in result.message
    assert not (tmp_path / "out.txt").exists()


def test_quoted_operators_in_a_string_command_are_plain_text(run_yaml):
    command = f"{shlex.quote(PY)} -c {shlex.quote(ECHO_ARGV)} '|' 'a && b'"
    result, _ = run_yaml(one_action({"type": "run_command", "command": command, "store_as": "computed.out"}))
    assert result.ending == "done"
    assert echoed(result)["argv"] == ["|", "a && b"]


def test_string_command_with_an_open_quote_fails(run_yaml):
    result, _ = run_yaml(one_action({"type": "run_command", "command": "echo 'unclosed"}))
    assert result.ending == "failed"
    assert "cannot split the command into words" in result.message


def test_values_reach_bash_code_only_as_arguments(run_yaml, tmp_path):
    (tmp_path / "victim").mkdir()
    result, _ = run_yaml(one_action({"type": "run_command",
                                     "command": ["bash", "-c", 'printf "%s|%s" "$1" "$${WF_VALUE}"', "_", "${evil}"],
                                     "env": {"WF_VALUE": "${evil}"}, "store_as": "computed.out"}),
                         inputs={"evil": EVIL})
    assert result.ending == "done"
    assert result.state["computed"]["out"]["stdout"] == f"{EVIL}|{EVIL}"
    assert (tmp_path / "victim").is_dir()
    assert not (tmp_path / "pwned.txt").exists()


@pytest.mark.parametrize("command", [
    ["bash", "-c", "echo ${evil}"],
    ["/bin/sh", "-e", "-c", "${evil}"],
    ["bash", "-o", "pipefail", "-euc", "echo '${evil}'", "_"],
    "bash -c 'echo ${evil}'",
    "sh -ec \"ls ${evil}\"",
])
def test_values_inside_shell_code_are_refused(run_yaml, tmp_path, command):
    (tmp_path / "victim").mkdir()
    result, _ = run_yaml(one_action({"type": "run_command", "command": command}), inputs={"evil": EVIL})
    assert result.ending == "failed"
    assert "would run a value from state as shell code" in result.message
    assert (tmp_path / "victim").is_dir()


# --------------------------------------------------------------------------- #
# failures

def test_non_zero_exit_routes_on_failure_with_stderr_tail(run_yaml):
    program = "import sys; print('partial'); [print(f'err {i}', file=sys.stderr) for i in range(9)]; sys.exit(3)"
    result, _ = run_yaml(one_action({"type": "run_command", "command": [PY, "-c", program],
                                     "store_as": "computed.out"}))
    assert result.ending == "failed"
    error = result.state["computed"]["last_error"]
    assert error.startswith("run_command failed: ")
    assert "exited with code 3" in error
    assert "err 8" in error and "err 4" in error and "err 3" not in error  # the last five lines
    assert result.state["computed"]["out"] == {"exit_code": 3, "stdout": "partial\n",
                                               "stderr": "".join(f"err {i}\n" for i in range(9))}


def test_allow_failure_keeps_the_exit_code_as_data(run_yaml):
    result, _ = run_yaml(one_action({"type": "run_command", "command": ["bash", "-c", "echo out; exit 5"],
                                     "allow_failure": True, "store_as": "computed.out"}))
    assert result.ending == "done"
    assert result.state["computed"]["out"] == {"exit_code": 5, "stdout": "out\n", "stderr": ""}


def test_command_not_found(run_yaml):
    result, _ = run_yaml(one_action({"type": "run_command", "command": ["wfexec-no-such-program-x", "arg"]}))
    assert result.ending == "failed"
    assert "command 'wfexec-no-such-program-x' not found on PATH" in result.message


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie waiting to be reaped counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_timeout_stops_the_program_and_what_it_started(run_yaml, tmp_path):
    started = time.monotonic()
    # bash starts `sleep` as a child: stopping bash alone would leave it running, holding the output pipe.
    script = "sleep 31.7 & echo $! > sleeper.pid; wait"
    result, _ = run_yaml(one_action({"type": "run_command", "command": ["bash", "-c", script],
                                     "timeout": 1, "store_as": "computed.out"}))
    assert time.monotonic() - started < 10
    assert result.ending == "failed"
    assert "did not finish within 1 second " in result.message
    assert "out" not in result.state["computed"]
    sleeper = int((tmp_path / "sleeper.pid").read_text())
    deadline = time.monotonic() + 5
    while alive(sleeper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(sleeper)


@pytest.mark.parametrize("action, message", [
    ({}, "needs exactly one of `command`"),
    ({"command": ["true"], "script": "x.sh"}, "needs exactly one of `command`"),
    ({"command": ["true"], "interpreter": "bash"}, "`interpreter` applies to `script`"),
    ({"command": []}, "the command is empty"),
    ({"command": ["true"], "timeout": "${computed.none}"}, "`timeout` must be a positive number"),
])
def test_malformed_calls_fail_clearly(run_yaml, action, message):
    result, _ = run_yaml(one_action({"type": "run_command", **action}, initial_state={"computed": {"none": None}}))
    assert result.ending == "failed"
    assert message in result.message


# --------------------------------------------------------------------------- #
# scripts

def write_script(folder, name, text, executable=False):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if executable:
        path.chmod(0o755)
    return path


def test_script_interpreter_by_extension_with_args(run_yaml, tmp_path):
    write_script(tmp_path, "tools/show.py", "import sys; print('py', *sys.argv[1:])")
    write_script(tmp_path, "tools/show.sh", 'echo "sh $BASH_VERSION" "$@"')
    result, _ = run_yaml(one_action(
        {"type": "run_command", "script": "tools/show.py", "args": ["${evil}"], "store_as": "computed.py"},
        {"type": "run_command", "script": "tools/show.sh", "args": ["a b"], "store_as": "computed.sh"}),
        inputs={"evil": EVIL})
    assert result.ending == "done"
    assert result.state["computed"]["py"]["stdout"] == f"py {EVIL}\n"
    assert result.state["computed"]["sh"]["stdout"].startswith("sh 5.") or \
        result.state["computed"]["sh"]["stdout"].startswith("sh 4.")
    assert result.state["computed"]["sh"]["stdout"].endswith(" a b\n")


def test_script_found_beside_the_workflow_before_the_working_directory(run_yaml, tmp_path):
    work = tmp_path / "work"
    write_script(tmp_path, "tool.py", "print('beside the workflow')")
    write_script(work, "tool.py", "print('in the working directory')")
    write_script(work, "only-here.py", "print('working directory fallback')")
    result, _ = run_yaml(one_action({"type": "run_command", "script": "tool.py", "store_as": "computed.a"},
                                    {"type": "run_command", "script": "only-here.py", "store_as": "computed.b"}),
                         cwd=work)
    assert result.ending == "done"
    assert result.state["computed"]["a"]["stdout"] == "beside the workflow\n"
    assert result.state["computed"]["b"]["stdout"] == "working directory fallback\n"


def test_script_with_explicit_interpreter_and_direct_execution(run_yaml, tmp_path):
    write_script(tmp_path, "noext", "import sys; print(sys.version_info[0])")
    write_script(tmp_path, "direct", "#!/bin/sh\necho direct \"$1\"\n", executable=True)
    result, _ = run_yaml(one_action(
        {"type": "run_command", "script": "noext", "interpreter": "python", "store_as": "computed.a"},
        {"type": "run_command", "script": "direct", "args": ["x y"], "store_as": "computed.b"}))
    assert result.ending == "done"
    assert result.state["computed"]["a"]["stdout"] == "3\n"
    assert result.state["computed"]["b"]["stdout"] == "direct x y\n"


def test_script_missing_names_both_places(run_yaml, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    result, _ = run_yaml(one_action({"type": "run_command", "script": "absent.sh"}), cwd=work)
    assert result.ending == "failed"
    assert "script 'absent.sh' not found" in result.message
    assert str(tmp_path) in result.message and str(work) in result.message


def test_script_not_executable_without_interpreter(run_yaml, tmp_path):
    write_script(tmp_path, "plain", "echo hi\n")
    result, _ = run_yaml(one_action({"type": "run_command", "script": "plain"}))
    assert result.ending == "failed"
    assert "is not executable" in result.message


def test_script_with_a_missing_shebang_interpreter(run_yaml, tmp_path):
    write_script(tmp_path, "odd", "#!/nonexistent/interpreter\n", executable=True)
    result, _ = run_yaml(one_action({"type": "run_command", "script": "odd"}))
    assert result.ending == "failed"
    assert "interpreter named on its #! line was not found" in result.message


# --------------------------------------------------------------------------- #
# v2 names

def test_v2_types_store_trimmed_stdout(run_yaml, tmp_path):
    write_script(tmp_path, "s.py", "import sys; print('  script', *sys.argv[1:], '  ')")
    write_script(tmp_path, "b.txt", 'echo "bash $0"')
    write_script(tmp_path, "p.txt", "print('python')")
    result, _ = run_yaml(one_action(
        {"type": "run_script", "script": "s.py", "args": ["x"], "store_as": "computed.s"},
        {"type": "run_bash", "script": "b.txt", "store_as": "computed.b"},
        {"type": "run_python", "script": "p.txt", "store_as": "computed.p"}))
    assert result.ending == "done"
    assert result.state["computed"]["s"] == "script x"
    assert result.state["computed"]["b"] == f"bash {tmp_path / 'b.txt'}"
    assert result.state["computed"]["p"] == "python"


def test_v2_failure_routes_on_failure(run_yaml, tmp_path):
    write_script(tmp_path, "fail.sh", "echo broken >&2; exit 2")
    result, _ = run_yaml(one_action({"type": "run_bash", "script": "fail.sh", "store_as": "computed.b"}))
    assert result.ending == "failed"
    assert "exited with code 2" in result.message and "broken" in result.message
    assert result.state["computed"]["b"] == ""


def test_run_python_in_a_venv(run_yaml, tmp_path):
    subprocess.run([PY, "-m", "venv", "--without-pip", str(tmp_path / "env")], check=True, timeout=120)
    write_script(tmp_path, "where.py", "import os, sys; print(sys.prefix, os.environ['VIRTUAL_ENV'])")
    result, _ = run_yaml(one_action({"type": "run_python", "script": "where.py", "venv": "env",
                                     "store_as": "computed.where"},
                                    {"type": "run_python", "script": "where.py", "venv": "where.py"}))
    assert result.ending == "failed"
    prefix, virtual_env = result.state["computed"]["where"].split(" ")
    assert prefix == virtual_env == str(tmp_path / "env")
    assert "'where.py' is not a Python virtual environment" in result.message


# --------------------------------------------------------------------------- #
# output and declarations

def test_output_is_stored_and_traced_never_printed(run_yaml):
    result, captured = run_yaml(one_action({"type": "run_command", "command": ["bash", "-c", "echo SEEN-OUT; "
                                                                                 "echo SEEN-ERR >&2"],
                                            "store_as": "computed.out"}), trace=True)
    assert result.ending == "done"
    assert "SEEN" not in captured.text
    trace = captured.err.getvalue()
    assert "SEEN-OUT" in trace and "SEEN-ERR" in trace and "exit code 0" in trace


def test_process_types_are_marked_not_idempotent():
    registry = consequences()
    for name in ("run_command", "run_script", "run_bash", "run_python"):
        spec = registry.get(name)
        assert spec.effects == ("process",), name
        assert spec.idempotent is False, name
