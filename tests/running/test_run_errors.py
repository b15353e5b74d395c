"""A mistake met while a node runs is a run error (exit 1) at file:line and the node, and a durable run
is left `failed` in the real SQLite store, never `running`."""

from __future__ import annotations

import json
import re
from textwrap import dedent

import pytest

from wfexec.errors import WfexecError
from wfexec.exit_codes import exit_code_for

ENDINGS = """
endings:
  done: {type: success, message: ok}
"""

CHILD = """
name: child
version: 1
start_node: finish
nodes:
  finish:
    type: action
    actions: [{type: set_flag, flag: x}]
    on_success: done
endings:
  done: {type: success, message: child done}
"""

# Each: a workflow whose node `bad` fails at run time for a reason its author can fix.
MISTAKES = {
    "reference input": """
        name: m
        version: 1
        start_node: bad
        nodes:
          bad:
            type: reference
            workflow: child.yaml
            input: {x: "${ null.x }"}
            next_node: done
        """,
    "reference section": """
        name: m
        version: 1
        start_node: bad
        nodes:
          bad:
            type: reference
            doc: guide.md
            section: "${ missing_name.attr }"
            next_node: done
        """,
    "user_prompt question": """
        name: m
        version: 1
        start_node: bad
        nodes:
          bad:
            type: user_prompt
            prompt:
              question: "Pick ${ null.x }"
              options: [{id: a, label: A}]
            on_response:
              a: {next_node: done}
        """,
    "user_prompt label": """
        name: m
        version: 1
        start_node: bad
        nodes:
          bad:
            type: user_prompt
            prompt:
              question: Pick
              options: [{id: a, label: "A ${ missing_name.attr }"}]
            on_response:
              a: {next_node: done}
        """,
    "state path that is not text": """
        name: m
        version: 1
        start_node: bad
        nodes:
          bad:
            actions: [{type: set_state, field: "${ x => x }", value: 1}]  # a function is no path
            type: action
            on_success: done
        """,
    "state path that is a list": """
        name: m
        version: 1
        start_node: bad
        nodes:
          bad:
            actions: [{type: set_state, field: "${ ['computed', 'x'] }", value: 1}]
            type: action
            on_success: done
        """,
    "options_from_state not a list": """
        name: m
        version: 1
        start_node: bad
        initial_state: {things: 5}
        nodes:
          bad:
            type: user_prompt
            prompt:
              question: Pick
              options_from_state: things
            on_response:
              selected: {next_node: done}
        """,
}


# Only a node that asks may be answered: an answer for any other would be refused before the run starts.
ANSWERED = {name for name, text in MISTAKES.items() if "type: user_prompt" in text}


def line_of_bad(path) -> int:
    """The line where node `bad`'s fields begin (errors point at the node's mapping)."""
    lines = open(path, encoding="utf-8").read().splitlines()
    return lines.index("  bad:") + 2


@pytest.fixture
def mistake(tmp_path):
    def write(name: str):
        (tmp_path / "child.yaml").write_text(dedent(CHILD))
        (tmp_path / "guide.md").write_text("# Guide\n\n## Steps\n\nDo things.\n")
        path = tmp_path / "workflow.yaml"
        path.write_text(dedent(MISTAKES[name]) + ENDINGS)
        return path

    return write


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_a_mistake_inside_a_node_exits_1_at_the_node_and_leaves_the_run_failed(name, mistake, cli, tmp_path):
    path = mistake(name)
    done = cli("run", path, *(["--answer", "bad=a"] if name in ANSWERED else []), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert re.search(rf"workflow.yaml:{line_of_bad(path)}:\d+: error: node 'bad': ", done.stderr), done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    runs = json.loads(cli("runs", "--format", "json", cwd=tmp_path).stdout)
    assert [r["status"] for r in runs] == ["failed"]
    shown = cli("show", runs[0]["id"], cwd=tmp_path)
    assert "node 'bad'" in shown.stdout and "failed" in shown.stdout


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_in_process_the_same_mistakes_raise_a_run_error_with_a_position(name, mistake, tmp_path):
    import wfexec

    with pytest.raises(WfexecError) as caught:
        wfexec.run(mistake(name), answers={"bad": "a"} if name in ANSWERED else None, cwd=tmp_path)
    error = caught.value
    assert exit_code_for(error) == 1
    assert (error.position.node, error.position.line) == ("bad", line_of_bad(error.position.file))
    assert error.position.file.endswith("workflow.yaml")
