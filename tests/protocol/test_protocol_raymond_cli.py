"""`wfexec states` as a Raymond user runs `ray` (issue 30): `.raymond/config.toml` under the flags and above the
defaults, `ray`'s run flags (`--effort`, `--timeout 0`, `--workflow-id`, `--continue-session`, `--no-wait`,
`--on-ask`), checked against the fake `claude` (protocol_support.FAKE_CLAUDE) and real scripts."""

from __future__ import annotations

import json

import pytest
from conftest import wfexec_in_process as cli
from protocol_support import argv_value, fake_claude, write_states  # noqa: F401


@pytest.fixture
def project(tmp_path):
    """A project root (it has .git, where the search for .raymond stops) with a states folder `flow`."""
    (tmp_path / ".git").mkdir()
    return tmp_path


def write_config(root, text: str):
    (root / ".raymond").mkdir(exist_ok=True)
    (root / ".raymond" / "config.toml").write_text(text)
    return root / ".raymond" / "config.toml"


def only_run_id(cwd) -> str:
    [record] = json.loads(cli("runs", "--format", "json", cwd=cwd).stdout)
    return record["id"]


# -- config.toml: precedence ---------------------------------------------------------------------------------

def test_config_model_and_effort_sit_under_the_flags_and_the_frontmatter(project, fake_claude):
    set_replies, calls = fake_claude
    write_states(project / "flow", {"START.md": "Plan.", "MORE.md": "---\nmodel: haiku\n---\nMore."})
    set_replies([{"result": "<goto>MORE</goto>"}, {"result": "<result>a</result>"}] * 3)
    deeper = project / "sub" / "deeper"
    deeper.mkdir(parents=True)
    # No config: Claude's default model, no effort.
    ran = cli("states", project / "flow", "--backend", "claude", "--no-debug", cwd=deeper)
    assert (ran.returncode, ran.stdout) == (0, "a\n"), ran.stderr
    first, more = (c["argv"] for c in calls()[:2])
    assert (argv_value(first, "--model"), argv_value(first, "--effort")) == ("sonnet", None)
    # The config file, found upwards from the working directory, gives the default.
    write_config(project, '[raymond]\nmodel = "opus"\neffort = "low"\n')
    ran = cli("states", project / "flow", "--backend", "claude", "--no-debug", cwd=deeper)
    assert ran.returncode == 0, ran.stderr
    first, more = (c["argv"] for c in calls()[2:4])
    assert (argv_value(first, "--model"), argv_value(first, "--effort")) == ("opus", "low")
    assert (argv_value(more, "--model"), argv_value(more, "--effort")) == ("haiku", "low")  # frontmatter first
    # The flags beat the file.
    ran = cli("states", project / "flow", "--backend", "claude", "--no-debug", "--model", "sonnet", "--effort", "high",
              cwd=deeper)
    assert ran.returncode == 0, ran.stderr
    first, more = (c["argv"] for c in calls()[4:6])
    assert (argv_value(first, "--model"), argv_value(first, "--effort")) == ("sonnet", "high")
    assert (argv_value(more, "--model"), argv_value(more, "--effort")) == ("haiku", "high")


def test_the_search_for_raymond_stops_at_the_project_root(tmp_path, fake_claude):
    set_replies, calls = fake_claude
    write_config(tmp_path, '[raymond]\nmodel = "opus"\n')  # above the project: not its config
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    write_states(project / "flow", {"START.md": "Go."})
    set_replies([{"result": "<result>ok</result>"}])
    ran = cli("states", "flow", "--backend", "claude", "--no-debug", cwd=project)
    assert ran.returncode == 0, ran.stderr
    assert argv_value(calls()[0]["argv"], "--model") == "sonnet"


def test_config_timeout_and_the_timeout_flag_and_what_the_error_names(project):
    write_states(project / "flow", {"START.sh": "sleep 1.5\necho '<result>slept</result>'\n"})
    config = write_config(project, "[raymond]\ntimeout = 0.3\n")
    ran = cli("states", "flow", "--no-debug", cwd=project)
    assert ran.returncode == 1
    assert f"produced no output for 0.3 s and was stopped (timeout from config file {config})" in ran.stderr
    ran = cli("states", "flow", "--no-debug", "--timeout", "0.2", cwd=project)
    assert "(timeout from the --timeout flag)" in ran.stderr
    ran = cli("states", "flow", "--no-debug", "--timeout", "0", cwd=project)  # `ray`'s 0: no timeout
    assert (ran.returncode, ran.stdout) == (0, "slept\n"), ran.stderr
    refused = cli("states", "flow", "--timeout", "-1", cwd=project)
    assert refused.returncode == 2


def test_config_budget_and_permissions(project, fake_claude):
    set_replies, calls = fake_claude
    write_states(project / "flow", {"START.md": "One.", "TWO.md": "Two."})
    set_replies([{"result": "<goto>TWO</goto>", "cost": 0.02}, {"result": "<result>b</result>", "cost": 0.02}] * 2)
    write_config(project, "[raymond]\nbudget = 0.01\ndangerously_skip_permissions = false\n")
    stopped = cli("states", "flow", "--backend", "claude", "--no-debug", cwd=project)
    assert stopped.returncode == 4 and "cost budget exceeded before the LLM call for TWO.md" in stopped.stderr
    first = calls()[0]["argv"]
    assert argv_value(first, "--permission-mode") == "acceptEdits" and "--dangerously-skip-permissions" not in first
    ran = cli("states", "flow", "--backend", "claude", "--no-debug", "--budget-usd", "1", cwd=project)
    assert (ran.returncode, ran.stdout) == (0, "b\n"), ran.stderr
    write_config(project, "[raymond]\nbudget = 0\n")  # ray's 0: no budget
    set_replies([{"result": "<goto>TWO</goto>", "cost": 0.02}, {"result": "<result>c</result>", "cost": 0.02}])
    (project / "claude-replies.json.count").unlink()
    ran = cli("states", "flow", "--backend", "claude", "--no-debug", cwd=project)
    assert (ran.returncode, ran.stdout) == (0, "c\n"), ran.stderr


def test_a_key_wfexec_does_not_use_is_a_warning_naming_it(project):
    write_states(project / "flow", {"START.sh": "echo '<result>ok</result>'\n"})
    config = write_config(project, '[raymond]\nname = "proj"\nverbose = true\ntask_folder_pattern = "t/{{agent_id}}"\n'
                                   'colour = "red"\n[raymond.serve]\nport = 8080\n')
    ran = cli("states", "flow", "--no-debug", cwd=project)
    assert (ran.returncode, ran.stdout) == (0, "ok\n"), ran.stderr
    warnings = [line for line in ran.stderr.splitlines() if line.startswith("warning:")]
    assert [w.split(": ", 2)[2].split(" ")[0] for w in warnings] == \
        ["`name`", "`verbose`", "`task_folder_pattern`", "`colour`", "[raymond.serve]"], warnings
    assert all(str(config) in w for w in warnings)


@pytest.mark.parametrize("text,message", [
    ('[raymond]\nmodel = "gpt-4"\n', ":2:1: error: `model` must be one of opus, sonnet, haiku (lower case), not 'gpt-4'"),
    ('[raymond]\n\neffort = "HIGH"\n', ":3:1: error: `effort` must be one of low, medium, high"),
    ("[raymond]\ntimeout = -5\n", ":2:1: error: `timeout` must be 0 or more (0 = no timeout), not -5"),
    ('[raymond]\nbudget = "lots"\n', ":2:1: error: `budget` must be a number, not 'lots'"),
    ("[raymond]\ntimeout = nan\n", ":2:1: error: `timeout` must be a finite number, not nan"),
    ("[raymond]\nbudget = inf\n", ":2:1: error: `budget` must be a finite number, not inf"),
    ('[raymond]\nno_wait = "yes"\n', ":2:1: error: `no_wait` must be true or false, not 'yes'"),
    ("[raymond]\nmodel = \n", ":2:9: error: not valid TOML: Invalid value — fix the line"),
    ('raymond = "x"\n', ": error: `raymond` must be a table ([raymond]), not a value"),
])
def test_a_bad_config_value_is_an_error_at_its_line(project, text, message):
    write_states(project / "flow", {"START.sh": "echo '<result>ok</result>'\n"})
    config = write_config(project, text)
    ran = cli("states", "flow", cwd=project)
    assert ran.returncode == 2 and ran.stdout == ""
    assert f"{config}{message}" in ran.stderr, ran.stderr
    assert not (project / ".wfexec" / "runs.db").exists()  # refused before any run


# -- the run flags ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("flags,said", [
    (["--timeout", "nan"], "error: Invalid value for '--timeout': Input should be a finite number, not nan"),
    (["--timeout", "1e400"], "error: Invalid value for '--timeout': Input should be a finite number, not inf"),
    (["--budget-usd", "nan"], "error: Invalid value for '--budget-usd': Input should be a finite number, not nan"),
    (["--start", "NOPE"], "error: --start NOPE: state 'NOPE' not found in folder flow (looked for NOPE.md, NOPE.sh)"),
])
@pytest.mark.parametrize("ephemeral", [[], ["--ephemeral"]], ids=["recorded", "ephemeral"])
def test_a_flag_s_bad_value_is_said_of_the_flag_not_of_the_workflow_written_for_the_folder(project, flags, said,
                                                                                             ephemeral):
    """These once named the one-node workflow `wfexec states` writes (with --ephemeral, a deleted temporary file):
    `/tmp/wfexec-states-…/s-….yaml:11:18: error: `timeout` in states node 'agents' must be a number`."""
    from conftest import wfexec_cli

    write_states(project / "flow", {"START.sh": "echo '<result>ok</result>'\n"})
    ran = wfexec_cli("states", "flow", *flags, *ephemeral, cwd=project)  # the launcher's parsing, as `wfexec` is run
    assert (ran.returncode, ran.stdout, ran.stderr.strip()) == (2, "", said)
    assert not (project / ".wfexec").exists()  # refused before any workflow was written or run recorded


def test_workflow_id_names_the_workflow_and_cannot_be_used_twice(project):
    write_states(project / "flow", {"START.sh": 'echo "<result>$RAYMOND_WORKFLOW_ID</result>"\n'})
    ran = cli("states", "flow", "--workflow-id", "release-7", "--no-debug", cwd=project)
    assert (ran.returncode, ran.stdout) == (0, "release-7\n"), ran.stderr
    again = cli("states", "flow", "--workflow-id", "release-7", cwd=project)
    assert again.returncode == 2 and "--workflow-id release-7 was used already" in again.stderr
    bad = cli("states", "flow", "--workflow-id", "has space", cwd=project)
    assert bad.returncode == 2 and "use letters, digits, '-' and '_'" in bad.stderr


def test_continue_session_branches_the_latest_session_on_main_s_first_turn_only(project, fake_claude):
    set_replies, calls = fake_claude
    write_states(project / "flow", {"START.md": "Go on from where we were.", "NEXT.md": "Then."})
    set_replies([{"result": "<goto>NEXT</goto>"}, {"result": "<result>continued</result>"}])
    ran = cli("states", "flow", "--backend", "claude", "--continue-session", "--no-debug", cwd=project)
    assert (ran.returncode, ran.stdout) == (0, "continued\n"), ran.stderr
    first, second = (c["argv"] for c in calls())
    assert first[first.index("-c"):first.index("-c") + 2] == ["-c", "--fork-session"] and "--resume" not in first
    assert argv_value(second, "--resume") == "sess-1" and "-c" not in second


def test_effort_flag_reaches_claude(project, fake_claude):
    set_replies, calls = fake_claude
    write_states(project / "flow", {"START.md": "Go."})
    set_replies([{"result": "<result>ok</result>"}])
    ran = cli("states", "flow", "--backend", "claude", "--effort", "medium", "--no-debug", cwd=project)
    assert ran.returncode == 0, ran.stderr
    assert argv_value(calls()[0]["argv"], "--effort") == "medium"


# -- --on-ask=reject and --no-wait ---------------------------------------------------------------------------

ASKS = "---\nallowed_transitions:\n  - {tag: ask, next: DONE}\n  - {tag: goto, target: DONE}\n---\nApprove?\n"


def test_on_ask_reject_refuses_a_workflow_that_may_ask_before_any_llm_call(project, fake_claude):
    set_replies, calls = fake_claude
    set_replies([{"result": "<result>never</result>"}])
    write_states(project / "flow", {"START.md": ASKS, "DONE.md": "Done."})
    refused = cli("states", "flow", "--backend", "claude", "--on-ask", "reject", cwd=project)
    assert refused.returncode == 2 and calls() == []
    assert "may ask a person (START.md allows <ask>), and --on-ask=reject refuses such a workflow" in refused.stderr
    assert not (project / ".wfexec" / "runs.db").exists()
    # A Raymond .yaml scope is scanned the same way.
    (project / "flow.yaml").write_text("states:\n  START:\n    prompt: Approve?\n    allowed_transitions:\n"
                                       "      - {tag: ask, next: START}\n")
    refused = cli("states", "flow.yaml", "--backend", "claude", "--on-ask", "reject", cwd=project)
    assert refused.returncode == 2 and "START.md allows <ask>" in refused.stderr and calls() == []


def test_on_ask_reject_follows_the_manifest(project):
    scripts = {"START.sh": "echo '<result>ran</result>'\n"}
    write_states(project / "told", {**scripts, "workflow.yaml": "id: told\nrequires_human_input: true\n"})
    refused = cli("states", "told", "--on-ask", "reject", cwd=project)
    assert refused.returncode == 2 and "its manifest says requires_human_input: true" in refused.stderr
    # `false` is believed, whatever the states say; `auto` follows the workflows the states call.
    write_states(project / "trusted", {"START.sh": "echo '<result>ran</result>'\n", "ASK.md": ASKS, "DONE.md": "x",
                                       "workflow.yaml": "id: trusted\nrequires_human_input: false\n"})
    ran = cli("states", "trusted", "--on-ask", "reject", "--no-debug", cwd=project)
    assert (ran.returncode, ran.stdout) == (0, "ran\n"), ran.stderr
    write_states(project / "child", {"START.md": ASKS, "DONE.md": "Done."})
    write_states(project / "caller", {
        "workflow.yaml": "id: caller\n", "AFTER.sh": "echo '<result>x</result>'\n",
        "START.md": "---\nallowed_transitions:\n  - {tag: call-workflow, target: ../child/, return: AFTER}\n---\nGo.\n"})
    refused = cli("states", "caller", "--on-ask", "reject", cwd=project)
    assert refused.returncode == 2 and "../child/, which it calls: START.md allows <ask>" in refused.stderr


def test_an_ask_at_run_time_under_reject_pauses_its_agent(project):
    write_states(project / "flow", {"START.sh": "echo '<ask next=\"DONE\">Ship it?</ask>'\n",
                                    "DONE.sh": "echo '<result>shipped</result>'\n"})
    stopped = cli("states", "flow", "--on-ask", "reject", "--no-debug", cwd=project)
    assert stopped.returncode == 4
    assert "main paused at START.sh: it emitted <ask> ('Ship it?'), and --on-ask=reject is in effect" in stopped.stderr
    assert f"wfexec resume {only_run_id(project)}" in stopped.stderr
    parked = cli("states", "flow", "--no-debug", "--non-interactive", cwd=project)  # the default: pause
    assert parked.returncode == 3


def test_no_wait_stops_at_a_usage_limit_with_the_resume_command(project, fake_claude):
    set_replies, calls = fake_claude
    limit = {"result": "You've hit your limit · resets 3pm (America/Chicago)", "is_error": True}
    set_replies([limit, {"result": "<result>after the reset</result>"}])
    write_states(project / "flow", {"START.md": "Go."})
    write_config(project, "[raymond]\nno_wait = true\n")  # as --no-wait
    stopped = cli("states", "flow", "--backend", "claude", "--no-debug", cwd=project)
    assert stopped.returncode == 4 and len(calls()) == 1
    run_id = only_run_id(project)
    assert "claude hit a usage limit" in stopped.stderr and f"continue it with: wfexec resume {run_id}" in \
        stopped.stderr
    resumed = cli("resume", run_id, "--backend", "claude", cwd=project)
    assert (resumed.returncode, resumed.stdout) == (0, "after the reset\n"), resumed.stderr


def test_the_permission_flag_beats_the_config_file(project, fake_claude):
    set_replies, calls = fake_claude
    write_states(project / "flow", {"START.md": "Go."})
    set_replies([{"result": "<result>ok</result>"}] * 3)
    write_config(project, "[raymond]\ndangerously_skip_permissions = false\n")
    assert cli("states", "flow", "--backend", "claude", "--dangerously-skip-permissions", "--no-debug",
               cwd=project).returncode == 0
    write_config(project, "[raymond]\n")
    assert cli("states", "flow", "--backend", "claude", "--no-dangerously-skip-permissions", "--no-debug",
               cwd=project).returncode == 0
    assert cli("states", "flow", "--backend", "claude:permission_mode=plan", "--no-dangerously-skip-permissions",
               "--no-debug", cwd=project).returncode == 0  # the spec's own mode is kept
    skipping, asking, own = (c["argv"] for c in calls())
    assert "--dangerously-skip-permissions" in skipping and "--permission-mode" not in skipping
    assert argv_value(asking, "--permission-mode") == "acceptEdits"
    assert argv_value(own, "--permission-mode") == "plan"


@pytest.mark.parametrize("command", ["states", "run"])
def test_the_workflow_a_states_folder_runs_as_is_written_beside_the_store_never_into_the_user_s_folders(
        project, command):
    """A store the user keeps in their own folder (`./runs.db`) must not have wfexec write a `states/` beside it:
    that may be the user's folder of states, as here."""
    write_states(project / "states", {"START.sh": "echo '<result>done</result>'\n"})
    done = cli(command, "states", "--store", "runs.db", cwd=project)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (project / "states").iterdir()) == ["START.sh"]
    [written] = (project / "runs.db-states").iterdir()
    assert written.suffix == ".yaml" and "Written by wfexec" in written.read_text()
    [record] = json.loads(cli("runs", "--format", "json", "--store", "runs.db", cwd=project).stdout)
    assert record["status"] == "completed"


@pytest.mark.parametrize("store", [".", "/"])
def test_a_folder_given_as_the_store_is_refused_before_anything_is_written(project, store):
    write_states(project / "flow", {"START.sh": "echo '<result>done</result>'\n"})
    before = sorted(p.name for p in project.parent.iterdir())
    refused = cli("states", "flow", "--store", store, cwd=project)
    assert refused.returncode == 2 and f"the run store {store} is a folder, not a file" in refused.stderr
    assert sorted(p.name for p in project.iterdir()) == [".git", "flow"]
    assert sorted(p.name for p in project.parent.iterdir()) == before
