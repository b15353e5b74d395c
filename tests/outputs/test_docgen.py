"""`wfexec docs`: the language reference in lib/workflow/, generated from the schema and the registries.

The committed lib/ must be what `wfexec docs` writes today; every type, parameter and node type is in it; the
examples it shows are valid workflow YAML that validates.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml

from conftest import ROOT, wfexec_cli
from wfexec.types.registry import consequences

LIB = ROOT / "lib"
FILES = ("schema.md", "preconditions.md", "consequences.md", "execution.md")


def builtin_specs(kind: str):
    from wfexec.outputs.docgen import _is_builtin
    from wfexec.types.registry import consequences, preconditions

    registry = preconditions() if kind == "precondition" else consequences()
    return [spec for spec in registry.specs() if _is_builtin(spec)]


def type_section(text: str, name: str) -> str:
    start = text.index(f"\n## {name}\n")
    end = text.find("\n## ", start + 1)
    return text[start: end if end > 0 else len(text)]


# -- the committed reference ----------------------------------------------------------

def test_committed_lib_is_current():
    done = wfexec_cli("docs", "--check", "--output", LIB)
    assert done.returncode == 0, ("lib/ is stale; regenerate it with `wfexec docs --output lib` (and then "
                                  f"`wfexec skill skills/*/`)\n{done.stdout}{done.stderr}")


def test_docs_writes_checks_and_repairs(cli, tmp_path):
    out = tmp_path / "reference"
    assert cli("docs", "--check", "--output", out).returncode == 1  # nothing there yet: stale
    done = cli("docs", "--output", out)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (out / "workflow").iterdir()) == sorted(FILES)
    assert cli("docs", "--check", "--output", out).returncode == 0
    for name in FILES:
        assert (out / "workflow" / name).read_bytes() == (LIB / "workflow" / name).read_bytes()
    schema = out / "workflow" / "schema.md"
    schema.write_text(schema.read_text(encoding="utf-8").replace("## Endings", "## Finishes"), encoding="utf-8")
    done = cli("docs", "--check", "--output", out)
    assert done.returncode == 1
    assert "-## Finishes" in done.stdout and "+## Endings" in done.stdout
    assert "schema.md: stale" in done.stderr
    assert cli("docs", "--output", out).returncode == 0
    assert cli("docs", "--check", "--output", out).returncode == 0


def test_docs_prints_contents_a_page_or_the_sections_a_word_names_at_the_terminal(cli, tmp_path):
    listed = cli("docs", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    for page in ("schema", "preconditions", "consequences", "execution"):
        assert f"wfexec docs {page} " in listed.stdout
    assert "wfexec docs --output DIR" in listed.stdout
    assert not (tmp_path / "lib").exists()  # printing writes nothing
    page = cli("docs", "execution", cwd=tmp_path)
    assert page.stdout == (LIB / "workflow" / "execution.md").read_text(encoding="utf-8").split("\n", 2)[2]
    sections = cli("docs", "USER_PROMPT", cwd=tmp_path).stdout
    assert sections.count("### `user_prompt`") == 2  # its fields (schema) and its rules (execution)
    assert "<!-- schema -->" in sections and "<!-- execution -->" in sections and "### `conditional`" not in sections
    assert "## 9. Exit codes" in cli("docs", "exit codes", cwd=tmp_path).stdout
    unknown = cli("docs", "usr_prompt", cwd=tmp_path)
    assert unknown.returncode == 2 and "did you mean 'user_prompt'?" in unknown.stderr
    assert cli("docs", "schema", "--output", tmp_path / "x", cwd=tmp_path).returncode == 2


def test_generation_is_deterministic():
    from wfexec.outputs.docgen import generate

    assert generate() == generate()


# -- contents -----------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["precondition", "consequence"])
def test_every_type_is_documented_with_parameters_effects_and_an_example(kind):
    text = (LIB / "workflow" / f"{kind}s.md").read_text(encoding="utf-8")
    specs = builtin_specs(kind)
    assert len(re.findall(r"^## ", text, flags=re.M)) == len(specs)
    for spec in specs:
        body = type_section(text, spec.name)
        assert f"| [`{spec.name}`](#{spec.name}) |" in text
        assert spec.doc in body
        for param in spec.params:
            required = "yes" if param in spec.required else ""
            assert re.search(rf"^\| `{re.escape(param)}` \| [^|]+ \| {required} \|", body, flags=re.M), \
                (spec.name, param)
        effects = ", ".join(spec.effects) if spec.effects else "none"
        assert f"Effects: {effects}. Idempotent: {'yes' if spec.idempotent else 'no'}." in body
        example = yaml.safe_load(re.search(r"```yaml\n(.*?)```", body, flags=re.S).group(1))
        assert isinstance(example, list) and example[0]["type"] == spec.name
        assert set(spec.required) <= set(example[0])


def test_the_examples_are_valid_workflow_yaml(cli, tmp_path):
    """Every example, put in a workflow as written in the reference, validates."""
    examples = {}
    for kind in ("precondition", "consequence"):
        text = (LIB / "workflow" / f"{kind}s.md").read_text(encoding="utf-8")
        examples[kind] = [yaml.safe_load(block)[0] for block in re.findall(r"```yaml\n(.*?)```", text, flags=re.S)]
    doc = {"name": "examples", "version": 1, "start_node": "gate",
           "nodes": {"gate": {"type": "validation_gate", "validations": examples["precondition"],
                              "on_valid": "act", "on_invalid": "done"},
                     "act": {"type": "action", "actions": examples["consequence"], "on_success": "done",
                             "on_failure": "done"}},
           "endings": {"done": {"type": "success", "message": "ok"}}}
    # An `mcp_tool_call` names an alias the workflow declares (v8 `data_mcps`).
    aliases = {c["tool"].split(".")[0]: "example-server@^1" for c in examples["consequence"]
               if c["type"] == "mcp_tool_call"}
    if aliases:
        doc["data_mcps"] = aliases
    registry = consequences()
    for call in examples["consequence"]:  # the documents an example names (a pattern file) exist
        for name in (n for n in registry.get(call["type"]).documents if n in call):
            (tmp_path / call[name]).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / call[name]).write_text("# An example document\n", encoding="utf-8")
    path = tmp_path / "workflow.yaml"
    path.write_text(json.dumps(doc), encoding="utf-8")
    done = cli("validate", "--format", "json", path)
    assert [d for d in json.loads(done.stdout)["diagnostics"] if d["severity"] == "error"] == []
    assert done.returncode == 0


def test_a_types_own_example_wins_and_plugins_are_named():
    from wfexec.outputs.docgen import example_for, render, type_context
    from wfexec.types.registry import CONSEQUENCE, TypeSpec

    def handler(params, ctx):
        """Greet."""

    spec = TypeSpec(kind=CONSEQUENCE, name="greet", handler=handler, params={"who": {"type": "string"}},
                    required=("who",), doc="Greet someone.", example={"who": "Ada", "type": "greet"},
                    source="hello_plugin.types")
    assert example_for(spec) == {"type": "greet", "who": "Ada"}
    text = render("types.md.j2", **type_context("consequence", [spec]))
    assert "From the plugin `hello_plugin.types`." in text
    assert "- type: greet\n  who: Ada" in text


def test_examples_made_from_the_schema_fit_it():
    """A type without an example gets one from its parameter schema that its validator accepts."""
    from wfexec.outputs.docgen import example_for
    from wfexec.types.registry import consequences, preconditions

    for registry in (preconditions(), consequences()):
        for spec in builtin_specs(registry.kind):
            example = example_for(spec)
            errors = list(registry.validator(spec.name).errors(example))
            assert errors == [], (spec.name, example, [e.message for e in errors])


def test_schema_page_covers_the_language():
    from wfexec.outputs.docgen import documented_node_types
    from wfexec.language.schema import ENDING, TOP_LEVEL

    text = (LIB / "workflow" / "schema.md").read_text(encoding="utf-8")
    for key in TOP_LEVEL["properties"]:
        assert f"| `{key}` |" in text
    for kind in documented_node_types(include_plugins=False):
        body = text[text.index(f"### `{kind.name}`"):]
        for field in kind.schema.get("properties", {}):
            assert f"| `{field}` |" in body.split("\n### ")[0], (kind.name, field)
    endings = text[text.index("## Endings"):]
    for field in ENDING["properties"]:
        assert f"| `{field}` |" in endings
    assert "| `branches` | mapping | yes |" in text
    assert "| `on_success` | target | yes |" in text


def test_execution_page_explains_every_node_type_and_exit_code():
    from wfexec import exit_codes
    from wfexec.outputs.docgen import documented_node_types

    text = (LIB / "workflow" / "execution.md").read_text(encoding="utf-8")
    for kind in documented_node_types(include_plugins=False):
        assert f"### `{kind.name}`" in text
    for heading in ("## 1. Initialization", "## 2. The loop", "## 5. Templates and expressions", "## 6. State",
                    "## 7. Endings", "## 9. Exit codes"):
        assert heading in text
    codes = {int(n) for n in re.findall(r"^\| (\d) \| ", text, flags=re.M)}
    assert codes == {exit_codes.OK, exit_codes.ENDING_FAILED, exit_codes.INVALID, exit_codes.WAITING,
                     exit_codes.STOPPED}


@pytest.mark.parametrize("schema,told", [
    ({"type": "string"}, "string"),
    ({"type": ["string", "number"]}, "string or number"),
    ({"type": "array", "items": {"$ref": "#/$defs/precondition"}}, "list of precondition"),
    ({"type": "object", "additionalProperties": {"$ref": "#/$defs/target"}}, "mapping of target"),
    ({"enum": ["a", True]}, "one of `a`, `true`"),
    ({"oneOf": [{"type": "string"}, {"type": "object"}]}, "string or mapping"),
    ({}, "any"),
])
def test_schema_types_in_words(schema, told):
    from wfexec.outputs.docgen import type_of

    assert type_of(schema) == told
