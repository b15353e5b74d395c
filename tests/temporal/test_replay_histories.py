"""Runs recorded by earlier workflow code (tests/temporal/histories/, see its README.md) replay against the
current workflow code: what Temporal does when a worker is upgraded while those runs are in flight. A change that
schedules other commands (another activity type, task queue, timer, local activity) than the recorded ones fails
here as nondeterminism. No server: the histories are files."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("temporalio", reason="needs wfexec[temporal]")

pytestmark = pytest.mark.temporal

HISTORIES = Path(__file__).resolve().parent / "histories"
RECORDED = sorted(HISTORIES.glob("*/*.json"))  # a folder per version of the workflow code that recorded them


@pytest.mark.parametrize("version", ["positional-inputs", "typed-inputs"])
def test_there_are_recorded_histories(version):
    assert {path.stem for path in RECORDED if path.parent.name == version} >= {
        "question_answered", "effect_step", "short_steps", "ask_between_steps", "states_agents", "edges"}


@pytest.fixture
def worker_place(tmp_path):
    """This process as a worker replaying: the runs' bundles unpacked under a fresh folder, workflows compiled
    with the worker's loader."""
    from wfexec.api import load
    from wfexec.temporal.delivery import here
    from wfexec.temporal.steps import use_loader

    use_loader(load)
    # Node types and expressions imported once before any replay: a cold first compile inside a workflow task can
    # pass the 2 s Temporal allows one before calling it a deadlock (this test is about determinism, not speed).
    load(Path(__file__).resolve().parents[2] / "skills" / "quickstart" / "workflow.yaml")
    before = here.bundles_under
    here.bundles_under = tmp_path
    yield
    here.bundles_under = before


@pytest.mark.parametrize("recorded", RECORDED, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_a_run_recorded_by_earlier_workflow_code_replays(recorded, worker_place):
    from temporalio.client import WorkflowHistory
    from temporalio.worker import Replayer, UnsandboxedWorkflowRunner

    from wfexec.temporal.blobs import data_converter
    from wfexec.temporal.workflow_code import WfexecRun

    history = WorkflowHistory.from_json(recorded.stem, recorded.read_text())
    replayer = Replayer(workflows=[WfexecRun], workflow_runner=UnsandboxedWorkflowRunner(),
                        data_converter=data_converter())
    result = asyncio.run(replayer.replay_workflow(history, raise_on_replay_failure=False))
    assert result.replay_failure is None, f"{recorded.name}: {result.replay_failure!r}"
