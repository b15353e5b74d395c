"""The wfexec-hiivmind-compat plugin (plugins/wfexec-hiivmind-compat): the types real hiivmind-corpus workflows
use and no catalogue defines, installed through its entry point and run on real files, repos and programs."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

import wfexec
from conftest import CORPUS_CONFIG as CONFIG, FakeBackend, comments, one_action

COMPAT_TYPES = {"file_exists_check", "any_file_exists_check", "directory_exists_check", "glob_check", "glob_count",
                "glob_files", "bash_check", "bash_exec", "spawn_agents_parallel", "update_config_index_metadata",
                "update_source_metadata", "update_marketplace_json", "append_to_file", "write_config", "emit_text"}


@pytest.fixture(autouse=True, scope="module")
def plugin_installed():
    from wfexec.types.registry import consequences

    missing = COMPAT_TYPES - set(consequences().names())
    if missing:
        pytest.fail("the wfexec-hiivmind-compat plugin is not installed (missing: " + ", ".join(sorted(missing)) +
                    "): run `pip install -e plugins/wfexec-hiivmind-compat`, as the README's test command does")


def run_actions(run_yaml, *actions, state=None, **kwargs):
    result, out = run_yaml(one_action(*actions, initial_state=state), **kwargs)
    assert result.ending == "done", result.message
    return result.state, out


def git_init(folder):
    subprocess.run(["git", "init", "-q", str(folder)], check=True)


# -- the plugin as a package ------------------------------------------------------------

def test_types_name_the_package_they_come_from(cli, tmp_path):
    listed = json.loads(cli("types", "--format", "json", cwd=tmp_path).stdout)
    packages = {t["name"]: t["package"] for t in listed}
    assert {packages[name] for name in COMPAT_TYPES} == {"wfexec-hiivmind-compat"}
    assert packages["add_source"] == packages["log_node"] == packages["read_file"] == "wfexec"
    table = cli("types", "--kind", "consequence", cwd=tmp_path).stdout
    plugin = table.split("  types (wfexec-hiivmind-compat):\n", 1)[1]  # listed by package and domain
    assert plugin.startswith("    any_file_exists_check(paths*, set_flag, store_as) [files]\n")
    assert "    glob_files(pattern*, store_as*) [files]\n" in plugin
    assert "  corpus (wfexec):\n" in table and "    read_config(store_as*, path) [files]\n" in table
    assert table.index("  corpus (wfexec):") < table.index("  types (wfexec-hiivmind-compat):")


def test_the_published_schema_leaves_plugins_out_unless_asked(cli, tmp_path):
    published = json.loads(cli("schema", cwd=tmp_path).stdout)
    assert "consequence.glob_files" not in published["$defs"]
    assert "consequence.add_source" in published["$defs"]
    with_plugins = json.loads(cli("schema", "--plugins", cwd=tmp_path).stdout)
    assert "glob_files" in with_plugins["$defs"]["consequence"]["properties"]["type"]["enum"]


# -- files and globs ----------------------------------------------------------------------

@pytest.fixture
def tree(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "config.yaml").write_text("x: 1\n")
    (tmp_path / "hiivmind-corpus-polars").mkdir()
    (tmp_path / "hiivmind-corpus-notes.txt").write_text("a file, not a corpus folder")
    (tmp_path / ".hidden.md").write_text("dotfile")
    local = tmp_path / "uploads" / "team"
    (local / "deep" / "folder.md").mkdir(parents=True)  # a folder named like a file: not counted
    for name in ("b.md", "a.md", "deep/c.md", "deep/skip.txt"):
        (local / name).write_text(name)
    return tmp_path


def test_existence_checks_set_flags_and_state(run_yaml, tree):
    state, _ = run_actions(
        run_yaml,
        {"type": "file_exists_check", "path": "data/config.yaml", "set_flag": "in_corpus_dir"},
        {"type": "file_exists_check", "path": ".claude-plugin/marketplace.json", "set_flag": "in_marketplace"},
        {"type": "file_exists_check", "path": "data", "store_as": "computed.data_is_file"},
        {"type": "any_file_exists_check", "paths": ["package.json", "data/config.yaml"],
         "set_flag": "is_established_project"},
        {"type": "any_file_exists_check", "paths": ["package.json", "go.mod"], "store_as": "computed.any"},
        {"type": "directory_exists_check", "path": "uploads/team", "store_as": "computed.local_exists"},
        {"type": "directory_exists_check", "path": "data/config.yaml", "store_as": "computed.not_a_dir"})
    assert state["flags"]["in_corpus_dir"] is True and state["flags"]["in_marketplace"] is False
    assert state["flags"]["is_established_project"] is True
    assert state["computed"] == {**state["computed"], "data_is_file": False, "any": False, "local_exists": True,
                                 "not_a_dir": False}


def test_a_check_without_a_place_for_its_answer_fails(run_yaml, tree):
    result, _ = run_yaml(one_action({"type": "file_exists_check", "path": "data/config.yaml"}))
    assert result.ending == "failed" and "needs `set_flag` or `store_as`" in result.message


def test_globs_match_like_the_shell(run_yaml, tree):
    state, _ = run_actions(
        run_yaml,
        {"type": "glob_check", "pattern": "hiivmind-corpus-*/", "set_flag": "has_corpus_plugins"},
        {"type": "glob_check", "pattern": "hiivmind-corpus-*.md/", "store_as": "computed.none"},
        {"type": "glob_check", "pattern": "*.md", "store_as": "computed.dotfile_matched"},
        {"type": "glob_count", "pattern": "uploads/team/**/*.md", "store_as": "computed.local_file_count"},
        {"type": "glob_files", "pattern": "uploads/team/**/*.md", "store_as": "computed.local_files"},
        {"type": "glob_files", "pattern": "hiivmind-corpus-*/", "store_as": "computed.corpus_folders"})
    assert state["flags"]["has_corpus_plugins"] is True
    assert state["computed"]["none"] is False and state["computed"]["dotfile_matched"] is False
    assert state["computed"]["local_file_count"] == 3
    assert state["computed"]["local_files"] == ["uploads/team/a.md", "uploads/team/b.md", "uploads/team/deep/c.md"]
    assert state["computed"]["corpus_folders"] == ["hiivmind-corpus-polars"]


def test_append_to_file_adds_the_text_once(run_yaml, tmp_path):
    append = {"type": "append_to_file", "path": ".gitignore",
              "content": "\n# Refresh log (auto-added)\ndata/logs/refresh-1.yaml"}
    run_actions(run_yaml, append, append)
    assert (tmp_path / ".gitignore").read_text() == "\n# Refresh log (auto-added)\ndata/logs/refresh-1.yaml"
    (tmp_path / ".gitignore").write_text("node_modules/\n")
    run_actions(run_yaml, append, {**append, "content": "x\n", "unique": False}, {**append, "content": "x\n",
                                                                                  "unique": False})
    assert (tmp_path / ".gitignore").read_text() == ("node_modules/\n\n# Refresh log (auto-added)\n"
                                                     "data/logs/refresh-1.yaml" + "x\nx\n")


def test_append_to_file_stays_in_the_working_directory(run_yaml, tmp_path):
    result, _ = run_yaml(one_action({"type": "append_to_file", "path": "${computed.p}", "content": "x"},
                                    initial_state={"computed": {"p": "../outside.txt"}}))
    assert result.ending == "failed" and "outside the working directory" in result.message


# -- shell ---------------------------------------------------------------------------------

REPO_ROOT = "git rev-parse --show-toplevel 2>/dev/null || echo '${PWD}'"


def test_emit_text_prints_its_content(cli, tmp_path):
    # hiivmind-blueprint-ops' plan-migrations shows its plan with `emit_text`, which no catalogue defines.
    path = tmp_path / "workflow.yaml"
    path.write_text(one_action({"type": "emit_text", "content": "Plan: ${plan}"}, initial_state={"plan": "2 steps"}))
    assert cli("validate", "--strict", path).returncode == 0
    ran = cli("run", path, "--ephemeral")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.splitlines()[0] == "Plan: 2 steps"


def test_bash_exec_runs_the_real_init_command_in_and_out_of_a_repository(run_yaml, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    state, _ = run_actions(run_yaml, {"type": "bash_exec", "command": REPO_ROOT, "store_as": "computed.repo_root"},
                           {"type": "bash_check", "command": "git rev-parse --show-toplevel 2>/dev/null",
                            "set_flag": "is_git_repo"}, cwd=plain)
    assert state["computed"]["repo_root"] == str(plain)  # $PWD, no trailing newline
    assert state["flags"]["is_git_repo"] is False
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    git_init(repo)
    state, _ = run_actions(run_yaml, {"type": "bash_exec", "command": REPO_ROOT, "store_as": "computed.repo_root"},
                           {"type": "bash_check", "command": "git rev-parse --show-toplevel 2>/dev/null",
                            "set_flag": "is_git_repo"}, cwd=repo / "sub")
    assert state["computed"]["repo_root"] == str(repo.resolve())
    assert state["flags"]["is_git_repo"] is True


def test_bash_values_from_state_are_data(run_yaml, tmp_path):
    evil = "'; touch pwned; echo '"
    state, _ = run_actions(run_yaml, {"type": "bash_exec", "command": "echo '${computed.name}' && echo ${computed.name}",
                                      "store_as": "computed.out"},
                           {"type": "bash_check", "command": "test -n \"${computed.name}\"", "store_as": "computed.ok"},
                           state={"computed": {"name": evil}})
    assert state["computed"]["out"] == f"{evil}\n{evil}"
    assert state["computed"]["ok"] is True and not (tmp_path / "pwned").exists()


def test_bash_exec_failure_and_allow_failure(run_yaml):
    result, _ = run_yaml(one_action({"type": "bash_exec", "command": "echo oops >&2; exit 2"}))
    assert result.ending == "failed" and "exited with code 2:\noops" in result.message
    state, _ = run_actions(run_yaml, {"type": "bash_exec", "command": "echo partial; exit 2", "allow_failure": True,
                                      "store_as": "computed.out"})
    assert state["computed"]["out"] == "partial"


def test_bash_check_that_times_out_is_false(run_yaml):
    state, _ = run_actions(run_yaml, {"type": "bash_check", "command": "sleep 5", "timeout": 0.3,
                                      "set_flag": "answered"})
    assert state["flags"]["answered"] is False


# -- sub-agents -------------------------------------------------------------------------------

SPAWN = {"type": "spawn_agents_parallel", "agent_type": "source-scanner", "foreach": "sources",
         "prompt_template": "Scan source '${item.id}' (type: ${item.type}), number ${index}.",
         "collect_as": "computed.agent_results"}


def test_spawn_agents_parallel_asks_once_per_item_in_order(write_workflow, tmp_path):
    (tmp_path / ".claude-plugin").mkdir()
    (tmp_path / ".claude-plugin" / "plugin.json").write_text("{}")
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "source-scanner.md").write_text("---\nname: source-scanner\n---\nYou scan sources.\n")
    path = write_workflow(one_action(SPAWN, initial_state={"sources": [{"id": "polars", "type": "git"},
                                                                       {"id": "blog", "type": "web"}]}),
                          "skills/build/workflow.yaml")
    backend = FakeBackend("```yaml\nsource_id: polars\nstatus: ready\nfile_count: 12\n```",
                          "I could not read it.")
    result = wfexec.run(path, backend=backend, cwd=tmp_path)
    assert result.ending == "done", result.message
    assert result.state["computed"]["agent_results"] == [
        {"source_id": "polars", "status": "ready", "file_count": 12}, {"raw": "I could not read it."}]
    first, second = backend.prompts
    assert first == "You scan sources.\n\nScan source 'polars' (type: git), number 0."
    assert second.endswith("Scan source 'blog' (type: web), number 1.")


def test_spawn_agents_parallel_without_a_brief_names_the_role(write_workflow, tmp_path):
    path = write_workflow(one_action({**SPAWN, "foreach": "${computed.items}", "as": "source"} |
                                     {"prompt_template": "Check ${source.id}."},
                                     initial_state={"computed": {"items": [{"id": "x"}]}}))
    backend = FakeBackend("status: current")
    result = wfexec.run(path, backend=backend, cwd=tmp_path)
    assert result.state["computed"]["agent_results"] == [{"status": "current"}]
    assert backend.prompts == ["You are a source-scanner agent.\n\nCheck x."]


# -- corpus config and marketplace -------------------------------------------------------------

@pytest.fixture
def corpus(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "config.yaml").write_text(
        CONFIG.replace("sources: []", "sources:\n  - id: polars\n    type: git\n    last_indexed_at: null"))
    return tmp_path


def test_config_metadata_updates_keep_comments_and_mirror_state(run_yaml, corpus):
    state, _ = run_actions(
        run_yaml, {"type": "read_config", "store_as": "config"},
        {"type": "update_config_index_metadata", "last_updated_at": "2025-01-24T10:30:00Z", "format": "markdown"},
        {"type": "update_source_metadata", "id": "polars", "fields": {"last_indexed_at": "2025-01-24T10:30:00Z"}})
    text = (corpus / "data" / "config.yaml").read_text()
    on_disk = yaml.safe_load(text)
    assert on_disk["index"] == {"format": "markdown", "last_updated_at": "2025-01-24T10:30:00Z"}
    assert on_disk["sources"][0]["last_indexed_at"] == "2025-01-24T10:30:00Z"
    assert state["config"] == on_disk
    assert comments(text) == comments(CONFIG)


def test_index_metadata_defaults_to_now_and_creates_the_block(run_yaml, tmp_path):
    (tmp_path / "config.yaml").write_text("corpus: {name: x}\n")
    run_actions(run_yaml, {"type": "update_config_index_metadata"})
    index = yaml.safe_load((tmp_path / "config.yaml").read_text())["index"]
    assert index["format"] == "markdown" and index["last_updated_at"].endswith("Z")


def test_write_config_saves_the_state_config_keeping_comments(run_yaml, corpus):
    state, _ = run_actions(run_yaml, {"type": "read_config", "store_as": "config"},
                           {"type": "set_state", "field": "config.sources[0].last_indexed_at", "value": "today"},
                           {"type": "set_state", "field": "config.corpus.keywords", "value": ["polars", "dataframe"]},
                           {"type": "write_config"})
    text = (corpus / "data" / "config.yaml").read_text()
    assert yaml.safe_load(text)["sources"][0]["last_indexed_at"] == "today"
    assert yaml.safe_load(text)["corpus"]["keywords"] == ["polars", "dataframe"]
    assert comments(text) == comments(CONFIG)


@pytest.mark.parametrize("call", [
    {"type": "update_config_index_metadata", "last_updated_at": "2025-01-24T10:30:00Z"},
    {"type": "update_source_metadata", "id": "polars", "fields": {"last_indexed_at": "2025-01-24T10:30:00Z"}},
    {"type": "write_config"},
], ids=lambda call: call["type"])
def test_a_dry_run_leaves_a_placeholder_at_the_config_a_skipped_writer_changes(run_yaml, corpus, call):
    config = yaml.safe_load((corpus / "data" / "config.yaml").read_text())
    before = (corpus / "data" / "config.yaml").read_text()
    result, out = run_yaml(one_action(call, {"type": "display_message", "message": "sources: ${config.sources.length}"},
                                      initial_state={"config": config}), dry_run=True)
    assert result.ending == "done", result.message
    assert f"would {call['type']}" in out.text and "sources: <dry-run: config.sources.length>" in out.text
    assert result.state["config"] == "<dry-run: config>"
    assert (corpus / "data" / "config.yaml").read_text() == before


def test_write_config_without_a_config_in_state_fails(run_yaml, corpus):
    result, _ = run_yaml(one_action({"type": "write_config"}))
    assert result.ending == "failed" and "state 'config' holds no config" in result.message


def test_update_marketplace_json_registers_a_plugin_once(run_yaml, tmp_path):
    marketplace = tmp_path / ".claude-plugin" / "marketplace.json"
    marketplace.parent.mkdir()
    marketplace.write_text(json.dumps({"name": "mine", "plugins": [{"name": "other", "path": "other"}]}))
    call = {"type": "update_marketplace_json", "marketplace_path": ".claude-plugin/marketplace.json",
            "plugin_name": "hiivmind-corpus-polars", "plugin_path": "hiivmind-corpus-polars"}
    run_actions(run_yaml, call, call)
    data = json.loads(marketplace.read_text())
    assert data["plugins"] == [{"name": "other", "path": "other"},
                               {"name": "hiivmind-corpus-polars", "path": "hiivmind-corpus-polars"}]
    assert marketplace.read_text().endswith("}\n")
    marketplace.write_text("{broken")
    result, _ = run_yaml(one_action(call))
    assert result.ending == "failed" and "cannot read '.claude-plugin/marketplace.json' as JSON" in result.message
