"""The workflows that may be launched: every workflow.yaml under the --root folders, each with what
`wfexec validate` says of it. Nothing else can be launched: a launch names one of these by its id, never a path."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wfexec.system.digest import sha256

WORKFLOW_FILE = "workflow.yaml"
SKIPPED = {"node_modules", "__pycache__", "venv", "site-packages"}
MAX_WORKFLOWS = 1000


@dataclass(frozen=True)
class Found:
    id: str
    path: Path
    root: Path

    @property
    def shown(self) -> str:
        return self.path.parent.relative_to(self.root).as_posix() if self.path.parent != self.root else \
            self.root.name


class Workflows:
    def __init__(self, roots: tuple[Path, ...]):
        self.roots = tuple(root.resolve() for root in roots)
        self._checked: dict[tuple[Path, int], dict] = {}
        # Compiling shares the registries and the compiled-workflow cache: one at a time.
        self._lock = threading.Lock()

    def found(self) -> list[Found]:
        """Every workflow.yaml under the roots (hidden folders and virtualenvs skipped), looked for anew each
        time: workflows come and go while the server runs."""
        seen: dict[str, Found] = {}
        for root in self.roots:
            for folder, folders, files in os.walk(root):
                folders[:] = sorted(f for f in folders if not f.startswith(".") and f not in SKIPPED)
                if WORKFLOW_FILE in files:
                    path = Path(folder, WORKFLOW_FILE).resolve()
                    if path.is_relative_to(root):  # a symbolic link out of the root is not under it
                        key = sha256(str(path).encode()).hexdigest()[:12]
                        seen.setdefault(key, Found(key, path, root))
                if len(seen) >= MAX_WORKFLOWS:
                    break
        return sorted(seen.values(), key=lambda f: f.shown)

    def get(self, workflow_id: str) -> Found | None:
        return next((f for f in self.found() if f.id == workflow_id), None)

    def at(self, path: Path) -> Found | None:
        """The workflow found at `path`, if it lies under a root."""
        try:
            wanted = path.resolve()
        except OSError:
            return None
        return next((f for f in self.found() if f.path == wanted), None)

    def describe(self, found: Found) -> dict[str, Any]:
        """Its name, description, inputs and validate's verdict, computed again only when the file changed."""
        try:
            stamp = found.path.stat().st_mtime_ns
        except OSError as exc:
            return {**self._basics(found), "valid": False, "errors": [f"{found.path}: {exc.strerror}"]}
        key = (found.path, stamp)
        with self._lock:
            if key not in self._checked:
                self._checked[key] = self._check(found)
            return {**self._basics(found), **self._checked[key]}

    @staticmethod
    def _basics(found: Found) -> dict[str, Any]:
        return {"id": found.id, "path": str(found.path), "shown": found.shown}

    @staticmethod
    def _check(found: Found) -> dict[str, Any]:
        from wfexec.api import check_to_run
        from wfexec.errors import WfexecError
        from wfexec.language.diagnostics import ERROR, WARNING

        try:
            workflow, diagnostics = check_to_run(found.path)
        except WfexecError as exc:
            return {"valid": False, "errors": [exc.format()], "warnings": 0, "name": found.shown}
        errors = [d.format() for d in diagnostics if d.severity == ERROR]
        data: dict[str, Any] = {"valid": workflow is not None and not errors, "errors": errors,
                                "warnings": sum(1 for d in diagnostics if d.severity == WARNING),
                                "name": workflow.name if workflow is not None else found.shown,
                                "description": workflow.description if workflow is not None else "",
                                "inputs": _inputs(workflow.input_schema) if workflow is not None else []}
        return data


def _inputs(given) -> list[dict[str, Any]]:
    """The fields of the launch form: one per input, in either form the language takes (a JSON Schema object, or
    name → schema with `required: true`), as `run` reads them."""
    from wfexec.language.inputs import inputs_as_object_schema

    if not isinstance(given, dict) or not given:
        return []
    schema = inputs_as_object_schema(given)
    if not isinstance(schema.get("properties"), dict):
        return []
    required = set(schema.get("required") or ())
    return [{"name": str(name), "required": name in required,
             "description": str(spec.get("description") or "") if isinstance(spec, dict) else "",
             "default": spec.get("default") if isinstance(spec, dict) else None}
            for name, spec in schema["properties"].items()]
