"""State paths as text (wfexec.language.paths): what `format_path` writes, `parse_path` reads back to the same
parts, a name holding `.`, brackets or quotes written quoted in brackets, every other name after a dot."""

from __future__ import annotations

import pytest

from wfexec.language.paths import format_path, parse_path


@pytest.mark.parametrize("parts, text", [
    (("computed", "result"), "computed.result"),
    (("computed", "a.b", 0, "x"), "computed['a.b'][0].x"),
    (("computed", "with space", "ü"), "computed.with space.ü"),
    (("computed", "[1]"), "computed['[1]']"),
    (("computed", "say\"hi"), "computed['say\"hi']"),
    (("computed", ""), "computed['']"),
])
def test_a_path_is_written_as_it_is_read(parts, text):
    assert format_path(parts) == text
    assert parse_path(text) == parts
