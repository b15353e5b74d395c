"""What a run's page and the API behind it show and do, over real runs in a real store: the drawn graph with its
marks, the filters of /runs, the agents of a states run, the output of the runs the server started, resuming
an interrupted run (what becomes of its step in flight), running again, the equivalent command lines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("starlette")

from conftest import wfexec_in_process as cli  # noqa: E402
# api, root: fixtures
from serve_support import api, client, config, once_waiting, root, waiting_run, workflows  # noqa: E402,F401

# Marks its step in flight, says so with a file, then takes long enough to be killed in the middle.
SLOW = """\
name: slow
version: "1.0.0"
start_node: work
input_schema:
  type: object
  additionalProperties: false
  properties:
    where: {type: string}
nodes:
  work:
    type: action
    actions:
      - {type: run_command, command: [bash, -c, 'echo "working on it"; touch "$1/started"; sleep 30', work, "${where}"]}
    on_success: done
    on_failure: failed
endings:
  done: {type: success, message: worked}
  failed: {type: failure, message: failed}
"""


# Writes far more than a step keeps of its output.
CHATTY = """\
name: chatty
version: "1.0.0"
start_node: talk
nodes:
  talk:
    type: action
    actions:
      - {type: run_command, command: [seq, "1", "100000"]}
    on_success: done
    on_failure: failed
endings:
  done: {type: success, message: said}
  failed: {type: failure, message: failed}
"""


def _until_finished(api, run_id: str) -> None:
    api.get(f"/api/runs/{run_id}/events")  # the stream ends once the run has finished


def test_the_graph_is_drawn_with_the_nodes_the_run_went_through_and_the_one_it_stands_at(api, root):
    run_id = waiting_run(root / "greeter")
    waiting = api.get(f"/api/runs/{run_id}/graph").json()
    assert waiting["svg"].startswith("<svg class=\"graph-picture\"") and waiting["current"] == "ask"
    assert 'class="node current" data-node="ask"' in waiting["svg"]
    assert 'class="node" data-node="greet"' in waiting["svg"]
    api.post(f"/api/runs/{run_id}/answer", json={"answer": "plain"})
    _until_finished(api, run_id)
    done = api.get(f"/api/runs/{run_id}/graph").json()["svg"]
    assert 'class="node visited" data-node="ask"' in done and 'class="node visited" data-node="greet"' in done
    assert 'class="node" data-node="note_warm"' in done  # the branch it did not take
    assert 'class="node visited current" data-node="done"' in done  # the ending it reached
    assert "<?xml" not in done and "<!--" not in done and "http://" not in done
    page = api.get(f"/runs/{run_id}").text
    assert 'id="graph"' in page and 'data-node="note_warm"' in page
    workflow_id = next(w["id"] for w in api.get("/api/workflows").json()["workflows"] if w["shown"] == "greeter")
    drawn = api.get(f"/workflows/{workflow_id}").text
    assert '<svg class="graph-picture"' in drawn and "visited" not in drawn.split('id="graph"')[1].split("</svg>")[0]


def test_runs_are_filtered_by_status_workflow_and_text_with_the_filters_in_the_address(api, root, tmp_path):
    ada = waiting_run(root / "greeter", "who=Ada")
    others = [waiting_run(root / "greeter") for _ in range(2)]
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "START.sh").write_text('echo "<result>ok</result>"\n')
    states = json.loads(cli("states", tmp_path / "agents", "--format", "json", cwd=tmp_path).stdout)["run_id"]
    by_workflow = api.get("/api/runs", params={"workflow": "greeter"}).json()
    assert [r["id"] for r in by_workflow["runs"]] == [*others[::-1], ada]
    assert by_workflow["workflows"] == ["agents", "greeter"]
    assert [r["id"] for r in api.get("/api/runs", params={"q": "greet ada"}).json()["runs"]] == [ada]
    assert [r["id"] for r in api.get("/api/runs", params={"q": "100%_"}).json()["runs"]] == []  # taken literally
    first = api.get("/api/runs", params={"workflow": "greeter", "limit": 2}).json()
    second = api.get("/api/runs", params={"workflow": "greeter", "limit": 2, "before": first["next"]}).json()
    assert [r["id"] for r in second["runs"]] == [ada] and second["next"] is None
    assert [r["id"] for r in api.get("/api/runs", params={"status": "completed"}).json()["runs"]] == [states]
    page = api.get("/runs", params={"workflow": "greeter", "q": "Ada"}).text
    assert f'data-run="{ada}"' in page and others[0] not in page and states not in page
    assert '<option value="greeter" selected>' in page and 'value="Ada"' in page
    assert api.get("/runs", params={"q": "nothing like it"}).text.count("No run matches") == 1


def test_the_agents_of_a_states_run_show_with_their_transcripts(api, tmp_path):
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "START.sh").write_text('echo "hello from the script"\necho "<result>ok</result>"\n')
    run_id = json.loads(cli("states", tmp_path / "agents", "--format", "json", cwd=tmp_path).stdout)["run_id"]
    agents = api.get(f"/api/runs/{run_id}/agents").json()["agents"]
    assert len(agents) == 1
    state = agents[0]["states"][0]
    assert state["kind"] != "markdown" and "hello from the script" in state["stdout"] and state["exit_code"] == 0
    shown = cli("show", run_id, "--agent", agents[0]["agent"], "--format", "json")
    assert json.loads(shown.stdout)["states"] == agents[0]["states"]  # what `show --agent` says
    assert "hello from the script" in api.get(f"/runs/{run_id}").text
    # What its script wrote, as it wrote it, is the run's output too (`wfexec states`, a door of its own).
    assert "main: START.sh stdout| hello from the script\n" in api.get(f"/api/runs/{run_id}/output").json()["text"]


def test_a_chatty_command_keeps_the_end_of_its_output_and_the_reader_is_told_what_was_not_kept(
        api, root, private_run_store):
    """Run at a terminal: the store keeps the last KEEP_BYTES of the step (not 600 KB), says how many it wrote in
    all, and a reader that asks from where it got to gets nothing twice."""
    import sqlite3

    from wfexec.durable.outputs import KEEP_BYTES

    (root / "chatty").mkdir()
    (root / "chatty" / "workflow.yaml").write_text(CHATTY)
    done = cli("run", root / "chatty", "--non-interactive")
    assert done.returncode == 0, done.stderr
    run_id = api.get("/api/runs").json()["runs"][0]["id"]
    written = "$ seq 1 100000\n" + "".join(f"stdout| {n}\n" for n in range(1, 100_001)) + "exit code 0\n"
    first = api.get(f"/api/runs/{run_id}/output").json()
    assert first["size"] == first["next"] == len(written)
    assert first["text"].startswith("── step 1 · talk ──\n… ") and "earlier bytes of this step were not kept" in first["text"]
    kept = first["text"].split(" …\n", 1)[1]
    assert kept.startswith("stdout| ") and written.endswith(kept) and len(kept) <= KEEP_BYTES
    assert api.get(f"/api/runs/{run_id}/output", params={"from": first["next"]}).json()["text"] == ""
    with sqlite3.connect(private_run_store) as db:
        assert db.execute("SELECT written, length(text) FROM outputs WHERE run_id = ?", (run_id,)).fetchall() == \
            [(len(written), len(kept))]
    shown = cli("show", run_id, "--output")  # the same at a terminal
    assert shown.returncode == 0 and shown.stdout == first["text"], shown.stderr
    assert json.loads(cli("show", run_id, "--output", "--format", "json").stdout)["bytes"] == len(written)
    nothing = cli("show", waiting_run(root / "greeter"), "--output")
    assert nothing.returncode == 0 and "no command or script of it wrote anything" in nothing.stdout


def test_the_output_of_a_run_started_at_a_terminal_is_followed_live_as_its_command_writes_it(root, private_run_store,
                                                                                          tmp_path):
    """`wfexec run` in a process of its own, as at a terminal; a real server on the same store. The test lets the
    command write its next lines only once it has read the previous ones through the event stream and the output
    API: reaching the end proves the output was followed live, while the command ran."""
    import httpx

    from serve_support import start_server

    gates = tmp_path / "gates"
    gates.mkdir()
    terminal = subprocess.Popen([sys.executable, "-m", "wfexec", "run", str(root / "gated"), "--non-interactive",
                                 "--input", f"gates={gates}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, env={**os.environ, "WFEXEC_STORE": str(private_run_store)})
    live = start_server(private_run_store)
    try:
        with httpx.Client(base_url=live.base, headers={"Authorization": f"Bearer {live.token}"}, timeout=120) as web:
            run_id = _first_run(web)
            text, read_to = "", 0
            opens = {"two line 40": "two", "three line 40": "three", "four line 40": "four"}
            (gates / "one").touch()
            with web.stream("GET", f"/api/runs/{run_id}/events") as events:
                kind = None
                for line in events.iter_lines():
                    if line.startswith("event: "):
                        kind = line[7:]
                    elif line.startswith("data: ") and kind == "output":
                        got = web.get(f"/api/runs/{run_id}/output", params={"from": read_to}).json()
                        text, read_to = text + got["text"], got["next"]
                        for last, gate in opens.items():
                            if last in text:
                                (gates / gate).touch()
                    elif line.startswith("data: ") and kind == "run" and json.loads(line[6:])["status"] == "waiting":
                        break
        assert terminal.wait(timeout=120) == 3, terminal.stderr.read()  # parked on its question
    finally:
        terminal.kill()
        live.stop()
    assert text.index("── step 1 · prepare ──") < text.index("── step 2 · build ──\n$ bash -c")
    lines = [line for line in text.splitlines() if line.startswith("stdout| ")]
    assert lines == [f"stdout| {batch} line {n}" for batch in ("two", "three", "four") for n in range(1, 41)]
    assert text.count("exit code 0") == 2


def _first_run(web) -> str:
    """The id of the store's first run, once its process has created it."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        listed = web.get("/api/runs")
        # (400 for the moment the run's process creates the store's tables)
        runs = listed.json()["runs"] if listed.status_code == 200 else []
        if runs:
            return runs[0]["id"]
        time.sleep(0.05)
    raise AssertionError("the run never appeared in the store")


def test_an_interrupted_run_resumes_once_told_what_becomes_of_its_step_in_flight(api, root, tmp_path):
    (root / "slow").mkdir()
    (root / "slow" / "workflow.yaml").write_text(SLOW)
    marks = tmp_path / "marks"
    marks.mkdir()
    run = subprocess.Popen([sys.executable, "-m", "wfexec", "run", str(root / "slow"), "--non-interactive",
                            "--input", f"where={marks}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    try:
        while not (marks / "started").exists() and run.poll() is None:
            time.sleep(0.05)
        run_id = _first_run(api)
        while "stdout| working on it" not in api.get(f"/api/runs/{run_id}/output").json()["text"] and \
                run.poll() is None:
            time.sleep(0.05)  # kept within outputs.WRITE_SECONDS of being written
    finally:
        os.killpg(run.pid, signal.SIGKILL)  # the run's process and its command, in the middle of the step
        run.wait()
    shown = api.get(f"/api/runs/{run_id}").json()
    assert shown["status"] == "interrupted" and shown["in_flight"]["node"] == "work"
    # The step's outcome is lost with the process; what its command wrote before is not.
    kept = api.get(f"/api/runs/{run_id}/output").json()["text"].splitlines()
    assert kept[0] == "── step 1 · work ──" and kept[1].startswith("$ bash -c 'echo") and \
        kept[2:] == ["stdout| working on it"]
    page = api.get(f"/runs/{run_id}").text
    assert 'data-action="rerun"' in page and 'data-action="skip"' in page
    assert f"wfexec resume {run_id} --store" in page and "--rerun" in page
    unsaid = api.post(f"/api/runs/{run_id}/resume", json={})
    assert unsaid.status_code == 409 and unsaid.json()["choices"] == ["rerun", "skip"]
    assert "in flight" in unsaid.json()["error"]
    assert api.post(f"/api/runs/{run_id}/resume", json={"in_flight": "twice"}).status_code == 400
    skipped = api.post(f"/api/runs/{run_id}/resume", json={"in_flight": "skip"})
    assert skipped.status_code == 200, skipped.text
    _until_finished(api, run_id)
    assert json.loads(cli("show", run_id, "--format", "json").stdout)["status"] == "completed"


def test_run_again_starts_a_new_run_with_the_same_inputs(api, root, private_run_store):
    run_id = waiting_run(root / "greeter", "who=true")  # an input declared as text: taken as it is
    again = api.post(f"/api/runs/{run_id}/again", json={})
    assert again.status_code == 200, again.text
    fresh = once_waiting(api, again.json()["run_id"])
    assert fresh["id"] != run_id and fresh["inputs"] == {"who": "true"} and fresh["status"] == "waiting"
    assert fresh["pending_question"]["question"] == "Greet true how?"
    page = api.get(f"/runs/{run_id}").text
    assert 'data-action="again"' in page and "--input who=true --store" in page
    with client(config(private_run_store)) as elsewhere:  # a server given no --root launches nothing
        cfg = elsewhere.app.state.server.config
        refused = elsewhere.post(f"/api/runs/{run_id}/again", json={},
                                 headers={"Authorization": f"Bearer {cfg.token}"})
        assert refused.status_code == 404 and "wfexec run" in refused.json()["hint"]
        assert 'data-action="again"' not in elsewhere.get(f"/runs/{run_id}",
                                                          headers={"Authorization": f"Bearer {cfg.token}"}).text


def test_a_workflow_page_shows_its_plan_before_its_launch_form(api, root):
    listed = {w["shown"]: w["id"] for w in api.get("/api/workflows").json()["workflows"]}
    manifest = api.get(f"/api/workflows/{listed['gated']}/plan").json()
    assert [n["node"] for n in manifest["nodes"]] == ["prepare", "build", "check"]
    assert {e["effect"] for n in manifest["nodes"] for e in n["effects"]} == {"process", "question"}
    page = api.get(f"/workflows/{listed['gated']}").text
    assert page.index('id="plan"') < page.index('data-action="launch"') and "ask Ship it?" in page
    broken = api.get(f"/api/workflows/{listed['broken']}/plan")
    assert broken.status_code == 422 and "does not compile" in broken.json()["error"]


def test_the_inbox_shows_the_newest_stalled_runs_and_counts_the_rest(api, root, private_run_store):
    """A crash can leave thousands of interrupted runs: the inbox draws the newest 20 and links to the others,
    while a run waiting for an answer is still there."""
    from wfexec.durable.store import Store

    waiting = waiting_run(root / "greeter")
    opened = Store(private_run_store)
    try:
        with opened.transaction():  # running rows whose process is gone (no lease): interrupted
            stalled = [opened.create_run(workflow_path=str(root / "greeter" / "workflow.yaml"),
                                         workflow_name="greeter", workflow_hash="0" * 16, node_hashes={},
                                         inputs={"n": n}, state={}, start_node="ask") for n in range(25)]
            opened.db.execute(f"UPDATE runs SET lease = NULL WHERE id IN ({', '.join('?' * len(stalled))})", stalled)
    finally:
        opened.close()
    page = api.get("/").text
    assert page.count('<article class="card') == 1 + 20  # the waiting run, and the 20 newest stalled
    assert f'data-run="{waiting}"' in page
    newest = sorted(stalled, reverse=True)
    assert all(f'data-run="{run}"' in page for run in newest[:20])
    assert not any(f'data-run="{run}"' in page for run in newest[20:])
    assert "5 more\n    stopped or interrupted runs" in page and 'href="/runs?status=interrupted"' in page
