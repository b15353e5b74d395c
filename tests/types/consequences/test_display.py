"""display_message, display_table, display (v3), log_entry and log_event, run for real."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

import wfexec
from wfexec.language.diagnostics import WorkflowError
from conftest import one_action


# --------------------------------------------------------------------------- #
# display_message

def test_display_message_prints_the_rendered_message(run_yaml):
    result, out = run_yaml(one_action({"type": "display_message", "message": "Hello ${computed.who}, ${n} left"},
                                      initial_state={"computed": {"who": "Ada"}, "n": 3}))
    assert result.type == "success"
    assert out.text == "Hello Ada, 3 left\n"


def test_display_message_shows_a_whole_value_as_json(run_yaml):
    result, out = run_yaml(one_action({"type": "display_message", "message": "${computed.items}"},
                                      initial_state={"computed": {"items": ["a", "b"]}}))
    assert result.type == "success"
    assert out.text.strip() == '["a", "b"]'


def test_display_message_whose_template_throws_fails_the_action(run_yaml):
    result, out = run_yaml(one_action({"type": "display_message", "message": "Hi ${computed.nobody_set_this.name}"}))
    assert result.type == "failure"
    assert "nobody_set_this" in result.message and "TypeError" in result.message
    assert out.text == ""


def test_display_message_without_message_is_a_load_error(run_yaml):
    with pytest.raises(WorkflowError) as raised:
        run_yaml(one_action({"type": "display_message", "text": "hi"}))
    assert "message" in str(raised.value)


# --------------------------------------------------------------------------- #
# display_table

def test_display_table_of_lists_prints_title_headers_and_cells(run_yaml):
    result, out = run_yaml(one_action({"type": "display_table", "title": "Sources", "headers": ["Id", "Status"],
                                       "rows": [["alpha", "built"], ["beta", None]]}))
    assert result.type == "success"
    lines = out.text.splitlines()
    assert "Sources" in lines[0]
    header = next(line for line in lines if "Id" in line)
    assert "Status" in header
    alpha = next(line for line in lines if "alpha" in line)
    assert "built" in alpha
    beta = next(line for line in lines if "beta" in line)
    assert "None" not in beta  # null cells are blank


def test_display_table_takes_mapping_values_in_header_order(run_yaml):
    rows = [{"status": "stale", "id": "alpha", "last_commit": "abc123", "ignored": "zzz"},
            {"id": "beta"}]
    result, out = run_yaml(one_action({"type": "display_table", "headers": ["id", "status", "Last Commit"],
                                       "rows": "${computed.rows}"}, initial_state={"computed": {"rows": rows}}))
    assert result.type == "success"
    alpha = next(line for line in out.text.splitlines() if "alpha" in line)
    assert alpha.index("alpha") < alpha.index("stale") < alpha.index("abc123")
    assert "zzz" not in out.text
    beta = next(line for line in out.text.splitlines() if "beta" in line)
    assert "stale" not in beta


def test_display_table_rows_from_a_template_that_is_not_a_list_fail(run_yaml):
    result, out = run_yaml(one_action({"type": "display_table", "headers": ["a"], "rows": "${computed.rows}"},
                                      initial_state={"computed": {"rows": "not rows"}}))
    assert result.type == "failure"
    assert "rows must be a list" in result.message
    assert out.text == ""


def test_display_table_row_longer_than_headers_fails(run_yaml):
    result, _ = run_yaml(one_action({"type": "display_table", "headers": ["a"], "rows": [["1"], ["1", "2"]]}))
    assert result.type == "failure"
    assert "row 1 has 2 cells but there are 1 headers" in result.message


def test_display_table_with_literal_rows_of_scalars_is_a_load_error(run_yaml):
    with pytest.raises(WorkflowError):
        run_yaml(one_action({"type": "display_table", "headers": ["a"], "rows": ["x", "y"]}))


# --------------------------------------------------------------------------- #
# display (v3)

def test_display_text_is_the_default_format(run_yaml):
    result, out = run_yaml(one_action({"type": "display", "title": "Note", "content": "Cloned ${computed.n} repos"},
                                      initial_state={"computed": {"n": 2}}))
    assert result.type == "success"
    assert out.text == "Note\nCloned 2 repos\n"


def test_display_markdown_is_rendered(run_yaml):
    result, out = run_yaml(one_action({"type": "display", "format": "markdown",
                                       "content": "Some **bold** words\n\n- first\n- second"}))
    assert result.type == "success"
    assert "bold" in out.text and "**" not in out.text
    assert "first" in out.text and "second" in out.text


def test_display_json_pretty_prints_values_and_json_strings(run_yaml):
    result, out = run_yaml(one_action(
        {"type": "display", "format": "json", "content": "${computed.data}"},
        {"type": "display", "format": "json", "title": "raw", "content": '{"b": [1, 2]}'},
        initial_state={"computed": {"data": {"name": "x", "tags": ["a"]}}}))
    assert result.type == "success"
    first, _, second = out.text.partition("raw\n")
    assert json.loads(first) == {"name": "x", "tags": ["a"]}
    assert '  "name": "x"' in first  # indented
    assert json.loads(second) == {"b": [1, 2]}


def test_display_table_takes_headers_from_mapping_keys(run_yaml):
    rows = [{"id": "alpha", "status": "built"}, {"id": "beta", "url": "https://x"}]
    result, out = run_yaml(one_action({"type": "display", "format": "table", "content": "${computed.rows}"},
                                      initial_state={"computed": {"rows": rows}}))
    assert result.type == "success"
    header = next(line for line in out.text.splitlines() if "id" in line)
    assert header.index("id") < header.index("status") < header.index("url")
    assert "https://x" in next(line for line in out.text.splitlines() if "beta" in line)


def test_display_table_of_lists_uses_given_headers(run_yaml):
    result, out = run_yaml(one_action({"type": "display", "format": "table", "headers": ["k", "v"],
                                       "content": [["one", 1], ["two", 2]]}))
    assert result.type == "success"
    assert "2" in next(line for line in out.text.splitlines() if "two" in line)


def test_display_table_of_lists_without_headers_fails(run_yaml):
    result, _ = run_yaml(one_action({"type": "display", "format": "table", "content": [["one", 1]]}))
    assert result.type == "failure"
    assert "needs `headers`" in result.message


def test_display_format_given_by_a_template_is_checked(run_yaml):
    result, _ = run_yaml(one_action({"type": "display", "format": "${computed.fmt}", "content": "x"},
                                    initial_state={"computed": {"fmt": "html"}}))
    assert result.type == "failure"
    assert "'html'" in result.message and "text, table, json, markdown" in result.message


def test_display_unknown_format_is_a_load_error(run_yaml):
    with pytest.raises(WorkflowError):
        run_yaml(one_action({"type": "display", "format": "html", "content": "x"}))


# --------------------------------------------------------------------------- #
# log_entry / log_event

def test_log_entry_appends_entries_to_state_log_and_traces(run_yaml):
    result, out = run_yaml(one_action(
        {"type": "log_entry", "level": "info", "message": "started ${computed.what}"},
        {"type": "log_entry", "level": "error", "message": "clone failed", "context": {"url": "u"},
         "error_type": "network", "recoverable": True, "node": "clone_source"},
        initial_state={"computed": {"what": "refresh"}}), trace=True)
    assert result.type == "success"
    first, second = result.state["log"]
    assert first["level"] == "info" and first["message"] == "started refresh"
    assert first["node"] == "act"  # the node running it, when not given
    assert datetime.fromisoformat(first["at"].replace("Z", "+00:00")).tzinfo is not None
    assert set(first) == {"level", "message", "at", "node"}
    assert second["node"] == "clone_source"
    assert second["context"] == {"url": "u"}
    assert second["error_type"] == "network" and second["recoverable"] is True
    assert "Log [error]: clone failed" in out.err.getvalue()
    assert out.text == ""  # the log is state, not output


def test_log_event_appends_to_the_same_log(run_yaml):
    result, _ = run_yaml(one_action(
        {"type": "log_entry", "level": "warning", "message": "careful"},
        {"type": "log_event", "event_type": "source_checked", "data": {"id": "${computed.id}"}},
        initial_state={"computed": {"id": "alpha"}}))
    assert result.type == "success"
    assert [e.get("level") for e in result.state["log"]] == ["warning", None]
    event = result.state["log"][1]
    assert event["event_type"] == "source_checked"
    assert event["data"] == {"id": "alpha"}
    assert event["at"].endswith("Z")


def test_log_entry_fails_when_state_log_is_not_a_list(run_yaml):
    result, _ = run_yaml(one_action({"type": "log_entry", "level": "info", "message": "x"},
                                    initial_state={"log": {"metadata": {}}}))
    assert result.type == "failure"
    assert "`log` holds dict" in result.message


def test_log_entry_level_is_checked_at_load(write_workflow):
    path = write_workflow(one_action({"type": "log_entry", "level": "fatal", "message": "x"}))
    diagnostics = wfexec.validate(path)
    assert any(d.severity == "error" and "level" in d.yaml_path for d in diagnostics)


def test_display_types_declare_the_display_effect():
    from wfexec.types.registry import consequences

    registry = consequences()
    assert all(registry.get(n).effects == ("display",) for n in ("display", "display_message", "display_table"))
    assert registry.get("log_entry").effects == () and registry.get("log_event").effects == ()
