"""LLM backends from the command line: --backend, --record/--replay, and `wfexec states`."""

from __future__ import annotations

import sys

import yaml

from conftest import ROOT, wfexec_cli

HYBRID = ROOT / "tests" / "protocol" / "fixtures" / "hybrid"
CASSETTE = ROOT / "tests" / "protocol" / "fixtures" / "hybrid.cassette.yaml"

FAKE_LLM = """
import sys
prompt = sys.stdin.read()
if "Review" in prompt:
    print("Looks fine. <result>APPROVED</result>")
else:
    print("A summary of: " + prompt.strip().splitlines()[0])
"""

WORKFLOW = """
name: judged
version: 1
start_node: ask
nodes:
  ask:
    type: user_prompt
    prompt:
      question: Review it?
      options: [{id: review, label: Review}, {id: skip, label: Skip}]
    on_response:
      review: {next_node: review}
      skip: {next_node: skipped}
  review:
    type: states
    states:
      START.md: "Review the change, then answer in a result tag."
    store_as: computed.verdict
    on_result: {APPROVED: summarize}
    on_success: rejected
  summarize:
    type: reference
    doc: notes.md
    store_as: computed.summary
    next_node: done
endings:
  done: {type: success, message: "${computed.verdict}: ${computed.summary}"}
  rejected: {type: failure, message: "${computed.verdict}"}
  skipped: {type: cancelled, message: skipped}
"""


def test_states_command_replays_a_hybrid_folder(tmp_path):
    # in a folder of its own: `wfexec states` writes Raymond's debug files where it runs
    done = wfexec_cli("states", HYBRID, "--input", "the app", "--replay", CASSETTE, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "APPROVED"


def test_run_on_a_states_folder_runs_it_as_states(cli, tmp_path):
    done = cli("run", HYBRID, "--input", "the app", "--replay", CASSETTE, "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert '"result": "APPROVED"' in done.stdout


def test_record_then_replay_reproduces_the_run_offline(cli, tmp_path):
    (tmp_path / "fake_llm.py").write_text(FAKE_LLM)
    (tmp_path / "notes.md").write_text("Summarize the review.\n")
    (tmp_path / "workflow.yaml").write_text(WORKFLOW)
    cassette = tmp_path / "run.cassette.yaml"
    recorded = cli("run", ".", "--backend", f"command:{sys.executable} fake_llm.py", "--record", cassette,
                   "--answer", "ask=review", cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stdout.strip() == "APPROVED: A summary of: Summarize the review."
    kinds = [item["kind"] for item in yaml.safe_load(cassette.read_text())["interactions"]]
    assert kinds == ["answer", "llm", "llm"]

    (tmp_path / "fake_llm.py").write_text("raise SystemExit('the LLM must not be called on replay')")
    replayed = cli("run", ".", "--replay", cassette, cwd=tmp_path)  # the answer comes from the cassette too
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == recorded.stdout


def test_a_replay_that_diverges_stops_and_says_where(cli, tmp_path):
    (tmp_path / "fake_llm.py").write_text(FAKE_LLM)
    (tmp_path / "notes.md").write_text("Summarize the review.\n")
    (tmp_path / "workflow.yaml").write_text(WORKFLOW)
    cassette = tmp_path / "run.cassette.yaml"
    cli("run", ".", "--backend", f"command:{sys.executable} fake_llm.py", "--record", cassette,
        "--answer", "ask=review", cwd=tmp_path)
    (tmp_path / "notes.md").write_text("Summarize it differently.\n")
    diverged = cli("run", ".", "--replay", cassette, cwd=tmp_path)
    assert diverged.returncode == 4, diverged.stderr
    assert "Summarize it differently" in diverged.stderr


def test_bad_backend_flags_exit_2(cli, tmp_path):
    (tmp_path / "notes.md").write_text("Summarize the review.\n")
    (tmp_path / "workflow.yaml").write_text(WORKFLOW)
    unknown = cli("run", tmp_path, "--backend", "gpt9")
    assert unknown.returncode == 2 and "gpt9" in unknown.stderr
    missing = cli("run", tmp_path, "--replay", tmp_path / "missing.yaml")
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    both = cli("run", tmp_path, "--backend", "claude", "--replay", CASSETTE)
    assert both.returncode == 2 and "not both" in both.stderr
