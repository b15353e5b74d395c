"""Precondition and consequence types: the registry and the built-in types.

A plugin imports what it needs from here: `from wfexec.types import TypeList, ActionFailed`.
"""

from wfexec.types.registry import ActionFailed, TypeList, TypeSpec

__all__ = ["ActionFailed", "TypeList", "TypeSpec"]
