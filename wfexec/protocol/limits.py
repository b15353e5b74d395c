"""How long to wait for a usage limit to reset (reference §1.16 and Raymond's limitwait).

Claude says when a limit resets, e.g. "… resets 3pm (America/Chicago)". When every
agent left is paused by such a message, the run waits until the latest of those
times plus five minutes, then goes on. A message without a time, or with a time
zone Python does not know, means no wait: the run stops and `wfexec resume`
goes on later.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from wfexec.system.patterns import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Sequence

MARGIN = timedelta(minutes=5)
_RESET = lazy(r"resets\s+(\d{1,2})(?::(\d{2}))?\s*(am|pm)\s*\(([^)]+)\)", re.IGNORECASE)


def reset_time(message: str, now: datetime) -> datetime | None:
    """When the limit in `message` resets (plus the margin), as an aware datetime after `now`; or None."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    match = _RESET.search(message)
    if match is None:
        return None
    hour, minute, half, zone_name = int(match.group(1)), int(match.group(2) or 0), match.group(3).lower(), \
        match.group(4).strip()
    if not (1 <= hour <= 12 and minute < 60):
        return None
    try:
        zone = ZoneInfo(zone_name)
    except (ZoneInfoNotFoundError, ValueError):
        return None
    hour = hour % 12 + (12 if half == "pm" else 0)  # 12am is 0:00, 12pm is 12:00
    local_now = now.astimezone(zone)
    reset = local_now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if reset <= local_now:  # already passed today: tomorrow's
        reset += timedelta(days=1)
    return reset + MARGIN


def limit_wait(messages: Sequence[str], now: datetime | None = None) -> float | None:
    """Seconds to wait before the paused agents may run again: the longest of their reset times. None when
    there is no paused agent, or when any of them gives no reset time wfexec can read."""
    from datetime import timezone

    if not messages:
        return None
    now = now or datetime.now(timezone.utc)
    times = [reset_time(message, now) for message in messages]
    if any(time is None for time in times):
        return None
    return max((time - now).total_seconds() for time in times if time is not None)
