"""Consequences that install command-line tools (blueprint-lib `install_tool`).

The install command is shell text run by `bash -c`; a `${...}` in it reaches
the shell as an environment variable, never as code (see
process.shell_text_with_values).
"""

from __future__ import annotations

import shutil

from wfexec.types.consequences.process import check_exit, run_shell_text
from wfexec.types.registry import ActionFailed, TypeList

TYPES = TypeList()

INSTALL_TIMEOUT = 300
DEFAULT_RESULT = "computed.install_result"


@TYPES.consequence("install_tool", {
    "tool": {"type": "string", "pattern": r"^[a-zA-Z0-9_-]+$", "description": "the command the install provides"},
    "install_command": {"type": "string", "description": "shell text that installs it, e.g. apt-get install -y jq"},
    "skip_if_available": {"type": "boolean", "description": "do nothing when the tool is already on PATH (default true)"},
    "store_as": {"type": "string", "description": f"where {{status, message}} goes (default {DEFAULT_RESULT})"},
}, ["tool"], raw=("install_command",), paths=("store_as",), effects=("process", "network", "files"),
    idempotent=False, example={"tool": "jq", "install_command": "apt-get install -y jq"})
def install_tool(params, ctx):
    """Run `install_command` (bash) unless `tool` is on PATH already; fail unless the tool is on PATH afterwards."""
    tool = params["tool"]
    store_as = params.get("store_as") or DEFAULT_RESULT
    if params.get("skip_if_available", True) and shutil.which(tool):
        ctx.set(store_as, {"status": "skipped", "message": "Tool already available"})
        return
    if not params.get("install_command"):
        raise ActionFailed(f"no install command for {tool}", "give install_command: (the shell text that installs it)")
    completed = run_shell_text(params["install_command"], ctx, INSTALL_TIMEOUT)
    check_exit(completed)
    if shutil.which(tool) is None:
        raise ActionFailed(f"{tool} is not available after installation (not on PATH)",
                           "check that install_command puts it in a folder on PATH")
    ctx.set(store_as, {"status": "installed", "message": f"Installed {tool}"})
