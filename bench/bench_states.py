"""Per-state cost of a script state, against spawning the same bash script by hand.

    python bench/bench_states.py [--states 300] [--rounds 5] [--tiny]

The states folder is one script, START.sh, that counts through `<goto
input="N+1">START</goto>` until it reaches --states and then emits `<result>`.
wfexec runs it as `wfexec states FOLDER` does, in this process: the folder as
a one-node workflow, recorded in a run store (a new one each round), every
state checkpointed and its transcript kept (the subprocess, inactivity timer,
environment, tag parsing, resolution, the transition). The figure includes
loading that workflow and opening the store once per run. The baseline runs the
same file the same number of times with `subprocess.run(["bash", file])`,
passing the counter in RAYMOND_INPUT and parsing the tag out of stdout with a
regular expression. Prints microseconds per state for each and the ratio (the
quality bar is 1.5x). Best of --rounds for both, interleaved.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

from tiny import parse_sized

LOOP = """\
n=${RAYMOND_INPUT:-0}
if [ "$n" -lt "$LIMIT" ]; then
  echo "<goto input=\\"$((n + 1))\\">START</goto>"
else
  echo "<result>$n</result>"
fi
"""
TAG = re.compile(r"<(goto|result)([^>]*)>(.*?)</\1>", re.DOTALL)
INPUT = re.compile(r'input="([^"]*)"')


def run_wfexec(folder: Path, states: int) -> float:
    """`wfexec states FOLDER --store FILE --format json`, called as the command calls it."""
    import json
    from contextlib import redirect_stdout

    from wfexec.commands.run import execute_states
    from wfexec.running.request import RunRequest

    os.environ["LIMIT"] = str(states - 1)
    with tempfile.TemporaryDirectory() as scratch:
        printed = io.StringIO()
        # From the scratch folder: the debug files (`.raymond/debug/`, on as in `ray`) go with it, not into the
        # checkout the bench is started from.
        started_in = os.getcwd()
        os.chdir(scratch)
        try:
            start = time.perf_counter()
            with redirect_stdout(printed):
                code = execute_states(RunRequest(path=str(folder.resolve()), max_steps=states + 10, format="json",
                                                 store=str(Path(scratch) / "runs.db")))
            elapsed = time.perf_counter() - start
        finally:
            os.chdir(started_in)
    ending = json.loads(printed.getvalue())
    assert code == 0 and ending["message"] == str(states - 1), printed.getvalue()[-2000:]
    [step] = ending["state"]["history"]
    assert step["outcome"]["states"] == states, step
    return elapsed


def run_baseline(folder: Path, states: int) -> float:
    script = str(folder / "START.sh")
    env = dict(os.environ, LIMIT=str(states - 1))
    value = None
    start = time.perf_counter()
    for _ in range(states):
        if value is None:
            env.pop("RAYMOND_INPUT", None)
        else:
            env["RAYMOND_INPUT"] = value
        done = subprocess.run(["bash", script], cwd=folder, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)
        match = TAG.search(done.stdout)
        if match.group(1) == "result":
            value = match.group(3)
            break
        value = INPUT.search(match.group(2)).group(1)
    elapsed = time.perf_counter() - start
    assert value == str(states - 1), value
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parse_sized(parser, states=5, rounds=1)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "START.sh").write_text(LOOP)
        run_wfexec(folder, 5)  # warm imports
        ours, base = [], []
        for _ in range(args.rounds):  # interleaved, so a busy moment of the machine hurts both alike
            ours.append(run_wfexec(folder, args.states))
            base.append(run_baseline(folder, args.states))
        ours, base = min(ours), min(base)
    per_ours = ours / args.states * 1e6
    per_base = base / args.states * 1e6
    print(f"script states:            {args.states} per run, best of {args.rounds}")
    print(f"wfexec states folder:     {per_ours:8.0f} µs per state ({ours:.3f} s)")
    print(f"subprocess.run + regex:   {per_base:8.0f} µs per state ({base:.3f} s)")
    print(f"ratio wfexec / baseline:  {ours / base:8.2f}x   (bar: ≤ 1.5x)")


if __name__ == "__main__":
    main()
