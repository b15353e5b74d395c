"""The import contracts (.importlinter) hold: each stage imports only the stages below it, and the engine,
the journal and the language look node types up instead of importing them (DESIGN §1)."""

from __future__ import annotations

import configparser
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(config: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """The real `lint-imports` of this venv; run from `cwd`, whose `wfexec/` it analyses."""
    return subprocess.run([str(LINT_IMPORTS), "--config", config, "--no-cache", "--no-logo"], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_the_import_contracts_hold():
    done = lint_imports(".importlinter")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_a_broken_arrow_fails_the_contracts(tmp_path):
    """The check can fail: a copy of wfexec whose language model imports a concrete node type."""
    shutil.copytree(ROOT / "wfexec", tmp_path / "wfexec", ignore=shutil.ignore_patterns("__pycache__"))
    model = tmp_path / "wfexec" / "language" / "model.py"
    model.write_text(model.read_text(encoding="utf-8") + "\nfrom wfexec.nodes import action  # noqa\n",
                     encoding="utf-8")
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    done = lint_imports(".importlinter", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    told = " ".join(done.stdout.split())
    assert "Each stage imports only the stages below it BROKEN" in told
    assert "never import a concrete node type: they look node types up BROKEN" in told
    assert "wfexec.language.model -> wfexec.nodes.action" in told


def test_every_module_has_a_place_in_the_layers():
    """A new package or language module must be placed in the layers, or nothing checks it."""
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter", encoding="utf-8")
    listed = set(re.findall(r"wfexec(?:\.\w+)*", config["importlinter:contract:layers"]["layers"]))
    package = ROOT / "wfexec"
    top = {f"wfexec.{p.stem}" for p in package.iterdir()
           if (p.suffix == ".py" and p.stem not in ("__init__", "__main__")) or (p / "__init__.py").is_file()}
    language = {f"wfexec.language.{p.stem}" for p in (package / "language").glob("*.py") if p.stem != "__init__"}
    # wfexec.language itself is split across two layers: its modules are listed one by one.
    assert (top - {"wfexec.language"}) | language <= listed, sorted(((top - {"wfexec.language"}) | language) - listed)


def test_every_built_in_node_type_is_registered_like_a_plugin():
    """Each module of wfexec/nodes/ (but the interface) is one entry of `wfexec.nodes` in pyproject.toml."""
    tomllib = pytest.importorskip("tomllib")
    from wfexec.nodes.base import INTERFACE_MODULES, NodeType, node_types

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    registered = project["entry-points"]["wfexec.nodes"]
    modules = {p.stem for p in (ROOT / "wfexec" / "nodes").glob("*.py")} - {"__init__", *INTERFACE_MODULES}
    assert registered == {name: f"wfexec.nodes.{name}:NODE_TYPE" for name in sorted(modules)}
    # Run from a source tree (or an install older than these entry points), the same types are found.
    from wfexec.nodes.base import _builtin_points

    assert {ep.name: ep.value for ep in _builtin_points()} == registered
    for name in modules:
        kind = node_types()[name]
        assert isinstance(kind, NodeType) and kind.execute.__module__ == f"wfexec.nodes.{name}"


# Finds the import circles of the `wfexec` package importable from the working directory, annotation-only imports
# (under `if TYPE_CHECKING:`) included, with grimp (import-linter's graph library): each strongly connected set
# of modules, printed as JSON.
CIRCLES = r'''
import json, sys
import grimp

graph = grimp.build_graph("wfexec", include_external_packages=False, exclude_type_checking_imports=False,
                          cache_dir=None)
edges = {module: sorted(graph.find_modules_directly_imported_by(module)) for module in sorted(graph.modules)}
index, low, stack, on_stack, circles = {}, {}, [], set(), []
sys.setrecursionlimit(100_000)

def visit(module):
    index[module] = low[module] = len(index)
    stack.append(module)
    on_stack.add(module)
    for imported in edges[module]:
        if imported not in index:
            visit(imported)
            low[module] = min(low[module], low[imported])
        elif imported in on_stack:
            low[module] = min(low[module], index[imported])
    if low[module] == index[module]:
        circle = []
        while True:
            member = stack.pop()
            on_stack.discard(member)
            circle.append(member)
            if member == module:
                break
        if len(circle) > 1:
            circles.append(sorted(circle))

for module in edges:
    if module not in index:
        visit(module)
print(json.dumps(circles))
'''


def import_circles(cwd: Path = ROOT) -> list[list[str]]:
    done = subprocess.run([sys.executable, "-c", CIRCLES], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(cwd)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _package(module: str) -> str:
    """The package a module belongs to: `wfexec.language` for `wfexec.language.model`; a top module is its own."""
    return ".".join(module.split(".")[:2])


def across_packages(circles: list[list[str]]) -> list[list[str]]:
    return [circle for circle in circles if len({_package(module) for module in circle}) > 1]


def test_no_import_circle_crosses_packages_annotations_included():
    """DESIGN §1: the layers can be read from the imports. A circle inside one package is its own business; one
    across packages (an annotation-only import included) means a lower layer names a higher one."""
    circles = import_circles()
    assert across_packages(circles) == []
    # The commands do not import one another in a circle either: run, states and temporal_runs used to.
    assert [c for c in circles if any(m.startswith("wfexec.commands.") for m in c)] == []


def test_an_annotation_only_circle_is_found(tmp_path):
    """The check can fail: a copy of wfexec whose language model names the engine's Run under TYPE_CHECKING."""
    shutil.copytree(ROOT / "wfexec", tmp_path / "wfexec", ignore=shutil.ignore_patterns("__pycache__"))
    model = tmp_path / "wfexec" / "language" / "model.py"
    model.write_text(model.read_text(encoding="utf-8") + "\nif TYPE_CHECKING:\n"
                     "    from wfexec.running.engine import Run  # noqa: F401\n", encoding="utf-8")
    found = across_packages(import_circles(tmp_path))
    assert found and any({"wfexec.language.model", "wfexec.running.engine"} <= set(circle) for circle in found)
