"""The run log types (init_log in both shapes, the appenders, finalize_log, write_log, retention, the CI summary,
session snapshots) and the log_* preconditions, run for real through workflows."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
import yaml

from conftest import one_action

SEED_INIT = {"type": "init_log", "store_as": "computed.log",
             "metadata": {"workflow_version": "1.0.0", "corpus_name": "polars", "corpus_path": "/corpus"}}
BL_INIT = {"type": "init_log", "workflow_name": "hiivmind-corpus-refresh", "workflow_version": "1.0.0",
           "skill_name": "refresh", "plugin_name": "hiivmind-corpus"}
FLAGS = {"flags": {"log_format": "yaml", "ci_output": "none", "auto_approve": False}}


def run_actions(run_yaml, *actions, state=None, **kwargs):
    result, out = run_yaml(one_action(*actions, initial_state=state or FLAGS), **kwargs)
    assert result.ending == "done", result.message
    return result.state, out


def test_seed_init_log_builds_the_seed_structure(run_yaml):
    state, _ = run_actions(run_yaml, SEED_INIT)
    log = state["computed"]["log"]
    assert log["execution"]["outcome"] == "in_progress" and log["execution"]["start_time"].endswith("Z")
    assert log["metadata"] == SEED_INIT["metadata"]
    assert log["parameters"] == {"auto_approve": False, "status_only": False, "log_format": "yaml", "ci_output": "none"}
    assert log["sources"] == {"checked": 0, "updated": 0, "details": []}
    assert state["flags"]["log_initialized"] is True


def test_blueprint_init_log_keeps_the_flags_and_earlier_entries(run_yaml, tmp_path, monkeypatch):
    monkeypatch.delenv("BLUEPRINT_SESSION_ID", raising=False)
    state, _ = run_actions(run_yaml, {"type": "log_event", "event_type": "early", "data": 1}, BL_INIT)
    log = state["log"]
    assert log["metadata"]["skill_name"] == "refresh" and log["metadata"]["workflow_version"] == "1.0.0"
    assert log["metadata"]["execution_path"] == str(tmp_path)
    assert log["parameters"] == FLAGS["flags"]
    assert [e["event_type"] for e in log["events"]] == ["early"]
    assert log["execution"]["outcome"] is None
    assert state["computed"]["expected_log_path"].startswith(".logs/refresh-")
    assert not (tmp_path / ".logs").exists()  # no session id: state only


def test_the_session_file_counts_invocations_only_with_a_session_id(run_yaml, tmp_path, monkeypatch):
    monkeypatch.setenv("BLUEPRINT_SESSION_ID", "s-1")
    first, _ = run_actions(run_yaml, BL_INIT)
    second, _ = run_actions(run_yaml, BL_INIT)
    assert first["log"]["metadata"]["session"]["id"] == "s-1"
    assert second["log"]["metadata"]["session"]["invocation_index"] == 2
    kept = yaml.safe_load((tmp_path / ".logs" / ".session-state.yaml").read_text())["current_session"]
    assert kept["id"] == "s-1" and kept["invocation_count"] == 2
    assert [i["skill"] for i in kept["invocations"]] == ["refresh", "refresh"]
    monkeypatch.setenv("BLUEPRINT_SESSION_ID", "s-2")  # a new session starts the count again
    third, _ = run_actions(run_yaml, BL_INIT)
    assert third["log"]["metadata"]["session"]["invocation_index"] == 1


def test_init_log_without_a_shape_fails(run_yaml):
    result, _ = run_yaml(one_action({"type": "init_log"}))
    assert result.ending == "failed"
    assert "init_log needs `store_as`" in result.message


def test_without_init_log_the_appenders_add_to_the_log_list(run_yaml):
    """The 856e42a refresh logs with no init_log at all."""
    state, _ = run_actions(run_yaml,
                           {"type": "log_node", "node": "prompt_command_mode", "outcome": "response:status"},
                           {"type": "log_warning", "message": "Could not fully update config.yaml"},
                           {"type": "log_error", "message": "Failed to clone repository", "details": {"source_id": "x"}},
                           {"type": "log_source_status", "source_id": "x", "source_type": "git", "status": "stale"},
                           {"type": "log_event", "event_type": "index_update", "data": {"files": ["index.md"]}})
    kinds = [entry.get("kind", entry.get("event_type")) for entry in state["log"]]
    assert kinds == ["node", "warning", "error", "source_status", "index_update"]
    assert state["log"][0]["outcome"] == "response:status"
    assert state["log"][2]["details"] == {"source_id": "x"} and state["log"][2]["node"] == "act"


def test_the_seed_log_gathers_sources_changes_and_index_updates(run_yaml):
    state, _ = run_actions(
        run_yaml, SEED_INIT,
        {"type": "log_node", "node": "read_config", "outcome": "success"},
        {"type": "log_source_status", "source_id": "polars", "source_type": "git", "status": "stale",
         "indexed_sha": "aaa", "upstream_sha": "bbb"},
        {"type": "log_source_status", "source_id": "blog", "source_type": "web", "status": "cache_check"},
        {"type": "set_state", "field": "computed.new_sha", "value": "bbb"},
        {"type": "log_source_changes", "source_id": "polars", "changes": {"added": ["a.md"], "modified": ["b.md"]}},
        {"type": "log_index_update", "files": ["data/index.md"], "entries_added": 3, "entries_removed": None,
         "keywords_preserved": True},
        {"type": "log_warning", "message": "careful"},
        {"type": "log_error", "message": "Failed to fetch", "details": {"source_id": "blog"}})
    log = state["computed"]["log"]
    assert log["node_history"][0]["node"] == "read_config" and log["node_history"][0]["details"] == {}
    assert log["sources"]["checked"] == 2 and log["sources"]["updated"] == 1
    polars, blog = log["sources"]["details"]
    assert polars == {"source_id": "polars", "type": "git", "status": "stale", "indexed_sha": "aaa",
                      "upstream_sha": "bbb", "action": "updated", "new_sha": "bbb"}
    assert blog == {"source_id": "blog", "type": "web", "status": "cache_check", "action": "pending"}
    assert log["changes"] == [{"source_id": "polars", "added_files": ["a.md"], "modified_files": ["b.md"],
                               "deleted_files": []}]
    assert log["index_updates"] == {"files_modified": ["data/index.md"], "entries_added": 3, "entries_removed": 0,
                                    "keywords_preserved": True}
    assert log["warnings"] == ["careful"]
    assert log["errors"][0]["message"] == "Failed to fetch" and log["errors"][0]["details"] == {"source_id": "blog"}
    assert "log" not in state  # nothing fell back to the list


def test_the_blueprint_log_takes_events_and_entries_by_level(run_yaml):
    state, _ = run_actions(
        run_yaml, BL_INIT,
        {"type": "log_event", "event_type": "source_status", "data": {"source_id": "x", "status": "current"}},
        {"type": "log_entry", "level": "error", "message": "boom", "error_type": "network"},
        {"type": "log_entry", "level": "warning", "message": "hmm"},
        {"type": "log_source_status", "source_id": "y", "source_type": "local", "status": "check_manually"},
        {"type": "log_error", "message": "Failed to update index", "details": {"file": "index.md"}},
        {"type": "log_warning", "message": "slow", "context": {"seconds": 9}})
    log = state["log"]
    assert [e["type"] for e in log["events"]] == ["source_status", "source_status"]
    assert log["events"][1]["data"] == {"source_id": "y", "source_type": "local", "status": "check_manually"}
    assert [e["message"] for e in log["errors"]] == ["boom", "Failed to update index"]
    assert log["errors"][1]["context"] == {"file": "index.md"} and log["errors"][1]["error_type"] == "unknown"
    assert log["errors"][1]["recoverable"] is False and log["errors"][1]["node"] == "act"
    assert log["warnings"][1] == {"message": "slow", "timestamp": log["warnings"][1]["timestamp"], "node": "act",
                                  "context": {"seconds": 9}}


def test_the_log_level_decides_what_is_kept(run_yaml):
    state, _ = run_actions(
        run_yaml, BL_INIT,
        {"type": "log_node", "node": "a", "outcome": "success"},
        {"type": "log_event", "event_type": "detail", "level": "debug"},
        {"type": "log_warning", "message": "kept at warn"},
        {"type": "log_error", "message": "kept at warn too"},
        state={"logging": {"level": "warn"}, "flags": {}})
    log = state["log"]
    assert log["node_history"] == [] and log["events"] == []
    assert [w["message"] for w in log["warnings"]] == ["kept at warn"] and len(log["errors"]) == 1
    state, _ = run_actions(run_yaml, BL_INIT, {"type": "log_event", "event_type": "detail", "level": "debug"},
                           state={"output": {"level": "verbose"}, "flags": {}})
    assert [e["type"] for e in state["log"]["events"]] == ["detail"]


def test_finalize_log_closes_the_log(run_yaml):
    state, _ = run_actions(run_yaml, SEED_INIT, {"type": "log_node", "node": "a", "outcome": "success"},
                           {"type": "log_warning", "message": "w"},
                           {"type": "finalize_log", "outcome": "success", "ending_node": "success"},
                           state={**FLAGS, "command_mode": "update"})
    execution = state["computed"]["log"]["execution"]
    assert execution["outcome"] == "success" and execution["ending_node"] == "success"
    assert execution["mode"] == "update"
    assert isinstance(execution["duration_seconds"], float) and execution["duration_seconds"] >= 0
    assert execution["end_time"] >= execution["start_time"]
    assert state["computed"]["log"]["summary"] == "success at success: 1 nodes, 1 warnings, 0 errors"
    assert state["flags"]["log_finalized"] is True


@pytest.mark.parametrize("actions, message", [
    ([{"type": "finalize_log", "outcome": "success"}], "no run log: init_log has not run"),
    ([{"type": "write_log"}], "no run log: init_log has not run"),
    ([{"type": "output_ci_summary", "format": "json"}], "no run log: init_log has not run"),
    ([BL_INIT, {"type": "finalize_log", "outcome": "${computed.how}"}], "`outcome` is 'great'"),
])
def test_log_types_that_need_a_log_fail_clearly(run_yaml, actions, message):
    result, _ = run_yaml(one_action(*actions, initial_state={"computed": {"how": "great"}}))
    assert result.ending == "failed"
    assert message in result.message


def test_write_log_writes_each_format_to_a_stable_file(run_yaml, tmp_path):
    actions = [SEED_INIT, {"type": "log_source_status", "source_id": "polars", "source_type": "git",
                           "status": "current"},
               {"type": "log_node", "node": "a", "outcome": "success"},
               {"type": "finalize_log", "outcome": "success", "ending_node": "done"}]
    state, _ = run_actions(run_yaml, *actions, {"type": "write_log"}, {"type": "write_log"})
    written = list((tmp_path / "data" / "logs").iterdir())
    assert len(written) == 1 and written[0].name.startswith("refresh-") and written[0].suffix == ".yaml"
    assert state["computed"]["log_file_path"] == f"data/logs/{written[0].name}" == state["computed"]["log_path"]
    text = written[0].read_text()
    assert text.startswith("# Refresh Log\n# Generated: ")
    assert yaml.safe_load(text)["sources"]["details"][0]["source_id"] == "polars"

    state, _ = run_actions(run_yaml, *actions,
                           {"type": "write_log", "format": "json", "location": "logs/", "filename": "refresh-x.json",
                            "include_node_history": False})
    data = json.loads((tmp_path / "logs" / "refresh-x.json").read_text())
    assert "node_history" not in data and data["execution"]["outcome"] == "success"

    run_actions(run_yaml, *actions, {"type": "write_log", "format": "markdown", "path": "out/log.md"})
    markdown = (tmp_path / "out" / "log.md").read_text()
    assert markdown.startswith("# Refresh Log: ")
    for heading in ("## Summary", "## Sources", "### polars (git)", "## Execution Path"):
        assert heading in markdown
    assert "| Outcome | success |" in markdown and "| 1 | a |" in markdown


def test_write_log_of_a_blueprint_log_goes_to_dot_logs(run_yaml, tmp_path, monkeypatch):
    monkeypatch.delenv("BLUEPRINT_SESSION_ID", raising=False)
    state, _ = run_actions(run_yaml, BL_INIT, {"type": "write_log"})
    assert state["computed"]["log_path"] == state["computed"]["expected_log_path"]
    assert (tmp_path / state["computed"]["log_path"]).is_file()


def test_write_log_stays_in_the_working_directory(run_yaml, tmp_path):
    result, _ = run_yaml(one_action(SEED_INIT, {"type": "write_log", "location": "${computed.where}"},
                                    initial_state={"computed": {"where": "../elsewhere"}}))
    assert result.ending == "failed"
    assert "outside the working directory" in result.message


def aged_logs(folder, names_and_days):
    folder.mkdir(parents=True, exist_ok=True)
    for name, days in names_and_days:
        path = folder / name
        path.write_text(name)
        stamp = time.time() - days * 86400
        os.utime(path, (stamp, stamp))


def test_retention_by_count_and_by_age(run_yaml, tmp_path):
    logs = tmp_path / "logs"
    aged_logs(logs, [("refresh-1.yaml", 1), ("refresh-2.json", 2), ("refresh-3.md", 3), ("refresh-4.yaml", 40),
                     ("notes.txt", 90), (".session-state.yaml", 90)])
    state, _ = run_actions(run_yaml, {"type": "apply_log_retention", "strategy": "count", "count": 2,
                                      "location": "logs/"})
    assert state["computed"]["logs_deleted"] == 2
    assert sorted(p.name for p in logs.iterdir()) == [".session-state.yaml", "notes.txt", "refresh-1.yaml",
                                                      "refresh-2.json"]
    aged_logs(logs, [("old.yaml", 31), ("new.yaml", 1)])
    state, _ = run_actions(run_yaml, {"type": "apply_log_retention", "strategy": "days", "days": 30, "path": "logs"})
    assert state["computed"]["logs_deleted"] == 1  # old.yaml; only *.yaml in the blueprint form; dotfiles never
    assert not (logs / "old.yaml").exists() and (logs / "new.yaml").exists() and (logs / ".session-state.yaml").exists()


def test_retention_none_and_missing_limits(run_yaml, tmp_path):
    state, _ = run_actions(run_yaml, {"type": "apply_log_retention", "strategy": "none", "days": None,
                                      "location": "logs/"})
    assert state["computed"]["logs_deleted"] == 0
    result, _ = run_yaml(one_action({"type": "apply_log_retention", "strategy": "count", "count": None}))
    assert result.ending == "failed" and "strategy count needs `count:`" in result.message


def finished_seed_log():
    return [SEED_INIT,
            {"type": "log_source_status", "source_id": "polars", "source_type": "git", "status": "stale"},
            {"type": "set_state", "field": "computed.new_sha", "value": "b"},
            {"type": "log_source_changes", "source_id": "polars", "changes": ["a.md"]},
            {"type": "log_index_update", "files": ["data/index.md"], "entries_added": 2},
            {"type": "log_warning", "message": "it's slow"},
            {"type": "finalize_log", "outcome": "success", "ending_node": "success"},
            {"type": "write_log", "filename": "refresh-a.yaml"}]


def test_ci_summary_for_github_prints_groups_and_annotations(run_yaml, tmp_path):
    _, out = run_actions(run_yaml, *finished_seed_log(),
                         {"type": "output_ci_summary", "format": "github", "output_file": "summary.md"},
                         state={**FLAGS, "command_mode": "update"})
    lines = out.text.splitlines()
    assert lines[0] == "::group::Refresh Summary" and "::endgroup::" in lines
    assert "Sources: 1 checked, 1 updated" in lines and "Mode: update" in lines
    assert "::notice file=data/index.md::Index updated with 2 new entries" in lines
    assert "::warning::it's slow" in lines
    assert "| Outcome | success |" in (tmp_path / "summary.md").read_text()


def test_ci_summary_plain_is_safe_to_eval(run_yaml, tmp_path):
    _, out = run_actions(run_yaml, *finished_seed_log(), {"type": "output_ci_summary", "format": "plain"},
                         state={**FLAGS, "command_mode": "it's $(echo unsafe)"})
    shown = subprocess.run(["bash", "-c", 'eval "$1"; printf "%s|%s|%s" "$REFRESH_MODE" "$REFRESH_SOURCES_UPDATED" '
                            '"$REFRESH_LOG"', "_", out.text], capture_output=True, text=True, check=True).stdout
    assert shown == "it's $(echo unsafe)|1|data/logs/refresh-a.yaml"


def test_ci_summary_json_is_one_line_and_none_prints_nothing(run_yaml):
    _, out = run_actions(run_yaml, *finished_seed_log(), {"type": "output_ci_summary", "format": "json"})
    (line,) = out.text.splitlines()
    assert json.loads(line) == {"outcome": "success", "mode": None, "sources_checked": 1, "sources_updated": 1,
                                "duration_seconds": json.loads(line)["duration_seconds"],
                                "log_file": "data/logs/refresh-a.yaml"}
    _, out = run_actions(run_yaml, {"type": "output_ci_summary", "format": "none"})  # no log needed
    assert out.text == ""


def test_session_snapshots_are_listed_and_optionally_written(run_yaml, tmp_path, monkeypatch):
    monkeypatch.delenv("BLUEPRINT_SESSION_ID", raising=False)
    state, _ = run_actions(run_yaml, BL_INIT, {"type": "log_session_snapshot", "description": "before"},
                           {"type": "log_session_snapshot", "description": "after", "write_intermediate": True})
    first, second = state["log"]["metadata"]["session"]["snapshot_points"]
    assert first["description"] == "before" and first["log_path"] is None and first["node"] == "act"
    assert second["log_path"].startswith(".logs/refresh-") and second["log_path"].endswith("-snapshot-2.yaml")
    assert yaml.safe_load((tmp_path / second["log_path"]).read_text())["metadata"]["skill_name"] == "refresh"


# --------------------------------------------------------------------------- #
# preconditions

def condition_after(run_yaml, actions, condition, state=None):
    doc = json.loads(one_action(*actions, initial_state=state or FLAGS)) if actions else None
    workflow = {"name": "c", "version": 1, "start_node": "act" if actions else "check",
                "initial_state": state or FLAGS,
                "nodes": {"check": {"type": "conditional", "condition": condition,
                                    "branches": {"true": "yes", "false": "no"}}},
                "endings": {"yes": {"type": "success", "message": "yes"}, "no": {"type": "success", "message": "no"}}}
    if doc:
        workflow["nodes"]["act"] = {**doc["nodes"]["act"], "on_success": "check", "on_failure": "no"}
    result, _ = run_yaml(json.dumps(workflow))
    return result.ending == "yes"


@pytest.mark.parametrize("condition", [
    {"type": "log_initialized"}, {"type": "log_state", "aspect": "initialized"}])
def test_log_initialized(run_yaml, condition):
    assert condition_after(run_yaml, [BL_INIT], condition) is True
    assert condition_after(run_yaml, [], condition) is False


@pytest.mark.parametrize("condition", [{"type": "log_finalized"}, {"type": "log_state", "aspect": "finalized"}])
def test_log_finalized(run_yaml, condition):
    done = [SEED_INIT, {"type": "finalize_log", "outcome": "partial", "ending_node": "x"}]
    assert condition_after(run_yaml, done, condition) is True
    assert condition_after(run_yaml, [SEED_INIT], condition) is False


@pytest.mark.parametrize("make", [lambda level: {"type": "log_level_enabled", "level": level},
                                  lambda level: {"type": "log_state", "aspect": "level_enabled",
                                                 "args": {"level": level}}])
def test_log_level_enabled(run_yaml, make):
    assert condition_after(run_yaml, [], make("info")) is True  # default level info
    assert condition_after(run_yaml, [], make("debug")) is False
    assert condition_after(run_yaml, [], make("debug"), state={"logging": {"level": "trace"}}) is True
    assert condition_after(run_yaml, [], make("warn"), state={"output": {"level": "quiet"}}) is False
