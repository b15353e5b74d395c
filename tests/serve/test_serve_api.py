"""The JSON API of `wfexec serve` over one store shared with the command line: runs started at a terminal show,
answers go through `wfexec resume`'s own checks and process, launches are `wfexec run` processes."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("starlette")

from conftest import wfexec_cli  # noqa: E402
# api, root: fixtures
from serve_support import api, client, config, once_waiting, root, waiting_run, workflows  # noqa: E402,F401


def _sse(text: str) -> list[dict]:
    """The events of a finished stream but those saying the run's output grew: each as its fields (`id`, `event`,
    `data` parsed)."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(":"))
        if "data" in fields and fields.get("event") != "output":
            fields["data"] = json.loads(fields["data"])
            events.append(fields)
    return events


def _finish(api, run_id: str) -> list[dict]:
    """The run's event stream read to its end, which comes when the run has finished (no clock involved)."""
    return _sse(api.get(f"/api/runs/{run_id}/events").text)


def test_a_run_started_at_the_terminal_shows_with_its_question(api, root):
    run_id = waiting_run(root / "greeter")
    listed = api.get("/api/runs", params={"status": "waiting"}).json()
    assert [r["id"] for r in listed["runs"]] == [run_id]
    shown = api.get(f"/api/runs/{run_id}").json()
    assert shown["pending_question"]["question"] == "Greet world how?"
    assert [o["id"] for o in shown["pending_question"]["options"]] == ["warm", "plain"]
    assert shown["lease"] is None  # nobody drives a waiting run; the server owns none


def test_runs_are_paged_newest_first_and_filtered_by_status(api, root):
    ids = [waiting_run(root / "greeter") for _ in range(3)]
    first = api.get("/api/runs", params={"limit": 2}).json()
    assert [r["id"] for r in first["runs"]] == ids[::-1][:2] and first["next"] == ids[1]
    second = api.get("/api/runs", params={"limit": 2, "before": first["next"]}).json()
    assert [r["id"] for r in second["runs"]] == [ids[0]] and second["next"] is None
    assert api.get("/api/runs", params={"status": "completed"}).json()["runs"] == []
    wrong = api.get("/api/runs", params={"status": "sleeping"})
    assert wrong.status_code == 400 and "'sleeping' is not a run status" in wrong.json()["error"]
    assert api.get("/api/runs", params={"limit": "many"}).status_code == 400


def test_a_wrong_answer_is_refused_and_the_run_keeps_waiting(api, root):
    run_id = waiting_run(root / "greeter")
    refused = api.post(f"/api/runs/{run_id}/answer", json={"answer": "warmly!"})
    assert refused.status_code == 422
    assert "not an option of 'ask'" in refused.json()["error"] and refused.json()["options"] == ["warm", "plain"]
    assert api.post(f"/api/runs/{run_id}/answer", json={"answer": ""}).status_code == 400
    assert api.get(f"/api/runs/{run_id}").json()["status"] == "waiting"
    shown = wfexec_cli("show", run_id, "--format", "json")
    assert json.loads(shown.stdout)["status"] == "waiting"  # as the command line sees it too


def test_an_answer_resumes_the_run_in_a_process_of_its_own_to_its_ending(api, root):
    run_id = waiting_run(root / "greeter", "who=Ada")
    answered = api.post(f"/api/runs/{run_id}/answer", json={"answer": "Warmly"})  # a label, as at a terminal
    assert answered.status_code == 200 and answered.json()["run_id"] == run_id
    events = _finish(api, run_id)
    assert events[-1]["event"] == "run" and events[-1]["data"]["status"] == "completed"
    shown = json.loads(wfexec_cli("show", run_id, "--format", "json", "--state").stdout)
    assert shown["status"] == "completed" and shown["result"]["message"] == "Hello, Ada"
    assert shown["state"]["flags"]["warm"] is True
    assert [s["node"] for s in shown["journal"]] == ["ask", "note_warm", "greet"]
    again = api.post(f"/api/runs/{run_id}/answer", json={"answer": "warm"})
    assert again.status_code == 409 and "not waiting" in again.json()["error"]


def test_journal_state_and_graph_of_a_run(api, root):
    run_id = waiting_run(root / "greeter")
    api.post(f"/api/runs/{run_id}/answer", json={"answer": "plain"})
    _finish(api, run_id)
    journal = api.get(f"/api/runs/{run_id}/journal").json()["journal"]
    assert [(s["step"], s["node"]) for s in journal] == [(1, "ask"), (2, "greet")]
    assert [s["step"] for s in api.get(f"/api/runs/{run_id}/journal", params={"since": 1}).json()["journal"]] == [2]
    assert api.get(f"/api/runs/{run_id}/state").json()["state"]["computed"]["greeting"] == "Hello, world"
    graph = api.get(f"/api/runs/{run_id}/graph").json()
    assert graph["mermaid"].startswith("flowchart")
    assert {n["id"]: n["visited"] for n in graph["nodes"]} == {"ask": True, "note_warm": False, "greet": True}
    assert graph["ending"] == "done"


def test_a_reconnect_with_last_event_id_gets_exactly_the_steps_it_missed(api, root):
    run_id = waiting_run(root / "greeter")
    api.post(f"/api/runs/{run_id}/answer", json={"answer": "warm"})
    everything = _finish(api, run_id)
    assert [e["id"] for e in everything if e["event"] == "step"] == ["1", "2", "3"]
    missed = _sse(api.get(f"/api/runs/{run_id}/events", headers={"Last-Event-ID": "1"}).text)
    assert [(e["event"], e["id"]) for e in missed] == [("step", "2"), ("step", "3"), ("run", "3")]
    assert [e["data"]["node"] for e in missed[:2]] == ["note_warm", "greet"]
    assert [e["id"] for e in _sse(api.get(f"/api/runs/{run_id}/events?since=3").text)] == ["3"]  # the run only
    # A browser reconnects to the address the page gave it (its `since` is where the page started) and says where
    # it got to: that wins.
    reconnect = _sse(api.get(f"/api/runs/{run_id}/events?since=0", headers={"Last-Event-ID": "2"}).text)
    assert [(e["event"], e["id"]) for e in reconnect] == [("step", "3"), ("run", "3")]
    assert api.get(f"/api/runs/{run_id}/events", headers={"Last-Event-ID": "x"}).status_code == 400


def test_cancel_goes_through_the_command_lines_cancel(api, root):
    run_id = waiting_run(root / "greeter")
    assert api.post(f"/api/runs/{run_id}/cancel", json={}).json()["status"] == "cancelled"
    again = api.post(f"/api/runs/{run_id}/cancel", json={})
    assert again.status_code == 409 and "already finished (cancelled)" in again.json()["error"]
    assert api.post(f"/api/runs/{run_id}/resume", json={}).status_code == 409


def test_launch_starts_the_run_the_command_line_would(api, root, tmp_path):
    listed = {w["shown"]: w for w in api.get("/api/workflows").json()["workflows"]}
    assert listed["greeter"]["valid"] and listed["greeter"]["inputs"][0]["name"] == "who"
    assert not listed["broken"]["valid"] and "nowhere" in " ".join(listed["broken"]["errors"])
    launched = api.post("/api/launch", json={"workflow": listed["greeter"]["id"], "inputs": {"who": "Grace"}})
    assert launched.status_code == 200, launched.text
    run_id = launched.json()["run_id"]
    by_server = once_waiting(api, run_id)
    by_terminal = api.get(f"/api/runs/{waiting_run(root / 'greeter', 'who=Grace')}").json()
    for key in ("workflow_path", "workflow_hash", "status", "current_node", "pending_question", "inputs"):
        assert by_server[key] == by_terminal[key], key
    assert by_server["pending_question"]["question"] == "Greet Grace how?"


def test_the_launch_form_has_a_field_for_each_input_written_as_name_to_schema(api, root):
    listed = {w["shown"]: w for w in api.get("/api/workflows").json()["workflows"]}
    assert [(i["name"], i["required"], i["default"]) for i in listed["named"]["inputs"]] == [
        ("who", True, None), ("punctuation", False, "!")]
    launched = api.post("/api/launch", json={"workflow": listed["named"]["id"], "inputs": {"who": "Grace"}})
    assert launched.status_code == 200, launched.text
    assert once_waiting(api, launched.json()["run_id"])["result"]["message"] == "Hello, Grace!"


def test_launch_refuses_what_is_not_a_valid_workflow_under_a_root(api, root):
    listed = {w["shown"]: w["id"] for w in api.get("/api/workflows").json()["workflows"]}
    for given in ("nope", str(root / "greeter" / "workflow.yaml"), "../../etc/passwd", None):
        refused = api.post("/api/launch", json={"workflow": given})
        assert refused.status_code == 404 and "--root" in refused.json()["error"], given
    broken = api.post("/api/launch", json={"workflow": listed["broken"]})
    assert broken.status_code == 422 and broken.json()["errors"]
    wrong_inputs = api.post("/api/launch", json={"workflow": listed["greeter"], "inputs": {"whom": "x"}})
    assert wrong_inputs.status_code == 422 and "whom" in wrong_inputs.json()["error"]  # `wfexec run`'s own words
    assert api.post("/api/launch", json={"workflow": listed["greeter"], "inputs": [1]}).status_code == 400
    assert api.get("/api/runs").json()["runs"] == []


def test_bad_requests_get_a_clear_error_never_a_traceback(api, root):
    unknown = api.get("/api/runs/zzzzzz")
    assert unknown.status_code == 404 and unknown.json()["error"].startswith("no run")
    for path in ("/api/runs/zzzzzz/journal", "/api/runs/zzzzzz/graph", "/api/runs/zzzzzz/events"):
        assert api.get(path).status_code == 404, path
    body = api.post("/api/runs/zzzzzz/answer", content=b"[1, 2]", headers={"content-type": "application/json"})
    assert body.status_code == 400 and "JSON object" in body.json()["error"]
    assert api.post("/api/runs/zzzzzz/answer", content=b"{", headers={"content-type": "application/json"}
                    ).status_code == 400
    assert api.get("/api/nothing").status_code == 404


def test_a_number_past_what_the_store_holds_is_a_400_not_a_500(api, root):
    run_id = waiting_run(root / "greeter")
    big = "99999999999999999999"
    for path in (f"/api/runs/{run_id}/journal?since={big}", f"/api/runs/{run_id}/output?from={big}",
                 f"/api/runs/{run_id}/events?since={big}", f"/api/runs?limit={big}", "/api/events?since=1e400",
                 "/api/events?since=nan", "/api/events?since=-inf"):
        refused = api.get(path)
        assert refused.status_code == 400 and refused.json()["error"].startswith("'"), (path, refused.text)
    assert "too large" in api.get(f"/api/runs/{run_id}/journal?since={big}").json()["error"]
    refused = api.get(f"/api/runs/{run_id}/events", headers={"Last-Event-ID": big})
    assert refused.status_code == 400
    # The largest the store holds is still a number: nothing comes after it.
    largest = str(2**63 - 1)
    assert api.get(f"/api/runs/{run_id}/journal?since={largest}").json() == {"journal": []}
    assert api.get(f"/api/runs/{run_id}/output?from={largest}").status_code == 200


def test_cancelling_an_unknown_run_is_a_404_as_every_action_on_it_is(api, root):
    for action in ("cancel", "resume", "answer", "again"):  # before the store exists
        assert api.post(f"/api/runs/zzzzzz/{action}", json={"answer": "warm"}).status_code == 404, action
    waiting_run(root / "greeter")
    for action in ("cancel", "resume", "answer", "again"):
        unknown = api.post(f"/api/runs/zzzzzz/{action}", json={"answer": "warm"})
        assert unknown.status_code == 404 and unknown.json()["error"].startswith("no run"), (action, unknown.text)


def test_a_page_of_runs_before_what_is_no_run_is_refused_not_ignored(api, root):
    first, second = waiting_run(root / "greeter"), waiting_run(root / "greeter")
    for before in ("abc", "zzzzzzzzzzzzzzz"):
        refused = api.get("/api/runs", params={"before": before})
        assert refused.status_code == 400 and "'before' must be the id of a run" in refused.json()["error"], before
    assert [r["id"] for r in api.get("/api/runs", params={"before": second}).json()["runs"]] == [first]
    assert api.get("/runs", params={"before": "abc"}).status_code == 400  # the page says the same


def test_a_page_of_runs_on_a_cluster_refuses_a_before_that_is_none_of_its_runs():
    from wfexec.serve.actions import ActionRefused
    from wfexec.serve.cluster_view import ClusterView

    view = ClusterView("127.0.0.1:7233")
    rows = [{"id": i, "workflow_name": "w", "status": "completed", "current_node": None, "pending_question": None}
            for i in ("c", "b", "a")]
    view._rows = lambda: rows  # what the cluster lists, newest first
    assert [r["id"] for r in view.runs_page(before="b")["runs"]] == ["a"]
    with pytest.raises(ActionRefused) as refused:
        view.runs_page(before="abc")
    assert refused.value.status == 400 and "'before'" in refused.value.message


# Inputs of every type, and a question that takes any text: what the page must pass on exactly as it was given.
TYPED = """\
name: typed
version: "1.0.0"
description: Typed inputs, and a question answered in free text.
start_node: ask
input_schema:
  type: object
  properties:
    items: {type: array}
    opts: {type: object}
    nick: {type: string}
    count: {type: integer}
  required: [nick]
nodes:
  ask:
    type: user_prompt
    prompt: {question: "Your name?", header: Name, mode: text_input}
    on_response:
      other: {consequence: [{type: set_state, field: said, value: "${response.text}"}], next_node: done}
endings:
  done: {type: success, message: "said [${said}]"}
"""


def _typed(api, root) -> str:
    (root / "typed").mkdir()
    (root / "typed" / "workflow.yaml").write_text(TYPED, encoding="utf-8")
    return {w["shown"]: w["id"] for w in api.get("/api/workflows").json()["workflows"]}["typed"]


def test_launch_passes_json_inputs_as_given_as_the_api_and_mcp_take_them(api, root):
    import wfexec

    workflow = _typed(api, root)
    given = {"items": ["a", None, 1.5, "\U0001F600\u2028\x85"], "opts": {"k": None, "": [True]}, "nick": "",
             "count": 10**15}
    launched = api.post("/api/launch", json={"workflow": workflow, "inputs": given})
    assert launched.status_code == 200, launched.text
    assert once_waiting(api, launched.json()["run_id"])["inputs"] == given  # nulls, types, empty text: as given
    # What the API refuses, the page refuses, in the same words.
    with pytest.raises(ValueError) as by_api:
        wfexec.run(root / "typed", inputs={"nick": 5}, ephemeral=True)
    refused = api.post("/api/launch", json={"workflow": workflow, "inputs": {"nick": 5}})
    assert refused.status_code == 422 and str(by_api.value) in refused.json()["error"], refused.text
    assert "5 is not of type 'string'" in refused.json()["error"]
    lone = json.dumps({"workflow": workflow, "inputs": {"nick": "\ud800"}})  # a half of a pair of surrogates
    refused = api.post("/api/launch", content=lone.encode(), headers={"content-type": "application/json"})
    assert refused.status_code == 400 and "input 'nick'" in refused.json()["error"], refused.text
    nan = api.post("/api/launch", content=b'{"workflow": "%s", "inputs": {"count": NaN}}' % workflow.encode(),
                   headers={"content-type": "application/json"})
    assert nan.status_code == 400  # not JSON
    assert api.post("/api/launch", json={"workflow": workflow, "inputs": {"nick": "x"}, "input.nick": "y"}
                    ).status_code == 400  # one way or the other


def test_a_forms_fields_are_text_as_at_the_terminal_and_an_empty_one_is_left_out(api, root):
    workflow = _typed(api, root)
    form = {"workflow": workflow, "input.nick": "5", "input.count": "7", "input.items": "[a, 2]", "input.opts": ""}
    launched = api.post("/api/launch", data=form, headers={"Accept": "application/json"})
    assert launched.status_code == 200, launched.text
    by_terminal = waiting_run(root / "typed", "nick=5", "count=7", "items=[a, 2]")
    assert once_waiting(api, launched.json()["run_id"])["inputs"] == api.get(f"/api/runs/{by_terminal}").json()[
        "inputs"] == {"nick": "5", "count": 7, "items": ["a", 2]}
    for field, text, said in (("input.nick", "a\x00b", "a NUL character"), ("input.a=b", "c", "'='")):
        refused = api.post("/api/launch", data={"workflow": workflow, field: text},
                           headers={"Accept": "application/json"})
        assert refused.status_code == 400 and refused.json()["error"].startswith(f"'{field}' holds {said}"), \
            refused.text
    refused = api.post("/api/launch", json={"workflow": workflow, "input.count": 7})
    assert refused.status_code == 400 and "'input.count' must be text" in refused.json()["error"]


def test_run_again_and_launch_keep_an_empty_text_input_the_command_line_took(api, root):
    from conftest import wfexec_cli as cli

    workflow = _typed(api, root)
    run_id = waiting_run(root / "typed", "nick=", "count=1")  # `--input nick=`: empty text, valid at a terminal
    again = api.post(f"/api/runs/{run_id}/again", json={})
    assert again.status_code == 200, again.text
    assert once_waiting(api, again.json()["run_id"])["inputs"] == {"nick": "", "count": 1}
    launched = api.post("/api/launch", json={"workflow": workflow, "inputs": {"nick": "", "count": 1}})
    assert launched.status_code == 200, launched.text
    assert once_waiting(api, launched.json()["run_id"])["inputs"] == {"nick": "", "count": 1}
    # Typed values recorded with a run are run again as they were.
    typed = api.post("/api/launch", json={"workflow": workflow, "inputs": {"nick": "7", "items": [None, "x"]}})
    again = api.post(f"/api/runs/{typed.json()['run_id']}/again", json={})
    assert once_waiting(api, again.json()["run_id"])["inputs"] == {"nick": "7", "items": [None, "x"]}
    assert cli("show", run_id).returncode == 0


def test_an_answer_reaches_the_run_as_given_a_nul_included_as_through_the_api(api, root, tmp_path):
    import wfexec

    workflow = _typed(api, root)
    by_api = wfexec.run(root / "typed", inputs={"nick": "x"}, answers={"ask": "a\x00b \U0001F600"}, ephemeral=True)
    launched = api.post("/api/launch", json={"workflow": workflow, "inputs": {"nick": "a\x00b"}})
    assert launched.status_code == 200, launched.text
    run_id = launched.json()["run_id"]
    assert once_waiting(api, run_id)["inputs"] == {"nick": "a\x00b"}
    answered = api.post(f"/api/runs/{run_id}/answer", json={"answer": "a\x00b \U0001F600"})
    assert answered.status_code == 200, answered.text
    assert _finish(api, run_id)[-1]["data"]["result"]["message"] == by_api.message == "said [a\x00b \U0001F600]"
    assert not list(api.app.state.server.processes.logs.glob("*.json"))  # the files it was given are gone


def test_a_launch_removes_what_a_server_that_is_gone_left_and_keeps_what_a_serving_one_uses(api, root,
                                                                                            private_run_store):
    """The logs folder is the store's, shared by every server on it: a server stopped while a process it started
    still ran never removes that process's passing files, so the next one does, and only those of servers gone."""
    import subprocess

    from wfexec.durable.store import lease_holder

    gone = subprocess.Popen(["true"])
    gone.wait()
    kept = private_run_store.with_name(private_run_store.name + "-serve")
    kept.mkdir(parents=True)
    left = [kept / f"{lease_holder(gone.pid)}~a1b2c3.out", kept / f"{lease_holder(gone.pid)}~d4e5f6.new"]
    serving = kept / f"{lease_holder()}~g7h8i9.json"  # this process: another server, still serving
    for file in (*left, serving):
        file.write_text("{}")
    workflow = {w["shown"]: w["id"] for w in api.get("/api/workflows").json()["workflows"]}["greeter"]
    launched = api.post("/api/launch", json={"workflow": workflow})
    assert launched.status_code == 200, launched.text
    assert once_waiting(api, launched.json()["run_id"])["status"] == "waiting"
    assert [file.exists() for file in left] == [False, False] and serving.exists()
