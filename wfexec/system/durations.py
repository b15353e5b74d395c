"""Durations as a person writes them on a command line: `7d`, `12h`, `30m`, `45s`, `1w`, or plain seconds."""

from __future__ import annotations

import re

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw]?)")


def parse_duration(text: str) -> float:
    """Seconds; ValueError saying how to write a duration."""
    match = _DURATION.fullmatch(text.strip().lower())
    if not match:
        raise ValueError(f"'{text}' is not a duration: write a number with a unit, as 7d, 12h, 30m, 45s (or 0)")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]
