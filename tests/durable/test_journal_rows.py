"""A journal row (wfexec.durable.store._encode_steps) reads back as the steps were, whatever they hold: its text is
the one `json.JSONEncoder(separators=(",", ":"), default=str)` writes, or, past a process's first rows, orjson's,
which reads back the same (NaN and Infinity, integers past 64 bits, values JSON has no type for and keys that are
not strings keep the json module's text)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from wfexec.durable import store
from wfexec.durable.store import _encode_steps

ENCODER = json.JSONEncoder(separators=(",", ":"), default=str).encode

STEP = [3, "check", "conditional", {"branch": "true"}, "step", "2026-11-27T02:44:57.722Z"]

VALUES = [0, -7, 2 ** 80, True, False, None, 1.5, -0.0, math.inf, -math.inf, math.nan, 1e300, 0.1, "", "plain",
          "quote \" back\\slash \n newline \t tab \x00 nul \u2028", "é ü 漢字 🙂", "lone \ud800 surrogate",
          [1, "a", None, [2.5]], {"nested": {"deep": [1, {"x": "y"}]}}, {1: "int key", None: "none key",
                                                                          2.5: "float key"},
          Path("/tmp/x"), ("a", 1)]


@pytest.fixture(params=["json", "orjson"])
def row_encoder(request, monkeypatch):
    """Which encoder writes rows: the json module (a process's first rows), or orjson (every row after them)."""
    if request.param == "orjson":
        monkeypatch.setattr(store, "_rows_encoded", store.ROWS_BEFORE_ORJSON)
        monkeypatch.setattr(store, "_fast_row_encoder", None)
        _encode_steps([[1, "warm", "action", {}, "x", "", {}, 0]])  # the switch
        assert store._fast_row_encoder is not None
    else:
        monkeypatch.setattr(store, "_rows_encoded", 0)
        monkeypatch.setattr(store, "_fast_row_encoder", None)
    return request.param


def _read_back(text: str) -> str:
    """What a row's text reads back as, written so NaN compares equal to NaN."""
    return json.dumps(json.loads(text))


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_a_step_reads_back_as_the_json_encoder_writes_it(value, row_encoder):
    steps = [[*STEP, {"computed.value": value, "flags.done": True}, 12],
             [4, "nöde \"1\"", "action", {"answer": {"id": value}}, "end", "2026-11-27T02:44:57.723Z", {}, 40,
              {"computed.items": [value]}, ["computed.gone"]]]
    assert _read_back(_encode_steps(steps)) == _read_back(ENCODER(steps))


def test_a_process_writes_its_first_rows_with_the_json_module_and_later_ones_with_orjson(row_encoder):
    steps = [[*STEP, {"computed.text": "é", "ratio": 1e300}, 7]]
    written = _encode_steps(steps)
    if row_encoder == "json":
        assert written == ENCODER(steps)
    else:  # orjson: UTF-8 where the json module escapes
        assert written == '[[3,"check","conditional",{"branch":"true"},"step","2026-11-27T02:44:57.722Z",' \
                          '{"computed.text":"é","ratio":1e+300},7]]'


def test_a_row_reads_back_as_the_steps_were(row_encoder):
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


def test_a_long_run_switches_to_orjson_and_reads_back_every_row(tmp_path, monkeypatch):
    """A durable run committing each step writes its first rows with the json module and the rest with orjson; its
    state replays from both kinds of row."""
    import io

    import wfexec
    from wfexec.durable.journal import start_run
    from wfexec.durable.store import Store
    from wfexec.running.console import Console
    from wfexec.running.engine import Options

    monkeypatch.setattr(store, "_rows_encoded", 0)
    monkeypatch.setattr(store, "_fast_row_encoder", None)
    (tmp_path / "loop.yaml").write_text(
        "name: loop\nversion: '1'\nstart_node: tick\ninitial_state: {count: 0, label: ''}\nnodes:\n  tick:\n"
        "    type: action\n    actions:\n      - {type: compute, expression: 'count + 1', store_as: count}\n"
        "      - {type: set_state, field: label, value: 'étape ${count}'}\n"
        "    on_success: \"${count < 600 ? 'tick' : 'done'}\"\nendings:\n  done: {type: success, message: ok}\n")
    runs = Store(tmp_path / "runs.db")
    quiet = Console(out=io.StringIO(), err=io.StringIO())
    driven = start_run(runs, wfexec.load(tmp_path / "loop.yaml"), inputs={}, overrides={}, io=quiet,
                       options=Options(max_steps=1000, commit_every_step=True))
    assert driven.result.message == "ok"
    texts = [text for (text,) in runs.db.execute("SELECT steps FROM journal ORDER BY key")]
    assert len(texts) == 600
    assert "\\u00e9tape 1" in texts[0] and "étape 600" in texts[-1]  # the json module's escape, then orjson's UTF-8
    replayed = runs.replay(driven.run_id)
    assert (replayed.step, replayed.state["count"], replayed.state["label"]) == (600, 600, "étape 600")
    assert [step["node"] for step in runs.journal(driven.run_id)] == ["tick"] * 600
    runs.close()
