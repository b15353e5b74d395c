"""A module that fails when imported."""

from wfexec.types import TypeList

TYPES = TypeList()
raise RuntimeError("the plugin's configuration file is missing")
