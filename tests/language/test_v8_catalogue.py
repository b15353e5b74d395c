"""Blueprint-lib v8's type catalogue (issue 16, point 5), run as a v8 file writes it: `mutate_state` increment,
`state_check` in, the `composite` precondition, `user_prompt` options in both of v8's forms (a list, or a mapping of
expressions over `options_from_state`), and the catalogue's other entries. Small workflows of our own, run through
the command line; bad input is a diagnostic at the line written."""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap

import pytest

from conftest import wfexec_in_process as cli


def workflow(nodes: str, *, initial_state: str = "", name: str = "v8-catalogue") -> str:
    """A v8 file: the nodes given, plus the endings every test routes to."""
    return textwrap.dedent(f"""\
        name: {name}
        version: "1.0.0"
        start_node: start
        default_error: failed
        """) + (textwrap.indent(textwrap.dedent(initial_state), "") if initial_state else "") + \
        "nodes:\n" + textwrap.indent(textwrap.dedent(nodes), "  ") + textwrap.indent(textwrap.dedent("""\
        done:
          type: ending
          outcome: success
          message: "done"
        other:
          type: ending
          outcome: failure
          message: "other"
        failed:
          type: ending
          outcome: error
          message: "failed: ${computed.last_error}"
        """), "  ")


def write(tmp_path, text, name="workflow.yaml"):
    (tmp_path / name).write_text(text)
    return tmp_path / name


def run_json(tmp_path, *args, name="workflow.yaml"):
    done = cli("run", name, "--ephemeral", "--format", "json", *args, cwd=tmp_path)
    return done, json.loads(done.stdout)


def errors_of(tmp_path, name="workflow.yaml"):
    done = cli("validate", name, "--format", "json", cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    return [d for d in json.loads(done.stdout)["diagnostics"] if d["severity"] == "error"]


def line_of(text, fragment):
    return next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)


# -- mutate_state ----------------------------------------------------------------------------------

COUNTER = """\
start:
  type: action
  consequences:
    - {type: mutate_state, operation: increment, field: computed.tries}
    - {type: mutate_state, operation: increment, field: computed.tries}
    - {type: mutate_state, operation: increment, field: computed.score, value: 2.5}
    - {type: mutate_state, operation: increment, field: computed.score, value: -1}
  on_success: loop
loop:
  type: action
  consequences:
    - {type: mutate_state, operation: increment, field: goal.iterations}
  on_success: enough
enough:
  type: conditional
  condition: "goal.iterations >= 3"
  on_true: done
  on_false: loop
"""


def test_increment_counts_from_zero_by_one_or_by_value_and_drives_a_loop(tmp_path):
    write(tmp_path, workflow(COUNTER))
    done, result = run_json(tmp_path)
    assert (done.returncode, result["ending"]) == (0, "done"), result
    assert result["state"]["computed"]["tries"] == 2
    assert result["state"]["computed"]["score"] == 1.5
    assert result["state"]["goal"]["iterations"] == 3  # a top-level key made by the increment itself


def test_increment_of_something_that_is_not_a_number_fails_to_default_error(tmp_path):
    write(tmp_path, workflow("""\
        start:
          type: action
          consequences:
            - {type: mutate_state, operation: set, field: computed.tries, value: "three"}
            - {type: mutate_state, operation: increment, field: computed.tries}
          on_success: done
        """))
    done, result = run_json(tmp_path)
    assert (done.returncode, result["ending"]) == (1, "failed")
    assert "`computed.tries` holds str 'three', not a number" in result["message"]


@pytest.mark.parametrize("call, words", [
    ("{type: mutate_state, operation: set, field: computed.x}", "missing required field 'value'"),
    ("{type: mutate_state, operation: merge, field: computed.x}", "missing required field 'value'"),
    ("{type: mutate_state, operation: increment, field: computed.x, value: one}", "must be a number"),
    ("{type: mutate_state, operation: multiply, field: computed.x, value: 2}", "'multiply'; allowed: set, append, "
                                                                                "clear, merge, increment"),
])
def test_a_mutate_state_the_catalogue_does_not_allow_is_an_error_at_its_line(tmp_path, call, words):
    text = workflow(f"""\
        start:
          type: action
          consequences:
            - {call}
          on_success: done
        """)
    write(tmp_path, text)
    errors = errors_of(tmp_path)
    assert any(words in e["message"] and e["line"] == line_of(text, "type: mutate_state") for e in errors), errors


# -- state_check and composite ------------------------------------------------------------------------

GATES = """\
start:
  type: action
  consequences:
    - {type: mutate_state, operation: set, field: goals.ready.status, value: ignored}
    - {type: mutate_state, operation: set, field: goals.config.status, value: "${input_status}"}
  on_success: all_settled
all_settled:
  type: conditional
  condition:
    all:
      - {type: state_check, field: goals.ready.status, operator: in, value: [satisfied, ignored]}
      - {type: state_check, field: goals.config.status, operator: in, value: [satisfied, ignored]}
  on_true: one_of_them
  on_false: other
one_of_them:
  type: conditional
  condition:
    type: composite
    operator: xor
    conditions:
      - {type: state_check, field: goals.ready.status, operator: equals, value: satisfied}
      - {type: state_check, field: goals.config.status, operator: equals, value: satisfied}
  on_true: done
  on_false: other
"""


@pytest.mark.parametrize("status, ending", [("satisfied", "done"), ("ignored", "other"), ("incomplete", "other")])
def test_state_check_in_and_the_composite_precondition(tmp_path, status, ending):
    write(tmp_path, workflow(GATES, initial_state=f"initial_state: {{input_status: {status}}}\n"))
    done, result = run_json(tmp_path)
    assert result["ending"] == ending, result


def test_in_against_a_list_from_state(tmp_path):
    write(tmp_path, workflow("""\
        start:
          type: conditional
          condition: {type: state_check, field: computed.pick, operator: in, value: "${computed.allowed}"}
          on_true: done
          on_false: other
        """, initial_state="initial_state:\n  computed: {pick: b, allowed: [a, b]}\n"))
    assert run_json(tmp_path)[1]["ending"] == "done"


def test_in_against_something_that_is_not_a_list_is_unknown(tmp_path):
    write(tmp_path, workflow("""\
        start:
          type: conditional
          condition: {type: state_check, field: computed.pick, operator: in, value: "${computed.allowed}"}
          on_true: done
          on_false: other
        """, initial_state="initial_state:\n  computed: {pick: b, allowed: b}\n"))
    done, result = run_json(tmp_path)
    assert result["ending"] == "failed"  # on_unknown defaults to default_error
    assert "state_check `in` needs a list as `value`, not str" in result["message"]


@pytest.mark.parametrize("condition, words", [
    ("{type: state_check, field: computed.x, operator: in}", "missing required field 'value'"),
    ("{type: state_check, field: computed.x, operator: equals}", "missing required field 'value'"),
    ("{type: state_check, field: computed.x, operator: in, value: a}", "must be a list"),
    ("{type: state_check, field: computed.x, operator: within, value: [a]}", "'within'; allowed:"),
    ("{type: composite, operator: most, conditions: [\"true\"]}", "'most'; allowed: all, any, none, xor"),
    ("{type: composite, operator: all}", "missing required field 'conditions'"),
])
def test_a_precondition_the_catalogue_does_not_allow_is_an_error_at_its_line(tmp_path, condition, words):
    text = workflow(f"""\
        start:
          type: conditional
          condition: {condition}
          on_true: done
          on_false: other
        """)
    write(tmp_path, text)
    errors = errors_of(tmp_path)
    assert any(words in e["message"] and e["line"] == line_of(text, "condition:") for e in errors), errors


# -- user_prompt options ------------------------------------------------------------------------------

CANDIDATES = """\
initial_state:
  computed:
    matches:
      top_candidates:
        - {rule: {name: build, description: Make a new skill}, action: build_it, score: 3}
        - {rule: {name: search, description: Find documentation}, action: search_it, score: 2}
"""
DYNAMIC = """\
start:
  type: user_prompt
  prompt:
    question: Which did you mean?
    header: Clarify
    options_from_state: computed.matches.top_candidates
    options:
      id: rule.name
      label: "candidate.rule.name + ' (' + score + ')'"
      description: rule.description
  on_response:
    selected: "${user_responses.start.action}"
    other:
      consequences:
        - {type: mutate_state, operation: set, field: computed.typed, value: "${user_responses.start.text}"}
      next_node: other
build_it:
  type: ending
  outcome: success
  message: "${user_responses.start.id}|${user_responses.start.raw.label}|${user_responses.start.selected.score}"
search_it:
  type: ending
  outcome: success
  message: "searching"
"""


def test_dynamic_options_are_expressions_over_each_item_and_the_answer_carries_the_item(tmp_path):
    write(tmp_path, workflow(DYNAMIC, initial_state=CANDIDATES))
    done, result = run_json(tmp_path, "--answer", "start=build")
    assert (done.returncode, result["ending"]) == (0, "build_it"), result
    assert result["message"] == "build|build (3)|3"
    answer = result["state"]["user_responses"]["start"]
    # the item's own fields beside id/raw/selected: `user_responses.start.action` routed the answer
    assert answer["action"] == "build_it" and answer["rule"]["name"] == "build"
    assert answer["id"] == "build" and answer["selected"]["score"] == 3
    done, result = run_json(tmp_path, "--answer", "start=search")
    assert result["ending"] == "search_it"


def test_dynamic_options_are_offered_with_their_labels_while_waiting(tmp_path):
    write(tmp_path, workflow(DYNAMIC, initial_state=CANDIDATES))
    done = cli("run", "workflow.yaml", "--ephemeral", "--format", "json", cwd=tmp_path)
    assert done.returncode == 3
    waiting = json.loads(done.stdout)
    assert (waiting["node"], waiting["allow_other"]) == ("start", True)
    assert [(o["id"], o["label"], o["description"]) for o in waiting["options"]] == [
        ("build", "build (3)", "Make a new skill"), ("search", "search (2)", "Find documentation")]


def test_free_text_to_a_dynamic_question_goes_to_other(tmp_path):
    write(tmp_path, workflow(DYNAMIC, initial_state=CANDIDATES))
    done, result = run_json(tmp_path, "--answer", "start=something else")
    assert result["ending"] == "other" and result["state"]["computed"]["typed"] == "something else"


def test_an_item_field_never_replaces_the_answers_own_keys(tmp_path):
    state = CANDIDATES.replace("action: build_it, score: 3}", "action: build_it, score: 3, id: clash, raw: x}")
    write(tmp_path, workflow(DYNAMIC, initial_state=state))
    done, result = run_json(tmp_path, "--answer", "start=build")
    answer = result["state"]["user_responses"]["start"]
    assert answer["id"] == "build" and answer["raw"] == {"label": "build (3)"}


def test_static_options_route_and_the_shorthand_handler(tmp_path):
    write(tmp_path, workflow("""\
        start:
          type: user_prompt
          prompt:
            question: Go?
            header: Go
            options:
              - {id: go, label: Go, description: Carry on}
              - {id: stop, label: Stop}
          on_response:
            go: done
            stop: other
        """))
    assert run_json(tmp_path, "--answer", "start=go")[1]["ending"] == "done"
    assert run_json(tmp_path, "--answer", "start=Stop")[1]["ending"] == "other"  # a label answers too


@pytest.mark.parametrize("change, at, words", [
    # a mapping of options with no list to build them from
    (lambda t: t.replace("    options_from_state: computed.matches.top_candidates\n", ""), "      options:",
     "`options` written as a mapping builds one option per item of a list, but this prompt has no "
     "`options_from_state`"),
    # an expression that does not parse, at its own line
    (lambda t: t.replace("description: rule.description", "description: rule.("), "description: rule.(",
     "invalid JavaScript in `rule.(`"),
    # options as a list of plain strings: v8 wants {id, label, description}
    (lambda t: t.replace("    options_from_state: computed.matches.top_candidates\n", "").replace(
        "    options:\n      id: rule.name\n      label: \"candidate.rule.name + ' (' + score + ')'\"\n"
        "      description: rule.description\n", "    options: [build, search]\n"), "      options: [build, search]",
     "must be a mapping, not a string"),
    # a field a v8 option mapping does not have
    (lambda t: t.replace("      description: rule.description", "      tooltip: rule.description"),
     "tooltip: rule.description", "unknown field 'tooltip'"),
])
def test_malformed_options_are_errors_at_the_line_written(tmp_path, change, at, words):
    text = workflow(change(DYNAMIC), initial_state=CANDIDATES)
    write(tmp_path, text)
    errors = errors_of(tmp_path)
    assert any(words in e["message"] and e["line"] == line_of(text, at) for e in errors), errors


def test_an_option_expression_that_fails_on_an_item_stops_the_run_naming_the_item(tmp_path):
    text = workflow(DYNAMIC, initial_state=CANDIDATES).replace("label: \"candidate.rule.name + ' (' + score + ')'\"",
                                                               "label: rule.name.toUpperCase()")
    # a missing name would read as null in a v8 file; a number has no toUpperCase, so the call fails
    text = text.replace("- {rule: {name: search, description: Find documentation}",
                        "- {rule: {name: 5, description: Find documentation}")
    write(tmp_path, text)
    done = cli("run", "workflow.yaml", "--ephemeral", "--answer", "start=build", cwd=tmp_path)
    assert done.returncode == 1
    assert "option 2 of the list" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


# -- the catalogue, entry by entry -------------------------------------------------------------------

# blueprint-types.md at 2c7f08f, as (kind, name); mcp_tool_call is another change's (issue 16).
CATALOGUE = {
    "precondition": ["composite", "evaluate_expression", "state_check", "tool_check", "path_check",
                     "python_module_available", "network_available", "source_check", "fetch_check"],
    "consequence": ["create_checkpoint", "rollback_checkpoint", "spawn_agent", "invoke_skill", "inline", "evaluate",
                    "compute", "display", "log_node", "log_entry", "set_flag", "mutate_state", "set_timestamp",
                    "evaluate_keywords", "parse_intent_flags", "match_3vl_rules", "local_file_ops", "git_ops_local",
                    "web_ops", "run_command", "install_tool", "compute_hash"],
}


@pytest.mark.parametrize("kind", sorted(CATALOGUE))
def test_every_catalogue_entry_is_a_type_of_its_kind(kind):
    done = cli("types")
    assert done.returncode == 0
    section = done.stdout.split("consequences:")[0 if kind == "precondition" else 1]
    assert [name for name in CATALOGUE[kind] if f"  {name}(" not in section] == []


@pytest.mark.parametrize("name, effects", [
    ("install_tool", {"process", "files"}), ("run_command", {"process"}), ("local_file_ops", {"files"}),
    ("git_ops_local", {"git"}), ("web_ops", {"network"}), ("inline", {"llm"}), ("spawn_agent", {"llm"}),
    ("invoke_skill", {"llm"}), ("display", {"display"}), ("source_check", {"files"}), ("path_check", {"files"}),
])
def test_catalogue_types_that_touch_the_world_say_so(name, effects):
    from wfexec.types.registry import consequences, preconditions

    spec = consequences().get(name) or preconditions().get(name)
    assert effects <= set(spec.effects), spec.effects


def test_log_node_and_log_entry_write_v8s_runtime_log(tmp_path):
    write(tmp_path, workflow("""\
        start:
          type: action
          consequences:
            - {type: log_entry, level: info, message: "starting ${computed.what}", context: {try: 1}}
            - type: log_node
              node: start
              outcome: success
              details: {what: "${computed.what}"}
            - {type: log_entry, level: warning, message: careful}
          on_success: done
        """, initial_state="initial_state: {computed: {what: docs}}\n"))
    done, result = run_json(tmp_path)
    assert result["ending"] == "done", result
    log = result["state"]["log"]
    assert sorted(log) == ["entries", "node_history"]
    [node] = log["node_history"]
    assert (node["node"], node["outcome"], node["details"]) == ("start", "success", {"what": "docs"})
    first, second = log["entries"]
    assert (first["level"], first["message"], first["node"], first["context"]) == ("info", "starting docs", "start",
                                                                                 {"try": 1})
    assert (second["level"], second["message"]) == ("warning", "careful") and "context" not in second
    from datetime import datetime

    assert datetime.fromisoformat(node["timestamp"].replace("Z", "+00:00")).tzinfo is not None


def test_outside_v8_a_log_without_init_log_is_still_a_list(tmp_path):
    write(tmp_path, textwrap.dedent("""\
        name: v3
        version: "1.0.0"
        start_node: start
        nodes:
          start:
            type: action
            actions:
              - {type: log_node, node: start, outcome: success}
            on_success: done
        endings:
          done: {type: success, message: ok}
        """))
    done, result = run_json(tmp_path)
    assert isinstance(result["state"]["log"], list) and result["state"]["log"][0]["outcome"] == "success"


SCRIPTED = """\
start:
  type: action
  consequences:
    - type: run_command
      script: scripts/greet.py
      interpreter: python
      args: ["${computed.who}", "two words"]
      working_directory: work
      store_as: computed.greeting
    - type: run_command
      script: scripts/where.sh
      store_as: computed.where
  on_success: done
"""


def scripted(tmp_path):
    (tmp_path / "scripts").mkdir()
    (tmp_path / "work").mkdir()
    (tmp_path / "scripts" / "greet.py").write_text(
        "import os, sys\nprint('  hello ' + ' | '.join(sys.argv[1:]) + ' in ' + os.path.basename(os.getcwd()) + '\\n')\n")
    (tmp_path / "scripts" / "where.sh").write_text("echo \"bash $BASH_VERSION\" | cut -c1-4\n")
    write(tmp_path, workflow(SCRIPTED, initial_state="initial_state: {computed: {who: world}}\n"))


def test_run_command_in_a_v8_file_stores_the_trimmed_stdout(tmp_path):
    scripted(tmp_path)
    done = cli("run", "workflow.yaml", "--ephemeral", "--format", "json", cwd=tmp_path)
    result = json.loads(done.stdout)
    assert (done.returncode, result["ending"]) == (0, "done"), done.stdout + done.stderr
    assert result["state"]["computed"]["greeting"] == "hello world | two words in work"
    assert result["state"]["computed"]["where"] == "bash"  # .sh ran with bash (interpreter auto)


def test_a_failing_script_goes_to_default_error_with_its_output(tmp_path):
    scripted(tmp_path)
    (tmp_path / "scripts" / "greet.py").write_text("import sys\nsys.exit('no greeting today')\n")
    done = cli("run", "workflow.yaml", "--ephemeral", "--format", "json", cwd=tmp_path)
    result = json.loads(done.stdout)
    assert (done.returncode, result["ending"]) == (1, "failed")
    assert "exited with code 1" in result["message"] and "no greeting today" in result["message"]


INSTALL = """\
start:
  type: conditional
  condition: {type: tool_check, tool: wfexec-demo-tool, capability: available}
  on_true: done
  on_false: install
install:
  type: action
  consequences:
    - type: install_tool
      tool: wfexec-demo-tool
      install_command: "mkdir -p bin && printf '#!/bin/sh\\necho demo\\n' > bin/wfexec-demo-tool && chmod +x bin/wfexec-demo-tool"
    - type: run_command
      command: [wfexec-demo-tool]
      store_as: computed.said
  on_success: done
"""


def test_install_tool_runs_its_command_then_finds_the_tool_and_skips_when_present(tmp_path):
    write(tmp_path, workflow(INSTALL))
    env = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    done = cli("run", "workflow.yaml", "--ephemeral", "--format", "json", cwd=tmp_path, env=env)
    result = json.loads(done.stdout)
    assert (done.returncode, result["ending"]) == (0, "done"), done.stdout + done.stderr
    assert result["state"]["computed"]["install_result"]["status"] == "installed"
    assert result["state"]["computed"]["said"] == "demo"
    assert os.stat(tmp_path / "bin" / "wfexec-demo-tool").st_mode & stat.S_IXUSR
    # Present now: the conditional routes past the install (and install_tool itself would skip).
    again = cli("run", "workflow.yaml", "--ephemeral", "--format", "json", cwd=tmp_path, env=env)
    assert json.loads(again.stdout)["state"]["history"][0]["outcome"]["branch"] == "true"
    skip = workflow(INSTALL.replace("  on_false: install", "  on_false: install\n  on_true: install", 1)
                    .replace("  on_true: done\n", "", 1))
    write(tmp_path, skip)
    skipped = json.loads(cli("run", "workflow.yaml", "--ephemeral", "--format", "json", cwd=tmp_path,
                                    env=env).stdout)
    assert skipped["state"]["computed"]["install_result"]["status"] == "skipped"


def test_an_install_that_does_not_provide_the_tool_fails_to_default_error(tmp_path):
    write(tmp_path, workflow(INSTALL.replace("chmod +x bin/wfexec-demo-tool", "true")
                             .replace("bin/wfexec-demo-tool &&", "bin/other-name &&")))
    env = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    done = cli("run", "workflow.yaml", "--ephemeral", "--format", "json", cwd=tmp_path, env=env)
    result = json.loads(done.stdout)
    assert (done.returncode, result["ending"]) == (1, "failed")
    assert "wfexec-demo-tool is not available after installation" in result["message"]


SOURCES = """\
start:
  type: conditional
  condition: {type: source_check, source_id: "${computed.source_id}", aspect: exists}
  on_true: cloned
  on_false: other
cloned:
  type: conditional
  condition: {type: source_check, source_id: "${computed.source_id}", aspect: cloned}
  on_true: done
  on_false: not_cloned
not_cloned:
  type: ending
  outcome: indeterminate
  message: "listed, not cloned"
"""


@pytest.mark.parametrize("source_id, cloned, ending", [
    ("docs", True, "done"), ("docs", False, "not_cloned"), ("blog", True, "other")])
def test_source_check_exists_and_cloned(tmp_path, source_id, cloned, ending):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "config.yaml").write_text("sources:\n  - {id: docs, type: git}\n")
    if cloned:
        (tmp_path / ".source" / source_id).mkdir(parents=True)
    write(tmp_path, workflow(SOURCES, initial_state=f"initial_state: {{computed: {{source_id: {source_id}}}}}\n"))
    assert run_json(tmp_path)[1]["ending"] == ending


def test_source_check_without_an_aspect_is_an_error_at_its_line(tmp_path):
    text = workflow(SOURCES.replace(", aspect: exists}", "}"))
    write(tmp_path, text)
    errors = errors_of(tmp_path)
    assert any("missing required field 'aspect'" in e["message"]
               and e["line"] == line_of(text, 'source_id: "${computed.source_id}"}') for e in errors), errors


INLINE = """\
start:
  type: action
  consequences:
    - type: inline
      description: Normalise the title
      pseudocode: |
        title = state.computed.title.strip().lower()
        state.computed.slug = title.replace(" ", "-")
        return title
      state_reads: [computed.title]
      state_writes: [computed.slug]
      store_as: computed.clean_title
  on_success: done
"""


def test_inline_asks_the_backend_and_applies_only_the_declared_writes(tmp_path):
    (tmp_path / "llm.py").write_text(textwrap.dedent("""\
        import json, sys
        prompt = sys.stdin.read()
        assert "Normalise the title" in prompt and "state.computed.slug" in prompt
        print(json.dumps({"result": "my title", "writes": {"computed.slug": "my-title"}}))
        """))
    write(tmp_path, workflow(INLINE, initial_state="initial_state: {computed: {title: '  My Title '}}\n"))
    done = cli("run", "workflow.yaml", "--ephemeral", "--format", "json",
                      "--backend", f"command:{sys.executable} llm.py", cwd=tmp_path)
    result = json.loads(done.stdout)
    assert (done.returncode, result["ending"]) == (0, "done"), done.stdout + done.stderr
    assert result["state"]["computed"]["slug"] == "my-title"
    assert result["state"]["computed"]["clean_title"] == "my title"


def test_inline_needs_a_description(tmp_path):
    text = workflow(INLINE.replace("      description: Normalise the title\n", ""))
    write(tmp_path, text)
    errors = errors_of(tmp_path)
    assert any("missing required field 'description'" in e["message"] and e["line"] == line_of(text, "type: inline")
               for e in errors), errors


TOUR = """\
start:
  type: conditional
  condition:
    all:
      - {type: tool_check, tool: sh, capability: available}
      - {type: tool_check, tool: git, capability: version_gte, args: {min_version: "1.0"}}
      - {type: python_module_available, module: json}
      - {type: path_check, path: notes.md, check: contains_text, args: {pattern: "v8"}}
      - {type: fetch_check, from: computed.page, aspect: has_content}
      - "computed.page.status == 200"
  on_true: work
  on_false: other
work:
  type: action
  consequences:
    - {type: create_checkpoint, name: before}
    - {type: local_file_ops, operation: mkdir, path: out/deep}
    - {type: local_file_ops, operation: write, path: out/deep/page.md, content: "${computed.page.content}"}
    - {type: local_file_ops, operation: read, path: out/deep/page.md, store_as: computed.read_back}
    - {type: compute_hash, from: computed.read_back, store_as: computed.hash}
    - {type: compute, expression: "computed.read_back.length", store_as: computed.size}
    - {type: evaluate, expression: "computed.size > 3", set_flag: big}
    - {type: set_flag, flag: touched, value: true}
    - {type: set_timestamp, store_as: computed.at}
    - {type: mutate_state, operation: set, field: computed.scratch, value: 1}
    - {type: rollback_checkpoint, name: before}
    - {type: mutate_state, operation: merge, field: computed.page, value: {seen: true}}
    - {type: mutate_state, operation: append, field: computed.seen, value: "${computed.page.url}"}
    - {type: mutate_state, operation: clear, field: computed.page.content}
    - {type: local_file_ops, operation: delete, path: out/deep/page.md}
    - {type: display, format: table, headers: [name, size], content: [[page, 7]], title: Pages}
    - {type: evaluate_keywords, input: "please find the docs", keyword_sets: {build: [create], navigate: [find]},
       store_as: computed.keyword}
    - type: parse_intent_flags
      input: "find the docs"
      flag_definitions:
        wants_query: {keywords: [find], negative_keywords: [build]}
        wants_creation: {keywords: [build], negative_keywords: [find]}
      store_as: computed.intent_flags
    - type: match_3vl_rules
      flags: "${computed.intent_flags}"
      rules:
        - {name: navigate, conditions: {wants_query: T}, action: navigate_skill}
        - {name: build, conditions: {wants_creation: T}, action: build_skill}
      store_as: computed.match
  on_success: done
"""


def test_a_tour_of_the_catalogue_runs_as_v8_writes_it(tmp_path):
    (tmp_path / "notes.md").write_text("Blueprint v8 notes\n")
    state = "initial_state:\n  computed:\n    page: {status: 200, content: 'hello v8', url: 'https://example.org'}\n"
    write(tmp_path, workflow(TOUR, initial_state=state))
    done, result = run_json(tmp_path)
    assert (done.returncode, result["ending"]) == (0, "done"), result
    state = result["state"]
    computed = state["computed"]
    # The rollback undid what came between it and the checkpoint (the file it wrote stays, then is deleted).
    assert "scratch" not in computed and "read_back" not in computed and "touched" not in state["flags"]
    assert (tmp_path / "out" / "deep").is_dir() and not (tmp_path / "out" / "deep" / "page.md").exists()
    assert computed["page"] == {"status": 200, "content": None, "url": "https://example.org", "seen": True}
    assert computed["seen"] == ["https://example.org"]
    assert computed["keyword"] == "navigate"
    assert computed["intent_flags"] == {"wants_query": "T", "wants_creation": "F"}
    assert computed["match"]["clear_winner"] is True and computed["match"]["winner"]["name"] == "navigate"


def test_the_tour_computes_before_the_rollback(tmp_path):
    (tmp_path / "notes.md").write_text("Blueprint v8 notes\n")
    state = "initial_state:\n  computed:\n    page: {status: 200, content: 'hello v8', url: 'https://example.org'}\n"
    write(tmp_path, workflow(TOUR.replace("    - {type: rollback_checkpoint, name: before}\n", ""), initial_state=state))
    done, result = run_json(tmp_path)
    computed, flags = result["state"]["computed"], result["state"]["flags"]
    assert computed["read_back"] == "hello v8" and computed["size"] == 8 and flags["big"] is True
    import hashlib

    assert computed["hash"] == "sha256:" + hashlib.sha256(b"hello v8").hexdigest()
    assert computed["at"].endswith("Z") and flags["touched"] is True


def test_the_tour_stops_where_a_precondition_is_false(tmp_path):
    (tmp_path / "notes.md").write_text("no version named here\n")
    state = "initial_state:\n  computed:\n    page: {status: 200, content: 'hello v8', url: 'https://example.org'}\n"
    write(tmp_path, workflow(TOUR, initial_state=state))
    assert run_json(tmp_path)[1]["ending"] == "other"


# -- intent detection as blueprint-lib's reusable workflow does it --------------------------------------
# A parent's inputs (`request`, `flag_words`, `rules`) sit at the top of state, beside results of the same
# names in `computed`: in a v8 file a bare name reads the top level first. Ranking is v8's (hard matches,
# then fewer soft ones, then fewer conditions), and each candidate carries its `rule`.

INTENT = """\
name: route-request
version: "1.0.0"
start_node: parse
default_error: fallback
initial_state:
  computed: {flag_words: null, rules: null, choice: null}
nodes:
  parse:
    type: action
    consequences:
      - {type: parse_intent_flags, input: "${request}", flag_definitions: "${flag_words}", store_as: computed.flags}
      - {type: match_3vl_rules, flags: "${computed.flags}", rules: "${rules}", store_as: computed.ranked}
    on_success: clear
  clear:
    type: conditional
    condition: "computed.ranked.clear_winner"
    on_true: take_winner
    on_false: ask
  take_winner:
    type: action
    consequences: [{type: mutate_state, operation: set, field: computed.choice, value: "${computed.ranked.winner.action}"}]
    on_success: chosen
  ask:
    type: user_prompt
    prompt:
      question: Which did you mean?
      header: Clarify
      options_from_state: computed.ranked.top_candidates
      options: {id: rule.name, label: "rule.name + ' (' + hard_matches + ')'", description: rule.description}
    on_response:
      selected:
        consequences: [{type: mutate_state, operation: set, field: computed.choice, value: "${user_responses.ask.selected.rule.action}"}]
        next_node: chosen
  fallback:
    type: ending
    outcome: error
    message: "failed at ${current_node}: ${computed.last_error}"
  chosen:
    type: ending
    outcome: success
    message: "${computed.choice}"
    summary: {tied: "${computed.ranked.tied_candidates.map(c => c.name)}"}
"""
FLAG_WORDS = ('flag_words={"make": {"keywords": ["build", "new"]}, "look": {"keywords": ["find", "search"]}, '
              '"fix": {"keywords": ["fix"], "negative_keywords": ["new"]}}')
RULES = ('rules=[{"name": "build", "description": "Make one", "conditions": {"make": "T", "look": "U"}, '
         '"action": "go_build"}, {"name": "find", "description": "Look one up", "conditions": {"look": "T"}, '
         '"action": "go_find"}, {"name": "repair", "description": "Fix one", "conditions": {"fix": "T", "make": "F"},'
         ' "action": "go_fix"}]')


def route(tmp_path, request, *answers):
    write(tmp_path, INTENT)
    return run_json(tmp_path, "--set", f"request={request}", "--set", FLAG_WORDS, "--set", RULES,
                    *[a for answer in answers for a in ("--answer", f"ask={answer}")])


def test_a_clear_winner_is_the_rule_and_a_wildcard_condition_does_not_count(tmp_path):
    done, result = route(tmp_path, "build a new page")
    assert (done.returncode, result["ending"], result["message"]) == (0, "chosen", "go_build")
    ranked = result["state"]["computed"]["ranked"]
    # build: make T hard, look U in the rule is a wildcard (1 condition); repair: make F against T excludes it
    assert [(c["name"], c["hard_matches"], c["soft_matches"], c["effective_conditions"])
            for c in ranked["all_candidates"]] == [("build", 1, 0, 1), ("find", 0, 1, 1)]
    assert ranked["winner"] == json.loads(RULES.split("=", 1)[1])[0]  # the rule as written
    assert ranked["tied_candidates"] == []


def test_a_tie_on_all_three_numbers_asks_and_the_answer_carries_the_candidates_rule(tmp_path):
    done, result = route(tmp_path, "find and build", "find")
    ranked = result["state"]["computed"]["ranked"]
    assert ranked["clear_winner"] is False and [c["name"] for c in ranked["tied_candidates"]] == ["build", "find"]
    assert (result["ending"], result["message"], result["summary"]) == ("chosen", "go_find",
                                                                        {"tied": ["build", "find"]})


def test_top_level_inputs_win_over_results_of_the_same_name(tmp_path):
    _, result = route(tmp_path, "please fix it")
    assert result["message"] == "go_fix"  # ${flag_words} and ${rules} read the top level, not computed's nulls
    # with no input at the top level the name reads computed's null, and the failure goes to default_error
    done, result = run_json(tmp_path, "--set", "request=please fix it", "--set", RULES)
    assert (done.returncode, result["ending"]) == (1, "fallback")
    assert result["message"].startswith("failed at parse: parse_intent_flags failed: `flag_definitions` must be")
