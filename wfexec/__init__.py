"""wfexec: a deterministic interpreter for YAML agent workflows."""

from __future__ import annotations

from wfexec.version import __version__

__all__ = ["__version__", "load", "validate", "run", "resume", "WorkflowError", "Diagnostic", "WfexecError",
           "NeedsAnswer", "AnswerRefused", "RunError"]


def __getattr__(name):
    # Lazy, so `import wfexec` (and `wfexec --help`) stay cheap.
    if name in ("load", "validate", "run", "resume"):
        from wfexec import api

        return getattr(api, name)
    if name in ("WorkflowError", "Diagnostic"):
        from wfexec.language import diagnostics

        return getattr(diagnostics, name)
    if name == "WfexecError":
        from wfexec.errors import WfexecError

        return WfexecError
    if name in ("NeedsAnswer", "AnswerRefused"):
        from wfexec.running import prompts

        return getattr(prompts, name)
    if name == "RunError":
        from wfexec.running.engine import RunError

        return RunError
    raise AttributeError(name)
