"""The local time as text, to the microsecond, without the datetime module (which a `wfexec states` run that
names its workflow and stamps its debug files imported for those two lines alone, ~2.5 ms of CPU)."""

from __future__ import annotations

import time


def local_now(pattern: str) -> str:
    """`datetime.datetime.now().strftime(pattern)` for a pattern of strftime's codes and `%f`, the microseconds."""
    seconds, nanoseconds = divmod(time.time_ns(), 1_000_000_000)
    return time.strftime(pattern.replace("%f", f"{nanoseconds // 1000:06d}"), time.localtime(seconds))
