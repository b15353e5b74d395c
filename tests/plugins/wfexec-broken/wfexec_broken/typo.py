"""An effect misspelt: `file` for `files`."""

from wfexec.types import TypeList

TYPES = TypeList()


@TYPES.consequence("scribble", {"path": {"type": "string"}}, ["path"], effects=("file",))
def scribble(params, ctx):
    """Write a file."""
    ctx.resolve_file(params["path"]).write_text("x")
