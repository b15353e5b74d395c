"""The embedding API: durable runs in a given SQLite store, resume of parked and killed runs, an
embedder's own `ask`, and the guide's example (docs/guide/api.md), run exactly as written."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

import wfexec
from conftest import ROOT
from wfexec.durable.store import open_store

QUICKSTART = ROOT / "skills" / "quickstart"


def guide_api_example() -> str:
    text = (ROOT / "docs" / "guide" / "api.md").read_text(encoding="utf-8")
    return re.search(r"# Python API\n\n```python\n(.*?)```", text, re.S).group(1)


def test_the_guide_example_runs_as_written(tmp_path):
    shutil.copytree(ROOT / "skills", tmp_path / "skills")
    done = subprocess.run([sys.executable, "-c", guide_api_example()], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "[]",  # validate_text of the saved text: no diagnostics
        "done success Hello, Ada 3",
        "True",  # recorded in the run store by default
        "None",  # ephemeral=True: not recorded
        "True ask_mood ['cheerful', 'plain']",
        "Hello, Ada!",
        "Hello, world",
        "ask_mood 'grumpy' is not an option of 'ask_mood' (options: cheerful, plain)",
    ]
    assert (tmp_path / "runs.db").exists()


def test_a_parked_run_resumes_from_its_store_in_another_process(tmp_path):
    store = tmp_path / "runs.db"
    with pytest.raises(wfexec.NeedsAnswer) as waiting:
        wfexec.run(QUICKSTART, inputs={"name": "Bo"}, store=store)
    run_id = waiting.value.run_id
    opened = open_store(store)
    try:
        assert opened.get(run_id).status == "waiting"
    finally:
        opened.close()
    resumed = subprocess.run(
        [sys.executable, "-c", "import sys, wfexec; r = wfexec.resume(sys.argv[1], answers={'ask_mood': 'plain'}, "
                               "store=sys.argv[2]); print(r.message, r.run_id)", run_id, str(store)],
        capture_output=True, text=True, timeout=60)
    assert resumed.stdout.split() == ["Hello,", "Bo", run_id], resumed.stderr


def test_ask_receives_the_question_text_node_and_options(tmp_path):
    asked = []

    def ask(question):
        asked.append((question.node, question.text, [(c.id, c.label) for c in question.choices]))
        return "Cheerfully"  # a label is an answer too

    result = wfexec.run(QUICKSTART, inputs={"name": "Cy"}, ask=ask, store=tmp_path / "runs.db")
    assert asked == [("ask_mood", "How should I greet Cy?", [("cheerful", "Cheerfully"), ("plain", "Plainly")])]
    assert result.message == "Hello, Cy!" and result.run_id


SLOW = """
name: slow
version: 1
start_node: mark
nodes:
  mark:
    type: action
    actions: [{type: set_state, field: computed.started, value: true}]
    on_success: wait
  wait:
    type: action
    actions: [{type: run_command, command: [sleep, "30"]}]
    on_success: done
endings:
  done: {type: success, message: "finished after ${computed.started}"}
"""


def test_a_killed_run_resumes_through_the_api(tmp_path):
    path = tmp_path / "slow.yaml"
    path.write_text(SLOW)
    store = tmp_path / "runs.db"
    child = subprocess.Popen([sys.executable, "-c", "import sys, wfexec; wfexec.run(sys.argv[1], store=sys.argv[2])",
                              str(path), str(store)])
    try:
        run = None
        for _ in range(300):  # until the run is inside the sleeping step
            if store.exists():
                opened = open_store(store)
                try:
                    runs = opened.list()
                    run = runs[0] if runs and runs[0].in_flight else None
                finally:
                    opened.close()
            if run is not None:
                break
            time.sleep(0.05)
        assert run is not None and run.in_flight["node"] == "wait"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    path.write_text(SLOW.replace('[sleep, "30"]', '[sleep, "0"]'))  # what changed is the step still in flight
    result = wfexec.resume(run.id, store=store, rerun=True)
    assert (result.ending, result.message, result.run_id) == ("done", "finished after true", run.id)
