"""Per-state cost of a script state, against spawning the same bash script by hand.

    python bench/bench_states.py [--states 300] [--rounds 3]

The states folder is one script, LOOP.sh, that counts through `<goto
input="N+1">LOOP</goto>` until it reaches --states and then emits `<result>`.
wfexec runs it as a states folder (asyncio subprocess, inactivity timer,
environment, tag parsing, resolution, the transition). The baseline runs the
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

LOOP = """\
n=${RAYMOND_INPUT:-0}
if [ "$n" -lt "$LIMIT" ]; then
  echo "<goto input=\\"$((n + 1))\\">LOOP</goto>"
else
  echo "<result>$n</result>"
fi
"""
TAG = re.compile(r"<(goto|result)([^>]*)>(.*?)</\1>", re.DOTALL)
INPUT = re.compile(r'input="([^"]*)"')


def run_wfexec(folder: Path, states: int) -> float:
    from wfexec.running.console import Console
    from wfexec.protocol import run_states_path

    os.environ["LIMIT"] = str(states - 1)
    quiet = Console(out=io.StringIO(), err=io.StringIO())
    start = time.perf_counter()
    result = run_states_path(folder, io=quiet, cwd=folder, start="LOOP")
    elapsed = time.perf_counter() - start
    assert result.exit_code == 0 and result.result == str(states - 1), result.to_json()
    assert result.steps == states, result.steps
    return elapsed


def run_baseline(folder: Path, states: int) -> float:
    script = str(folder / "LOOP.sh")
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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "LOOP.sh").write_text(LOOP)
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
