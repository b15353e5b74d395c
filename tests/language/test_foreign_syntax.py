"""`${…}` that is not JavaScript: the shell's own expansions stay the shell's, and jq or shell idioms where
JavaScript is expected are refused with the JavaScript to write instead (docs/guide/language.md: "Templates, shells
and jq")."""

from __future__ import annotations

import json

import pytest

from conftest import one_action, wfexec_in_process as cli


def test_a_scripts_own_parameter_expansions_reach_the_shell_unchanged(tmp_path):
    script = ('f=notes.tar.gz; name=app-v2; '
              'echo "${f%.*} ${f%%.*} ${name##*-} ${name#app-} ${unset:-fallback} ${#name} ${name:0:3} ${name^^}"')
    path = tmp_path / "workflow.yaml"
    path.write_text(one_action({"type": "run_command", "command": ["bash", "-c", script],
                                "store_as": "computed.out"}))
    ran = cli("run", path, "--ephemeral", "--format", "json")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert json.loads(ran.stdout)["state"]["computed"]["out"]["stdout"] == \
        "notes.tar notes v2 v2 fallback 6 app APP-V2\n"


def test_a_template_inside_shell_code_is_still_refused_beside_them(tmp_path):
    path = tmp_path / "workflow.yaml"
    path.write_text(one_action({"type": "run_command",
                                "command": ["bash", "-c", 'n=a-b; echo "${n##*-} ${computed.value}"']},
                               initial_state={"computed": {"value": "x; touch PWNED"}}))
    ran = cli("run", path, "--ephemeral", cwd=tmp_path)
    assert ran.returncode == 1
    assert "would run a value from state as shell code" in ran.stdout + ran.stderr
    assert not (tmp_path / "PWNED").exists()


SCRIPT_READ_TWO_WAYS = """\
name: two-ways
version: "1"
start_node: tag
initial_state: {format: md}
nodes:
  tag:
    type: action
    actions:
      - type: run_command
        command:
          - bash
          - -c
          - |
            for skill in alpha-one beta-two; do short="${skill##*-}"; echo "has_${short}"; done
            echo "${format:-txt}"
    on_success: done
endings:
  done: {type: success, message: ok}
"""


def test_validate_warns_where_a_scripts_dollar_brace_can_be_read_two_ways(tmp_path):
    path = tmp_path / "workflow.yaml"
    path.write_text(SCRIPT_READ_TWO_WAYS)
    checked = cli("validate", path)
    text = checked.stdout + checked.stderr
    assert checked.returncode == 0, text
    assert "warning: `${short}` is filled in by wfexec from state, where nothing writes `short`, but the script " \
        "sets `short` itself — for the shell's variable write `$${short}`" in text
    assert "warning: this `${format…}` is the shell's own expansion, so the script reads its variable `$format`, " \
        "not the workflow's state `format` — for the state value write a template such as `${format ?? ''}`" in text
    assert "skill" not in text.replace("${skill##*-}", "")  # the loop variable read as the shell's: no warning


@pytest.mark.parametrize("written, said, instead", [
    ("${computed.files | join(', ')}", "a jq-style filter (`| …`) is not JavaScript",
     "`${computed.files.join(', ')}`"),
    ("${computed.skills | map(.name + ': ' + .status) | join('; ')}", "a jq-style filter",
     "`${computed.skills.map(i => i.name + ': ' + i.status).join('; ')}`"),
    ("${computed.files | tojson}", "a jq-style filter", "`${JSON.stringify(computed.files)}`"),
    ("${computed.files | length}", "a jq-style filter", "`${computed.files.length}`"),
    ("${(computed.files || []) | length}", "a jq-style filter", "`${(computed.files || []).length}`"),
    # Parses as JavaScript's bitwise or (0 at run time) unless `fromjson` is known as jq's (hiivmind-blueprint-ops).
    ("${computed.plan_json | fromjson | length}", "a jq-style filter", "`${JSON.parse(computed.plan_json).length}`"),
    ("${computed.count_text | tonumber}", "a jq-style filter", "`${Number(computed.count_text)}`"),
    ("${flags.dry_run:-false}", "`:-` on `flags.dry_run` is shell syntax", "`${flags.dry_run || false}`"),
    ("${input.output_path%.*}", "`%` on `input.output_path` is shell syntax",
     "`${input.output_path.replace(/\\.[^.]*$/, '')}`"),
    ("${starts_with(computed.name, 'hiivmind')}", "`starts_with` is not a function here",
     "`computed.name.startsWith('hiivmind')`"),
])
def test_jq_and_shell_idioms_are_refused_with_the_javascript_to_write(tmp_path, written, said, instead):
    path = tmp_path / "workflow.yaml"
    path.write_text(one_action({"type": "display_message", "message": written},
                               initial_state={"computed": {"files": ["a"], "skills": [], "name": "x"}}))
    checked = cli("validate", path)
    assert checked.returncode == 2
    line = next(line for line in checked.stdout.splitlines() if ": error: " in line)
    assert said in line and f"— in JavaScript: {instead}" in line, line
