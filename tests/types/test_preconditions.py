"""Every built-in precondition type, true and false, through a real conditional node."""

from __future__ import annotations

import http.server
import io
import json
import socket
import threading

import pytest

import wfexec

STATE = {
    "flags": {"ready": True, "off": False},
    "computed": {"items": [1, 2, 3], "empty": [], "none": None, "name": "docs",
                 "page": {"status": 200, "content": "<html>hi</html>"},
                 "missing_page": {"status": 404, "content": ""}},
}


def check(condition: dict, tmp_path) -> bool:
    (tmp_path / "workflow.yaml").write_text(json.dumps({
        "name": "pre", "version": 1, "start_node": "check", "initial_state": STATE,
        "nodes": {"check": {"type": "conditional", "condition": condition, "branches": {"true": "yes", "false": "no"}}},
        "endings": {"yes": {"type": "success", "message": "yes"}, "no": {"type": "success", "message": "no"}}}))
    return wfexec.run(tmp_path / "workflow.yaml", cwd=tmp_path).ending == "yes"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "notes.txt").write_text("release 1.2.0 notes\n")
    (tmp_path / "folder").mkdir()
    # A corpus whose index is still init's placeholder, with one source cloned.
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "config.yaml").write_text("corpus: {name: docs}\nsources:\n  - {id: main, type: git}\n")
    (tmp_path / "data" / "index.md").write_text("# Index\n\nRun hiivmind-corpus-build to fill it.\n")
    (tmp_path / ".source" / "main").mkdir(parents=True)
    return tmp_path


CASES = [
    # (condition that is true, the same condition made false)
    ({"type": "file_exists", "path": "notes.txt"}, {"type": "file_exists", "path": "folder"}),
    ({"type": "directory_exists", "path": "folder"}, {"type": "directory_exists", "path": "notes.txt"}),
    ({"type": "path_check", "path": "notes.txt", "check": "contains_text", "args": {"pattern": "1.2.0"}},
     {"type": "path_check", "path": "notes.txt", "check": "contains_text", "args": {"pattern": "9.9.9"}}),
    ({"type": "path_check", "path": "folder", "check": "is_directory"},
     {"type": "path_check", "path": "nothing-here"}),
    ({"type": "tool_available", "tool": "sh"}, {"type": "tool_available", "tool": "no-such-tool-wfexec"}),
    ({"type": "tool_check", "tool": "git", "capability": "version_gte", "args": {"min_version": "1.0"}},
     {"type": "tool_check", "tool": "git", "capability": "version_gte", "args": {"min_version": "999.0"}}),
    ({"type": "tool_check", "tool": "sh", "capability": "authenticated"},
     {"type": "tool_check", "tool": "no-such-tool-wfexec", "capability": "daemon_ready"}),
    ({"type": "tool_version_gte", "tool": "git", "min_version": "1.0"},
     {"type": "tool_version_gte", "tool": "git", "min_version": "999.0"}),
    ({"type": "tool_authenticated", "tool": "sh"}, {"type": "tool_authenticated", "tool": "no-such-tool-wfexec"}),
    ({"type": "tool_daemon_ready", "tool": "sh"}, {"type": "tool_daemon_ready", "tool": "no-such-tool-wfexec"}),
    ({"type": "config_exists"}, {"type": "config_exists", "path": "folder/config.yaml"}),
    ({"type": "index_exists"}, {"type": "index_exists", "path": "folder/config.yaml"}),
    ({"type": "index_is_placeholder"}, {"type": "index_is_placeholder", "path": "folder/config.yaml"}),
    ({"type": "source_exists", "id": "main"}, {"type": "source_exists", "id": "other"}),
    ({"type": "source_cloned", "id": "main"}, {"type": "source_cloned", "id": "../folder"}),
    ({"type": "source_check", "source_id": "main", "aspect": "exists"},
     {"type": "source_check", "source_id": "other", "aspect": "cloned"}),
    ({"type": "python_module_available", "module": "json"},
     {"type": "python_module_available", "module": "no_such_module_wfexec"}),
    ({"type": "flag_set", "flag": "ready"}, {"type": "flag_set", "flag": "off"}),
    ({"type": "flag_not_set", "flag": "missing"}, {"type": "flag_not_set", "flag": "ready"}),
    ({"type": "state_equals", "field": "computed.name", "value": "docs"},
     {"type": "state_equals", "field": "computed.name", "value": "other"}),
    ({"type": "state_not_null", "field": "computed.items"}, {"type": "state_not_null", "field": "computed.none"}),
    ({"type": "state_is_null", "field": "computed.nowhere"}, {"type": "state_is_null", "field": "computed.name"}),
    ({"type": "count_equals", "field": "computed.items", "count": 3},
     {"type": "count_equals", "field": "computed.empty", "count": 3}),
    ({"type": "count_above", "field": "computed.items", "min": 2}, {"type": "count_above", "field": "computed.items", "min": 3}),
    ({"type": "count_below", "field": "computed.empty", "max": 1}, {"type": "count_below", "field": "computed.items", "max": 3}),
    ({"type": "evaluate_expression", "expression": "len(computed.items) == 3 && flags.ready"},
     {"type": "evaluate_expression", "expression": "computed.items | sum > 100"}),
    ({"type": "state_check", "field": "flags.ready", "operator": "true"},
     {"type": "state_check", "field": "computed.name", "operator": "not_equals", "value": "docs"}),
    ({"type": "state_check", "field": "flags.missing", "operator": False},
     {"type": "state_check", "field": "computed.name", "operator": "null"}),
    ({"type": "state_check", "field": "computed.name", "operator": "in", "value": ["api", "docs"]},
     {"type": "state_check", "field": "computed.nowhere", "operator": "in", "value": ["api", "docs"]}),
    ({"type": "fetch_succeeded", "from": "computed.page"}, {"type": "fetch_succeeded", "from": "computed.missing_page"}),
    ({"type": "fetch_returned_content", "from": "computed.page"},
     {"type": "fetch_returned_content", "from": "computed.missing_page"}),
    ({"type": "fetch_check", "from": "computed.page", "aspect": "has_content"},
     {"type": "fetch_check", "from": "computed.missing_page"}),
    ({"type": "all_of", "conditions": [{"type": "flag_set", "flag": "ready"}, {"type": "file_exists", "path": "notes.txt"}]},
     {"type": "all_of", "conditions": [{"type": "flag_set", "flag": "ready"}, {"type": "flag_set", "flag": "off"}]}),
    ({"type": "any_of", "conditions": [{"type": "flag_set", "flag": "off"}, {"type": "flag_set", "flag": "ready"}]},
     {"type": "any_of", "conditions": [{"type": "flag_set", "flag": "off"}]}),
    ({"type": "none_of", "conditions": [{"type": "flag_set", "flag": "off"}]},
     {"type": "none_of", "conditions": [{"type": "flag_set", "flag": "ready"}]}),
    ({"type": "composite", "operator": "xor",
      "conditions": [{"type": "flag_set", "flag": "ready"}, {"type": "flag_set", "flag": "off"}]},
     {"type": "composite", "operator": "all",
      "conditions": [{"type": "flag_set", "flag": "ready"}, {"type": "flag_set", "flag": "off"}]}),
    ({"type": "xor_of", "conditions": [{"type": "flag_set", "flag": "ready"}, {"type": "flag_set", "flag": "off"}]},
     {"type": "xor_of", "conditions": [{"type": "flag_set", "flag": "ready"}, {"type": "flag_not_set", "flag": "off"}]}),
]


@pytest.mark.parametrize("true_condition, false_condition", CASES, ids=[c[0]["type"] for c in CASES])
def test_each_precondition_is_true_and_false_when_it_should_be(true_condition, false_condition, files):
    assert check(true_condition, files) is True
    assert check(false_condition, files) is False


def test_every_built_in_precondition_is_covered_here():
    from wfexec.types.registry import preconditions

    # Tested in their own files: network_available below; source_has_updates (tests/types/test_preconditions_corpus_tools.py) and the
    # log_* preconditions (tests/types/consequences/test_runlog.py) need a real upstream or a run log made first.
    elsewhere = {"network_available", "source_has_updates", "log_initialized", "log_finalized", "log_level_enabled",
                 "log_state"}
    covered = {c[0]["type"] for c in CASES} | elsewhere
    assert set(preconditions().names()) - covered == set()


@pytest.fixture
def listening_port():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_network_available_connects_to_the_target(listening_port, tmp_path):
    assert check({"type": "network_available", "target": f"http://127.0.0.1:{listening_port}"}, tmp_path)
    with socket.socket() as unused:  # a port nobody listens on: bind it, then close it
        unused.bind(("127.0.0.1", 0))
        closed_port = unused.getsockname()[1]
    assert not check({"type": "network_available", "target": f"127.0.0.1:{closed_port}", "timeout": 1}, tmp_path)


def test_a_precondition_that_throws_is_an_error_not_false(tmp_path):
    with pytest.raises(wfexec.running.engine.RunError, match="TypeError"):
        check({"type": "evaluate_expression", "expression": "nothing.below > 1"}, tmp_path)


@pytest.mark.parametrize("expression, expected", [
    ("nothing > 1", False), ("[]", True), ("''", False), ("({})", True), ("0", False), ("'0'", True),
])
def test_evaluate_expression_uses_javascript_truthiness(tmp_path, expression, expected):
    assert check({"type": "evaluate_expression", "expression": expression}, tmp_path) is expected




# The checks with a direct form (TypeSpec.direct), true, false, on what is missing, and failing.
DIRECT_CHECKS = [
    {"type": "flag_set", "flag": "ready"},
    {"type": "flag_set", "flag": "off"},
    {"type": "flag_set", "flag": "absent"},
    {"type": "flag_not_set", "flag": "off"},
    {"type": "flag_not_set", "flag": "ready"},
    {"type": "flag_set", "flag": "${computed.name}"},  # computed: the handler
    {"type": "state_equals", "field": "computed.name", "value": "docs"},
    {"type": "state_equals", "field": "computed.name", "value": "${computed.name}"},
    {"type": "state_equals", "field": "computed.items", "value": [1, 2, 3]},
    {"type": "state_equals", "field": "computed.page.status", "value": 404},
    {"type": "state_equals", "field": "computed.nothing.below", "value": None},
    {"type": "state_equals", "field": "computed.name", "value": "${computed.nothing.below}"},
    {"type": "state_not_null", "field": "computed.none"},
    {"type": "state_not_null", "field": "computed.items[0]"},
    {"type": "state_is_null", "field": "computed.absent"},
    {"type": "state_is_null", "field": "computed.name"},
    {"type": "evaluate_expression", "expression": "computed.items.length > 2"},
    {"type": "evaluate_expression", "expression": "flags.off"},
    {"type": "evaluate_expression", "expression": "computed.items.map(x => x * 2)"},
    {"type": "evaluate_expression", "expression": "computed.nothing.below"},
]


def test_each_checks_direct_form_answers_as_its_handler_does(tmp_path):
    from wfexec.errors import WfexecError
    from wfexec.language.model import NO_DIRECT
    from wfexec.records import replace
    from wfexec.running.console import Console
    from wfexec.running.steploop import start

    nodes = {f"c{i}": {"type": "conditional", "condition": case, "branches": {"true": "yes", "false": "no"}}
             for i, case in enumerate(DIRECT_CHECKS)}
    nodes["throws"] = {"type": "conditional", "condition": {"type": "evaluate_expression",
                                                            "expression": "computed.name.nope.deeper"},
                       "branches": {"true": "yes", "false": "no"}}
    (tmp_path / "workflow.yaml").write_text(json.dumps({
        "name": "pre", "version": 1, "start_node": "c0", "initial_state": STATE, "nodes": nodes,
        "endings": {"yes": {"type": "success", "message": "yes"}, "no": {"type": "success", "message": "no"}}}))
    workflow = wfexec.load(tmp_path / "workflow.yaml")
    calls = [node.spec.condition for node in workflow.nodes.values()]
    by_handler = [replace(call, spec=replace(call.spec, direct=None)) for call in calls]
    assert sum(call.direct_form() is not NO_DIRECT for call in calls) == len(calls) - 1  # all but the computed flag

    def answers(checked):
        run = start(workflow, io=Console(out=io.StringIO(), err=io.StringIO()))
        run.current = workflow.nodes["c0"]
        found = []
        for call in checked:
            try:
                found.append(run.check(call))
            except WfexecError as failure:
                found.append((type(failure).__name__, failure.message, failure.hint))
        return found, run.state

    direct, handled = answers(calls), answers(by_handler)
    assert direct == handled
    assert direct[0][:6] == [True, False, False, True, False, False]
    assert direct[0][-1][0] == "RunError" and direct[0][-1][1].startswith("evaluate_expression: ")
