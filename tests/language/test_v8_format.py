"""Blueprint-lib v8 workflows, first part (issue 16): recognised by shape and read as written — ending nodes,
`consequences:`, flat and three-valued conditionals, `default_error`, the condition and handler shorthands — with
diagnostics at what the author wrote. Fixtures of our own for the behaviours of blueprint-lib's
`tests/fixtures/workflows`, `endings` and their negative cases."""

from __future__ import annotations

import json

import pytest

from conftest import wfexec_in_process as cli

V8 = """\
name: v8-demo
version: "1.0.0"
description: A v8 workflow.
start_node: ack
default_error: error_generic
nodes:
  ack:
    type: action
    consequences:
      - {type: set_state, field: computed.count, value: 2}
    on_success: check
  check:
    type: conditional
    condition: "computed.count > 1"
    on_true: both
    on_false: low
  both:
    type: conditional
    condition: {all: ["computed.count > 0", {type: state_check, field: computed.count, operator: equals, value: 2}]}
    on_true: ask
    on_false: low
  ask:
    type: user_prompt
    prompt:
      question: Ship it?
      header: Ship
      options:
        - {id: yes_ship, label: "Yes"}
        - {id: no_wait, label: "No"}
    on_response:
      yes_ship: done
      no_wait:
        consequences: [{type: set_state, field: computed.waited, value: true}]
        next_node: quiet
  low:
    type: ending
    outcome: indeterminate
    message: "Low: ${computed.count}"
  done:
    type: ending
    outcome: success
    message: "Shipped ${computed.count}."
    consequences:
      - {type: set_state, field: computed.shipped, value: true}
  quiet:
    type: ending
    outcome: cancelled
    message: "Not shown."
    behavior: {type: silent}
  error_generic:
    type: ending
    outcome: error
    message: "Error: ${computed.last_error}"
"""


def write(tmp_path, text):
    (tmp_path / "workflow.yaml").write_text(text)
    return tmp_path / "workflow.yaml"


def run_json(tmp_path, *args):
    done = cli("run", "workflow.yaml", "--ephemeral", "--format", "json", *args, cwd=tmp_path)
    return done, json.loads(done.stdout)


def test_a_v8_workflow_validates_and_runs_as_written(tmp_path):
    write(tmp_path, V8)
    checked = cli("validate", "workflow.yaml", "--format", "json", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout
    done, result = run_json(tmp_path, "--answer", "ask=yes_ship")
    assert (done.returncode, result["ending"], result["message"]) == (0, "done", "Shipped 2.")
    assert result["state"]["computed"]["shipped"] is True  # the ending's consequences ran


def test_a_silent_ending_prints_no_message_and_handler_consequences_run(tmp_path):
    write(tmp_path, V8)
    done = cli("run", "workflow.yaml", "--ephemeral", "--answer", "ask=no_wait", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, "")  # cancelled: exit 1, and silent
    _, result = run_json(tmp_path, "--answer", "ask=no_wait")
    assert result["ending"] == "quiet" and result["state"]["computed"]["waited"] is True


def test_indeterminate_is_a_failure_in_its_own_category(tmp_path):
    write(tmp_path, V8.replace("value: 2}\n    on_success", "value: 0}\n    on_success"))
    done, result = run_json(tmp_path)
    assert (done.returncode, result["ending"], result["type"]) == (1, "low", "failure")
    assert result["message"] == "Low: 0"


UNREADABLE = 'condition: "JSON.parse(computed.count + \'}\') > 1"'


def test_a_condition_that_cannot_be_evaluated_goes_to_default_error(tmp_path):
    write(tmp_path, V8.replace('condition: "computed.count > 1"', UNREADABLE))
    done, result = run_json(tmp_path)
    assert (result["ending"], result["type"]) == ("error_generic", "error")
    assert "JSON" in result["message"]
    assert result["state"]["history"][1]["outcome"]["branch"] == "unknown"


@pytest.mark.parametrize("condition, ending", [
    ("computed.missing.deep == null", "seen"),     # a path below a missing value reads as null …
    ("computed.missing.deep > 1", "low"),          # … so a comparison with it is false, not unknown
    ("missing_namespace.a[0].b === undefined", "seen"),
    ("computed.count.toFixed(0) == '2'", "seen"),  # present values read as ever
])
def test_a_missing_path_reads_as_null(tmp_path, condition, ending):
    text = V8.replace('condition: "computed.count > 1"', f'condition: "{condition}"').replace(
        "    on_true: both\n    on_false: low\n  both:", "    on_true: seen\n    on_false: low\n  both:").replace(
        "  low:\n", "  seen:\n    type: ending\n    outcome: success\n    message: seen\n  low:\n", 1)
    write(tmp_path, text)
    _, result = run_json(tmp_path)
    assert result["ending"] == ending, result


def test_an_explicit_on_unknown_wins_over_default_error(tmp_path):
    text = V8.replace('condition: "computed.count > 1"', UNREADABLE).replace(
        "    on_false: low\n  both:", "    on_false: low\n    on_unknown: low\n  both:")
    write(tmp_path, text)
    _, result = run_json(tmp_path)
    assert result["ending"] == "low"


def test_an_action_without_on_failure_fails_to_default_error(tmp_path):
    text = V8.replace("      - {type: set_state, field: computed.count, value: 2}",
                      "      - {type: read_file, path: missing.txt, store_as: computed.text}")
    write(tmp_path, text)
    _, result = run_json(tmp_path)
    assert result["ending"] == "error_generic" and "missing.txt" in result["message"]


@pytest.mark.parametrize("change, at, words", [
    # an `endings:` block beside ending nodes
    (lambda t: t + "endings:\n  other: {type: success, message: x}\n", "endings:", "writes its endings as nodes"),
    # an ending without an outcome
    (lambda t: t.replace("    outcome: cancelled\n", ""), "  quiet:", "ending node 'quiet' has no `outcome`"),
    # an outcome v8 does not have
    (lambda t: t.replace("outcome: cancelled", "outcome: postponed"), "    outcome: postponed",
     "`outcome` 'postponed' is not one of success, failure, error, cancelled, indeterminate"),
    # routing fields on an ending
    (lambda t: t.replace("    behavior: {type: silent}", "    on_success: done"), "    on_success: done",
     "unknown field 'on_success'"),
])
def test_malformed_v8_endings_are_errors_at_the_line_written(tmp_path, change, at, words):
    text = change(V8)
    write(tmp_path, text)
    line = text.splitlines().index(at) + 1
    done = cli("validate", "workflow.yaml", "--format", "json", cwd=tmp_path)
    assert done.returncode == 2
    errors = [d for d in json.loads(done.stdout)["diagnostics"] if d["severity"] == "error"]
    assert any(words in d["message"] and d["line"] == line for d in errors), errors


# blueprint-lib v7: v8's shapes (default_error, `consequences:`, flat conditionals, handler shorthands) with the
# endings still in an `endings:` block, as v7's own examples write them.
V7 = """\
name: v7-release
version: "1.0"
default_error: error_generic
start_node: check
initial_state: {computed: {tag: v1}}
nodes:
  check:
    type: conditional
    condition: "computed.tag.startsWith('v')"
    on_true: tag
    on_false: error_bad_tag
  tag:
    type: action
    consequences:
      - {type: set_state, field: computed.tagged, value: true}
      - {type: read_file, path: "${computed.notes}", store_as: computed.text}
    on_success: ask
  ask:
    type: user_prompt
    prompt:
      question: Publish?
      header: Publish
      options:
        - {id: yes_pub, label: "Yes"}
        - {id: no_pub, label: "No"}
    on_response:
      yes_pub: published
      no_pub:
        consequences: [{type: set_state, field: computed.skipped, value: true}]
        next_node: cancelled
endings:
  published: {type: success, message: "Published ${computed.tag}"}
  cancelled: {type: cancelled, message: "Not published"}
  error_bad_tag: {type: error, message: "bad tag"}
  error_generic: {type: error, message: "Unexpected failure at ${current_node}: ${computed.last_error}"}
"""


def test_a_v7_workflow_with_an_endings_block_validates_and_runs(tmp_path):
    write(tmp_path, V7.replace('"${computed.notes}"', "notes.txt"))
    (tmp_path / "notes.txt").write_text("v1 notes")
    assert cli("validate", "workflow.yaml", "--strict", cwd=tmp_path).returncode == 0
    done, result = run_json(tmp_path, "--answer", "ask=no_pub")
    assert done.returncode == 1 and result["ending"] == "cancelled" and result["state"]["computed"]["skipped"]
    done, result = run_json(tmp_path, "--answer", "ask=yes_pub")
    assert done.returncode == 0 and result["message"] == "Published v1"


def test_a_v7_action_without_on_failure_fails_to_default_error_in_the_endings_block(tmp_path):
    write(tmp_path, V7.replace('"${computed.notes}"', "missing.txt"))
    done, result = run_json(tmp_path)
    assert result["ending"] == "error_generic"
    assert result["message"].startswith("Unexpected failure at tag: read_file failed:")


def test_the_seed_and_v3_formats_are_untouched(tmp_path):
    done = cli("run", "skills/quickstart", "--ephemeral", "--answer", "ask_mood=plain")
    assert done.returncode == 0 and done.stdout.startswith("Hello, world")


RESTART = """\
name: restart-demo
version: "1"
start_node: intro
default_error: failed
initial_state:
  computed: {tries: 0}
nodes:
  intro:
    type: action
    consequences: [{type: mutate_state, operation: set, field: computed.seen, value: true}]
    on_success: ask
  ask:
    type: user_prompt
    prompt:
      question: Pick
      header: Pick
      options: [{id: good, label: Good}, {id: bad, label: Bad}]
    on_response:
      good: finished
      bad: {consequences: [{type: mutate_state, operation: set, field: computed.last, value: bad}], next_node: again}
  again:
    type: ending
    outcome: failure
    message: "Again (${computed.last})."
    consequences: [{type: mutate_state, operation: set, field: flags.cleaned, value: true}]
    behavior: {type: restart, target_node: ask, max_restarts: 2, reset_state: true}
  finished: {type: ending, outcome: success, message: "Done after ${restarts.again} restarts, last=${computed.last}"}
  failed: {type: ending, outcome: error, message: "failed: ${computed.last_error}"}
"""


def test_a_restart_ending_goes_back_to_its_target_until_max_restarts(tmp_path):
    write(tmp_path, RESTART)
    done = cli("run", "workflow.yaml", "--ephemeral", *["--answer", "ask=bad"] * 2, "--answer", "ask=good",
               cwd=tmp_path)
    # each restart shows the ending's message; reset_state put computed back to initial_state (last is gone)
    assert (done.returncode, done.stdout) == (0, "Again (bad).\nAgain (bad).\nDone after 2 restarts, last=\n")
    done, result = run_json(tmp_path, *["--answer", "ask=bad"] * 3)
    assert (done.returncode, result["ending"], result["type"]) == (1, "again", "failure")  # the ending written
    assert result["message"] == "Again (bad)." and result["state"]["restarts"]["again"] == 3
    assert result["state"]["flags"]["cleaned"] is True  # its consequences ran each time it was reached


def test_a_restart_without_reset_keeps_state_and_defaults_to_the_start(tmp_path):
    write(tmp_path, RESTART.replace("target_node: ask, max_restarts: 2, reset_state: true", "max_restarts: 1"))
    done, result = run_json(tmp_path, "--answer", "ask=bad", "--answer", "ask=good")
    assert result["ending"] == "finished" and result["message"] == "Done after 1 restarts, last=bad"
    intro_visits = [h for h in result["state"]["history"] if h["node"] == "intro"]
    assert len(intro_visits) == 2  # back to start_node, which runs again


def test_a_delegate_ending_names_the_skill_to_continue_with(tmp_path):
    write(tmp_path, V8.replace('    message: "Shipped ${computed.count}."\n',
                               '    message: "Shipped ${computed.count}."\n    behavior: {type: delegate, '
                               'skill: release-notes, args: "v${computed.count}", context: {n: "${computed.count}"}}\n'))
    done = cli("run", "workflow.yaml", "--ephemeral", "--answer", "ask=yes_ship", cwd=tmp_path)
    assert done.stdout == "Shipped 2.\nNext: /release-notes v2\n"
    _, result = run_json(tmp_path, "--answer", "ask=yes_ship")
    assert result["delegate"] == {"skill": "release-notes", "args": "v2", "context": {"n": 2}}


def test_a_v8_workflow_may_be_endings_only_and_start_at_one(tmp_path):
    write(tmp_path, 'name: only\nversion: "1"\nstart_node: done\ndefault_error: done\n'
                    'nodes:\n  done: {type: ending, outcome: success, message: "Nothing to do."}\n')
    done = cli("run", "workflow.yaml", "--ephemeral", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "Nothing to do.\n")
    (tmp_path / "old.yaml").write_text('name: old\nversion: "1"\nstart_node: done\nnodes: {}\n'
                                       'endings:\n  done: {type: success, message: "x"}\n')
    assert "`nodes` in workflow needs at least 1 entry" in cli("validate", "old.yaml", cwd=tmp_path).stdout


@pytest.mark.parametrize("behavior, words", [
    ("{type: restart, target_node: nowhere}", "`target_node` names 'nowhere', which is not a node"),
    ("{type: restart, max_restarts: 0}", "at least 1"),
    ("{type: reboot}", "'reboot'; allowed: silent, delegate, restart"),
])
def test_a_malformed_restart_is_an_error_at_its_line(tmp_path, behavior, words):
    text = RESTART.replace("{type: restart, target_node: ask, max_restarts: 2, reset_state: true}", behavior)
    write(tmp_path, text)
    done = cli("validate", "workflow.yaml", "--format", "json", cwd=tmp_path)
    assert done.returncode == 2
    errors = [d for d in json.loads(done.stdout)["diagnostics"] if d["severity"] == "error"]
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "behavior:" in row)
    assert any(words in e["message"] and e["line"] == line for e in errors), errors


FAILS = """\
name: fails-somewhere
version: "2.1.0"
start_node: first
default_error: error_generic
nodes:
  first:
    type: action
    consequences: [{type: mutate_state, operation: set, field: computed.seen, value: "${current_node}"}]
    on_success: read_config
  read_config:
    type: action
    consequences: [{type: local_file_ops, operation: read, path: missing.yaml, store_as: config}]
    on_success: done
  done: {type: ending, outcome: success, message: ok}
  error_generic:
    type: ending
    outcome: error
    message: "Unexpected failure at ${current_node} (after ${previous_node}) in ${workflow_name} ${workflow_version}"
"""


def test_current_node_names_the_node_being_run_and_in_an_ending_the_node_that_failed(tmp_path):
    write(tmp_path, FAILS)
    checked = cli("validate", "workflow.yaml", "--format", "json", cwd=tmp_path)
    assert not [d for d in json.loads(checked.stdout)["diagnostics"] if "current_node" in d["message"]]
    done, result = run_json(tmp_path)
    assert result["ending"] == "error_generic"
    assert result["message"] == "Unexpected failure at read_config (after first) in fails-somewhere 2.1.0"
    assert result["state"]["computed"]["seen"] == "first"
    assert "current_node" not in result["state"]  # read-only: never stored


def test_a_workflow_that_stores_its_own_current_node_reads_its_own(tmp_path):
    write(tmp_path, FAILS.replace("field: computed.seen, value: \"${current_node}\"",
                                  "field: current_node, value: mine"))
    _, result = run_json(tmp_path)
    assert result["message"].startswith("Unexpected failure at mine ")


def test_a_computed_target_that_names_nothing_goes_to_default_error(tmp_path):
    text = FAILS.replace("    on_success: read_config\n", "    on_success: \"${computed.seen}_typo\"\n", 1)
    write(tmp_path, text)
    done, result = run_json(tmp_path)
    assert (done.returncode, result["ending"]) == (1, "error_generic")
    assert result["message"].startswith("Unexpected failure at first ")
    assert result["state"]["computed"]["last_error"] == \
        "first: the target 'first_typo' of on_success is neither a node nor an ending"


def test_a_route_to_nothing_in_a_v8_file_says_endings_are_nodes(tmp_path):
    write(tmp_path, FAILS.replace("    on_success: done\n", "    on_success: zzz\n"))
    done = cli("validate", "workflow.yaml", cwd=tmp_path)
    assert "`on_success` names 'zzz', which is neither a node nor an ending — name a node under `nodes:` " \
           "(an ending is a node with `type: ending`)" in done.stdout
