"""Preconditions over the Python environment (tools: wfexec.types.preconditions.tools)."""

from __future__ import annotations

import importlib.util

from wfexec.types.registry import TypeList

TYPES = TypeList()


@TYPES.precondition("python_module_available", {"module": {"type": "string"}}, ["module"])
def python_module_available(params, ctx):
    """True when the Python module can be imported (checked without importing it)."""
    try:
        return importlib.util.find_spec(params["module"]) is not None
    except (ImportError, ValueError):
        return False
