"""Fuzzing `wfexec validate`: whatever the file holds, the answer is diagnostics, never a traceback.

Three sources of input: random text from a YAML-heavy alphabet, random YAML
documents (`hypothesis.strategies.recursive` dumped with PyYAML), and random
mutations of a valid workflow that uses every node type. For each, `validate`
must return (or return nothing) and every diagnostic must point inside the
file: line >= 1, column >= 1, line no further than the end of the file.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import wfexec
from conftest import ROOT

VALID = ROOT / "tests" / "workflows" / "valid" / "every_node"
VALID_TEXT = (VALID / "workflow.yaml").read_text(encoding="utf-8")
VALID_DATA = yaml.safe_load(VALID_TEXT)

FUZZ = settings(max_examples=300, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

YAML_ALPHABET = list(":-?[]{},#&*!|>'\"%@` \n\t\\") + list("abnxyz019.") + [
    "\n  ", "\n    ", "\n- ", ": ", "- ", "${", "}", "<<: ", "&a ", "*a", "!!str ", "!!int ", "---\n", "...\n",
    "true", "no", "~", "null", "é", "\u2028", "\ufeff", "\x00", "\x85",
]
WORKFLOW_WORDS = ["name", "version", "start_node", "nodes", "endings", "type", "action", "conditional",
                  "user_prompt", "validation_gate", "reference", "states", "on_success", "on_failure",
                  "branches", "true", "false", "prompt", "options", "on_response", "next_node", "actions",
                  "condition", "message", "success", "x-tool", "id", "label", "${a}", "${", "doc"]


# --------------------------------------------------------------------------- #
# Checking one input.

@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """A copy of the valid skill folder: mutated files keep their doc, sub-workflow and states."""
    folder = tmp_path_factory.mktemp("fuzz") / "skill"
    shutil.copytree(VALID, folder)
    return folder


def assert_validates_cleanly(path: Path, text: str | bytes) -> list:
    if isinstance(text, bytes):
        path.write_bytes(text)
        text = text.decode("utf-8", errors="replace")
    else:
        path.write_text(text, encoding="utf-8")
    # Counted the way YAML counts lines (\r\n, \r, \x85, \u2028 and \u2029 all break one).
    line_count = len(text.replace("\r\n", "\n").translate(
        {ord(c): "\n" for c in "\r\x85\u2028\u2029"}).split("\n"))
    diagnostics = wfexec.validate(path)
    assert isinstance(diagnostics, list)
    for d in diagnostics:
        assert d.line >= 1 and d.column >= 1, d
        assert d.line <= line_count, (d, line_count)
        assert d.severity in ("error", "warning"), d
        assert d.message, d
    return diagnostics


# --------------------------------------------------------------------------- #
# (a) random YAML-ish text and random documents.

yamlish_text = st.lists(st.sampled_from(YAML_ALPHABET) | st.text(max_size=3), max_size=80).map("".join)

scalars = (st.none() | st.booleans() | st.integers(-10, 10**6) | st.floats(allow_nan=False)
           | st.sampled_from(WORKFLOW_WORDS) | st.text(max_size=12))
keys = st.sampled_from(WORKFLOW_WORDS) | st.text(max_size=8)
documents = st.recursive(scalars, lambda children: st.lists(children, max_size=4)
                         | st.dictionaries(keys, children, max_size=5), max_leaves=30)


@FUZZ
@given(text=yamlish_text)
def test_random_yamlish_text_never_raises(workspace, text):
    assert_validates_cleanly(workspace / "random.yaml", text)


@FUZZ
@given(data=documents, flow=st.booleans())
def test_random_documents_never_raise(workspace, data, flow):
    text = yaml.safe_dump(data, default_flow_style=flow, allow_unicode=True)
    assert_validates_cleanly(workspace / "document.yaml", text)


@FUZZ
@given(data=st.binary(max_size=60))
def test_random_bytes_never_raise(workspace, data):
    assert_validates_cleanly(workspace / "bytes.yaml", data)


@FUZZ
@given(nodes=st.dictionaries(st.sampled_from(WORKFLOW_WORDS), documents, max_size=4),
       endings=st.dictionaries(st.sampled_from(WORKFLOW_WORDS), documents, max_size=3))
def test_random_nodes_in_a_workflow_shape_never_raise(workspace, nodes, endings):
    # Past the top-level schema, so node, ending and call checks see the junk too.
    data = {"name": "fuzz", "version": 1, "start_node": "type", "nodes": nodes, "endings": endings}
    assert_validates_cleanly(workspace / "shaped.yaml", yaml.safe_dump(data))


# --------------------------------------------------------------------------- #
# (b) mutations of a valid workflow.

def _containers(data, path=()):
    """Every (path, mapping-or-list) inside the data."""
    if isinstance(data, (dict, list)):
        yield path, data
        items = data.items() if isinstance(data, dict) else enumerate(data)
        for key, value in items:
            yield from _containers(value, path + (key,))


OTHER_VALUES = [None, 0, 1.5, True, "text", "${", "${ x => y }", [], [1, "a"], {}, {"type": "nope"}]


def mutate_data(data, rng: random.Random):
    """Delete a key, change a value to another type, or rename a key, somewhere in the data."""
    import copy

    data = copy.deepcopy(data)
    containers = [(p, c) for p, c in _containers(data) if c]
    _path, target = rng.choice(containers)
    key = rng.choice(list(target)) if isinstance(target, dict) else rng.randrange(len(target))
    operation = rng.choice(["delete", "retype", "rename"])
    if operation == "delete":
        del target[key]
    elif operation == "retype":
        target[key] = rng.choice(OTHER_VALUES)
    elif isinstance(target, dict):
        target[rng.choice(["on_sucess", "x-ok", "true", "nodes", str(key) + "_", str(key)[:-1] or "k"])] = \
            target.pop(key)
    else:
        target.insert(rng.randrange(len(target) + 1), target.pop(key))
    return data


GARBAGE = [":", "- ", "[", "}", "&", "*x", "!", "|", ">", "'", '"', "\t", "#", "${", "%", "@", "`", "? ", "\\", "\x00"]


def mutate_text(text: str, rng: random.Random) -> str:
    """Duplicate a line, insert garbage characters, or change a line's indentation."""
    lines = text.split("\n")
    index = rng.randrange(len(lines))
    operation = rng.choice(["duplicate", "garbage", "indent", "dedent"])
    if operation == "duplicate":
        lines.insert(index, lines[index])
    elif operation == "garbage":
        line = lines[index]
        at = rng.randrange(len(line) + 1)
        lines[index] = line[:at] + "".join(rng.choice(GARBAGE) for _ in range(rng.randint(1, 3))) + line[at:]
    elif operation == "indent":
        lines[index] = " " * rng.randint(1, 3) + lines[index]
    else:
        lines[index] = lines[index][rng.randint(1, 4):]
    return "\n".join(lines)


def mutated_workflow(seed: int, steps: int) -> str:
    rng = random.Random(seed)
    data = VALID_DATA
    text = None
    for _ in range(steps):
        if text is None and rng.random() < 0.5:
            data = mutate_data(data, rng)
        else:
            text = mutate_text(text if text is not None else yaml.safe_dump(data, sort_keys=False), rng)
    return text if text is not None else yaml.safe_dump(data, sort_keys=False)


def test_the_unmutated_workflow_is_valid(workspace):
    assert [d for d in assert_validates_cleanly(workspace / "workflow.yaml", VALID_TEXT)
            if d.severity == "error"] == []


@FUZZ
@given(seed=st.integers(0, 2**32), steps=st.integers(1, 4))
def test_mutated_workflows_never_raise(workspace, seed, steps):
    assert_validates_cleanly(workspace / "mutated.yaml", mutated_workflow(seed, steps))


@FUZZ
@given(seed=st.integers(0, 2**32))
def test_text_mutations_of_the_original_file_never_raise(workspace, seed):
    # The original text keeps comments, flow style and `yes:`/`true:` keys that a re-dump loses.
    assert_validates_cleanly(workspace / "edited.yaml", mutate_text(VALID_TEXT, random.Random(seed)))


def test_mutations_do_get_reported(workspace):
    """Guard against a fuzz target that passes because validate ignores its input."""
    broken = mutated = 0
    for seed in range(40):
        text = mutated_workflow(seed, 2)
        mutated += 1
        broken += any(d.severity == "error" for d in assert_validates_cleanly(workspace / "m.yaml", text))
    assert broken >= mutated // 4


def test_the_cli_never_shows_a_traceback_for_mutated_files(workspace, cli):
    paths = []
    for seed in range(8):
        path = workspace / f"cli_{seed}.yaml"
        path.write_text(mutated_workflow(1000 + seed, 3), encoding="utf-8")
        paths.append(path)
    together = cli("validate", *paths, "--format", "json")
    assert together.returncode in (0, 2), together.stderr
    assert "Traceback" not in together.stderr
    for path in paths[:3]:
        alone = cli("validate", path)
        assert alone.returncode in (0, 2), alone.stderr
        assert "Traceback" not in alone.stderr
        assert "Traceback" not in alone.stdout
