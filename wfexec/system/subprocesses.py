"""What every place that starts programs shares."""

from __future__ import annotations

import os
import signal


def kill_group(process) -> None:
    """Kill a program started with `start_new_session=True` and everything it started.

    Its children (bash's `sleep`, git's remote helpers) hold the output pipes
    open, so killing the leader alone would leave the caller waiting on them.
    """
    try:
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows has no process groups of this kind
            process.kill()
    except (ProcessLookupError, PermissionError):
        pass
