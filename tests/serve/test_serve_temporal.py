"""`wfexec serve --temporal`: the same pages and API over a real Temporal dev server with a real worker. A run
started at a terminal on the cluster shows waiting with its question, is answered from the server (through
`wfexec resume --temporal`'s own update, which refuses what does not fit) and ends as `wfexec show --temporal`
then says; a launch from the server starts a run on the cluster, which the server then cancels."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("starlette")
pytest.importorskip("temporalio", reason="needs wfexec[temporal]")
httpx = pytest.importorskip("httpx")

from serve_support import start_server, workflows  # noqa: E402
from temporal_support import DevServer, Workers, environment, run_id_from  # noqa: E402

pytestmark = pytest.mark.temporal


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    dev = DevServer(tmp_path_factory.mktemp("serve-temporal"))
    dev.start()
    pool = Workers(dev, "wfexec", tmp_path_factory.mktemp("serve-workers"))
    pool.start()
    yield dev
    pool.stop()
    dev.kill()


def _on_cluster(cluster, *args, cwd):
    return subprocess.run([sys.executable, "-m", "wfexec", *map(str, args)], env=environment(cluster), cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_the_pages_over_a_cluster_list_answer_launch_and_cancel_its_runs(cluster, tmp_path):
    root = workflows(tmp_path / "workflows")
    asked = _on_cluster(cluster, "run", root / "greeter", "--non-interactive", "--input", "who=Ada", cwd=tmp_path)
    assert asked.returncode == 3, asked.stderr
    run_id = run_id_from(asked.stderr)
    live = start_server(None, "--temporal", cluster.address, "--root", str(root), env=environment(cluster))
    try:
        with httpx.Client(base_url=live.base, headers={"Authorization": f"Bearer {live.token}"}, timeout=120) as web:
            listed = {r["id"]: r for r in web.get("/api/runs").json()["runs"]}
            assert listed[run_id]["status"] == "waiting"
            assert listed[run_id]["pending_question"]["question"] == "Greet Ada how?"
            assert "Greet Ada how?" in web.get("/", headers={"Accept": "text/html"}).text
            page = web.get(f"/runs/{run_id}").text
            assert f"Temporal {cluster.address}" in page and f"--temporal {cluster.address}" in page
            assert 'class="node current" data-node="ask"' in web.get(f"/api/runs/{run_id}/graph").json()["svg"]
            refused = web.post(f"/api/runs/{run_id}/answer", json={"answer": "loudly"})
            assert refused.status_code == 422 and "not an option" in refused.json()["error"]
            assert web.post(f"/api/runs/{run_id}/answer", json={"answer": "warm"}).status_code == 200
            ended = [line for line in web.get(f"/api/runs/{run_id}/events").text.splitlines()
                     if line.startswith("data: ")]
            assert json.loads(ended[-1][6:])["status"] == "completed"  # the stream ends with the run
            steps = web.get(f"/api/runs/{run_id}/journal").json()["journal"]
            assert [s["node"] for s in steps] == ["ask", "note_warm", "greet"]
            workflow = next(w["id"] for w in web.get("/api/workflows").json()["workflows"] if w["shown"] == "greeter")
            launched = web.post("/api/launch", json={"workflow": workflow, "inputs": {"who": "Lin"}})
            assert launched.status_code == 200, launched.text
            fresh = launched.json()["run_id"]
            cancelled = web.post(f"/api/runs/{fresh}/cancel", json={})
            assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
            assert web.post(f"/api/runs/{fresh}/cancel", json={}).status_code == 409
    finally:
        live.stop()
    shown = json.loads(_on_cluster(cluster, "show", run_id, "--format", "json", cwd=tmp_path).stdout)
    assert shown["status"] == "completed" and shown["result"]["message"] == "Hello, Ada"
    assert json.loads(_on_cluster(cluster, "show", fresh, "--format", "json", cwd=tmp_path).stdout)["status"] \
        == "cancelled"


def test_an_unreachable_cluster_is_said_before_listening(tmp_path):
    done = subprocess.run([sys.executable, "-m", "wfexec", "serve", "--temporal", "127.0.0.1:1", "--port", "0"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 5 and "cannot reach the Temporal server at 127.0.0.1:1" in done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr


# A command that writes on both streams and takes a while, then a states node whose script says something.
TALKER = """\
name: talker
version: "1.0.0"
start_node: talk
input_schema:
  type: object
  additionalProperties: false
  properties:
    who: {type: string}
initial_state:
  who: world
nodes:
  talk:
    type: action
    actions:
      - {type: run_command, command: [bash, -c, 'echo "hello $1"; echo "to stderr" >&2; sleep 0.5', talk, "${who}"]}
    on_success: agents
    on_failure: failed
  agents:
    type: states
    folder: agents
    store_as: computed.result
    on_success: done
endings:
  done: {type: success, message: "${computed.result}"}
  failed: {type: failure, message: failed}
"""


def test_a_cluster_run_shows_its_output_transcripts_durations_and_runs_again_with_its_inputs(cluster, tmp_path):
    """What no query of the run gives is read from its history (each activity returns what its step kept, the
    first event holds the inputs): the same page as over a store."""
    root = tmp_path / "workflows"
    (root / "talker" / "agents").mkdir(parents=True)
    (root / "talker" / "workflow.yaml").write_text(TALKER)
    (root / "talker" / "agents" / "START.sh").write_text('echo "the agent says hi"\necho "<result>ok</result>"\n')
    done = _on_cluster(cluster, "run", root / "talker", "--non-interactive", "--format", "json", "--input", "who=Ada",
                       cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    live = start_server(None, "--temporal", cluster.address, "--root", str(root), env=environment(cluster))
    try:
        with httpx.Client(base_url=live.base, headers={"Authorization": f"Bearer {live.token}"}, timeout=120) as web:
            steps = web.get(f"/api/runs/{run_id}/journal").json()["journal"]
            assert [s["node"] for s in steps] == ["talk", "agents"]
            assert steps[0]["duration_ms"] >= 500  # its command sleeps half a second
            assert "computed.result" in json.dumps(steps[1]["changes"])  # what the step changed
            text = web.get(f"/api/runs/{run_id}/output").json()["text"]
            assert text.startswith("── step 1 · talk ──\n$ bash -c") and "stdout| hello Ada\n" in text
            assert "stderr| to stderr\n" in text and "exit code 0\n── step 2 · agents ──\n" in text
            assert "START.sh stdout| the agent says hi" in text
            agents = web.get(f"/api/runs/{run_id}/agents").json()["agents"]
            assert len(agents) == 1 and "the agent says hi" in agents[0]["states"][0]["stdout"]
            page = web.get(f"/runs/{run_id}").text
            assert 'data-action="again"' in page and "--input who=Ada --temporal" in page
            again = web.post(f"/api/runs/{run_id}/again", json={})
            assert again.status_code == 200, again.text
            fresh = again.json()["run_id"]
            web.get(f"/api/runs/{fresh}/events")  # the stream ends once the run has finished
            assert "stdout| hello Ada" in web.get(f"/api/runs/{fresh}/output").json()["text"]
    finally:
        live.stop()
    assert fresh != run_id
