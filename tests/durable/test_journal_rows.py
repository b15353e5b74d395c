"""A journal row is written by an encoder set up once (wfexec.durable.store._encode_steps): its text is the one
`json.JSONEncoder(separators=(",", ":"), default=str)` writes for the same steps, character for character,
whatever the steps hold, and it reads back as they were."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from wfexec.durable.store import _encode_steps

ENCODER = json.JSONEncoder(separators=(",", ":"), default=str).encode

STEP = [3, "check", "conditional", {"branch": "true"}, "step", "2026-11-27T02:44:57.722Z"]

VALUES = [0, -7, 2 ** 80, True, False, None, 1.5, -0.0, math.inf, -math.inf, math.nan, 1e300, "", "plain",
          "quote \" back\\slash \n newline \t tab \x00 nul \u2028", "é ü 漢字 🙂", [1, "a", None, [2.5]],
          {"nested": {"deep": [1, {"x": "y"}]}}, {1: "int key", None: "none key", 2.5: "float key"},
          Path("/tmp/x"), ("a", 1)]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_a_step_is_written_as_the_json_encoder_writes_it(value):
    steps = [[*STEP, {"computed.value": value, "flags.done": True}, 12],
             [4, "nöde \"1\"", "action", {"answer": {"id": value}}, "end", "2026-11-27T02:44:57.723Z", {}, 40,
              {"computed.items": [value]}, ["computed.gone"]]]
    assert _encode_steps(steps) == ENCODER(steps)


def test_a_row_reads_back_as_the_steps_were():
    steps = [[*STEP, {"computed.text": "é \"q\"", "count": 2 ** 70, "ratio": 0.1}, 7]]
    assert json.loads(_encode_steps(steps)) == steps


def test_a_step_past_what_a_journal_key_holds_is_refused_and_nothing_is_written(tmp_path):
    from wfexec.durable.store import LAST_STEP, Store, StoreWriteError

    store = Store(tmp_path / "runs.db")
    run_id = store.create_run(workflow_path="w.yaml", workflow_name="w", workflow_hash="", node_hashes={},
                              inputs={}, state={}, start_node="a")
    with pytest.raises(StoreWriteError, match="at most 4,294,967,295 steps"):
        store.append_steps(run_id, [[LAST_STEP + 1, *STEP[1:], {}, 1]], "a")
    assert store.journal(run_id) == []
