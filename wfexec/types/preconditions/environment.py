"""Preconditions over the machine: tools and Python modules."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess

from wfexec.types.registry import TypeList

TYPES = TypeList()

TOOL = {"type": "string", "description": "a command name looked up on PATH, e.g. git"}


@TYPES.precondition("tool_available", {"tool": TOOL}, ["tool"], effects=("process",))
def tool_available(params, ctx):
    """True when `tool` is on PATH."""
    return shutil.which(params["tool"]) is not None


@TYPES.precondition("python_module_available", {"module": {"type": "string"}}, ["module"])
def python_module_available(params, ctx):
    """True when the Python module can be imported (checked without importing it)."""
    try:
        return importlib.util.find_spec(params["module"]) is not None
    except (ImportError, ValueError):
        return False


def _version_tuple(text: str) -> tuple:
    match = re.search(r"(\d+(?:\.\d+)*)", text or "")
    return tuple(int(p) for p in match.group(1).split(".")) if match else ()


@TYPES.precondition("tool_check", {
    "tool": TOOL,
    "capability": {"enum": ["available", "version_gte"]},
    "args": {"type": "object", "properties": {"min_version": {"type": "string"}}, "additionalProperties": False},
}, ["tool"], effects=("process",))
def tool_check(params, ctx):
    """v3: `tool` is available, or (capability version_gte) its --version is at least args.min_version."""
    path = shutil.which(params["tool"])
    if path is None:
        return False
    if params.get("capability", "available") == "available":
        return True
    wanted = _version_tuple((params.get("args") or {}).get("min_version", ""))
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return _version_tuple(done.stdout + done.stderr) >= wanted
