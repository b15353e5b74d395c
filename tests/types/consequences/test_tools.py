"""install_tool: a real bash install command, values from state kept as data."""

from __future__ import annotations

import os

import pytest

from conftest import one_action


@pytest.fixture
def bin_on_path(tmp_path, monkeypatch):
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return folder


INSTALL = ("mkdir -p bin && printf '#!/bin/sh\\necho %s\\n' \"${computed.greeting}\" > bin/wfexec-demo-tool "
           "&& chmod +x bin/wfexec-demo-tool")


def test_install_tool_runs_the_command_and_checks_the_tool(run_yaml, bin_on_path):
    result, _ = run_yaml(one_action({"type": "install_tool", "tool": "wfexec-demo-tool", "install_command": INSTALL},
                                    initial_state={"computed": {"greeting": "hi"}}))
    assert result.ending == "done", result.message
    assert result.state["computed"]["install_result"] == {"status": "installed", "message": "Installed wfexec-demo-tool"}
    assert (bin_on_path / "wfexec-demo-tool").is_file()


def test_install_tool_skips_a_tool_already_there(run_yaml, tmp_path):
    result, _ = run_yaml(one_action({"type": "install_tool", "tool": "sh", "install_command": "touch ran",
                                     "store_as": "computed.sh"}))
    assert result.state["computed"]["sh"]["status"] == "skipped"
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("command, message", [
    ("echo 'no mirror' >&2; exit 3", "exited with code 3:\nno mirror"),
    ("true", "wfexec-absent-tool is not available after installation"),
    (None, "no install command for wfexec-absent-tool"),
])
def test_install_tool_failures(run_yaml, command, message):
    call = {"type": "install_tool", "tool": "wfexec-absent-tool"}
    if command:
        call["install_command"] = command
    result, _ = run_yaml(one_action(call))
    assert result.ending == "failed"
    assert message in result.message


@pytest.mark.parametrize("quoting", ["'${computed.evil}'", '"${computed.evil}"', "${computed.evil}"])
def test_a_value_in_the_shell_text_is_data_in_every_quoting(run_yaml, tmp_path, quoting):
    evil = "x'; touch pwned; echo \"$(touch pwned2)\" '"
    result, _ = run_yaml(one_action({"type": "install_tool", "tool": "wfexec-absent-tool", "skip_if_available": False,
                                     "install_command": f"printf '%s' {quoting} > got.txt"},
                                    initial_state={"computed": {"evil": evil}}))
    assert "not available after installation" in result.message  # the command itself ran and succeeded
    assert (tmp_path / "got.txt").read_text() == evil
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()
