"""LLM backends: `claude` against a fake `claude` executable on PATH, `command` with a real program,
`replay` and recording with real cassette files, and `create_backend` specs.

Checklist items covered here: 38 (claude is called with `sonnet` by default; frontmatter and node model
override it), 43 (usage limits in the result or stderr are reported; a failing call is an error).
"""

from __future__ import annotations

import json
import textwrap

import pytest
from protocol_support import ScriptedBackend, argv_value, fake_claude, run_folder, write_states  # noqa: F401

from wfexec.backends import create_backend
from wfexec.backends.base import BackendError, BackendUnavailable, LLMRequest, UsageLimitReached, run_sync
from wfexec.backends.claude import ClaudeBackend
from wfexec.backends.command import CommandBackend
from wfexec.backends.replay import RecordingBackend, ReplayBackend, ReplayDiverged, dump_cassette, load_cassette

def test_claude_goto_resumes_call_forks_and_model_precedence(tmp_path, fake_claude, monkeypatch):
    set_replies, calls = fake_claude
    monkeypatch.setenv("CLAUDECODE", "1")
    set_replies([{"result": "Planned. <goto>MORE</goto>", "cost": 0.02},
                 {"result": '<call return="BACK">CHILD</call>', "cost": 0.03},
                 {"result": "<result>child done</result>", "cost": 0.04},
                 {"result": "<result>all done</result>", "cost": 0.05}])
    folder = write_states(tmp_path / "s", {"START.md": "Plan it.", "MORE.md": "More.",
                                           "CHILD.md": "---\nmodel: haiku\neffort: high\n---\nChild.",
                                           "BACK.md": "Back with {{input}}."})
    result, _ = run_folder(folder, backend=create_backend("claude"), cwd=tmp_path)
    assert (result.result, result.cost_usd) == ("all done", pytest.approx(0.14)), result.error
    log = calls()
    first, goto, child, back = (c["argv"] for c in log)
    assert first[:5] == ["-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"]
    assert argv_value(first, "--model") == "sonnet" and "--resume" not in first
    assert argv_value(first, "--disallowed-tools") == "EnterPlanMode,ExitPlanMode,AskUserQuestion,NotebookEdit"
    assert first[-2:] == ["--", "Plan it."]
    assert argv_value(goto, "--resume") == "sess-1" and "--fork-session" not in goto
    assert argv_value(child, "--resume") == "sess-1" and "--fork-session" in child  # the call branches
    assert (argv_value(child, "--model"), argv_value(child, "--effort")) == ("haiku", "high")
    assert argv_value(back, "--resume") == "sess-1" and "--fork-session" not in back  # the caller's session
    assert log[3]["prompt"] == "Back with child done."
    assert {c["cwd"] for c in log} == {str(tmp_path.resolve())}
    assert {c["claudecode"] for c in log} == {None}


def test_a_long_claude_turn_that_keeps_streaming_is_not_timed_out(tmp_path, fake_claude):
    """`timeout` is seconds without output: a turn of 2 s whose tool calls stream every 0.25 s is not stopped
    by a 1 s timeout, and one that says nothing for longer than the timeout is."""
    set_replies, _ = fake_claude
    set_replies([{"result": "built", "ticks": 8, "tick_seconds": 0.25},
                 {"result": "late", "ticks": 1, "tick_seconds": 3}])
    backend = create_backend("claude")
    reply = run_sync(backend.invoke(LLMRequest(prompt="build it", cwd=str(tmp_path), timeout=1)))
    assert reply.text == "built"
    with pytest.raises(BackendError, match="claude gave no reply for 1 s"):
        run_sync(backend.invoke(LLMRequest(prompt="again", cwd=str(tmp_path), timeout=1)))


def test_claude_options_and_large_prompts_on_stdin(tmp_path, fake_claude):
    set_replies, calls = fake_claude
    set_replies([{"result": "one"}, {"result": "two"}])
    backend = create_backend("claude:model=opus,effort=low,permission=acceptEdits")
    big = "x" * 150_000
    assert backend.complete("hello") == "one"
    assert run_sync(backend.invoke(LLMRequest(prompt=big, cwd=str(tmp_path)))).text == "two"
    first, second = calls()
    assert argv_value(first["argv"], "--permission-mode") == "acceptEdits"
    assert "--dangerously-skip-permissions" not in first["argv"]
    assert (argv_value(first["argv"], "--model"), argv_value(first["argv"], "--effort")) == ("opus", "low")
    assert "--" not in second["argv"] and second["prompt"] == big


@pytest.mark.parametrize("reply,message", [
    ({"result": "boom", "is_error": True, "subtype": "error_during_execution"}, "claude reported an error"),
    ({"result": "", "exit": 1, "stderr": "API down"}, "claude exited with status 1: API down"),
    ({"result": "You've hit your limit · resets 3pm (America/Chicago)", "is_error": True}, "claude hit a usage limit"),
    ({"raw": "", "exit": 1, "stderr": "Claude AI usage limit: out of extra usage"}, "claude hit a usage limit"),
    ({"raw": "not json"}, "printed no JSON result object"),
    ({"result": "", "exit": 1,
      "stderr": "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons"},
     "refuses --dangerously-skip-permissions to the root user"),
])
def test_claude_failures(fake_claude, reply, message):
    set_replies, _ = fake_claude
    set_replies([reply])
    with pytest.raises(BackendError, match=message) as raised:
        ClaudeBackend().complete("hi")
    if "usage limit" in message:
        assert isinstance(raised.value, UsageLimitReached)
    if "root" in message:  # every call would fail alike: the run stops and says how to fix it
        assert isinstance(raised.value, BackendUnavailable) and "IS_SANDBOX=1" in raised.value.hint


def test_a_reply_that_mentions_a_limit_is_a_reply(fake_claude):
    """Only a result marked as an error (or a failed command) is a usage limit; the words alone are not."""
    set_replies, _ = fake_claude
    set_replies([{"result": "Docs: when you hit your limit, wait. <result>ok</result>"}])
    assert "hit your limit" in ClaudeBackend().complete("hi")


def test_claude_accepts_a_verbose_message_list(fake_claude):
    set_replies, _ = fake_claude
    messages = [{"type": "system", "session_id": "S"}, {"type": "assistant", "message": {}},
                {"type": "result", "subtype": "success", "result": "listed", "session_id": "S", "total_cost_usd": 0.5}]
    set_replies([{"raw": json.dumps(messages)}])
    reply = run_sync(ClaudeBackend().invoke(LLMRequest(prompt="hi")))
    assert (reply.text, reply.session_id, reply.cost_usd) == ("listed", "S", 0.5)


MAX_TURNS = (  # a turn that ran out of turns after the model wrote its tag; the result has no `result` text
    '{"type":"assistant","message":{"content":[{"type":"text","text":"<result>partial</result>"}]},"session_id":"s1"}\n'
    '{"type":"result","subtype":"error_max_turns","is_error":true,"session_id":"s1","total_cost_usd":0.5}\n')


def test_item36_a_claude_turn_marked_is_error_is_a_reply_and_costs_what_it_says(tmp_path, fake_claude):
    """As Raymond's RunTurn: only a usage limit makes a result an error; any other counts its cost toward the
    budget, and its text (the assistant messages' when the result has none) is the reply."""
    from conftest import wfexec_in_process as cli

    set_replies, calls = fake_claude
    set_replies([{"raw": MAX_TURNS}, {"result": "<result>second</result>", "cost": 0.01}])
    (tmp_path / ".git").mkdir()
    write_states(tmp_path / "f", {"START.md": "Do it."})
    ran = cli("states", "f", "--no-debug", "--backend", "claude", "--budget-usd", "0.3", "--format", "json",
              cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    outcome = json.loads(ran.stdout)["state"]["history"][-1]["outcome"]
    assert (outcome["result"], outcome["cost_usd"], len(calls())) == ("partial", 0.5, 1)
    # The backend keeps the error with the reply; a judgement step (`complete`) still fails on it.
    set_replies([{"raw": MAX_TURNS}] * 2)
    (tmp_path / "claude-replies.json.count").unlink()
    reply = run_sync(ClaudeBackend().invoke(LLMRequest(prompt="hi")))
    assert (reply.text, reply.session_id, reply.cost_usd) == ("<result>partial</result>", "s1", 0.5)
    assert reply.error == "claude reported an error (error_max_turns)"
    with pytest.raises(BackendError, match=r"claude reported an error \(error_max_turns\)"):
        ClaudeBackend().complete("hi")


def test_item36_a_failed_claude_turn_is_tried_again_and_its_cost_counts_toward_the_budget(tmp_path, fake_claude):
    """A claude that exits non-zero is tried again (Raymond too), and what the failed turn cost is spent: here
    it uses up the budget, so the second try never starts."""
    set_replies, calls = fake_claude
    set_replies([{"result": "", "is_error": True, "subtype": "error_max_turns", "exit": 1, "cost": 0.5},
                 {"result": "<result>second</result>", "cost": 0.01}])
    folder = write_states(tmp_path / "f", {"START.md": "Do it."})
    result, _ = run_folder(folder, backend=ClaudeBackend(), budget_usd=0.3)
    assert (result.status, result.cost_usd, len(calls())) == ("stopped", 0.5, 1), result.error
    assert "cost budget exceeded before the LLM call for START.md: spent $0.5000 of a $0.3000 budget" in result.error


def test_claude_missing_executable_stops_the_run(tmp_path):
    folder = write_states(tmp_path / "s", {"START.md": "Go."})
    result, _ = run_folder(folder, backend=create_backend("claude:executable=/nonexistent/claude"))
    assert (result.status, result.exit_code) == ("stopped", 4)
    assert "`/nonexistent/claude` was not found" in result.error
    with pytest.raises(BackendUnavailable):
        ClaudeBackend("/nonexistent/claude").complete("x")


# -- command ---------------------------------------------------------------------------------

ECHO_LLM = """\
#!/bin/bash
# Replies with what it was given and the session it belongs to.
prompt=$(cat)
echo "session=$WFEXEC_SESSION_ID parent=${WFEXEC_PARENT_SESSION_ID:-none} model=${WFEXEC_MODEL:-none} \
agent=$WFEXEC_AGENT_ID state=$WFEXEC_STATE prompt=$prompt"
case "$prompt" in
  *FINISH*) echo "<result>finished</result>" ;;
  *) echo '<call return="FINISH">CHILD</call>' ;;
esac
"""


def test_command_backend_prompt_on_stdin_reply_on_stdout(tmp_path):
    program = tmp_path / "echo-llm"
    program.write_text(ECHO_LLM)
    program.chmod(0o755)
    folder = write_states(tmp_path / "s", {"START.md": "---\nmodel: m1\n---\nstart", "CHILD.md": "FINISH child",
                                           "FINISH.md": "FINISH after"})
    result, _ = run_folder(folder, backend=create_backend(f"command:{program}"))
    assert result.result == "finished", result.error
    replies = [r["reply"].splitlines()[0] for r in result.outcome.records]
    start, child, finish = replies
    start_session = start.split()[0].split("=")[1]
    assert "parent=none model=m1 agent=main state=START.md prompt=start" in start
    assert f"parent={start_session}" in child and child.split()[0] != f"session={start_session}"  # branched
    assert finish.startswith(f"session={start_session} parent=none")  # back in the caller's session


def test_command_backend_failures():
    with pytest.raises(BackendError, match="exited with status 3: bad"):
        CommandBackend(["bash", "-c", "echo bad >&2; exit 3"]).complete("x")
    with pytest.raises(BackendUnavailable, match="was not found"):
        CommandBackend(["/nonexistent/llm"]).complete("x")
    with pytest.raises(ValueError):
        create_backend("command:")


# -- record and replay -------------------------------------------------------------------------

def test_record_then_replay_gives_the_same_run(tmp_path):
    folder = write_states(tmp_path / "s", {"START.md": "Line one\nline two with  spaces\n", "NEXT.sh":
                                           "echo '<goto>LAST</goto>'\n", "LAST.md": "Last: {{agent_id}}"})
    cassette = tmp_path / "run.cassette.yaml"
    inner = ScriptedBackend({"text": "Thinking...\n<goto>NEXT</goto>\n", "session_id": "A", "cost_usd": 0.1},
                            {"text": "<result>recorded</result>", "session_id": "A", "cost_usd": 0.2})
    recorder = RecordingBackend(inner, cassette)
    recorded, _ = run_folder(folder, backend=recorder)
    recorder.record_answer("confirm", "yes")
    items = load_cassette(cassette)
    assert [(i["kind"], i.get("state")) for i in items] == [("llm", "START.md"), ("llm", "LAST.md"),
                                                            ("answer", None)]
    assert items[0]["prompt"] == "Line one\nline two with  spaces\n"
    assert "|" in cassette.read_text()  # multi-line text as block scalars
    replay = create_backend(None, replay=cassette)
    replayed, _ = run_folder(folder, backend=replay)
    assert (replayed.result, replayed.cost_usd) == (recorded.result, recorded.cost_usd) == ("recorded",
                                                                                          pytest.approx(0.3))
    assert replay.answers() == {"confirm": ["yes"]}
    assert replay.unused() == []


def test_replay_matches_by_agent_and_state_whatever_the_order(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(dump_cassette([
        {"kind": "llm", "agent": "main_w2", "state": "W.md", "prompt": "w", "reply": "two"},
        {"kind": "llm", "agent": "main_w1", "state": "W.md", "prompt": "w", "reply": "one"},
        {"kind": "llm", "prompt": "judge this", "reply": "judged"},
    ]))
    backend = ReplayBackend(path)
    ask = lambda agent: run_sync(backend.invoke(LLMRequest(prompt="w", agent_id=agent, state="W.md"))).text  # noqa
    assert (ask("main_w1"), ask("main_w2")) == ("one", "two")
    assert backend.complete("judge this") == "judged"
    with pytest.raises(ReplayDiverged, match=r"agent main_w1 at W.md asks for LLM reply #2, and the recording "
                                             r"holds 1"):
        ask("main_w1")


def test_cassette_round_trips_awkward_text(tmp_path):
    texts = ["trailing space \nnext", "\tTabbed\nline", "  leading\nspaces", "ends with newlines\n\n\n", "a: b\n- c",
             "unicode ✓ — \u2028 separator", "'quotes' and \"doubles\"\n", ""]
    path = tmp_path / "c.yaml"
    path.write_text(dump_cassette([{"kind": "llm", "prompt": t, "reply": t} for t in texts]))
    assert [i["reply"] for i in load_cassette(path)] == texts


def test_bad_cassettes_are_refused(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("interactions: []\n")
    with pytest.raises(ValueError, match="not a wfexec cassette"):
        create_backend(None, replay=path)
    path.write_text("wfexec_cassette: 1\ninteractions:\n  - kind: llm\n    prompt: x\n")
    with pytest.raises(ValueError, match="has no `reply`"):
        create_backend(None, replay=path)
    with pytest.raises(ValueError, match="does not exist"):
        create_backend(None, replay=tmp_path / "missing.yaml")


def test_create_backend_specs(tmp_path):
    assert create_backend(None) is None and create_backend("  ") is None
    claude = create_backend("claude:model=opus,timeout=30,executable=/x/claude")
    assert isinstance(claude, ClaudeBackend) and (claude.model, claude.timeout, claude.executable) == \
        ("opus", 30.0, "/x/claude")
    command = create_backend("command:./my-llm --flag 'two words'")
    assert isinstance(command, CommandBackend) and command.argv == ["./my-llm", "--flag", "two words"]
    recorded = create_backend("claude", record=tmp_path / "rec.yaml")
    assert isinstance(recorded, RecordingBackend) and (tmp_path / "rec.yaml").exists()
    cassette = tmp_path / "c.yaml"
    cassette.write_text(dump_cassette([]))
    assert isinstance(create_backend(f"replay:{cassette}"), ReplayBackend)
    for spec, kwargs, message in (("gpt", {}, "unknown LLM backend 'gpt'"),
                                  ("claude:colour=red", {}, "is not one of"),
                                  ("claude:timeout=soon", {}, "not a number"),
                                  ("claude", {"replay": cassette}, "not both"),
                                  (None, {"record": tmp_path / "r.yaml"}, "needs a backend"),
                                  (None, {"record": tmp_path / "r.yaml", "replay": cassette}, "cannot be combined"),
                                  (f"replay:{cassette}", {"record": tmp_path / "r.yaml"}, "cannot be combined")):
        with pytest.raises(ValueError, match=message):
            create_backend(spec, **kwargs)


def test_fake_claude_is_what_the_judge_path_uses(tmp_path, fake_claude, write_workflow):
    """`Run.judge` calls backend.complete(prompt): a reference document goes through the claude backend."""
    import wfexec

    set_replies, calls = fake_claude
    set_replies([{"result": "the summary"}])
    write_workflow("# Doc\n\nSummarise.\n", "doc.md")
    path = write_workflow(textwrap.dedent("""\
        name: judge
        version: "1"
        start_node: read
        nodes:
          read: {type: reference, doc: doc.md, store_as: computed.summary, next_node: done}
        endings:
          done: {type: success, message: "${computed.summary}"}
        """))
    result = wfexec.run(path, backend=create_backend("claude"), cwd=tmp_path)
    assert result.message == "the summary"
    assert "Summarise." in calls()[0]["prompt"]
