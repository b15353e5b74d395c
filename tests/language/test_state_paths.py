"""State paths as text (wfexec.language.paths): what `format_path` writes, `parse_path` reads back to the same
parts, a name holding `.`, brackets or quotes written quoted in brackets, every other name after a dot."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from wfexec.language import paths
from wfexec.language.paths import PathError, format_path, parse_path


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


def _read(reader, text: str):
    try:
        return reader(text)
    except PathError as error:
        return f"error: {error}"


@given(st.text(alphabet="ab .[]'\"0-é", max_size=12))
def test_a_path_of_names_and_dots_reads_as_the_segment_reader_reads_it(text):
    """Names and dots are split without the segment regex; every path, malformed ones too, reads the same (the
    same parts or the same error) as the segment by segment reader gives it."""
    if not text.strip():
        return
    assert _read(parse_path, text) == _read(paths._segments, text)


def test_a_path_of_names_and_dots_is_read_without_the_segment_regex(monkeypatch):
    class Refused:
        def match(self, *_):
            raise AssertionError("read a plain path segment by segment")

    monkeypatch.setattr(paths, "_SEGMENT", Refused())
    assert parse_path("computed.never_read_before . x") == ("computed", "never_read_before", "x")
    with pytest.raises(AssertionError):  # brackets (and malformed paths) still go through it
        parse_path("computed.never_read_before[0]")
