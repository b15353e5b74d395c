"""The pi backend (issue 30, point 4) against a fake `pi` executable (protocol_support.FAKE_PI): pi's command
line, session ids (`--session` to resume, `--fork` for a `<call>`), the cost of a turn as the difference of the
session file's before and after, `--continue-session`, and the backend chosen per workflow scope."""

from __future__ import annotations

import json

import pytest
from conftest import wfexec_in_process as cli
from protocol_support import argv_value, fake_claude, fake_pi, write_states  # noqa: F401

from wfexec.backends import create_backend
from wfexec.backends.pi import PiBackend


def test_a_workflow_whose_manifest_says_pi_runs_on_pi(tmp_path, fake_pi):
    set_replies, calls = fake_pi
    set_replies([{"text": "Planned. <goto>MORE</goto>", "cost": 0.02},
                 {"text": '<call return="BACK">CHILD</call>', "cost": 0.03},
                 {"text": "<result>child done</result>", "cost": 0.04, "deltas": ["<print>chi", "ld</print>",
                                                                                  "<result>child done</result>"]},
                 {"text": "<result>all done</result>", "cost": 0.05}])
    write_states(tmp_path / "flow", {
        "workflow.yaml": "id: flow\nbackend:\n  name: pi\n  options:\n    provider: anthropic\n    thinking: low\n"
                         "    tools: [read, grep]\n    skills: [review]\n",
        "START.md": "Plan it.", "MORE.md": "---\nmodel: anthropic/claude-sonnet-4-6\n---\nMore.",
        "CHILD.md": "---\neffort: high\n---\nChild.", "BACK.md": "Back with {{input}}."})
    ran = cli("states", "flow", "--no-debug", "--format", "json", cwd=tmp_path)  # no --backend: the manifest's
    assert ran.returncode == 0, ran.stderr
    out = json.loads(ran.stdout)
    assert out["status"] == "completed"
    first, goto, child, back = (c["argv"] for c in calls())
    assert first[:2] == ["--mode", "json"] and "--session" not in first and "--fork" not in first
    assert "--model" not in first  # pi's own default, not Claude's sonnet
    assert (argv_value(first, "--provider"), argv_value(first, "--thinking"), argv_value(first, "--tools"),
            argv_value(first, "--skill"), first[-1]) == ("anthropic", "low", "read,grep", "review", "Plan it.")
    assert argv_value(goto, "--session") == "pi-1" and argv_value(goto, "--model") == "anthropic/claude-sonnet-4-6"
    assert argv_value(child, "--fork") == "pi-1" and argv_value(child, "--thinking") == "high"  # the call branches
    assert argv_value(back, "--session") == "pi-1" and back[-1] == "Back with child done."
    [record] = json.loads(cli("runs", "--format", "json", cwd=tmp_path).stdout)
    shown = json.loads(cli("show", record["id"], "--agent", "main", "--format", "json", cwd=tmp_path).stdout)
    costs = [s.get("cost_usd") for s in shown["states"]]
    # The fork starts as a copy of pi-1 ($0.05 so far): only what the child's turn added is its cost.
    assert costs == pytest.approx([0.02, 0.03, 0.04, 0.05]), shown


def test_pi_prints_as_the_text_streams_and_continue_session_forks_the_latest(tmp_path, fake_pi):
    set_replies, calls = fake_pi
    folder = tmp_path / "home" / ".pi" / "agent" / "sessions" / ("--" + str(tmp_path).strip("/").replace("/", "-")
                                                                  + "--")
    folder.mkdir(parents=True)
    (folder / "2025-12-31T10-00-00_older.jsonl").write_text("")
    (folder / "2025-12-31T11-00-00_newest.jsonl").write_text("")
    import os
    os.utime(folder / "2025-12-31T10-00-00_older.jsonl", (1, 1))
    set_replies([{"text": "<print>a</print> <result>r</result>", "deltas": ["<pri", "nt>a</print> ", "<result>r</result>"]}])
    write_states(tmp_path / "flow", {"workflow.yaml": "backend: pi\n", "START.md": "Go on."})
    ran = cli("states", "flow", "--continue-session", "--no-debug", cwd=tmp_path)
    assert (ran.returncode, ran.stdout) == (0, "a\nr\n"), ran.stderr
    assert argv_value(calls()[0]["argv"], "--fork") == "newest"


def test_a_nested_workflow_runs_on_its_own_backend(tmp_path, fake_pi, fake_claude):
    set_pi, pi_calls = fake_pi
    set_claude, claude_calls = fake_claude
    set_claude([{"result": "<call-workflow return=\"AFTER\">../inner/</call-workflow>"},
                {"result": "<result>outer saw {{input}}</result>".replace("{{input}}", "x")}])
    set_pi([{"text": "<result>from pi</result>"}])
    write_states(tmp_path / "outer", {"START.md": "Outer.", "AFTER.md": "After: {{input}}"})
    write_states(tmp_path / "inner", {"workflow.yaml": "backend: pi\n", "START.md": "Inner."})
    ran = cli("states", "outer", "--backend", "claude", "--no-debug", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert [c["prompt"] for c in claude_calls()] == ["Outer.", "After: from pi"]
    assert [c["prompt"] for c in pi_calls()] == ["Inner."]


def test_pi_failures_and_specs(tmp_path, fake_pi):
    set_replies, _ = fake_pi
    set_replies([{"text": "", "exit": 2, "stderr": "no API key"}] * 3)
    write_states(tmp_path / "flow", {"workflow.yaml": "backend: pi\n", "START.md": "Go."})
    stopped = cli("states", "flow", "--no-debug", cwd=tmp_path)
    assert stopped.returncode == 4 and "pi exited with status 2: no API key (failed 3 times in a row)" in stopped.stderr
    backend = create_backend("pi:provider=openai,tools=read+ls,no_skills=true,executable=/x/pi")
    assert isinstance(backend, PiBackend) and (backend.provider, backend.tools, backend.no_skills,
                                               backend.executable) == ("openai", ("read", "ls"), True, "/x/pi")
    with pytest.raises(ValueError, match="pi backend option 'colour' is not one of"):
        create_backend("pi:colour=red")
    write_states(tmp_path / "odd", {"workflow.yaml": "backend: gemini\n", "START.md": "Go."})
    refused = cli("states", "odd", "--no-debug", cwd=tmp_path)
    assert refused.returncode != 0 and "asks for the 'gemini' backend, which wfexec does not have" in refused.stderr
    write_states(tmp_path / "plain", {"START.md": "Go."})  # no manifest: the run's --backend
    missing = cli("states", "plain", "--backend", "pi:executable=/nonexistent/pi", "--no-debug", cwd=tmp_path)
    assert missing.returncode == 4 and "install pi with `npm install -g @mariozechner/pi-coding-agent`" in \
        missing.stderr


def test_pi_without_permission_skipping_gets_the_conservative_tools(tmp_path, fake_pi):
    from wfexec.backends.base import LLMRequest

    backend = PiBackend(skip_permissions=False)
    assert backend.argv(LLMRequest(prompt="p"), None, False)[-3:] == ["--tools", "read,edit,write,grep,find,ls", "p"]
    assert "--tools" not in PiBackend().argv(LLMRequest(prompt="p"), "s", True)
    assert PiBackend(no_tools=True, tools=("x",)).argv(LLMRequest(prompt="p"), "s", True)[3:6] == \
        ["--fork", "s", "--no-tools"]


def test_a_pi_scope_keeps_the_run_s_permission_prompts(tmp_path, fake_pi, fake_claude):
    set_pi, pi_calls = fake_pi
    set_claude, _ = fake_claude
    set_claude([{"result": "<call-workflow return=\"AFTER\">../inner/</call-workflow>"}, {"result": "<result>x</result>"}])
    set_pi([{"text": "<result>from pi</result>"}])
    write_states(tmp_path / "outer", {"START.md": "Outer.", "AFTER.md": "After."})
    write_states(tmp_path / "inner", {"workflow.yaml": "backend: pi\n", "START.md": "Inner."})
    ran = cli("states", "outer", "--backend", "claude", "--no-dangerously-skip-permissions", "--no-debug",
              cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert argv_value(pi_calls()[0]["argv"], "--tools") == "read,edit,write,grep,find,ls"
