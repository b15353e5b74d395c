"""Stop signals: SIGTERM and SIGHUP (`timeout`, `docker stop`, CI cancelling, a closed terminal) end a command as
Ctrl-C does, by raising KeyboardInterrupt in the main thread, so the same clean-up runs on every path.

While a program is being started (`deferred`), a stop signal is held back: raised inside `Popen`, it would leave
the new program running with nobody holding it. It is raised as soon as the start is done and the caller can
stop what it started.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as system_signals
else:  # the signal module is this built-in one plus enums of the names, ~1 ms of every start to build them
    import _signal as system_signals

STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")
_NAMES = {getattr(system_signals, name): name for name in STOP_SIGNALS if hasattr(system_signals, name)}


class Signalled(KeyboardInterrupt):
    """A stop signal other than Ctrl-C; str() is its name."""


# How many `deferred` blocks the main thread is in: signal handlers run in the main thread, and only its
# blocks hold signals back.
_held = [0]
_pending: list[int] = []


def _interrupt(signum: int) -> KeyboardInterrupt:
    return KeyboardInterrupt() if signum == system_signals.SIGINT else Signalled(_NAMES[signum])


def _on_stop(signum, frame) -> None:
    if _held[0]:
        _pending.append(signum)
        return
    raise _interrupt(signum)


def install() -> None:
    """Handle the stop signals (the command line does, once, in the main thread)."""
    for signum in _NAMES:
        system_signals.signal(signum, _on_stop)


def deferred() -> _Deferred:
    """Hold stop signals back for the duration of a `with` block; the first one that came is raised at its end
    (unless the block raised)."""
    return _Deferred()


class _Deferred:
    """A `deferred` block. (A class, not a `contextlib.contextmanager`: importing contextlib cost every start of
    `wfexec run` and `wfexec states` ~0.7 ms of CPU.)"""

    __slots__ = ("_holding",)

    def __enter__(self) -> None:
        # Not imported, no thread was started through threading: this is the main one (a run need not import it).
        threading = sys.modules.get("threading")
        # signals reach the main thread only
        self._holding = threading is None or threading.current_thread() is threading.main_thread()
        if self._holding:
            _held[0] += 1

    def __exit__(self, kind, value, traceback) -> None:
        if not self._holding:
            return
        _held[0] -= 1
        if kind is None and not _held[0] and _pending:
            signum = _pending[0]
            _pending.clear()
            raise _interrupt(signum)
