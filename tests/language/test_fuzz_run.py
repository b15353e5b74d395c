"""Mutation fuzzing through load, validate and a short dry run: every mutant ends in diagnostics or a run
error with a position, never a traceback or an "internal error".

Mutants come from the example skills and the every-node workflow, mutated as data (a key deleted, renamed or given
a value of another type, with hostile values among them: a NUL byte, a huge number, a deep expression, a path out
of the folder) and as text (test_fuzz_loader's line mutations). A mutant that validates runs as a dry run (nothing
outside the run happens), non-interactive, with a step cap. Seeded: the same mutants every time.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
import yaml

import wfexec
from conftest import ROOT, Captured
from test_fuzz_loader import mutate_data, mutate_text
from wfexec.errors import WfexecError
from wfexec.language.diagnostics import WorkflowError
from wfexec.running.engine import InternalError, Options, Run
from wfexec.running.prompts import NeedsAnswer

SOURCES = [ROOT / "skills" / name for name in ("quickstart", "release-checklist", "triage")] + [
    ROOT / "tests" / "workflows" / "valid" / "every_node"]
MUTANTS_PER_SOURCE = 840  # 3,360 in all: the attack's fuzzer ran 3,350
HOSTILE = ["a\x00b", 10 ** 30, 1e308, "x" * 5000, "+".join(["1"] * 1000), "${" + "+".join(["1"] * 1000) + "}",
           "../../outside", "/etc/passwd", ["a", ["b"]], {"type": "run_command", "command": ["true"]}, -1, "${}",
           "${input.repo}/../..", {"<<": 1}]


def hostile_mutation(data, rng: random.Random):
    data = mutate_data(data, rng)
    containers = [c for c in _dicts(data) if c]
    target = rng.choice(containers)
    target[rng.choice(list(target))] = rng.choice(HOSTILE)
    return data


def _dicts(data):
    if isinstance(data, dict):
        yield data
        for value in data.values():
            yield from _dicts(value)
    elif isinstance(data, list):
        for value in data:
            yield from _dicts(value)


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory):
    base = tmp_path_factory.mktemp("fuzzrun")
    copies = []
    for source in SOURCES:
        folder = base / source.name
        shutil.copytree(source, folder)
        copies.append(folder)
    return copies


def _mutant(text: str, data, rng: random.Random) -> str:
    choice = rng.random()
    if choice < 0.45:
        return json.dumps(hostile_mutation(data, rng), default=str)
    if choice < 0.8:
        return json.dumps(mutate_data(data, rng), default=str)
    return mutate_text(text, rng)


@pytest.mark.parametrize("index", range(len(SOURCES)), ids=[s.name for s in SOURCES])
def test_mutants_load_validate_and_run_dry_without_a_traceback(workspaces, tmp_path, index):
    folder = workspaces[index]
    path = folder / "workflow.yaml"
    text = (SOURCES[index] / "workflow.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    rng = random.Random(1200 + index)
    outcomes: dict[str, int] = {}
    for _ in range(MUTANTS_PER_SOURCE):
        path.write_text(_mutant(text, data, rng), encoding="utf-8")
        try:
            workflow = wfexec.load(path)
        except WorkflowError as exc:
            assert all(d.line >= 1 and d.column >= 1 for d in exc.diagnostics)
            outcomes["invalid"] = outcomes.get("invalid", 0) + 1
            continue
        run = Run(workflow, io=Captured().console(), options=Options(dry_run=True, max_steps=30, cwd=tmp_path),
                  inputs={"version": "1.2.0", "request": "crash", "repo": "."})
        try:
            run.execute()
            outcomes["ended"] = outcomes.get("ended", 0) + 1
        except InternalError as exc:  # a WfexecError too: what the user would see as "internal error"
            pytest.fail(f"internal error on a mutant of {SOURCES[index].name}: {exc.format()}\n{path.read_text()}")
        except NeedsAnswer:  # no one to ask: the run parks (exit 3)
            outcomes["waiting"] = outcomes.get("waiting", 0) + 1
        except WfexecError:
            outcomes["run error"] = outcomes.get("run error", 0) + 1
    assert sum(outcomes.values()) == MUTANTS_PER_SOURCE
    assert len(outcomes) >= 2, outcomes  # the mutants reach the run, not only the checks
    assert list(tmp_path.iterdir()) == []  # a dry run wrote nothing
