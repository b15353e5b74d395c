"""The Temporal activities' inputs are typed messages with one JSON form each (`wfexec.temporal.messages`), and
the activities still take what workflow code sent before there were such messages (positional arguments): a run
started by that code may be in flight when the workers are upgraded. Both shapes are sent here through a real dev
server to the real activities, by a workflow that does nothing else."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

import pytest

pytest.importorskip("temporalio", reason="needs wfexec[temporal]")

pytestmark = pytest.mark.temporal

from temporalio import workflow  # noqa: E402
from temporalio.common import RetryPolicy  # noqa: E402
from temporalio.exceptions import ActivityError, ApplicationError  # noqa: E402

from temporal_support import EDGES, ROOT, STATES_NODE, server  # noqa: E402,F401  (server: a fixture)
from wfexec.temporal.messages import (AgentStateInput, ClusterRequest, EdgeInput, EffectStepInput,  # noqa: E402
                                      received)

SHORT_STEPS = ROOT / "tests" / "workflows" / "temporal" / "short_steps.yaml"
A_REQUEST = ClusterRequest(path="/w/flow.yaml", source_hash="abc", cwd="/w", inputs={"n": 1}, overrides={"a.b": 2},
                           answers={"ask": ["yes"]}, max_steps=50, env={"HOME_DIR": "/h"}, heartbeat_seconds=2.0,
                           worker_gone_seconds=6.0, backend="command:llm.sh", local_steps=False,
                           bundle={"digest": "d1", "workflow": "flow.yaml", "plugins": {}, "bytes": 9, "parts": 1,
                                   "first": "UEsF"}, started_in="/client")


@pytest.mark.parametrize("message", [
    A_REQUEST,
    ClusterRequest(path="/w/flow.yaml", source_hash="abc", cwd="/w"),
    EffectStepInput(A_REQUEST, "step", {"whole": {"computed": {}}, "history": []}, {"ask": ["yes"]}, 1234),
    EffectStepInput(A_REQUEST, "step", {"base": "3/1", "changes": [], "history": []}, {}, 5, home="q@host"),
    AgentStateInput(A_REQUEST, "agents", {"cwd": "/w", "spent": 0.5}, {"id": "main", "state": "START.sh"}),
    AgentStateInput(A_REQUEST, "agents", {"cwd": "/w"}, None),
    EdgeInput(A_REQUEST, "ending", "done", {"computed": {"x": 1}}),
    EdgeInput(A_REQUEST, "entry", None, {}),
], ids=lambda message: type(message).__name__)
def test_an_activity_input_goes_through_its_json_form_unchanged(message):
    assert type(message).from_json(json.loads(json.dumps(message.to_json()))) == message


def test_a_request_from_before_the_class_reads():
    """The dict the client started runs with before, and the one activities were sent (no `overrides`, the
    bundle without its first part)."""
    started = {"path": "/w/flow.yaml", "source_hash": "abc", "inputs": {}, "overrides": {"x": 1}, "answers": {},
               "max_steps": 10, "cwd": "/w", "env": {}, "heartbeat_seconds": 10.0, "worker_gone_seconds": 30.0,
               "backend": None, "local_steps": True, "bundle": {"digest": "d", "parts": 2, "first": "UEsF"}}
    request = ClusterRequest.from_json(started)
    assert request.to_json() == started
    shipped = request.for_steps()
    assert (shipped.overrides, shipped.bundle) == ({}, {"digest": "d", "parts": 2})
    assert ClusterRequest.from_json({"path": "/p", "source_hash": "h", "cwd": "/c", "max_steps": None}).max_steps \
        == 10_000


def test_positional_arguments_read_as_the_message():
    step = EffectStepInput(A_REQUEST, "step", {"whole": {}}, {}, 7, home="q")
    assert received(EffectStepInput, (step.to_json(),)) == step
    assert received(EffectStepInput, (A_REQUEST.to_json(), "step", {"whole": {}}, {}, 7, "q")) == step
    edge = EdgeInput(A_REQUEST, "ending", "done", {})
    assert received(EdgeInput, (A_REQUEST.to_json(), "ending", "done", {})) == received(EdgeInput, (edge.to_json(),))


@workflow.defn(name="test-activity-input-shapes")
class SendsActivities:
    """Schedules each (activity, arguments, local?) it is given, once, and returns the results (a refusal: its
    failure's type)."""

    @workflow.run
    async def run(self, calls: list) -> list:
        results: list = []
        for name, args, local in calls:
            options: dict = {"start_to_close_timeout": timedelta(seconds=60),
                             "retry_policy": RetryPolicy(maximum_attempts=1), "result_type": dict}
            try:
                if local:
                    results.append(await workflow.execute_local_activity(name, args=args, **options))
                else:
                    results.append(await workflow.execute_activity(name, args=args, **options))
            except ActivityError as failed:
                results.append({"refused": getattr(failed.cause, "type", None)})
            except ApplicationError as failed:  # how a local activity's own failure arrives (not wrapped)
                results.append({"refused": failed.type})
        return results


def _request(path: Path, cwd: Path) -> ClusterRequest:
    from wfexec.api import load

    return ClusterRequest(path=str(path), source_hash=load(path).source_hash, cwd=str(cwd))


def _first_agent_meta(request: ClusterRequest) -> dict:
    """What the workflow code sends a states node's first agent state (`_agents_step`)."""
    from wfexec.api import load
    from wfexec.temporal.steps import RecordingIo, make_run

    flow = load(request.path)
    node = flow.nodes["agents"]
    run = make_run(flow, request, RecordingIo())
    run.current = node
    assert node.kind.agents is not None
    return {**node.kind.agents.begin(node, run.node_context), "workflow_id": "workflow_test", "spent": 0.0}


def _same_step(result: dict) -> dict:
    """An effect step's result without its state token (each attempt's own)."""
    return {key: value for key, value in result.items() if key != "state_token"}


def test_the_activities_take_the_message_and_the_positional_arguments_of_runs_started_before(server, tmp_path):
    from temporalio.worker import UnsandboxedWorkflowRunner, Worker

    from wfexec.api import load
    from wfexec.temporal.activities import agent_state, effect_step, local_effect_step, run_edge
    from wfexec.temporal.client import connect
    from wfexec.temporal.delivery import here
    from wfexec.temporal.local_steps import LOCAL_STEP_ACTIVITY, NOT_HOME
    from wfexec.temporal.steps import use_loader
    from wfexec.temporal.task_queues import CLAIM_ACTIVITY, claim

    use_loader(load)
    queue = "activity-input-shapes"
    (tmp_path / "ready.txt").touch()
    steps = _request(SHORT_STEPS, tmp_path)
    shipped = {"whole": {"computed": {"dir": str(tmp_path)}}, "history": []}
    step = EffectStepInput(steps, "write_once", shipped, {}, 0)
    at_home = EffectStepInput(steps, "write_once", shipped, {}, 0, home=queue)
    edges = _request(EDGES, tmp_path)
    ending = EdgeInput(edges, "ending", "done", {"computed": {"noted": "yes"}})
    agents = _request(STATES_NODE, tmp_path)
    first_agent = AgentStateInput(agents, "agents", _first_agent_meta(agents), None)

    def positional(message) -> list:  # what workflow code sent before: the request's dict, then the fields
        sent = message.to_json()
        return [sent.pop("request"), *sent.values()]

    calls = [
        ("wfexec_effect_step", [step.to_json()], False),
        ("wfexec_effect_step", positional(step), False),
        (LOCAL_STEP_ACTIVITY, [at_home.to_json()], True),
        (LOCAL_STEP_ACTIVITY, positional(at_home), True),
        (LOCAL_STEP_ACTIVITY, [EffectStepInput(steps, "write_once", shipped, {}, 0, home="gone").to_json()], True),
        (LOCAL_STEP_ACTIVITY, [*positional(step), "gone"], True),
        ("wfexec_run_edge", [ending.to_json()], False),
        ("wfexec_run_edge", positional(ending), False),
        ("wfexec_run_edge", [EdgeInput(edges, "entry", None, {}).to_json()], False),
        ("wfexec_run_edge", [edges.to_json(), "entry", None, {}], False),
        ("wfexec_agent_state", [first_agent.to_json()], False),
        ("wfexec_agent_state", positional(first_agent), False),
        (CLAIM_ACTIVITY, [steps.to_json()], True),
    ]

    async def send() -> list:
        client = await connect(server.address)
        worker = Worker(client, task_queue=queue, workflows=[SendsActivities],
                        activities=[claim, local_effect_step, effect_step, run_edge, agent_state],
                        workflow_runner=UnsandboxedWorkflowRunner())
        async with worker:
            return await client.execute_workflow(SendsActivities.run, calls, id=f"shapes-{tmp_path.name}",
                                                 task_queue=queue, result_type=list)

    before = here.queue, here.name
    here.queue, here.name = queue, "this test"
    try:
        results = asyncio.run(send())
    finally:
        here.queue, here.name = before
    (step_new, step_old, local_new, local_old, refused_new, refused_old, ending_new, ending_old, entry_new, entry_old,
     agent_new, agent_old, claimed) = results
    assert step_new["target"] == "append" and step_new["changes"] and (tmp_path / "once").read_text() == "once"
    assert _same_step(step_old) == _same_step(step_new) == _same_step(local_new) == _same_step(local_old)
    assert refused_new == refused_old == {"refused": NOT_HOME}
    assert ending_new["result"]["message"] == "noted: yes" and ending_old == ending_new
    assert (tmp_path / "ended.txt").read_text() == "ended after yes"
    assert entry_new == entry_old == {"events": []}
    assert agent_new == agent_old, (agent_new, agent_old)
    assert agent_new["agent"]["id"] == "main" and agent_new["agent"]["state"] == "START.sh", agent_new
    assert claimed == {"queue": queue, "worker": "this test"}
