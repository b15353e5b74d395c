"""How `wfexec serve --temporal` numbers what each activity of a cluster run kept, and times its steps, from the
run's journal (the rest is tested against a real dev server in test_serve_temporal.py)."""

from __future__ import annotations

from wfexec.serve.cluster_history import AGENT_STATE, EFFECT_STEP, durations, numbered, output_rows
from wfexec.durable.outputs import output_text


def _kept(node: str, kind: str, text: str = "") -> dict:
    return {"node": node, "kind": kind, "output": text, "output_bytes": len(text.encode()), "transcript": []}


def test_each_activity_is_the_next_step_of_its_node_and_agent_states_share_their_node_s_step():
    journal = [{"step": 1, "node": "build"}, {"step": 2, "node": "check"}, {"step": 3, "node": "build"},
               {"step": 4, "node": "agents"}]
    kept = [_kept("build", EFFECT_STEP), _kept("build", EFFECT_STEP), _kept("agents", AGENT_STATE),
            _kept("agents", AGENT_STATE), _kept("build", EFFECT_STEP)]
    assert [part["step"] for part in numbered(kept, journal)] == [1, 3, 4, 4, 5]  # the last: the step in flight


def test_what_the_journal_s_window_no_longer_holds_is_not_given_a_number():
    journal = [{"step": 1001, "node": "build"}]
    kept = [_kept("old", EFFECT_STEP, "long ago\n"), _kept("build", EFFECT_STEP, "now\n")]
    parts = numbered(kept, journal)
    assert [part["step"] for part in parts] == [None, 1001]
    text = output_text(output_rows(parts), 0, 13)["text"]
    assert text == "── step ? · old (an early step) ──\nlong ago\n── step 1001 · build ──\nnow\n"


def test_a_step_s_duration_is_the_time_since_the_record_before_it_on_the_workflow_s_clock():
    journal = [{"at": "2026-01-01T00:00:01.500Z"}, {"at": "2026-01-01T00:00:01.500Z"},
               {"at": "2026-01-01T00:00:04.000Z"}]
    started = 1767225600.0  # 2026-01-01T00:00:00Z
    assert durations(journal, started) == [1500.0, 0.0, 2500.0]
