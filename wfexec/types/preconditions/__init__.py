"""Built-in precondition types, grouped by domain. Registered through the
`wfexec.preconditions` entry point like any plugin."""

from wfexec.types.preconditions import composite, environment, files, state, web

TYPES = [*state.TYPES, *files.TYPES, *environment.TYPES, *web.TYPES, *composite.TYPES]
