"""`input_schema` is JSON Schema: every keyword works, inputs are checked with jsonschema, errors name the input."""

from __future__ import annotations

import json

import pytest

import wfexec
from wfexec.language.inputs import InputError

WORKFLOW = """
    name: t
    version: 1
    start_node: work
    input_schema:
      url: {type: string, pattern: "^https://", required: true, description: the repository}
      mode: {enum: [quick, deep], default: quick}
      depth: {type: integer, minimum: 1, maximum: 5, default: 2}
      sources:
        type: array
        items:
          type: object
          properties:
            id: {type: string}
            branch: {type: string, default: main}
          required: [id]
        default: []
    nodes:
      work: {type: action, actions: [], on_success: done}
    endings:
      done: {type: success, message: ok}
"""


def test_valid_inputs_get_their_defaults_and_land_in_state(run_yaml):
    result, _ = run_yaml(WORKFLOW, inputs={"url": "https://x", "sources": [{"id": "a"}]})
    assert {k: result.state[k] for k in ("url", "mode", "depth", "sources")} == {
        "url": "https://x", "mode": "quick", "depth": 2, "sources": [{"id": "a"}]}


@pytest.mark.parametrize("inputs, says", [
    ({"url": "http://x"}, "input 'url': 'http://x' does not match '^https://'"),
    ({"url": "https://x", "mode": "fast"}, "input 'mode': 'fast' is not one of ['quick', 'deep']"),
    ({"url": "https://x", "depth": 9}, "input 'depth': 9 is greater than the maximum of 5"),
    ({"url": "https://x", "sources": [{"id": "a"}, {"branch": "dev"}]},
     "input 'sources[1]': 'id' is a required property"),
    ({"url": "https://x", "sources": [{"id": 3}]}, "input 'sources[0].id': 3 is not of type 'string'"),
    ({}, "missing required input 'url' (the repository): pass inputs={'url': VALUE}"),  # the API's words
    ({"url": "https://x", "dpth": 1}, "unknown input 'dpth' (did you mean 'depth'?)"),
])
def test_an_input_that_does_not_fit_is_refused_naming_it(run_yaml, inputs, says):
    with pytest.raises(InputError) as caught:
        run_yaml(WORKFLOW, inputs=inputs)
    assert says in str(caught.value)


def test_every_misfit_is_listed(run_yaml):
    with pytest.raises(InputError) as caught:
        run_yaml(WORKFLOW, inputs={"url": "ftp://x", "mode": "fast"})
    assert str(caught.value).count("input '") == 2


def test_the_command_line_reads_values_as_their_declared_type_and_exits_2_on_a_misfit(cli, write_workflow, tmp_path):
    import textwrap

    path = write_workflow(WORKFLOW.replace("      done: {type: success, message: ok}",
                                           "      done: {type: success, message: '${depth + 1} ${mode}'}"))
    done = cli("run", "--ephemeral", path, "--input", "url=https://x", "--input", "depth=4", cwd=tmp_path)
    assert (done.returncode, done.stdout.strip()) == (0, "5 quick"), done.stderr
    bad = cli("run", "--ephemeral", path, "--input", "url=https://x", "--input", "mode=fast", cwd=tmp_path)
    assert bad.returncode == 2
    assert "input 'mode': 'fast' is not one of ['quick', 'deep']" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_one_json_schema_object_works_too(run_yaml):
    schema = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
              "required": ["tags"]}
    text = WORKFLOW.split("    input_schema:")[0] + "    input_schema: " + json.dumps(schema) + "\n" + \
        "    nodes:" + WORKFLOW.split("    nodes:")[1]
    result, _ = run_yaml(text, inputs={"tags": ["a"]})
    assert result.state["tags"] == ["a"]
    with pytest.raises(InputError, match=r"input 'tags': \[\] should be non-empty"):
        run_yaml(text, inputs={"tags": []})


def test_a_malformed_input_schema_or_default_is_a_validation_error(write_workflow):
    path = write_workflow(WORKFLOW.replace("minimum: 1, maximum: 5, default: 2", "minimum: one, default: 2")
                          .replace("enum: [quick, deep], default: quick", "enum: [quick, deep], default: slow"))
    diagnostics = wfexec.validate(path)
    found = {(d.yaml_path, d.code) for d in diagnostics}
    assert ("input_schema.depth.minimum", "input-schema") in found, [d.format() for d in diagnostics]
    path = write_workflow(WORKFLOW.replace("enum: [quick, deep], default: quick", "enum: [quick, deep], default: slow"))
    [error] = wfexec.validate(path)
    assert error.yaml_path == "input_schema.mode.default"
    assert "the default of input 'mode' does not fit its schema: 'slow' is not one of ['quick', 'deep']" in error.message


# Blueprint-lib v3 writes each input as {type, required, default, description}, `type` one of string, number,
# boolean, object, array or any; hiivmind-blueprint-ops' discover-and-target gives an optional string `default: null`.
V3_INPUTS = """
    name: t
    version: 1
    start_node: work
    input_schema:
      explicit_target: {type: string, enum: [skills, gateway, null], required: false, default: null}
      extra: {type: any, required: false}
    nodes:
      work: {type: action, actions: [], on_success: done}
    endings:
      done: {type: success, message: "${explicit_target ?? 'auto'} ${JSON.stringify(extra ?? null)}"}
"""


def test_blueprint_v3_inputs_take_any_type_and_a_null_default(cli, write_workflow, tmp_path):
    path = write_workflow(V3_INPUTS)
    checked = cli("validate", "--strict", path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    default = cli("run", "--ephemeral", path, cwd=tmp_path)
    assert (default.returncode, default.stdout.strip()) == (0, "auto null"), default.stderr
    given = cli("run", "--ephemeral", path, "--input", "explicit_target=gateway", "--input", "extra=hello",
                cwd=tmp_path)
    assert (given.returncode, given.stdout.strip()) == (0, 'gateway "hello"'), given.stderr
    bad = cli("run", "--ephemeral", path, "--input", "explicit_target=other", cwd=tmp_path)
    assert bad.returncode == 2 and "input 'explicit_target': 'other' is not one of" in bad.stderr
