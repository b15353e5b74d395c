"""The cyclic garbage collector while a command starts.

A command's start (its imports, the compiled workflow read from the cache, the run store opened) creates objects
that live as long as the process: modules, classes, functions, the workflow. The collector, run every 700
allocations by default, walks them again and again to find nothing to free: about a twentieth of a `wfexec
resume`. So it runs rarely while the command starts, and when the run's first step is about to run, what the
start made is set aside for good (`gc.freeze`) and the usual thresholds come back for the run's own objects.
"""

from __future__ import annotations

import gc

# Young objects allocated between collections while starting: a few collections over a whole start, not dozens.
_STARTING_THRESHOLD = 20_000
_usual: list[tuple[int, int, int]] = []


def starting() -> None:
    """The command is starting: collect rarely (not never, so a command that never reaches a run, or runs long
    before it does, still frees its cycles)."""
    if not _usual:
        usual = gc.get_threshold()
        _usual.append(usual)
        gc.set_threshold(max(usual[0], _STARTING_THRESHOLD), usual[1], usual[2])


def not_starting() -> None:
    """The command is not one whose start is kept short after all: the usual thresholds, nothing frozen."""
    if _usual:
        gc.set_threshold(*_usual.pop())


def started() -> None:
    """The run's first step is next: what the start made is kept out of every later collection, and the usual
    thresholds return. Nothing when `starting` was not called (the API, a test)."""
    if _usual:
        gc.freeze()
        gc.set_threshold(*_usual.pop())
