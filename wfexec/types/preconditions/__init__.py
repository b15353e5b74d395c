"""Built-in precondition types, grouped by domain. Registered through the
`wfexec.preconditions` entry point like any plugin."""

from wfexec.types.preconditions import composite, corpus, environment, files, runlog, state, tools, web

TYPES = [*state.TYPES, *files.TYPES, *environment.TYPES, *tools.TYPES, *web.TYPES, *composite.TYPES, *corpus.TYPES, *runlog.TYPES]
