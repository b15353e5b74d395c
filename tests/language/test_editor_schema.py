"""The published schema as editors and standard tools use it: check-jsonschema (which reads YAML 1.1, where
`true:` is a boolean) accepts every example workflow and a fresh scaffold against the schema their
`# yaml-language-server: $schema=` comment names, a file that resolves; and every field of the schema has a
description to show on hover."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, wfexec_in_process as cli

CHECK = shutil.which("check-jsonschema") or str(Path(sys.executable).with_name("check-jsonschema"))
EXAMPLES = sorted(p for p in (ROOT / "skills").rglob("*.yaml") if p.read_text().startswith("# yaml-language-server"))


def schema_named_by(workflow: Path) -> Path:
    first = workflow.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema="), first
    schema = (workflow.parent / first.split("=", 1)[1]).resolve()
    assert schema.is_file(), f"{workflow}: the schema comment names {schema}, which is not there"
    return schema


def check_jsonschema(workflow: Path) -> subprocess.CompletedProcess:
    if not Path(CHECK).exists():
        pytest.skip("check-jsonschema is not installed (pip install -e '.[test]')")
    return subprocess.run([CHECK, "--schemafile", str(schema_named_by(workflow)), str(workflow)],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("workflow", EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_check_jsonschema_accepts_every_example(workflow):
    done = check_jsonschema(workflow)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("v8", [False, True], ids=["classic", "v8"])
def test_check_jsonschema_accepts_a_fresh_scaffold(tmp_path, v8):
    assert cli("new", "skill", "fresh", *(["--v8"] if v8 else []), cwd=tmp_path).returncode == 0
    done = check_jsonschema(tmp_path / "skills" / "fresh" / "workflow.yaml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_examples_are_many_and_cover_conditionals():
    assert len(EXAMPLES) >= 5
    assert sum("type: conditional" in p.read_text() for p in EXAMPLES) >= 4


@pytest.mark.parametrize("published", ["workflow.schema.json", "workflow-v8.schema.json"])
def test_every_field_has_a_description(published):
    """What yaml-language-server shows on hover: every property of every node, ending and type."""
    schema = json.loads((ROOT / "schemas" / published).read_text(encoding="utf-8"))
    missing = []

    def walk(node, where):
        if isinstance(node, dict):
            for name, field in (node.get("properties") or {}).items():
                if isinstance(field, dict) and "description" not in field and "$ref" not in field \
                        and "/if" not in where:  # a dispatch's condition, not a field anyone writes
                    missing.append(f"{where}/properties/{name}")
            for key, value in node.items():
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{where}[{index}]")

    walk(schema, "")
    assert missing == []
