"""Questions at a real terminal: wfexec under a pseudo-terminal, keys sent as a person would."""

from __future__ import annotations

import os
import sys

import pexpect

from conftest import ROOT, with_coverage

DOWN = "\x1b[B"
ENTER = "\r"

FREE_TEXT = """
name: free
version: 1
start_node: ask
nodes:
  ask:
    type: user_prompt
    prompt:
      question: "Which branch?"
      header: Branch
      options:
        - {id: main, label: "main", description: "the default branch"}
        - {id: dev, label: "dev", description: "work in progress"}
    on_response:
      main: {next_node: done}
      dev: {next_node: done}
      other: {next_node: done}
endings:
  done: {type: success, message: "chose ${user_responses.ask.id}: ${user_responses.ask.raw.text ?? user_responses.ask.raw.label}"}
"""


def spawn(*args, cwd=ROOT):
    child = pexpect.spawn(sys.executable, ["-m", "wfexec", *map(str, args)], cwd=str(cwd), encoding="utf-8",
                          timeout=20, dimensions=(40, 120),
                          env=with_coverage({"TERM": "xterm", "PATH": "/usr/bin:/bin",
                                             "WFEXEC_STORE": os.environ["WFEXEC_STORE"]}))
    return child


def test_select_an_option_with_arrow_keys():
    child = spawn("run", "skills/quickstart")
    child.expect("How should I greet world")
    child.expect("Cheerfully")
    child.send(DOWN)
    child.send(ENTER)
    child.expect("Hello, world\r\n")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_other_lets_the_person_type_free_text(tmp_path):
    path = tmp_path / "workflow.yaml"
    path.write_text(FREE_TEXT)
    child = spawn("run", path)
    child.expect("Which branch")
    child.expect("Other")
    child.send(DOWN + DOWN)
    child.send(ENTER)
    child.expect("Your answer")
    child.send("release-2.0" + ENTER)
    child.expect("chose other: release-2.0")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_ctrl_c_at_a_question_stops_with_exit_4():
    child = spawn("run", "skills/quickstart")
    child.expect("Cheerfully")
    child.sendcontrol("c")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 4
