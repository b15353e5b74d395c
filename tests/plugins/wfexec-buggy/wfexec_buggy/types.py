"""A consequence whose handler fails with an unexpected Python exception."""

from wfexec.types import TypeList

TYPES = TypeList()


@TYPES.consequence("tally", {"key": {"type": "string"}}, ["key"])
def tally(params, ctx):
    """Add one to a counter (and, by a bug, look up a key that is not there)."""
    counters = {}
    counters[params["key"]] += 1
