"""The corpus config types (read_config, add_source, update_source, write_config_entry) and
discover_installed_corpora, on real config files in temp folders."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from conftest import CORPUS_CONFIG as CONFIG, comments, compat_root, one_action, wfexec_cli


GIT_SPEC = {"id": "polars", "type": "git", "repo_url": "https://github.com/pola-rs/polars", "branch": "main",
            "docs_root": "docs", "last_commit_sha": None, "last_indexed_at": None}


@pytest.fixture
def corpus(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "config.yaml").write_text(CONFIG, encoding="utf-8")
    return tmp_path


def config_on_disk(folder, name="data/config.yaml"):
    return yaml.safe_load((folder / name).read_text(encoding="utf-8"))



def test_read_config_stores_the_parsed_file(run_yaml, corpus):
    result, _ = run_yaml(one_action({"type": "read_config", "store_as": "config"}))
    assert result.ending == "done"
    assert result.state["config"]["corpus"]["name"] == "polars"
    assert result.state["config"]["sources"] == []


def test_read_config_finds_a_data_only_corpus(run_yaml, tmp_path):
    (tmp_path / "config.yaml").write_text(CONFIG.replace('"polars"', '"root-level"', 1), encoding="utf-8")
    result, _ = run_yaml(one_action({"type": "read_config", "store_as": "config"}))
    assert result.state["config"]["corpus"]["name"] == "root-level"


def test_read_config_without_a_config_fails_saying_what_to_do(run_yaml, tmp_path):
    result, _ = run_yaml(one_action({"type": "read_config", "store_as": "config"}))
    assert result.ending == "failed"
    assert "neither data/config.yaml nor config.yaml exists" in result.message


def test_read_config_of_broken_yaml_fails(run_yaml, corpus):
    (corpus / "data" / "config.yaml").write_text("corpus: [unclosed\n")
    result, _ = run_yaml(one_action({"type": "read_config", "store_as": "config"}))
    assert result.ending == "failed"
    assert "cannot read YAML from 'data/config.yaml'" in result.message


def test_add_source_appends_keeps_comments_and_mirrors_state(run_yaml, corpus):
    result, _ = run_yaml(one_action({"type": "read_config", "store_as": "config"},
                                    {"type": "add_source", "spec": GIT_SPEC}))
    assert result.ending == "done", result.message
    text = (corpus / "data" / "config.yaml").read_text()
    assert config_on_disk(corpus)["sources"] == [GIT_SPEC]
    assert comments(text) == comments(CONFIG)
    # The commented examples stay after the sources block, not inside the new entry.
    assert text.index("last_indexed_at: null") < text.index("# Example source configurations")
    assert "created_at: null" in text and '    - "polars"' in text  # nulls and the list indentation kept
    assert result.state["config"]["sources"] == [GIT_SPEC]


def test_add_source_again_is_a_no_op_but_a_different_spec_fails(run_yaml, corpus):
    add = {"type": "add_source", "spec": GIT_SPEC}
    run_yaml(one_action(add))
    before = (corpus / "data" / "config.yaml").read_text()
    result, _ = run_yaml(one_action(add))
    assert result.ending == "done"
    assert (corpus / "data" / "config.yaml").read_text() == before
    other = {"type": "add_source", "spec": {**GIT_SPEC, "branch": "dev"}}
    result, _ = run_yaml(one_action(other))
    assert result.ending == "failed"
    assert "source 'polars' already exists" in result.message
    assert (corpus / "data" / "config.yaml").read_text() == before


def test_add_source_to_the_real_init_template_keeps_its_comments(run_yaml, tmp_path):
    template = compat_root() / "hiivmind-corpus" / "ca07f2c" / "templates" / "config.yaml.template"
    text = re.sub(r"^.*\{\{[#/.].*\n", "", template.read_text(), flags=re.MULTILINE)
    text = text.replace("{{project_name}}", "polars").replace("{{project_display_name}}", "Polars")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "config.yaml").write_text(text)
    result, _ = run_yaml(one_action({"type": "add_source", "spec": GIT_SPEC},
                                    {"type": "read_config", "store_as": "config"}))
    assert result.ending == "done", result.message
    assert result.state["config"]["sources"][-1] == GIT_SPEC
    written = (tmp_path / "data" / "config.yaml").read_text()
    assert comments(written) == comments(text)


def test_update_source_replaces_top_level_fields_whole(run_yaml, corpus):
    spec = {**GIT_SPEC, "urls": [{"url": "a"}, {"url": "b"}], "cache": {"enabled": True, "dir": "x"}}
    result, _ = run_yaml(one_action(
        {"type": "read_config", "store_as": "config"},
        {"type": "add_source", "spec": spec},
        {"type": "update_source", "id": "polars",
         "fields": {"urls": [{"url": "c"}], "cache": {"enabled": False}, "last_commit_sha": "abc123"}}))
    assert result.ending == "done", result.message
    source = config_on_disk(corpus)["sources"][0]
    assert source["urls"] == [{"url": "c"}] and source["cache"] == {"enabled": False}
    assert source["last_commit_sha"] == "abc123" and source["branch"] == "main"
    assert result.state["config"]["sources"][0] == source


def test_update_source_of_an_unknown_id_fails(run_yaml, corpus):
    result, _ = run_yaml(one_action({"type": "update_source", "id": "nope", "fields": {"branch": "x"}}))
    assert result.ending == "failed"
    assert "no source 'nope'" in result.message


@pytest.mark.parametrize("path, expected", [
    ("corpus.display_name", ("corpus", "display_name")),
    (".settings.include.depth", ("settings", "include", "depth")),
    ("sources[0].branch", ("sources", 0, "branch")),
    ('sources[] | select(.id == "polars").last_commit_sha', ("sources", 0, "last_commit_sha")),
    ("sources[]|select(.id=='polars').docs_root", ("sources", 0, "docs_root")),
])
def test_write_config_entry_sets_a_value_at_a_yq_path(run_yaml, corpus, path, expected):
    result, _ = run_yaml(one_action({"type": "add_source", "spec": GIT_SPEC},
                                    {"type": "write_config_entry", "path": path, "value": "set-here"}))
    assert result.ending == "done", result.message
    value = config_on_disk(corpus)
    for step in expected:
        value = value[step]
    assert value == "set-here"
    assert comments((corpus / "data" / "config.yaml").read_text()) == comments(CONFIG)


@pytest.mark.parametrize("path, message", [
    ("sources[3].branch", "index [3] is out of range"),
    ('sources[] | select(.id == "other").branch', "no item has id == 'other'"),
    ("sources | map(.id)", "unsupported path syntax"),
])
def test_write_config_entry_refuses_what_it_cannot_set(run_yaml, corpus, path, message):
    result, _ = run_yaml(one_action({"type": "add_source", "spec": GIT_SPEC},
                                    {"type": "write_config_entry", "path": path, "value": 1}))
    assert result.ending == "failed"
    assert message in result.message


# Each edits the file and, when state holds the config, state `config` too: a dry run that skips it must leave a
# placeholder there, or what reads config after it reads the config from before the change as if it were true.
CONFIG_WRITERS = {
    "add_source": {"type": "add_source", "spec": GIT_SPEC},
    "update_source": {"type": "update_source", "id": "docs", "fields": {"branch": "next"}},
    "write_config_entry": {"type": "write_config_entry", "path": "corpus.display_name", "value": "Polars!"},
}


@pytest.mark.parametrize("call", CONFIG_WRITERS.values(), ids=CONFIG_WRITERS)
def test_a_dry_run_leaves_a_placeholder_at_the_config_a_skipped_writer_changes(write_workflow, tmp_path, call):
    config = {"corpus": {"name": "polars"}, "sources": [{"id": "docs", "type": "local"}]}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    path = write_workflow(one_action(call, {"type": "display_message", "message": "sources: ${config.sources.length}"},
                                     initial_state={"config": config}))
    ran = wfexec_cli("run", path, "--dry-run", "--non-interactive", "--state-out", tmp_path / "state.json",
                     cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert f"would {call['type']}" in ran.stdout
    assert "sources: <dry-run: config.sources.length>" in ran.stdout
    assert json.loads((tmp_path / "state.json").read_text())["config"] == "<dry-run: config>"
    assert config_on_disk(tmp_path, "config.yaml") == config


# --------------------------------------------------------------------------- #
# discover_installed_corpora

def make_corpus(folder, name=None, index=None, data_only=False):
    data = folder if data_only else folder / "data"
    data.mkdir(parents=True)
    corpus = {"display_name": f"{name or folder.name} docs", "keywords": ["k"]}
    if name:
        corpus["name"] = name
    (data / "config.yaml").write_text(yaml.safe_dump({"corpus": corpus, "sources": []}))
    if index is not None:
        (data / "index.md").write_text(index)


def test_discover_finds_corpora_in_every_location_with_status(run_yaml, tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    work = tmp_path / "work"
    make_corpus(work / ".claude-plugin" / "skills" / "hiivmind-corpus-polars", "polars", "# Index\n- real entry\n")
    make_corpus(home / ".claude" / "skills" / "hiivmind-corpus-polars", "polars", "x")  # shadowed by repo-local
    make_corpus(home / ".claude" / "skills" / "hiivmind-corpus-react", None, "Run hiivmind-corpus-build first")
    make_corpus(home / ".claude" / "plugins" / "marketplaces" / "mine" / "hiivmind-corpus-ibis", "ibis",
                data_only=True)
    (home / ".claude" / "skills" / "hiivmind-corpus-broken" / "data").mkdir(parents=True)
    (home / ".claude" / "skills" / "hiivmind-corpus-broken" / "data" / "config.yaml").write_text("[not: a mapping")
    result, _ = run_yaml(one_action({"type": "discover_installed_corpora", "store_as": "computed.corpora"}),
                         cwd=work)
    assert result.ending == "done", result.message
    found = {c["name"]: c for c in result.state["computed"]["corpora"]}
    assert list(found) == ["ibis", "polars", "react"]
    assert found["polars"]["location"] == "repo-local" and found["polars"]["status"] == "built"
    assert found["react"]["status"] == "placeholder" and found["react"]["location"] == "user-level"
    assert found["react"]["description"] == "hiivmind-corpus-react docs"
    # Not built yet, as init's stub or with no index at all: hiivmind's catalogue has one word for both.
    assert found["ibis"]["status"] == "placeholder" and found["ibis"]["location"] == "marketplace"
    assert found["ibis"]["path"] == str(home / ".claude" / "plugins" / "marketplaces" / "mine" / "hiivmind-corpus-ibis")
    assert list(found["polars"]) == ["name", "display_name", "description", "keywords", "status", "path", "location"]


def test_discover_with_nothing_installed_stores_an_empty_list(run_yaml, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))
    result, _ = run_yaml(one_action({"type": "discover_installed_corpora", "store_as": "computed.corpora",
                                     "locations": ["repo-local", "user-level"]}))
    assert result.state["computed"]["corpora"] == []


def test_discover_counts_the_working_directory_when_it_is_a_corpus(run_yaml, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))
    work = tmp_path / "hiivmind-corpus-here"
    make_corpus(work, data_only=True, index="# Index\n")
    result, _ = run_yaml(one_action({"type": "discover_installed_corpora", "store_as": "computed.corpora"}), cwd=work)
    (corpus,) = result.state["computed"]["corpora"]
    assert (corpus["name"], corpus["location"], corpus["status"]) == ("here", "current", "built")
