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


ROOTS = (ROOT / "skills", ROOT / "tests" / "workflows")


def with_server(tmp_path, body, roots=("tmp", *ROOTS)):
    """Run `body(session)` against `wfexec mcp` started in tmp_path, reading under `roots` ("tmp": tmp_path;
    None: the server's default roots); returns what it returns."""
    environment = with_coverage({k: v for k, v in os.environ.items() if k != "WFEXEC_STORE"})
    given = [] if roots is None else [part for root in roots
                                      for part in ("--root", str(tmp_path if root == "tmp" else root))]
    params = StdioServerParameters(command=sys.executable, args=["-m", "wfexec", "mcp", *given],
                                   cwd=str(tmp_path), env=environment)

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


def test_a_run_returns_its_endings_output_values_as_the_cli_and_the_api_do(tmp_path):
    (tmp_path / "workflow.yaml").write_text(
        'name: sums\nversion: "1"\nstart_node: add\nnodes:\n  add:\n    type: action\n'
        '    actions: [{type: compute, expression: "40 + 2", store_as: computed.total}, '
        '{type: display_message, message: "Adding up"}]\n    on_success: done\n'
        'endings:\n  done: {type: success, message: "Total ${computed.total}", '
        'output: {total: "${computed.total}", label: abc}}\n')

    async def body(session):
        return (await session.call_tool("run", {"path": str(tmp_path / "workflow.yaml")})).structured_content

    ended = with_server(tmp_path, body)
    cli_result = json.loads(cli("run", "workflow.yaml", "--ephemeral", "--format", "json", cwd=tmp_path).stdout)
    assert ended["output"] == cli_result["output"] == {"total": 42, "label": "abc"}
    assert "Adding up" in ended["printed"]


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

    done = subprocess.run([sys.executable, "-m", "wfexec", "mcp"], capture_output=True, text=True,
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


def test_the_tools_about_one_run_make_no_store_where_there_is_none(tmp_path):
    """`cancel` and `answer` once made an empty store first, then said the run was unknown."""
    async def body(session):
        return [(await session.call_tool(tool, arguments)).structured_content for tool, arguments in
                (("cancel", {"run_id": "0mwt6297ui2n"}), ("answer", {"run_id": "0mwt6297ui2n", "answers": {"a": "b"}}),
                 ("resume", {"run_id": "0mwt6297ui2n"}))]

    for answer in with_server(tmp_path, body):
        assert answer["status"] == "invalid" and "there is no run store at .wfexec/runs.db" in answer["error"], answer
    assert list(tmp_path.iterdir()) == []


def test_runs_where_no_run_was_made_yet_lists_none_as_the_command_line_does(tmp_path):
    """It answered with SQLite's "unable to open database file" where `wfexec runs` says "no runs"."""
    async def body(session):
        return (await session.call_tool("runs", {})).structured_content

    assert with_server(tmp_path, body) == {"runs": [], "total": 0}
    assert list(tmp_path.iterdir()) == []


def test_runs_of_a_named_store_that_is_not_there_says_so_and_makes_none(tmp_path):
    from wfexec.mcp_server import Server

    missing = tmp_path / "typo.db"
    listed = Server(store=missing).runs()
    assert listed["error"] == f"there is no run store at {missing}", listed
    assert not missing.exists()


# -- safe at every door (issue 24) ------------------------------------------------------------------------------

def test_a_file_that_is_no_workflow_is_reported_as_such_without_its_content(tmp_path):
    """It once came back line by line (`unknown field 'root:*:…'`): /etc/shadow read through `validate`."""
    (tmp_path / "shadow").write_text("root:*:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n")
    (tmp_path / "secrets.yaml").write_text("API_KEY: sk-live-secret\nname: x\n")
    (tmp_path / "list.yaml").write_text("- sk-live-secret\n")

    async def body(session):
        return [(await session.call_tool(tool, {"path": str(tmp_path / name)})).structured_content
                for tool in ("validate", "run") for name in ("shadow", "secrets.yaml", "list.yaml")]

    for result in with_server(tmp_path, body):
        text = json.dumps(result)
        assert "root:" not in text and "daemon" not in text and "sk-live" not in text and "API_KEY" not in text, text
        assert [d["code"] for d in result["diagnostics"]] == ["not-a-workflow"], result
        assert "is not a workflow" in result["diagnostics"][0]["message"]


def test_paths_outside_the_servers_roots_are_a_tool_error_naming_the_rule(tmp_path):
    inside = tmp_path / "work"
    inside.mkdir()
    (inside / "escape").symlink_to("/etc/hostname")
    (inside / "skill").symlink_to(ROOT / "skills" / "quickstart")

    async def body(session):
        calls = [("validate", {"path": "/etc/hostname"}), ("validate", {"path": "../../../../../../../etc/hostname"}),
                 ("validate", {"path": str(inside / "escape")}), ("run", {"path": "/etc/hostname"}),
                 ("validate", {"path": str(inside / "skill")})]
        return [await session.call_tool(tool, arguments) for tool, arguments in calls]

    results = with_server(inside, body, roots=[inside])
    for result in results:
        assert result.is_error, result
        text = result.content[0].text
        assert "outside the folders this server may read" in text and "--root" in text, text
        assert "Traceback" not in text

    async def by_default(session):  # no --root: the working directory (and Claude Code's skill folders)
        return [await session.call_tool("validate", {"path": path}) for path in (QUICKSTART, "/etc/hostname")]

    for result in with_server(inside, by_default, roots=None):
        assert result.is_error and "outside the folders" in result.content[0].text, result


def test_tool_arguments_are_checked_with_a_reason(tmp_path):
    async def body(session):
        calls = [("runs", {"limit": -5}), ("runs", {"limit": 0}), ("runs", {"limit": 100000}),
                 ("runs", {"status": "nonsense"}), ("validate", {"path": "work\x00flow.yaml"}),
                 ("validate", {"path": "a" * 100_000}), ("run", {"path": "x\x00"})]
        return [await session.call_tool(tool, arguments) for tool, arguments in calls]

    limit_low, limit_zero, limit_high, status, nul, long, run_nul = with_server(tmp_path, body)
    for result in (limit_low, limit_zero, limit_high):
        assert result.is_error and "`limit` must be a whole number from 1 to 100" in result.content[0].text, result
    assert status.is_error and "'nonsense' is no status of a run" in status.content[0].text, status
    assert "waiting" in status.content[0].text
    for result in (nul, run_nul):
        assert result.is_error and "NUL character" in result.content[0].text, result
    assert long.is_error and "100,000 characters long" in long.content[0].text, long


BLOCKING = """\
name: blocking
version: "1.0.0"
start_node: wait
input_schema:
  type: object
  properties: {name: {type: string}}
  required: [name]
nodes:
  wait:
    type: action
    actions:
      - type: run_command
        command: [sh, -c, 'echo $$ > "$0.pid"; while [ ! -e "$0.release" ]; do sleep 0.05; done; echo went', "${input.name}"]
        store_as: computed.waited
    on_success: done
    on_failure: failed
endings:
  done:
    type: success
    message: "released ${input.name}"
  failed:
    type: error
    message: "${computed.last_error}"
"""


async def _started(pid_file):
    """The step's shell wrote its pid: the step runs now (waited for without a deadline of our own; the test's
    guard is the release in `finally`)."""
    while not pid_file.exists() or not pid_file.read_text().strip():
        await asyncio.sleep(0.05)
    return int(pid_file.read_text())


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as stat:  # a zombie nobody reaped yet has ended all the same
        return stat.read().split(")")[-1].split()[0] == "Z"


def test_runs_show_and_validate_answer_while_steps_run_and_several_runs_go_at_once(tmp_path):
    """They once waited for the step (18 s of a 20 s step). Each step blocks until the test releases it, and the
    test releases them only after `runs` answered: before the fix this could only end at the guard."""
    (tmp_path / "blocking.yaml").write_text(BLOCKING)

    async def body(session):
        first = asyncio.create_task(session.call_tool("run", {"path": str(tmp_path / "blocking.yaml"),
                                                              "inputs": {"name": str(tmp_path / "one")}}))
        second = asyncio.create_task(session.call_tool("run", {"path": str(tmp_path / "blocking.yaml"),
                                                               "inputs": {"name": str(tmp_path / "two")}}))
        try:
            await asyncio.wait_for(asyncio.gather(_started(tmp_path / "one.pid"), _started(tmp_path / "two.pid")),
                                   120)
            listed = (await asyncio.wait_for(session.call_tool("runs", {}), 60)).structured_content
            shown = (await session.call_tool("show", {"run_id": listed["runs"][0]["id"]})).structured_content
            valid = (await session.call_tool("validate", {"path": QUICKSTART})).structured_content
        finally:
            (tmp_path / "one.release").touch()
            (tmp_path / "two.release").touch()
        return listed, shown, valid, (await first).structured_content, (await second).structured_content

    listed, shown, valid, first, second = with_server(tmp_path, body)
    assert [r["status"] for r in listed["runs"]] == ["running", "running"], listed
    assert {r["node"] for r in listed["runs"]} == {"wait"}
    assert shown["status"] == "running" and valid["valid"]
    assert (first["status"], first["message"]) == ("completed", f"released {tmp_path / 'one'}")
    assert (second["status"], second["message"]) == ("completed", f"released {tmp_path / 'two'}")


def test_cancel_stops_a_running_run_as_ctrl_c_does_and_it_resumes(tmp_path):
    (tmp_path / "blocking.yaml").write_text(BLOCKING)
    name = tmp_path / "step"

    async def body(session):
        running = asyncio.create_task(session.call_tool("run", {"path": str(tmp_path / "blocking.yaml"),
                                                                "inputs": {"name": str(name)}}))
        try:
            pid = await asyncio.wait_for(_started(tmp_path / "step.pid"), 120)
            run_id = (await session.call_tool("runs", {})).structured_content["runs"][0]["id"]
            cancelled = (await asyncio.wait_for(session.call_tool("cancel", {"run_id": run_id}), 60)).structured_content
            ended = (await running).structured_content
            shown = (await session.call_tool("show", {"run_id": run_id})).structured_content
        finally:
            (tmp_path / "step.release").touch()
        resumed = (await session.call_tool("resume", {"run_id": run_id, "rerun": True})).structured_content
        return pid, cancelled, ended, shown, resumed

    pid, cancelled, ended, shown, resumed = with_server(tmp_path, body)
    assert cancelled["status"] == "stopped" and "resume" in cancelled["hint"], cancelled
    assert ended["status"] == "stopped" and ended["run_id"] == cancelled["run_id"], ended
    assert shown["status"] == "stopped" and shown["current_node"] == "wait", shown
    assert _gone(pid), "the step's process outlived the cancel"
    assert (resumed["status"], resumed["message"]) == ("completed", f"released {name}"), resumed


def test_a_client_side_cancel_of_a_run_call_stops_the_run(tmp_path):
    """`notifications/cancelled` (sent by the SDK's client when the calling task is cancelled) once left the step
    running."""
    (tmp_path / "blocking.yaml").write_text(BLOCKING)
    name = tmp_path / "step"

    async def body(session):
        running = asyncio.create_task(session.call_tool("run", {"path": str(tmp_path / "blocking.yaml"),
                                                                "inputs": {"name": str(name)}}))
        try:
            pid = await asyncio.wait_for(_started(tmp_path / "step.pid"), 120)
            running.cancel()
            try:
                await running
            except asyncio.CancelledError:
                pass

            async def stopped():  # the cancelled call is never answered: the run's record says when it stopped
                while True:
                    listed = (await session.call_tool("runs", {})).structured_content["runs"]
                    if listed[0]["status"] != "running":
                        return listed[0]
                    await asyncio.sleep(0.1)

            record = await asyncio.wait_for(stopped(), 120)  # a guard against a run that never stops, not a timing
        finally:
            (tmp_path / "step.release").touch()
        return pid, record

    pid, record = with_server(tmp_path, body)
    assert record["status"] == "stopped", record
    assert _gone(pid), "the step's process outlived the client's cancel"


BIG = """\
name: big
version: "1.0.0"
start_node: grow
nodes:
  grow:
    type: action
    actions:
      - type: compute
        expression: "'x'.repeat(3000000)"
        store_as: computed.big
    on_success: done
endings:
  done:
    type: success
    message: "grown"
"""


def test_results_are_capped_and_the_rest_is_read_as_resources(tmp_path):
    """A run holding a big value once came back whole from `run`, `show` and every line of `runs`."""
    (tmp_path / "big.yaml").write_text(BIG)

    async def body(session):
        ran = (await session.call_tool("run", {"path": str(tmp_path / "big.yaml")})).structured_content
        listed = (await session.call_tool("runs", {})).structured_content
        shown = (await session.call_tool("show", {"run_id": ran["run_id"]})).structured_content
        whole = json.loads((await session.read_resource(f"wfexec://runs/{ran['run_id']}/state")).contents[0].text)
        pages, number = [], 1
        while True:
            read = await session.read_resource(f"wfexec://runs/{ran['run_id']}/state/{number}")
            if read.contents[0].text.startswith("error") or not read.contents[0].text:
                break
            pages.append(read.contents[0].text)
            number += 1
            if len("".join(pages)) >= len(json.dumps(whole, ensure_ascii=False)):
                break
        return ran, listed, shown, whole, pages

    ran, listed, shown, whole, pages = with_server(tmp_path, body)
    for result in (ran, listed, shown):
        assert len(json.dumps(result)) < 110_000, len(json.dumps(result))
    assert (ran["status"], ran["message"]) == ("completed", "grown")
    assert "over the 100,000-byte cap" in ran["truncated"] and f"wfexec://runs/{ran['run_id']}/state" in ran["truncated"]
    assert "over the 100,000-byte cap" in shown["truncated"] and shown["status"] == "completed"
    assert set(listed["runs"][0]) == {"id", "workflow", "workflow_path", "status", "node", "steps", "created_at",
                                      "updated_at", "finished_at", "ending", "ending_type", "waiting_on",
                                      "last_error"}
    assert listed["runs"][0]["ending"] == "done"
    assert len(whole["computed"]["big"]) == 3_000_000
    assert json.loads("".join(pages)) == whole and len(pages) > 1
