"""The "no `${...}` in code" guard looks through wrappers and knows every interpreter that takes inline code.

Each payload is run by the real `wfexec run` in a subprocess; were it not refused, the value from state would be run
as code and create `pwned`. A value passed as an argument (data) still works.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import one_action, wfexec_cli

PAYLOAD = "touch pwned"

ATTACKS = [
    ["env", "bash", "-c", "${evil}"],
    ["env", "-i", "X=1", "bash", "-c", "${evil}"],
    ["timeout", "5", "bash", "-c", "${evil}"],
    ["timeout", "-s", "KILL", "5", "sh", "-ec", "${evil}"],
    ["nice", "-n", "5", "bash", "-c", "${evil}"],
    ["nohup", "sh", "-c", "${evil}"],
    ["setsid", "sh", "-c", "${evil}"],
    ["stdbuf", "-o", "L", "bash", "-c", "${evil}"],
    ["env", "nice", "timeout", "9", "bash", "-c", "${evil}"],
    ["xargs", "-0", "sh", "-c", "${evil}"],
    ["python3", "-c", "import os; os.system('${evil}')"],
    ["python3", "-c${evil}"],
    ["/usr/bin/python3.11", "-B", "-c", "${evil}"],
    ["perl", "-e", "system('${evil}')"],
    ["perl", "-lne", "system('${evil}')"],
    ["awk", "BEGIN { system(\"${evil}\") }"],
    ["env", "-S", "bash -c ${evil}"],
    "env bash -c '${evil}'",
    "timeout 5 python3 -c \"import os; os.system('${evil}')\"",
]
STDIN_ATTACKS = [["bash", "-s"], ["bash"], ["sh"], ["python3"], ["python3", "-"], ["env", "bash", "-s"]]


def _run(tmp_path, action):
    (tmp_path / "workflow.yaml").write_text(one_action(action))
    return wfexec_cli("run", "workflow.yaml", "--input", f"evil={PAYLOAD}", cwd=tmp_path, timeout=60)


def _refused(result, tmp_path):
    assert not (tmp_path / "pwned").exists()
    assert result.returncode == 1, result.stdout + result.stderr
    assert "would run a value from state as" in result.stdout + result.stderr or \
        "would be run as code" in result.stdout + result.stderr, result.stdout + result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ATTACKS, ids=lambda c: json.dumps(c)[:40])
def test_code_behind_a_wrapper_or_in_any_interpreter_is_refused(tmp_path, command):
    _refused(_run(tmp_path, {"type": "run_command", "command": command}), tmp_path)


@pytest.mark.parametrize("command", STDIN_ATTACKS, ids=" ".join)
def test_a_value_sent_as_code_on_standard_input_is_refused(tmp_path, command):
    _refused(_run(tmp_path, {"type": "run_command", "command": command, "input": "${evil}"}), tmp_path)


@pytest.mark.parametrize("command", [
    ["env", "bash", "-c", 'echo "$1" > out.txt', "_", "${evil}"],
    ["timeout", "5", "python3", "-c", "import sys; open('out.txt', 'w').write(sys.argv[1])", "${evil}"],
    ["cat"],
    ["xargs", "-0", "sh", "-c", 'printf "%s" "$1" > out.txt', "_"],
    ["find", ".", "-maxdepth", "0", "-exec", "sh", "-c", 'printf "%s" "$1" > out.txt', "_", "${evil}", ";"],
    ["git", "-c", "user.name=${evil}", "config", "user.name"],
    ["script", "-q", "-c", 'printf "%s" "$WF" > out.txt', "/dev/null"],
])
def test_values_as_arguments_or_data_still_work(tmp_path, command):
    action = {"type": "run_command", "command": command, "store_as": "computed.out", "env": {"WF": "${evil}"}}
    if command[0] in ("cat", "xargs"):
        action["input"] = "${evil}"
    result = _run(tmp_path, action)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not (tmp_path / "pwned").exists()
    # the value arrived whole, as one argument or as data, where the program wrote it
    written = (tmp_path / "out.txt").read_text().rstrip("\n") if (tmp_path / "out.txt").exists() else None
    stored = json.loads(wfexec_cli("run", "workflow.yaml", "--ephemeral", "--format", "json", "--input",
                                   f"evil={PAYLOAD}", cwd=tmp_path).stdout)["state"]["computed"]["out"]["stdout"]
    assert PAYLOAD in (written or "") + stored, (written, stored)


@pytest.mark.parametrize("timeout", [1e300, "inf", "nan", 10 ** 12])
def test_a_huge_timeout_is_an_error_with_a_position_not_a_traceback(tmp_path, timeout):
    result = _run(tmp_path, {"type": "run_command", "command": ["true"], "timeout": timeout})
    assert result.returncode in (1, 2), result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert "timeout" in result.stdout + result.stderr


# Wrappers and programs that pass code on in their own way (inline_code.PROGRAMS): each attack really ran
# `x; touch PWNED` before the guard knew them. The workflow has no on_failure, so the refusal is a run error
# located at the action.
HOSTILE = "x; touch PWNED"
LOCATED = re.compile(r"^workflow\.yaml:\d+:\d+: error: node 'act': action 1 \(run_command\) failed: .*"
                     r"(would run a value from state as|would be run as code)")
PASSED_ON = {
    "xargs-input": {"command": ["xargs", "-0", "sh", "-c"], "input": "${evil}"},
    "find-exec": {"command": ["find", ".", "-maxdepth", "0", "-exec", "sh", "-c", "${evil}", ";"]},
    "git-alias": {"command": ["git", "-c", "alias.x=!${evil}", "x"]},
    "make-eval": {"command": ["make", "--eval", "all: ; @echo ${evil}", "all"]},
    "script-c": {"command": ["script", "-q", "-c", "${evil}", "/dev/null"]},
    "vim-c": {"command": ["vim", "-u", "NONE", "-i", "NONE", "-es", "-c", "!${evil}", "-c", "qa!"]},
    "git-config-env": {"command": ["git", "--config-env=alias.x=EVIL", "x"], "env": {"EVIL": "!${evil}"}},
    "git-include": {"command": ["git", "-c", "include.path=${evil}", "status"]},
    "make-assignment": {"command": ["make", "-f", "/dev/null", "X:=$(shell ${evil})", "all"]},
}


@pytest.mark.parametrize("action", list(PASSED_ON.values()), ids=list(PASSED_ON))
def test_code_passed_on_by_xargs_find_git_make_script_or_vim_is_refused_with_a_position(tmp_path, action):
    doc = {"name": "passed-on", "version": "1.0", "start_node": "act",
           "nodes": {"act": {"type": "action", "actions": [{"type": "run_command", **action}], "on_success": "done"}},
           "endings": {"done": {"type": "success", "message": "ok"}}}
    (tmp_path / "workflow.yaml").write_text(json.dumps(doc, indent=2))
    result = wfexec_cli("run", "workflow.yaml", "--ephemeral", "--input", f"evil={HOSTILE}", cwd=tmp_path,
                        timeout=60)
    assert not (tmp_path / "PWNED").exists()
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1 and LOCATED.match(errors[0]), result.stderr

