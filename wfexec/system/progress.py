"""What a run is doing right now, for the live status line at a terminal (`running.console`).

The run loop reports the node it enters and the places that start programs
report the command; a listener (the terminal's status line) reads them when
it redraws. With no listener, a report is one attribute check: a 10,000-step
run does not pay for a status line nobody sees.
"""

from __future__ import annotations

import time
from wfexec.records import dataclass, field


@dataclass
class Activity:
    node: str = ""
    command: str = ""
    since: float = field(default_factory=time.monotonic)            # the run's start
    command_since: float = field(default_factory=time.monotonic)


current: Activity | None = None  # set while a status line shows it


def at_node(node_id: str) -> None:
    activity = current
    if activity is not None:
        activity.node = node_id
        activity.command = ""


def running(command: str) -> None:
    """A program started (`command` as shown to a person); "" when it ended."""
    activity = current
    if activity is not None:
        activity.command = command
        activity.command_since = time.monotonic()
