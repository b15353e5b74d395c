"""wfexec.system.patterns.lazy stands for `re.compile(pattern, flags)` and compiles on first use."""

from __future__ import annotations

import re

from wfexec.system.patterns import lazy


def test_a_lazy_pattern_answers_as_the_compiled_one():
    text = "Resets 5:30pm (Europe/Paris) and resets 11am (UTC)"
    source, flags = r"resets\s+(\d{1,2})(?::(\d{2}))?\s*(am|pm)\s*\(([^)]+)\)", re.IGNORECASE
    ours, theirs = lazy(source, flags), re.compile(source, flags)
    assert ours.match(text).groups() == theirs.match(text).groups()  # type: ignore[union-attr]
    assert ours.findall(text) == theirs.findall(text)
    assert [m.span() for m in ours.finditer(text)] == [m.span() for m in theirs.finditer(text)]
    assert ours.sub("R", text) == theirs.sub("R", text)
    assert ours.search("no") is None and ours.fullmatch(text) is None
    assert (ours.pattern, ours.flags, ours.groups) == (theirs.pattern, theirs.flags, theirs.groups)


def test_nothing_is_compiled_before_the_first_use():
    unbalanced = lazy("(")  # compiling it would raise
    try:
        unbalanced.match("x")
    except re.error:
        pass
    else:
        raise AssertionError("the pattern was never compiled")
