"""`wfexec schema`, `wfexec types`, and a fast `--help`."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT, wfexec_cli

HEAVY = ("jsonschema", "jinja2", "questionary", "ruamel", "fastjsonschema")


def test_help_does_not_import_heavy_libraries():
    code = (
        "import sys\n"
        "sys.argv = ['wfexec', '--help']\n"
        "from wfexec import cli\n"
        "try:\n    cli.app()\nexcept SystemExit:\n    pass\n"
        f"print([m for m in sys.modules if m.split('.')[0] in {HEAVY!r}])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout


def test_published_schema_file_is_current():
    printed = wfexec_cli("schema").stdout
    on_disk = (ROOT / "schemas" / "workflow.schema.json").read_text()
    assert printed == on_disk, "schemas/workflow.schema.json is stale: run `wfexec schema -o schemas/workflow.schema.json`"


def test_published_v8_schema_file_is_current():
    printed = wfexec_cli("schema", "--v8").stdout
    on_disk = (ROOT / "schemas" / "workflow-v8.schema.json").read_text()
    assert printed == on_disk, \
        "schemas/workflow-v8.schema.json is stale: run `wfexec schema --v8 -o schemas/workflow-v8.schema.json`"


def test_the_v8_schema_has_every_node_type_composite_and_registered_type(cli):
    schema = json.loads(cli("schema", "--v8", "--plugins").stdout)
    types = json.loads(cli("types", "--format", "json").stdout)
    defs = schema["$defs"]
    for node_type in ("action", "conditional", "user_prompt", "validation_gate", "reference", "states", "ending",
                      "confirm", "gated_action", "goal_seek"):
        assert f"node.{node_type}" in defs
    for entry in types:
        assert f"{entry['kind']}.{entry['name']}" in defs
    assert "endings" not in schema["properties"] and "default_error" in schema["required"]


def test_schema_has_every_node_type_and_registered_type(cli):
    schema = json.loads(cli("schema", "--plugins").stdout)
    types = json.loads(cli("types", "--format", "json").stdout)
    defs = schema["$defs"]
    for node_type in ("action", "conditional", "user_prompt", "validation_gate", "reference", "states"):
        assert f"node.{node_type}" in defs
    for entry in types:
        assert f"{entry['kind']}.{entry['name']}" in defs
    assert set(defs["consequence"]["properties"]["type"]["enum"]) == {t["name"] for t in types
                                                                      if t["kind"] == "consequence"}


def test_schema_validates_the_examples_with_jsonschema():
    import jsonschema

    from wfexec.language.loader import load_file
    from wfexec.language.v8 import is_v8

    classic, v8 = (json.loads((ROOT / "schemas" / name).read_text())
                   for name in ("workflow.schema.json", "workflow-v8.schema.json"))
    paths = sorted((ROOT / "skills").glob("*/workflow.yaml"))
    assert paths
    for path in paths:
        data = load_file(path).data
        jsonschema.validate(data, v8 if is_v8(data) else classic)  # JSON keys are strings, as wfexec reads them


def test_types_text_lists_docs_and_required_parameters():
    text = wfexec_cli("types", "--kind", "consequence").stdout
    assert "set_state(field*, value*)" in text
    assert "run_command(" in text and "[process]" in text
    assert "preconditions:" not in text
