"""A parameter schema that is not JSON Schema: `type` must be a type name."""

from wfexec.types import TypeList

TYPES = TypeList()


@TYPES.consequence("count_up", {"by": {"type": "int"}}, ["by"])
def count_up(params, ctx):
    """Count up."""
