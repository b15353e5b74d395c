"""Faults as Raymond handles them (reference §1.16, checklist items 43, 75, 76, 90) and `<ask>` (items 17, 41, 68,
81), without losing the run: failed attempts are retried and then the agent is paused (the run stops, exit 4,
and resumes); a usage limit pauses at once and the run waits for its reset; an `<ask>` parks the run (exit 3)
until `wfexec resume RUN --answer AGENT=TEXT`, or the person answers at the terminal. `wfexec states` records its
runs, so `runs`, `show`, `resume` and `cancel` work on them, after a kill too."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone

import pexpect
import pytest

from conftest import ROOT, with_coverage
from protocol_support import ScriptedBackend, Quiet, run_folder, write_states
from wfexec.backends.base import Backend, BackendError, LLMReply, UsageLimitReached
from wfexec.protocol.limits import limit_wait, reset_time
from wfexec.protocol.orchestrator import Orchestrator
from wfexec.protocol.scopes import open_scope


def wfexec(*args, cwd, env=None, timeout=60):
    environment = with_coverage({**os.environ, **(env or {})})
    environment.pop("WFEXEC_STORE", None)
    return subprocess.run([sys.executable, "-m", "wfexec", *map(str, args)], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def only_run(cwd) -> dict:
    [record] = json.loads(wfexec("runs", "--format", "json", cwd=cwd).stdout)
    return record


class FailingBackend(Backend):
    """Fails the first `failures` calls (with `error`), then replies `text`."""

    name = "failing"

    def __init__(self, failures: int, text: str = "<result>ok</result>", error=BackendError):
        self.failures = failures
        self.text = text
        self.error = error
        self.calls = 0

    async def invoke(self, request):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error(f"attempt {self.calls} failed")
        return LLMReply(text=self.text, session_id="s", cost_usd=0.0)


# -- retries and pausing (items 43, 75, 76) -------------------------------------------------------

def test_a_failed_backend_call_is_tried_again_and_the_state_goes_on(tmp_path):
    folder = write_states(tmp_path / "s", {"START.md": "Go."})
    backend = FailingBackend(failures=2)
    result, quiet = run_folder(folder, backend=backend)
    assert (result.status, result.result, backend.calls) == ("completed", "ok", 3)
    assert "trying again (1/2 retries)" in quiet.errors and "trying again (2/2 retries)" in quiet.errors


def test_three_failures_in_a_row_pause_the_agent_and_stop_the_run(tmp_path):
    folder = write_states(tmp_path / "s", {"START.md": "Go."})
    backend = FailingBackend(failures=99)
    result, _ = run_folder(folder, backend=backend)
    assert (result.status, result.exit_code, backend.calls) == ("stopped", 4, 3)
    assert result.error == ("main paused at START.md: main: START.md: the LLM backend failed: attempt 3 failed "
                            "(failed 3 times in a row)")
    assert result.outcome.state.agent("main").status == "paused"


def test_an_unreadable_prompt_file_is_retried_then_pauses(tmp_path):
    folder = write_states(tmp_path / "s", {"START.sh": "echo '<goto>GARBLED</goto>'\n"})
    (folder / "GARBLED.md").write_bytes(b"\xff\xfe not UTF-8")  # someone is still writing it, say
    result, _ = run_folder(folder, backend=ScriptedBackend())
    assert result.status == "stopped" and "(failed 3 times in a row)" in result.error, result.error


def test_a_frontmatter_that_cannot_be_read_is_retried_then_pauses_and_names_the_files_line(tmp_path):
    """Raymond's markdown executor reports a frontmatter error as a prompt-file error (retried, then the agent is
    paused): the file may be fixed before `wfexec resume RUN` runs the state again. No LLM call is made."""
    folder = write_states(tmp_path / "s", {"START.md": "---\nallowed_transitions:\n  - goto\n---\nGo."})
    backend = ScriptedBackend()
    result, _ = run_folder(folder, backend=backend)
    assert (result.status, result.exit_code, backend.requests) == ("stopped", 4, [])
    assert result.error.startswith("main paused at START.md: main: START.md: invalid frontmatter (line 3): entry 1 of "
                                   "`allowed_transitions` is the text 'goto', not a mapping"), result.error
    assert "(failed 3 times in a row)" in result.error


def test_a_usage_limit_pauses_at_once_and_the_run_waits_for_its_reset(tmp_path):
    folder = write_states(tmp_path / "s", {"START.md": "Go."})
    backend = FailingBackend(failures=1, error=lambda text: UsageLimitReached(
        "You've hit your limit · resets 3pm (America/Chicago)"))
    waited: list[float] = []

    async def sleep(seconds):
        waited.append(seconds)

    quiet = Quiet()
    orchestrator = Orchestrator(open_scope(folder), backend=backend, io=quiet.console, cwd=tmp_path, sleep=sleep)
    outcome = orchestrator.run()
    assert (outcome.result, backend.calls, len(waited)) == ("ok", 2, 1)  # paused after one call, no retry
    assert 5 * 60 < waited[0] <= 24 * 3600 + 5 * 60
    assert "waiting" in quiet.errors and "for it to reset" in quiet.errors


def test_item90_reset_times():
    noon_in_chicago = datetime(2026, 11, 24, 18, 0, tzinfo=timezone.utc)
    at = reset_time("You've hit your limit · resets 3pm (America/Chicago)", noon_in_chicago)
    assert (at.hour, at.minute, at.day) == (15, 5, 24)
    at = reset_time("resets 12am (America/Chicago)", noon_in_chicago)
    assert (at.hour, at.minute, at.day) == (0, 5, 25)  # 12am is midnight, and it has passed today
    at = reset_time("resets 11am (America/Chicago)", noon_in_chicago)
    assert at.day == 25
    assert reset_time("resets 3pm (Mars/Olympus)", noon_in_chicago) is None
    assert reset_time("no time given", noon_in_chicago) is None
    three, midnight = "resets 3pm (America/Chicago)", "resets 12am (America/Chicago)"
    assert limit_wait([three, midnight], noon_in_chicago) == pytest.approx((12 * 60 + 5) * 60)  # the longest
    assert limit_wait([three, "paused: the script failed"], noon_in_chicago) is None  # one without a time
    assert limit_wait([], noon_in_chicago) is None


def test_wfexec_states_stops_with_paused_agents_and_resumes_once_the_cause_is_fixed(tmp_path):
    program = tmp_path / "llm.sh"  # a backend that fails until a file says it may answer
    program.write_text("#!/bin/bash\ncat > /dev/null\n[ -f ok ] || { echo 'down' >&2; exit 1; }\n"
                       "echo '<result>answered</result>'\n")
    program.chmod(0o755)
    write_states(tmp_path / "flow", {"START.md": "Go."})
    stopped = wfexec("states", "flow", "--backend", f"command:{program}", cwd=tmp_path)
    assert stopped.returncode == 4, stopped.stderr
    assert "1 agent paused (main at START.md:" in stopped.stderr and "(failed 3 times in a row)" in stopped.stderr
    record = only_run(tmp_path)
    assert record["status"] == "stopped"
    (tmp_path / "ok").write_text("")
    resumed = wfexec("resume", record["id"], "--backend", f"command:{program}", cwd=tmp_path)
    assert (resumed.returncode, resumed.stdout) == (0, "answered\n"), resumed.stderr
    assert only_run(tmp_path)["status"] == "completed"


# -- <ask> (items 17, 41, 68, 81) -------------------------------------------------------------------

ASKING = {
    "START.sh": "echo \"<ask next=\\\"AFTER\\\">Ship version $RAYMOND_INPUT?</ask>\"\n",
    "AFTER.sh": 'echo "<goto input=\\"$RAYMOND_INPUT\\">LAST</goto>"\n',
    "LAST.md": "answer={{input}} ask={{ask_id}}",
}


def test_an_ask_parks_the_run_and_resume_delivers_the_answer(tmp_path):
    write_states(tmp_path / "flow", {k: v for k, v in ASKING.items() if k != "LAST.md"} |
                 {"AFTER.sh": 'echo "<result>shipping: $RAYMOND_INPUT</result>"\n'})
    parked = wfexec("states", "flow", "--input", "2.1", cwd=tmp_path)
    assert parked.returncode == 3, parked.stderr
    record = only_run(tmp_path)
    assert parked.stderr.splitlines()[0] == "waiting: agent 'main' of node 'agents' asks: Ship version 2.1?"
    assert f"wfexec resume {record['id']} --answer main=<text>" in parked.stderr
    assert (record["status"], record["in_flight"]) == ("waiting", None)
    shown = wfexec("show", record["id"], cwd=tmp_path).stdout
    assert "waiting: 'main' asks: Ship version 2.1?" in shown
    resumed = wfexec("resume", record["id"], "--answer", "main=yes, ship it", cwd=tmp_path)
    assert (resumed.returncode, resumed.stdout) == (0, "shipping: yes, ship it\n"), resumed.stderr
    assert "running 'agents' again" not in resumed.stderr  # parked, not cut off


def test_ask_id_is_bound_for_the_state_that_gets_the_answer_only(tmp_path):
    folder = write_states(tmp_path / "s", {**ASKING, "AFTER.sh": 'echo "<goto input=\\"$RAYMOND_INPUT\\">LAST</goto>"\n'})
    backend = ScriptedBackend("<result>done</result>")
    result, _ = run_folder(folder, backend=backend, input="3", answers={"main": "no"})
    assert result.result == "done"
    assert backend.requests[0].prompt == "answer=no ask={{ask_id}}"  # LAST is one state past the answered one
    folder = write_states(tmp_path / "t", {"START.md": "<ask next=\"LAST\">Go?</ask>", "LAST.md": "ask={{ask_id}}"})
    backend = ScriptedBackend('<ask next="LAST">Really?</ask>', "<result>done</result>")
    result, _ = run_folder(folder, backend=backend, answers={"main": "yes"})
    assert result.result == "done"
    assert backend.requests[1].prompt.startswith("ask=ask_main_")


def test_an_ask_without_next_or_with_a_path_is_malformed():
    from wfexec.protocol.tags import TagError, parse_transitions

    [ask] = parse_transitions('<ask next="T.md" timeout="48h">Which one?</ask>')
    assert (ask.tag, ask.target, ask.payload, ask.attributes["timeout"]) == ("ask", "T.md", "Which one?", "48h")
    assert parse_transitions('<ask next="T"></ask>')[0].payload == ""
    for bad in ("<ask>x</ask>", '<ask next="">x</ask>', '<ask next="a/T">x</ask>'):
        with pytest.raises(TagError):
            parse_transitions(bad)


def test_while_an_agent_asks_the_others_start_no_new_state(tmp_path):
    """Raymond's --on-ask=pause: the others finish the state they are in, then wait with the asking agent."""
    folder = write_states(tmp_path / "s", {
        "START.sh": "echo '<fork next=\"ASK\">WORKER</fork>'\n",
        "ASK.sh": "sleep 0.3; echo '<ask next=\"END\">Go on?</ask>'\n",
        "WORKER.sh": "echo tick >> ticks.txt; sleep 0.2; echo '<reset>WORKER</reset>'\n",
        "END.sh": "echo \"<result>$RAYMOND_INPUT</result>\"\n",
    })
    result, _ = run_folder(folder, cwd=tmp_path)
    assert result.status == "waiting" and result.error == "main asks: Go on?"
    ticks = (tmp_path / "ticks.txt").read_text().count("tick")
    assert 1 <= ticks <= 4
    worker = result.outcome.state.agent("main_worker1")
    assert worker.status == "active" and worker.state == "WORKER.sh"  # it goes on once the answer comes


def test_an_ask_at_a_terminal_is_answered_there(tmp_path):
    write_states(tmp_path / "flow", {"START.sh": "echo '<ask next=\"AFTER\">What is your name?</ask>'\n",
                                     "AFTER.sh": 'echo "<result>hello $RAYMOND_INPUT</result>"\n'})
    child = pexpect.spawn(sys.executable, ["-m", "wfexec", "states", "flow"], cwd=str(tmp_path),
                          encoding="utf-8", timeout=20, dimensions=(40, 120),
                          env=with_coverage({"TERM": "xterm", "PATH": os.environ["PATH"]}))
    child.expect("What is your name")
    child.sendline("Ada")
    child.expect("hello Ada")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


# -- durable `wfexec states` ------------------------------------------------------------------------

def states_process(cwd) -> subprocess.Popen:
    """`wfexec states flow` running in `cwd`, to be killed."""
    environment = with_coverage({**os.environ})
    environment.pop("WFEXEC_STORE", None)
    return subprocess.Popen([sys.executable, "-m", "wfexec", "states", "flow"], cwd=cwd, env=environment,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)


def test_a_killed_states_run_resumes_where_it_stopped(tmp_path):
    write_states(tmp_path / "flow", {
        "START.sh": "echo one >> done.txt; echo '<goto>SLOW</goto>'\n",
        "SLOW.sh": "echo slow >> done.txt; touch started; sleep 30; echo '<goto>LAST</goto>'\n",
        "LAST.sh": "echo last >> done.txt; echo '<result>finished</result>'\n",
    })
    process = states_process(tmp_path)
    deadline = time.monotonic() + 30
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline and process.poll() is None, process.stderr.read()
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    record = only_run(tmp_path)
    assert record["status"] == "interrupted"
    (tmp_path / "flow" / "SLOW.sh").write_text("echo slow-again >> done.txt; echo '<goto>LAST</goto>'\n")
    resumed = wfexec("resume", record["id"], cwd=tmp_path)
    assert (resumed.returncode, resumed.stdout) == (0, "finished\n"), resumed.stderr
    # START ran once: the agents saved after it came back; SLOW, cut off, ran again.
    assert (tmp_path / "done.txt").read_text().split() == ["one", "slow", "slow-again", "last"]


def test_a_forked_run_killed_midway_resumes_without_losing_or_repeating_an_ended_agent(tmp_path):
    """Forty forked agents; twenty end, twenty are cut off by a SIGKILL. Each agent's end is saved as a change of
    its own (not a copy of all forty): on resume the twenty that ended (and the main agent, which went on at once)
    are not run again and their results are kept; the twenty cut off run again."""
    from wfexec.durable.store import Store, StoreError

    write_states(tmp_path / "flow", {
        "START.sh": 'echo started >> main.log\n'
                    'for i in $(seq 1 40); do echo "<fork next=\\"DONE\\" item=\\"$i\\">WORK</fork>"; done\n',
        "WORK.sh": 'echo "$item" >> ran.log\n'
                   'if [ "$item" -gt 20 ]; then until [ -e go ]; do sleep 0.05; done; fi\n'
                   'echo "<result>done $item</result>"\n',
        "DONE.sh": "echo done >> main.log; echo '<result>all done</result>'\n",
    })
    process = states_process(tmp_path)
    deadline = time.monotonic() + 60
    ended: list = []
    ran = tmp_path / "ran.log"
    # Every worker started, and the main agent's and the twenty quick agents' ends committed, as the store reads them
    while len(ended) < 21 or not ran.exists() or len(ran.read_text().split()) < 40:
        assert time.monotonic() < deadline and process.poll() is None, process.stderr.read()
        time.sleep(0.1)
        try:
            store = Store(tmp_path / ".wfexec" / "runs.db", readonly=True)
        except StoreError:  # not made yet
            continue
        [record] = store.list() or [None]
        saved = store.node_state(record.id, "agents") if record is not None else None
        ended = sorted(saved["ended"]) if saved else []
        store.close()
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    assert sorted(ended) == sorted(["main", *(f"main_work{i}" for i in range(1, 21))])
    (tmp_path / "go").touch()
    record = only_run(tmp_path)
    resumed = wfexec("resume", record["id"], "--format", "json", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    ending = json.loads(resumed.stdout)
    assert ending["message"] == "all done"
    started = ran.read_text().split()
    assert sorted(started[:40], key=int) == [str(i) for i in range(1, 41)]  # each once before the kill
    assert sorted(started[40:], key=int) == [str(i) for i in range(21, 41)]  # only those cut off, again
    assert (tmp_path / "main.log").read_text().split() == ["started", "done"]
    forks = ending["state"]["computed"]["result_forks"]
    assert sorted(f["result"] for f in forks) == sorted(f"done {i}" for i in range(1, 41))


def test_item77_a_multi_fork_that_breaks_a_group_rule_pauses_the_prompts_agent(tmp_path):
    folder = write_states(tmp_path / "s", {"START.md": "Split the work.", "A.md": "a", "B.md": "b",
                                           "C1.md": "c1", "C2.md": "c2"})
    for reply, problem in (('<fork next="C1">A</fork><fork next="C2">B</fork>', "forks with different `next` values"),
                           ("<fork>A</fork><fork>B</fork>", "forks with no `next` and no <goto>"),
                           # Raymond's multi-fork path too (two forks, or a fork and a goto), then paused
                           ('<fork next="C1">A</fork><fork next="C1">B</fork><result>x</result>',
                            "3 transition tags"),
                           ('<fork>A</fork><goto>C1</goto><result>x</result>', "3 transition tags")):
        result, _ = run_folder(folder, backend=ScriptedBackend(reply))
        assert result.status == "stopped" and f"START.md: the reply holds {problem}" in result.error, result.error
        assert result.outcome.state.agent("main").status == "paused"


def test_item77_one_fork_beside_a_non_goto_tag_is_one_transition_too_many(tmp_path):
    """No multi-fork (Raymond's markdown.go: two forks, or a fork and a goto): checked as one transition, so
    fatal without a policy and re-prompted with the reminder with one, never a paused agent."""
    reply = '<fork next="NEXT">W</fork><result>x</result>'
    folder = write_states(tmp_path / "s", {"START.md": "Split the work.", "W.md": "w", "NEXT.md": "n"})
    result, _ = run_folder(folder, backend=ScriptedBackend(reply))
    assert (result.status, result.exit_code) == ("failed", 1), result.error  # not "stopped" with main paused
    assert result.error.startswith("main: START.md: the reply holds 2 transition tags (<fork>, <result>); a state "
                                   "must emit exactly one"), result.error
    policy = "---\nallowed_transitions:\n  - {tag: result}\n---\n"
    folder = write_states(tmp_path / "p", {"START.md": policy + "Split the work.", "W.md": "w", "NEXT.md": "n"})
    backend = ScriptedBackend(reply, "<result>fine</result>")
    result, _ = run_folder(folder, backend=backend)
    assert (result.exit_code, result.result) == (0, "fine"), result.error
    assert "REMINDER: Emit exactly one of these tags" in backend.requests[1].prompt


def test_forks_that_ended_before_the_run_parked_are_in_its_result_after_resume(tmp_path):
    write_states(tmp_path / "flow", {
        "START.sh": "echo '<fork next=\"ASK\" item=\"a\">WORK</fork><fork item=\"b\">WORK</fork>'\n",
        "WORK.sh": '[ "$item" = b ] && sleep 0.3\necho "<result>done $item</result>"\n',
        "ASK.sh": "sleep 0.6; echo '<ask next=\"END\">Ship it?</ask>'\n",
        "END.sh": 'echo "<result>answered $RAYMOND_INPUT</result>"\n',
    })
    parked = wfexec("states", "flow", cwd=tmp_path)
    assert parked.returncode == 3, parked.stderr
    resumed = wfexec("resume", only_run(tmp_path)["id"], "--answer", "main=yes", "--format", "json", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    computed = json.loads(resumed.stdout)["state"]["computed"]
    assert computed["result"] == "answered yes"
    assert [f["result"] for f in computed["result_forks"]] == ["done a", "done b"]  # in the order they ended
