"""A handler that cannot be called as handler(params, ctx)."""

from wfexec.types import TypeList

TYPES = TypeList()


@TYPES.consequence("shout", {"text": {"type": "string"}}, ["text"])
def shout(params):
    """Shout."""
