"""`wfexec mcp`: the SDK's own client, against the server started as a subprocess over stdio, drives a workflow
to its question, answers it and reaches the ending; the other tools and the resources answer as documented."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest

from conftest import ROOT, with_coverage, wfexec_in_process as cli

mcp = pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'wfexec[mcp]')")
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

QUICKSTART = str(ROOT / "skills" / "quickstart")


def with_server(tmp_path, body):
    """Run `body(session)` against `wfexec mcp` started in tmp_path; returns what it returns."""
    environment = with_coverage({k: v for k, v in os.environ.items() if k != "WFEXEC_STORE"})
    params = StdioServerParameters(command=sys.executable, args=["-m", "wfexec.cli", "mcp"], cwd=str(tmp_path),
                                   env=environment)

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)

    return asyncio.run(main())


def test_a_workflow_is_driven_to_its_question_answered_and_ended(tmp_path):
    async def body(session):
        tools = sorted(tool.name for tool in (await session.list_tools()).tools)
        waiting = (await session.call_tool("run", {"path": QUICKSTART, "inputs": {"name": "Ada"}})).structured_content
        ended = (await session.call_tool("answer", {"run_id": waiting["run_id"],
                                                    "answers": {waiting["answer_key"]: "cheerful"}})).structured_content
        state = await session.read_resource(f"wfexec://runs/{waiting['run_id']}/state")
        graph = await session.read_resource(f"wfexec://runs/{waiting['run_id']}/graph")
        return tools, waiting, ended, json.loads(state.contents[0].text), graph.contents[0].text

    tools, waiting, ended, state, graph = with_server(tmp_path, body)
    assert tools == ["answer", "cancel", "resume", "run", "runs", "show", "validate"]
    assert (waiting["status"], waiting["answer_key"], waiting["question"]) == ("waiting", "ask_mood",
                                                                                "How should I greet Ada?")
    assert [option["id"] for option in waiting["options"]] == ["cheerful", "plain"]
    assert (ended["status"], ended["ending"], ended["message"]) == ("completed", "done", "Hello, Ada!")
    assert state["computed"]["greeting"] == "Hello, Ada!"
    assert graph.startswith("flowchart TD") and "ask_mood" in graph
    # The CLI sees the same store: the run is recorded where the server was started.
    listed = json.loads(cli("runs", "--format", "json", "--store", tmp_path / ".wfexec" / "runs.db").stdout)
    assert [(r["id"], r["status"]) for r in listed] == [(waiting["run_id"], "completed")]


def test_validate_runs_show_and_cancel_answer_with_data(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: broken\nversion: 1\nstart_node: nowhere\nnodes: {}\n")

    async def body(session):
        good = (await session.call_tool("validate", {"path": QUICKSTART})).structured_content
        bad = (await session.call_tool("validate", {"path": str(broken)})).structured_content
        refused = (await session.call_tool("run", {"path": str(broken)})).structured_content
        parked = (await session.call_tool("run", {"path": QUICKSTART})).structured_content
        listed = (await session.call_tool("runs", {})).structured_content
        shown = (await session.call_tool("show", {"run_id": parked["run_id"]})).structured_content
        cancelled = (await session.call_tool("cancel", {"run_id": parked["run_id"]})).structured_content
        again = (await session.call_tool("cancel", {"run_id": parked["run_id"]})).structured_content
        unknown = (await session.call_tool("show", {"run_id": "nope"})).structured_content
        return good, bad, refused, parked, listed, shown, cancelled, again, unknown

    good, bad, refused, parked, listed, shown, cancelled, again, unknown = with_server(tmp_path, body)
    assert good["valid"] and good["summary"]["nodes"] == 4
    assert not bad["valid"] and any("nowhere" in d["message"] for d in bad["diagnostics"])
    assert refused["status"] == "invalid" and refused["diagnostics"]
    assert listed["total"] == 1 and listed["runs"][0]["status"] == "waiting"
    assert shown["pending_question"]["node"] == "ask_mood"
    assert cancelled == {"status": "cancelled", "run_id": parked["run_id"]}
    assert again["status"] == "invalid" and "already finished" in again["error"]
    assert "no run 'nope'" in unknown["error"]


TAG = str(ROOT / "tests" / "workflows" / "answers" / "tag_release.yaml")


def test_a_wrong_answer_is_a_tool_error_and_the_run_keeps_waiting_unchanged(tmp_path):
    async def body(session):
        parked = (await session.call_tool("run", {"path": TAG})).structured_content
        before = (await session.call_tool("show", {"run_id": parked["run_id"]})).structured_content
        refused = await session.call_tool("answer", {"run_id": parked["run_id"], "answers": {"ask_tag": "yes-tag"}})
        after = (await session.call_tool("show", {"run_id": parked["run_id"]})).structured_content
        done = (await session.call_tool("answer", {"run_id": parked["run_id"],
                                                   "answers": {"ask_tag": "yes_tag"}})).structured_content
        return parked, before, refused, after, done

    parked, before, refused, after, done = with_server(tmp_path, body)
    assert parked["status"] == "waiting"
    assert refused.is_error, refused
    text = refused.content[0].text
    assert "'yes-tag' is not an option of 'ask_tag' (options: yes_tag, no_tag, later)" in text
    assert "did you mean 'yes_tag'?" in text
    assert after == before and after["status"] == "waiting"
    # the same question can still be answered
    assert (done["status"], done["answer_key"]) == ("waiting", "pick_branch")


def test_an_answer_key_that_names_no_question_is_a_tool_error_before_the_run_starts(tmp_path):
    async def body(session):
        refused = await session.call_tool("run", {"path": TAG, "answers": {"ask_tga": "yes_tag"}})
        listed = (await session.call_tool("runs", {})).structured_content
        parked = (await session.call_tool("run", {"path": TAG})).structured_content
        before = (await session.call_tool("show", {"run_id": parked["run_id"]})).structured_content
        again = await session.call_tool("answer", {"run_id": parked["run_id"], "answers": {"ask_tga": "yes_tag"}})
        after = (await session.call_tool("show", {"run_id": parked["run_id"]})).structured_content
        return refused, listed, again, before, after

    refused, listed, again, before, after = with_server(tmp_path, body)
    assert refused.is_error and "did you mean 'ask_tag'?" in refused.content[0].text, refused
    assert listed["total"] == 0
    assert again.is_error and "did you mean 'ask_tag'?" in again.content[0].text, again
    assert after == before


def test_without_the_sdk_the_command_says_what_to_install(tmp_path):
    """What a user without the extra sees (the SDK hidden from the child process)."""
    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text("import sys\nsys.modules['mcp'] = None\n")
    environment = {**os.environ, "PYTHONPATH": str(tmp_path)}
    import subprocess

    done = subprocess.run([sys.executable, "-m", "wfexec.cli", "mcp"], capture_output=True, text=True,
                          env=environment, stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 2
    assert "pip install 'wfexec[mcp]'" in done.stderr


def test_the_tools_take_a_run_id_exactly_or_a_literal_prefix(tmp_path):
    """`show`, `answer`, `cancel` and the state resource go through the store's one lookup: `%`, `_` and '' are
    no run (they once matched every run through LIKE, so `cancel %` cancelled the only one)."""
    async def body(session):
        parked = (await session.call_tool("run", {"path": QUICKSTART})).structured_content
        run_id = parked["run_id"]
        refused = {}
        for given in ("%", "_", "", run_id[:3] + "_%"):
            refused[given] = [(await session.call_tool(tool, arguments)).structured_content for tool, arguments in
                              (("cancel", {"run_id": given}), ("show", {"run_id": given}),
                               ("answer", {"run_id": given, "answers": {"ask_mood": "plain"}}))]
        shown = (await session.call_tool("show", {"run_id": run_id[:4]})).structured_content
        return run_id, refused, shown

    run_id, refused, shown = with_server(tmp_path, body)
    for given, answers in refused.items():
        for answer in answers:
            assert answer.get("status", "invalid") == "invalid", (given, answer)  # `show` gives only the error
            assert ("the run id is empty" if not given else f"no run '{given}'") in answer["error"], (given, answer)
    assert shown["id"] == run_id and shown["status"] == "waiting"
