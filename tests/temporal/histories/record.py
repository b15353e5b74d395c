"""Record the histories that tests/temporal/test_replay_histories.py replays: real runs on a real dev server with
real `wfexec worker` processes, each history saved as the Python client's `history.to_json()`.

    PYTHONPATH=$PWD:$PWD/tests python tests/temporal/histories/record.py FOLDER

Run it with the workflow code whose histories you want to keep, into a folder of their own here (README.md).
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

from temporal_support import (EDGES, QUICKSTART, ROOT, STATES_NODE, WAIT_FOR_FILE, DevServer, Workers, run_id_from,
                              wfexec)

SHORT_STEPS = ROOT / "tests" / "workflows" / "temporal" / "short_steps.yaml"
ASK_BETWEEN_STEPS = ROOT / "tests" / "workflows" / "temporal" / "ask_between_steps.yaml"


def latest_run(server: DevServer, cwd: Path) -> str:
    listed = wfexec(server, "runs", "--format", "json", "--limit", "1", cwd=cwd, check_code=0)
    return json.loads(listed.stdout)["runs"][0]["id"]


def record_runs(server: DevServer, cwd: Path) -> dict[str, str]:
    """name → run id, one run per kind of command the workflow code schedules."""
    runs = {}
    steps = cwd / "steps"
    steps.mkdir()
    (steps / "go").touch()
    # a question asked by the workflow code, answered by the `answer` update
    runs["question_answered"] = run_id_from(wfexec(server, "run", QUICKSTART, cwd=cwd, check_code=3).stderr)
    wfexec(server, "resume", runs["question_answered"], "--answer", "ask_mood=cheerful", cwd=cwd, check_code=0)
    # an effect step that runs a program: a regular activity on the run's worker
    wfexec(server, "run", WAIT_FOR_FILE, "--set", f"computed.dir={steps}", cwd=cwd, check_code=0)
    runs["effect_step"] = latest_run(server, cwd)
    # a short idempotent step (a local activity) and a short one not safe to run twice (a regular activity)
    wfexec(server, "run", SHORT_STEPS, "--set", f"computed.dir={steps}", cwd=cwd, check_code=0)
    runs["short_steps"] = latest_run(server, cwd)
    # a short step, a question answered by update, then a command step
    runs["ask_between_steps"] = run_id_from(wfexec(server, "run", ASK_BETWEEN_STEPS, cwd=cwd, check_code=3).stderr)
    wfexec(server, "resume", runs["ask_between_steps"], "--answer", "ask=go", cwd=cwd, check_code=0)
    # a states node: agent states as activities, forks, an agent that asks
    runs["states_agents"] = run_id_from(wfexec(server, "run", STATES_NODE, cwd=cwd, check_code=3).stderr)
    wfexec(server, "resume", runs["states_agents"], "--answer", "main=yes", cwd=cwd, check_code=0)
    # an entry gate and an ending whose calls touch files: `wfexec_run_edge` activities
    (cwd / "ready.txt").touch()
    wfexec(server, "run", EDGES, cwd=cwd, check_code=0)
    runs["edges"] = latest_run(server, cwd)
    return runs


async def save_histories(address: str, runs: dict[str, str], into: Path) -> None:
    from temporalio.client import Client

    client = await Client.connect(address)
    for name, run_id in runs.items():
        history = await client.get_workflow_handle(run_id).fetch_history()
        (into / f"{name}.json").write_text(json.dumps(json.loads(history.to_json()), indent=1) + "\n")


def main() -> None:
    into = Path(sys.argv[1])
    into.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        server = DevServer(work)
        server.start()
        pool = Workers(server, "wfexec", work)
        try:
            pool.start()
            runs = record_runs(server, work)
            asyncio.run(save_histories(server.address, runs, into))
        finally:
            pool.stop()
            server.kill()
    print("\n".join(f"{name}: {run_id}" for name, run_id in runs.items()))


if __name__ == "__main__":
    main()
