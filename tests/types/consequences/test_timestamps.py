"""set_timestamp: ISO-8601 by default; formats as hiivmind writes them (moment.js tokens) or as strftime."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest

from wfexec.types.consequences.state import format_time
from conftest import one_action

MOMENT = datetime(2026, 1, 29, 7, 5, 9, 123456, tzinfo=timezone.utc)


@pytest.mark.parametrize("written, shown", [
    ("YYYY-MM-DD-HHmmss", "2026-01-29-070509"),      # the refresh workflow's log file names
    ("YYYY-MM-DD", "2026-01-29"),
    ("HH:mm:ss.SSSZ", "07:05:09.123+00:00"),
    ("[built] YY/MM/DD hh:mm A", "built 26/01/29 07:05 AM"),
    ("%Y%m%dT%H%M", "20260129T0705"),                 # strftime still works
    ("ISO", "2026-01-29T07:05:09Z"),
    (None, "2026-01-29T07:05:09Z"),
])
def test_formats(written, shown):
    assert format_time(MOMENT, written) == shown


def test_a_run_stores_the_time_now_in_the_format_asked(run_yaml):
    before = datetime.now(timezone.utc).replace(microsecond=0)
    result, _ = run_yaml(one_action(
        {"type": "set_timestamp", "store_as": "computed.stamp", "format": "YYYY-MM-DD-HHmmss"},
        {"type": "set_timestamp", "store_as": "computed.iso"}))
    after = datetime.now(timezone.utc)
    stamp = result.state["computed"]["stamp"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d-\d{6}", stamp), stamp
    taken = datetime.strptime(stamp, "%Y-%m-%d-%H%M%S").replace(tzinfo=timezone.utc)
    assert before <= taken <= after + timedelta(seconds=1)
    assert datetime.fromisoformat(result.state["computed"]["iso"].replace("Z", "+00:00")) >= before
