"""Blueprint-lib v3 files (hiivmind-blueprint's own skills, pinning v3.0.0): the fields v3's schema leaves open
and its files use, run as their authors meant. Our fixtures are shaped like those files; none is copied."""

from __future__ import annotations

import json

import pytest

from conftest import wfexec_in_process as cli

# A v3 skill's loader: a menu built from state that also takes a typed path, a text-only question with one
# handler, answers read as `response`, error endings with a `code`, and a top-level `composes:`.
LOADER = """\
name: v3-loader
version: 1.0.0
definitions:
  source: "hiivmind/hiivmind-blueprint-lib"
  version: "v3.0.0"
composes: [load-skill, safe-write-files]
start_node: pick_skill
initial_state:
  found_skills: [skills/a/SKILL.md, skills/b/SKILL.md]
  loaded: {skill_path: null}
nodes:
  pick_skill:
    type: user_prompt
    prompt:
      question: "Which skill would you like to convert?"
      header: "Select"
      options_from_state: found_skills
      allow_other: true
      other_label: "Enter different path"
    on_response:
      selected:
        consequence:
          - {type: mutate_state, operation: set, field: loaded.skill_path, value: "${response.value}"}
        next_node: check_path
      other:
        next_node: ask_path
  ask_path:
    type: user_prompt
    prompt:
      question: "Please provide the path to the SKILL.md file:"
      header: "Path"
      mode: text_input
      placeholder: "path/to/SKILL.md"
    on_response:
      provided:
        consequence:
          - {type: mutate_state, operation: set, field: loaded.skill_path, value: "${response.text}"}
        next_node: check_path
  check_path:
    type: conditional
    condition: {type: evaluate_expression, expression: "loaded.skill_path.endsWith('SKILL.md')"}
    branches: {on_true: success, on_false: error_not_a_skill}
endings:
  success: {type: success, message: "Loaded ${loaded.skill_path}"}
  error_not_a_skill:
    type: error
    code: "NOT_A_SKILL"
    message: "${loaded.skill_path} is not a SKILL.md"
"""


@pytest.fixture
def loader(tmp_path):
    path = tmp_path / "workflow.yaml"
    path.write_text(LOADER)
    return path


def run(path, *answers):
    args = [a for answer in answers for a in ("--answer", answer)]
    ran = cli("run", path, "--ephemeral", "--non-interactive", "--format", "json", *args)
    assert "Traceback" not in ran.stderr
    return ran, json.loads(ran.stdout) if ran.stdout.strip().startswith("{") else None


def test_the_fields_v3_leaves_open_validate_strictly(loader):
    checked = cli("validate", "--strict", loader)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "warning" not in checked.stdout + checked.stderr


def test_a_choice_from_state_is_read_as_response_value(loader):
    ran, result = run(loader, "pick_skill=skills/b/SKILL.md")
    assert ran.returncode == 0, ran.stderr
    assert result["message"] == "Loaded skills/b/SKILL.md"


def test_free_text_beside_the_options_goes_to_other_and_a_text_question_to_its_one_handler(loader):
    ran, result = run(loader, "pick_skill=my/own/SKILL.md", "ask_path=elsewhere/SKILL.md")
    assert ran.returncode == 0, ran.stderr
    assert result["message"] == "Loaded elsewhere/SKILL.md"
    assert result["state"]["user_responses"]["ask_path"]["text"] == "elsewhere/SKILL.md"


def test_an_ending_code_is_in_the_json_result(loader):
    ran, result = run(loader, "pick_skill=other", "ask_path=notes.txt")
    assert ran.returncode == 1
    assert result["ending"] == "error_not_a_skill" and result["code"] == "NOT_A_SKILL"
    assert result["message"] == "notes.txt is not a SKILL.md"


def test_a_text_question_waits_saying_it_takes_free_text(loader, tmp_path):
    ran = cli("run", loader, "--store", tmp_path / "runs.db", "--non-interactive",
                     "--answer", "pick_skill=other")
    assert ran.returncode == 3
    assert "node 'ask_path' asks: Please provide the path to the SKILL.md file:" in ran.stderr
    assert "--answer ask_path=<text>" in ran.stderr


# A v1-era gateway: its command's markdown loads the intent-mapping.yaml beside the workflow into state, and the
# workflow reads `${intent_flags}` and `${intent_rules}` with no `imports:`.
GATEWAY = """\
name: gateway
version: "1.0.0"
initial_state: {arguments: null, flags: {has_arguments: false}, computed: {}}
start_node: parse_intent
nodes:
  parse_intent:
    type: action
    actions:
      - {type: parse_intent_flags, input: "${arguments}", flag_definitions: "${intent_flags}",
         store_as: computed.intent_flags}
      - {type: match_3vl_rules, flags: "${computed.intent_flags}", rules: "${intent_rules}",
         store_as: computed.intent_matches}
    on_success: routed
    on_failure: failed
endings:
  routed: {type: success, message: "${computed.intent_matches.winner.action}"}
  failed: {type: error, message: "${computed.last_error}"}
"""
MAPPING = """\
intent_flags:
  has_init: {keywords: [init, setup]}
  has_help: {keywords: [help]}
intent_rules:
  - {name: init, conditions: {has_init: T}, action: run_init}
  - {name: help, conditions: {has_help: T, has_init: F}, action: show_help}
"""


def test_a_v1_gateway_reads_the_intent_mapping_its_launcher_loads(tmp_path):
    folder = tmp_path / "commands" / "gateway"
    folder.mkdir(parents=True)
    (folder / "workflow.yaml").write_text(GATEWAY)
    (folder / "intent-mapping.yaml").write_text(MAPPING)
    checked = cli("validate", folder)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    said = checked.stdout + checked.stderr
    assert "workflow.yaml:9:77: warning: `intent_flags` comes from intent-mapping.yaml beside the workflow, which " \
        "wfexec loads into state as a v1 launcher does" in said
    assert "never written" not in said and "nothing in the workflow writes" not in said
    ran = cli("run", folder, "--ephemeral", "--set", "arguments=please setup the project")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.strip() == "run_init"


# A v3 subflow's backup step: bash text beside `interpreter: bash` (a variable, `$(...)`, several lines), what it
# echoes read back through `store_in`, and a path from state that a shell would take for code.
BACKUP = """\
name: backup-file
version: 1.0.0
definitions: {source: "hiivmind/hiivmind-blueprint-lib", version: "v3.0.0"}
start_node: create_backup
initial_state: {backup_path: null}
nodes:
  create_backup:
    type: action
    actions:
      - type: run_command
        interpreter: bash
        command: |
          backup_path="${input.target_path}.bak.$(echo 1 | tr 1 7)"
          cp "${input.target_path}" "$backup_path"
          echo "$backup_path"
        store_in: backup_path
    on_success: backed_up
    on_failure: failed
endings:
  backed_up: {type: success, message: "Backed up to ${backup_path}"}
  failed: {type: error, message: "${computed.last_error}"}
"""


def test_bash_text_beside_interpreter_bash_runs_in_bash_with_state_values_as_data(tmp_path):
    path = tmp_path / "workflow.yaml"
    path.write_text(BACKUP.replace("${input.target_path}", "${target}"))
    target = "notes; touch pwned.txt.md"  # as code, a shell would create pwned.txt.md
    (tmp_path / target).write_text("original")
    ran = cli("run", path, "--ephemeral", "--format", "json", "--set", f"target={target}", cwd=tmp_path)
    assert "Traceback" not in ran.stderr
    assert ran.returncode == 0, ran.stdout + ran.stderr
    result = json.loads(ran.stdout)
    assert result["message"] == f"Backed up to {target}.bak.7"  # the trimmed stdout, as blueprint-lib v3 kept it
    assert (tmp_path / f"{target}.bak.7").read_text() == "original"
    assert not (tmp_path / "pwned.txt.md").exists()
