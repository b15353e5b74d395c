"""The positions of a rewritten document (wfexec.language.moved_positions): a moved field keeps the place its
author wrote it at, through several moves, and a path with no position of its own falls back as before."""

from __future__ import annotations

import pytest

from wfexec.language.moved_positions import MovedPositions

WRITTEN = {
    ("nodes", "a"): (3, 5), ("@key", "nodes", "a"): (3, 3),
    ("nodes", "a", "consequences"): (5, 7), ("@key", "nodes", "a", "consequences"): (5, 5),
    ("nodes", "a", "consequences", 0): (6, 9),
    ("nodes", "a", "consequences", 0, "flag"): (6, 30), ("@key", "nodes", "a", "consequences", 0, "flag"): (6, 24),
}


def test_a_field_moved_twice_keeps_its_place_and_its_keys():
    positions = MovedPositions(WRITTEN)
    positions.move(("nodes", "a"), ("nodes", "a__act"))
    again = MovedPositions(positions)  # a second rewrite of the first one's document
    again.move(("nodes", "a__act", "consequences"), ("nodes", "a__act", "actions"))
    assert again.get(("nodes", "a__act", "actions", 0, "flag")) == (6, 30)
    assert again[("@key", "nodes", "a__act", "actions", 0, "flag")] == (6, 24)
    assert again.get(("nodes", "a__act", "actions", 0, "nothing")) is None
    assert ("nodes", "a__act", "actions") not in again and dict(again) == WRITTEN  # moves are not copies


@pytest.mark.parametrize("near_first", [False, True])
def test_the_nearest_move_decides_and_the_next_answers_what_it_lacks(near_first):
    positions = MovedPositions(WRITTEN)
    positions[("nodes", "b", "when")] = (20, 3)
    moves = [(("nodes", "a"), ("nodes", "c")), (("nodes", "b"), ("nodes", "c", "consequences"))]
    for old, new in reversed(moves) if near_first else moves:
        positions.move(old, new)
    assert positions.get(("nodes", "c", "consequences", "when")) == (20, 3)      # the nearer move
    assert positions.get(("nodes", "c", "consequences", 0, "flag")) == (6, 30)   # only the farther one has it
    assert positions.get(("nodes", "c", "elsewhere"), "default") == "default"
