"""The workflow bundle (wfexec.temporal.bundle) without a cluster: what it holds, that it is named by its contents,
and that a worker's unpacked copy compiles to the same workflow."""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("temporalio", reason="needs wfexec[temporal]")

from conftest import ROOT  # noqa: E402

from wfexec.api import load  # noqa: E402
from wfexec.temporal import bundle as bundles  # noqa: E402
from wfexec.temporal.bundle import BundleError, make_bundle, unpacked  # noqa: E402


def _names(made) -> list[str]:
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(made.data)) as archive:
        return sorted(name.removeprefix("files/") for name in archive.namelist() if name.startswith("files/"))


def test_a_bundle_holds_what_the_compile_resolved_imports_sub_workflows_and_states_folders(tmp_path):
    triage = make_bundle(load(ROOT / "skills" / "triage"))
    assert _names(triage) == ["rules.yaml", "subflows/bug_report.yaml", "workflow.yaml"]  # not its tests, not SKILL.md
    states = tmp_path / "states"
    shutil.copytree(ROOT / "tests" / "workflows" / "temporal" / "agents", states / "agents")
    shutil.copy(ROOT / "tests" / "workflows" / "temporal" / "states_node.yaml", states)
    (states / "agents" / "__pycache__").mkdir()
    (states / "agents" / "__pycache__" / "x.pyc").write_bytes(b"not part of a definition")
    (states / "unrelated.txt").write_text("beside the workflow, but nothing names it")
    made = make_bundle(load(states / "states_node.yaml"))
    assert made.workflow == "states_node.yaml"
    assert _names(made) == sorted(["states_node.yaml", *(f"agents/{p.name}" for p in (states / "agents").iterdir()
                                                         if p.is_file())])


def test_a_bundle_is_named_by_its_contents_wherever_its_files_are(tmp_path):
    here, there = tmp_path / "here" / "triage", tmp_path / "far" / "away" / "triage"
    for folder in (here, there):
        shutil.copytree(ROOT / "skills" / "triage", folder)
    assert make_bundle(load(here)).digest == make_bundle(load(there)).digest
    (there / "rules.yaml").write_text((there / "rules.yaml").read_text() + "\n# one more line\n")
    assert make_bundle(load(here)).digest != make_bundle(load(there)).digest


def test_an_unpacked_bundle_compiles_to_the_same_workflow_once(tmp_path):
    workflow = load(ROOT / "skills" / "triage")
    made = make_bundle(workflow)
    work = tmp_path / "work"
    path = unpacked(work, made.reference(), made.data)
    assert path == work / ".wfexec" / "bundles" / made.digest / "workflow.yaml"
    assert load(path).source_hash == workflow.source_hash
    assert unpacked(work, made.reference(), None) == path  # there already: nothing to fetch


def test_a_damaged_bundle_is_refused(tmp_path):
    made = make_bundle(load(ROOT / "skills" / "quickstart"))
    with pytest.raises(BundleError, match="does not match its name"):
        unpacked(tmp_path, {**made.reference(), "digest": "0" * 64}, made.data)
    with pytest.raises(BundleError, match="cannot be read"):
        unpacked(tmp_path, made.reference(), b"not a zip")
    assert not (tmp_path / ".wfexec" / "bundles" / made.digest).exists()


def test_a_bundle_too_large_to_travel_with_the_run_is_refused_naming_its_largest_files(tmp_path, monkeypatch):
    monkeypatch.setattr(bundles, "MAX_BUNDLE_BYTES", 1024)
    with pytest.raises(BundleError, match=r"over the 0 MiB a run can carry \(largest: workflow.yaml") as refused:
        make_bundle(load(ROOT / "skills" / "release-checklist"))
    assert "--workdir" in refused.value.hint
