"""Checking with the collector paused (wfexec/language/gc_pause.py): what a check made and still holds is old when it
ends, so no young collection walks a big workflow again; the collector runs again after; objects frozen by someone
else stay frozen."""

from __future__ import annotations

import gc

import pytest

from wfexec.language.gc_pause import collector_paused


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def _in_generation(value, generation: int) -> bool:
    return any(tracked is value for tracked in gc.get_objects(generation=generation))


def test_what_a_paused_check_made_and_holds_is_in_the_oldest_generation_when_it_ends(collector_on):
    made = collector_paused(lambda: [[index] for index in range(1000)])()
    assert gc.isenabled()
    assert _in_generation(made, 2) and _in_generation(made[-1], 2)
    assert not _in_generation(made, 0)
    assert gc.get_count()[0] < 1000  # the thousand lists it made are not waiting for a young collection


def test_a_paused_call_inside_another_leaves_the_collector_to_the_outer_one(collector_on):
    inner_enabled = []

    def outer():
        collector_paused(lambda: inner_enabled.append(gc.isenabled()))()
        return gc.isenabled()

    assert collector_paused(outer)() is False  # still paused after the inner call
    assert inner_enabled == [False] and gc.isenabled()


def test_objects_someone_else_froze_stay_frozen(collector_on):
    gc.collect()
    kept = [object() for _ in range(10)]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        made = collector_paused(lambda: [[index] for index in range(100)])()
        assert gc.get_freeze_count() == frozen  # not undone
        assert _in_generation(made, 0)  # this check's objects age as usual then
    finally:
        gc.unfreeze()
    assert kept


def test_the_collector_runs_again_after_a_paused_check_that_raised(collector_on):
    def broken():
        raise ValueError("bad workflow")

    with pytest.raises(ValueError):
        collector_paused(broken)()
    assert gc.isenabled()
