"""Every call of a hiivmind catalogue type (built in) or of an uncatalogued type (the compat plugin) written in the
real hiivmind-corpus workflow files passes its type's parameter schema."""

from __future__ import annotations

import pytest
import yaml

from conftest import compat_root

NODE_TYPES = {"action", "conditional", "user_prompt", "validation_gate", "reference", "workflow", "states"}


def calls(value, found):
    if isinstance(value, dict):
        if isinstance(value.get("type"), str) and value["type"] not in NODE_TYPES and (
                set(value) - {"type", "description"} or not isinstance(value.get("nodes"), dict)):
            found.append(value)
        for item in value.values():
            calls(item, found)
    elif isinstance(value, list):
        for item in value:
            calls(item, found)
    return found


NEW_TYPES = {
    "config_exists", "index_exists", "index_is_placeholder", "source_exists", "source_cloned", "source_has_updates",
    "source_check", "log_initialized", "log_finalized", "log_level_enabled", "log_state", "tool_version_gte",
    "tool_authenticated", "tool_daemon_ready", "read_config", "add_source", "update_source", "write_config_entry",
    "discover_installed_corpora", "init_log", "log_node", "log_warning", "log_error", "log_source_status",
    "log_source_changes", "log_index_update", "log_session_snapshot", "finalize_log", "write_log",
    "apply_log_retention", "output_ci_summary", "inline", "install_tool",
    "file_exists_check", "any_file_exists_check", "directory_exists_check", "glob_check", "glob_count", "glob_files",
    "bash_check", "bash_exec", "spawn_agents_parallel", "update_config_index_metadata", "update_source_metadata",
    "update_marketplace_json", "append_to_file", "write_config",
}


def test_every_real_call_of_the_new_types_fits_its_schema():
    from wfexec.types.registry import consequences, preconditions

    registries = {r.kind: r for r in (preconditions(), consequences())}
    checked, problems = set(), []
    for path in sorted((compat_root() / "hiivmind-corpus").glob("*/**/workflow.yaml")):
        for call in calls(yaml.safe_load(path.read_text(encoding="utf-8")), []):
            if call["type"] not in NEW_TYPES:
                continue
            registry = next((r for r in registries.values() if call["type"] in r), None)
            assert registry is not None, f"{call['type']} is not registered (is the compat plugin installed?)"
            checked.add(call["type"])
            problems += [f"{path}: {call['type']}: {e.message}" for e in registry.validator(call["type"]).errors(call)]
    assert problems == []
    # The rest are catalogued but called by no real file; log_source_status is called only in ca07f2c, where each
    # call has a second `type:` key (the source's type), so the YAML reads as another type.
    assert NEW_TYPES - checked == {
        "index_exists", "index_is_placeholder", "inline", "install_tool", "log_finalized", "log_initialized",
        "log_level_enabled", "log_session_snapshot", "log_source_status", "log_state", "source_check", "source_cloned",
        "source_has_updates", "tool_authenticated", "tool_daemon_ready", "tool_version_gte", "write_config_entry"}
