"""Built-in consequence types, grouped by domain. Registered through the
`wfexec.consequences` entry point like any plugin."""

from wfexec.types.consequences import control, corpus, display, files, git, intent, llm, process, runlog, state, tools, web

TYPES = [*state.TYPES, *control.TYPES, *files.TYPES, *process.TYPES, *git.TYPES, *web.TYPES, *display.TYPES, *runlog.TYPES,
         *intent.TYPES, *llm.TYPES, *corpus.TYPES, *tools.TYPES]
