"""The crash soak: the real `wfexec` SIGKILLed again and again just before chosen SQL statements, over a workflow
whose steps have outside effects and which runs a `states` node of scripts, resumed with `--rerun` after each kill
until it ends. Every run must end as an uninterrupted one does, lose no effect, and repeat at most one effect per
kill (the step in flight).

Kill points are drawn by a seeded RNG from the statements that make a run durable (see tests/crashpoint.py), so a
failure names the trial, the statement and the count, and the same seed gives the same kills.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from conftest import ROOT, wfexec_in_process as cli
from test_durable import _outcome, _records

SOAK = """
name: soak
version: 1
start_node: check
initial_state: {count: 0, spins: 0}
nodes:
  check:
    type: conditional
    condition: {type: evaluate_expression, expression: "count < 4"}
    branches: {true: step, false: agents}
  step:
    type: action
    actions:
      - {type: write_file, path: "executions.log", content: "step-${count}\\n", append: true}
      - {type: write_file, path: "out/${count}.txt", content: "step ${count}"}
      - {type: compute, expression: "count + 1", store_as: count}
    on_success: tally
  tally:
    type: action
    actions:
      - {type: set_state, field: computed.last, value: "after ${count}"}
      - {type: compute, expression: "spins + 1", store_as: spins}
    on_success: spin
  spin:
    type: conditional
    condition: {type: evaluate_expression, expression: "spins < count * 400"}
    branches: {true: tally, false: check}
  agents:
    type: states
    folder: flow
    store_as: computed.agents
    on_success: done
endings:
  done: {type: success, message: "${computed.agents}"}
"""
# The tally ⇄ spin loop's 3,200 state-only steps are committed in batches; their journal rows soon outweigh the
# last snapshot, so runs write new snapshots and resume replays rows after one.
SCRIPTS = 5  # the states node's chain: S1.sh → S2.sh → … → S5.sh, each logging itself once

# The statements a kill is placed before, each where a run's progress becomes durable, with how many of them a
# process may see before the kill (a statement a run issues once gets a kill only at its first).
STATEMENTS = {
    "begin": (r"^BEGIN", 4),
    "commit": (r"^COMMIT", 4),
    "journal row": (r"^INSERT OR REPLACE INTO journal", 4),
    "snapshot": (r"^UPDATE snapshots", 3),
    "in-flight mark": (r"^UPDATE runs SET in_flight", 4),
    "agents saved": (r"^INSERT INTO node_states", 1),  # whole, at the node's first state
    "agent changed": (r"^INSERT INTO node_state_changes", 4),  # each state after it
    "agents cleared": (r"^DELETE FROM node_states", 1),
    "status": (r"^UPDATE runs SET status", 2),
}
KILLS_WANTED = 50
ATTEMPTS_PER_TRIAL = 25  # a bound, so an endless kill loop fails instead of hanging
MAX_TRIALS = 10 * KILLS_WANTED  # and runs that no kill reaches fail too


def soak_folder(folder: Path) -> Path:
    flow = folder / "flow"
    flow.mkdir(parents=True)
    (folder / "out").mkdir()
    (folder / "workflow.yaml").write_text(SOAK)
    for index in range(1, SCRIPTS + 1):
        next_tag = f"<goto>S{index + 1}.sh</goto>" if index < SCRIPTS else "<result>agents done</result>"
        (flow / f"S{index}.sh").write_text(f"echo agent-{index} >> executions.log\necho '{next_tag}'\n")
    (flow / "START.sh").write_text("echo '<goto>S1.sh</goto>'\n")
    return folder


def wfexec_killed_before(folder: Path, pattern: str, count: int, args: list[str]) -> int:
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "crashpoint.py"), "before-statement", pattern,
                           str(count), "--", *args, "--store", str(folder / "runs.db")],
                          cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    assert done.returncode in (0, -signal.SIGKILL), f"exit {done.returncode}: {done.stderr.decode()}"
    return done.returncode


def outcome_of(folder: Path) -> dict:
    """What the run left, without the one part each run names afresh: the states node's Raymond workflow id."""
    outcome = _outcome(folder, folder / "runs.db")
    for row in outcome["journal"]:
        if row["type"] == "states":
            row["outcome"].pop("workflow_id")
    return outcome


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> dict:
    folder = soak_folder(tmp_path_factory.mktemp("soak-baseline"))
    done = cli("run", "workflow.yaml", "--store", folder / "runs.db", cwd=folder)
    assert done.returncode == 0, done.stderr
    outcome = outcome_of(folder)
    assert outcome["status"][:2] == ("completed", "done") and outcome["state"]["computed"]["agents"] == "agents done"
    assert Counter(outcome["executions"]) == Counter([f"step-{i}" for i in range(4)] +
                                                      [f"agent-{i}" for i in range(1, SCRIPTS + 1)])
    return outcome


@pytest.mark.slow
def test_fifty_kills_before_chosen_statements_lose_nothing_and_repeat_at_most_one_effect_each(
        tmp_path, uninterrupted):
    rng = random.Random(20261124)
    kills = 0
    targeted: Counter = Counter()
    repeats_total = 0
    trial = 0
    while kills < KILLS_WANTED:
        trial += 1
        if trial > MAX_TRIALS:
            pytest.fail(f"{kills} kills landed in {trial - 1} runs: the statements targeted "
                        f"({sorted(STATEMENTS)}) are no longer what the store writes?")
        folder = soak_folder(tmp_path / f"trial{trial}")
        trial_kills = 0
        kill_points = []
        for _attempt in range(ATTEMPTS_PER_TRIAL):
            listed = _records(folder / "runs.db")
            if listed and listed[0].status == "completed":
                break
            name = rng.choice(sorted(STATEMENTS))
            pattern, most = STATEMENTS[name]
            count = rng.randint(1, most)
            args = ["resume", listed[0].id, "--rerun"] if listed else ["run", "workflow.yaml"]
            if wfexec_killed_before(folder, pattern, count, args) == -signal.SIGKILL:
                trial_kills += 1
                targeted[name] += 1
                kill_points.append(f"{name}#{count}")
        else:
            pytest.fail(f"trial {trial}: not ended after {ATTEMPTS_PER_TRIAL} attempts ({kill_points})")
        where = f"trial {trial}, kills before {kill_points}"
        outcome = outcome_of(folder)
        for key in ("status", "state", "journal", "files"):
            assert outcome[key] == uninterrupted[key], f"{where}: {key} differs"
        executed = Counter(outcome["executions"])
        assert set(executed) == set(uninterrupted["executions"]), f"{where}: an effect was lost"
        repeats = sum(executed.values()) - len(executed)
        assert repeats <= trial_kills, f"{where}: {repeats} repeated effects for {trial_kills} kills: {executed}"
        kills += trial_kills
        repeats_total += repeats
    print(f"\ncrash soak: {kills} kills over {trial} runs, {repeats_total} repeated effects, "
          f"statements targeted: {dict(sorted(targeted.items()))}")
    assert set(targeted) == set(STATEMENTS), f"no kill landed before {set(STATEMENTS) - set(targeted)}"
