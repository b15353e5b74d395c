"""What a Raymond user watches while a states run goes on (issue 30, point 3): an LLM reply's `<print>` shown as
the stream brings it, not when the turn ends; `ray`'s debug files under `.raymond/debug/<workflow id>/`; timeout
errors that name the flag, the config file or the state that set the limit. Checked with the fake `claude`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import wfexec_in_process as cli
from conftest import with_coverage
from protocol_support import fake_claude, write_states  # noqa: F401


def test_a_print_in_an_llm_reply_shows_while_the_turn_still_runs(tmp_path, fake_claude):
    set_replies, _ = fake_claude
    release = tmp_path / "release"
    set_replies([{"assistant": ["Starting. <print>step 1 of 2</print> Working..."], "wait_for": str(release),
                  "result": "<print>step 2 of 2</print><result>done</result>"}])
    write_states(tmp_path / "flow", {"START.md": "Go."})
    env = with_coverage({**os.environ, "PYTHONUNBUFFERED": "1"})
    env.pop("WFEXEC_STORE", None)
    process = subprocess.Popen([sys.executable, "-m", "wfexec", "states", "flow", "--backend", "claude",
                                "--no-debug"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, text=True)
    try:
        first = process.stdout.readline()
        still_running = process.poll() is None  # the fake holds the turn open until `release` exists
    finally:
        release.touch()
    rest, errors = process.communicate(timeout=60)
    assert (first, still_running) == ("step 1 of 2\n", True), errors
    assert process.returncode == 0, errors
    assert rest == "step 2 of 2\ndone\n"  # each once: the final message's print was not shown again


def test_debug_files_are_where_and_what_ray_writes(tmp_path, fake_claude):
    set_replies, _ = fake_claude
    (tmp_path / ".git").mkdir()
    set_replies([{"result": "no tag"}, {"assistant": ["<print>hi</print>"], "result": "<goto>RUN</goto>"},
                 {"result": "<result>checked</result>"}])
    write_states(tmp_path / "flow", {
        "START.md": "---\nallowed_transitions:\n  - {tag: goto, target: RUN}\n  - {tag: result}\n---\nGo.\n",
        "RUN.sh": 'echo "out $item"; echo err >&2; echo \'<fork next="CHECK" item="x">W</fork>\'\n',
        "W.sh": "echo '<result>w</result>'\n", "CHECK.md": "Check."})
    sub = tmp_path / "sub"
    sub.mkdir()
    ran = cli("states", tmp_path / "flow", "--backend", "claude", "--workflow-id", "wf-1", cwd=sub)
    assert ran.returncode == 0, ran.stderr
    folder = tmp_path / ".raymond" / "debug" / "wf-1"  # .raymond made at the project's root
    names = sorted(os.listdir(folder))
    assert names == ["main_CHECK_004.jsonl", "main_RUN_003.meta.json", "main_RUN_003.stderr.txt",
                     "main_RUN_003.stdout.txt", "main_START_001.jsonl", "main_START_002.jsonl",
                     "main_w1_W_001.meta.json", "main_w1_W_001.stderr.txt", "main_w1_W_001.stdout.txt",
                     "transitions.log"], names
    turn = [json.loads(line) for line in (folder / "main_START_002.jsonl").read_text().splitlines()]
    assert [e["type"] for e in turn] == ["system", "assistant", "assistant", "result"]  # the reminder's own file
    assert (folder / "main_RUN_003.stdout.txt").read_text().startswith("out \n")
    assert (folder / "main_RUN_003.stderr.txt").read_text() == "err\n"
    meta = json.loads((folder / "main_w1_W_001.meta.json").read_text())
    assert meta["exit_code"] == 0 and meta["execution_time_ms"] >= 0
    assert meta["env_vars"] == {"RAYMOND_AGENT_ID": "main_w1", "RAYMOND_TASK_FOLDER": meta["env_vars"]
                                ["RAYMOND_TASK_FOLDER"], "RAYMOND_WORKFLOW_ID": "wf-1", "item": "x"}
    log = (folder / "transitions.log").read_text()
    entries = [block.splitlines() for block in log.strip().split("\n\n")]
    assert [e[0].split(" ", 1)[1] for e in entries] == [
        "[main] START.md -> RUN.sh (goto)", "[main] RUN.sh -> CHECK.md (fork)", "[main_w1] W.sh -> (result, terminated)",
        "[main] CHECK.md -> (result, terminated)"] or [e[0].split(" ", 1)[1] for e in entries] == [
        "[main] START.md -> RUN.sh (goto)", "[main] RUN.sh -> CHECK.md (fork)", "[main] CHECK.md -> (result, terminated)",
        "[main_w1] W.sh -> (result, terminated)"]
    fork = next(e for e in entries if "(fork)" in e[0])
    assert fork[1:] == ["  spawned_agent_id: main_w1", "  state_type: script"]
    # --no-debug writes none
    ran = cli("states", tmp_path / "flow", "--backend", "claude", "--workflow-id", "wf-2", "--no-debug", cwd=sub)
    assert not (tmp_path / ".raymond" / "debug" / "wf-2").exists()


def test_a_script_runs_debug_files_hold_its_output_and_meta_json_as_ray_dumps_it(tmp_path):
    """The three files of a script run, byte for byte: its stdout and stderr, and meta.json indented by two with
    the fork attributes (quotes, backslashes, other scripts' characters) as JSON writes them, readable by its
    owner only; transitions.log appended entry after entry."""
    (tmp_path / ".git").mkdir()
    odd = 'say "hi" \\ é ✓'
    write_states(tmp_path / "flow", {
        "START.sh": "cat <<'EOF'\n<fork next=\"DONE\" note='" + odd + "'>W</fork>\nEOF\n",
        "W.sh": "printf 'out ✓\\n'; printf 'err\\n' >&2; printf '<result>%s</result>\\n' \"$note\"\n",
        "DONE.sh": "echo '<result>ok</result>'\n"})
    ran = cli("states", tmp_path / "flow", "--workflow-id", "wf-b", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    folder = tmp_path / ".raymond" / "debug" / "wf-b"
    assert (folder / "main_w1_W_001.stdout.txt").read_bytes() == f"out ✓\n<result>{odd}</result>\n".encode()
    assert (folder / "main_w1_W_001.stderr.txt").read_bytes() == b"err\n"
    text = (folder / "main_w1_W_001.meta.json").read_text(encoding="utf-8")
    meta = json.loads(text)
    assert list(meta) == ["exit_code", "execution_time_ms", "env_vars"] and meta["env_vars"]["note"] == odd
    assert text == json.dumps(meta, indent=2, ensure_ascii=False)
    assert {(folder / name).stat().st_mode & 0o777 for name in os.listdir(folder) if name != "transitions.log"} \
        == {0o600}
    entries = (folder / "transitions.log").read_text(encoding="utf-8").strip().split("\n\n")
    assert len(entries) == 3 and f"  result_payload: {odd}" in entries[1] + entries[2]


def test_an_llm_timeout_names_where_the_limit_was_set(tmp_path, fake_claude):
    set_replies, _ = fake_claude
    silent = {"result": "late", "ticks": 1, "tick_seconds": 5}
    set_replies([silent] * 3)
    write_states(tmp_path / "flow", {"START.md": "Go."})
    stopped = cli("states", "flow", "--backend", "claude", "--timeout", "0.5", "--no-debug", cwd=tmp_path)
    assert stopped.returncode == 4
    assert ("claude gave no reply for 0.5 s and was stopped (timeout from the --timeout flag)"
            " (failed 3 times in a row)") in stopped.stderr


def test_a_yaml_state_timeout_is_named_as_the_state_s(tmp_path):
    (tmp_path / "flow.yaml").write_text("states:\n  START:\n    sh: \"sleep 2; echo '<result>x</result>'\"\n"
                                        "    timeout: 0.3\n")
    ran = cli("states", "flow.yaml", "--timeout", "100", "--no-debug", cwd=tmp_path)
    assert ran.returncode == 1
    assert "produced no output for 0.3 s and was stopped (timeout from `timeout` of state 'START' in " in ran.stderr
