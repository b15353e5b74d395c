"""How soon a `<print>` an LLM writes reaches the terminal, against the floor: the same line read straight from
the fake `claude`'s stdout by this process. `--baseline TREE` adds another wfexec checkout (a before/after).
Sides alternate in one process; medians.

    python bench/bench_print_latency.py [--baseline OTHER_CHECKOUT] [--repeat 7] [--hold 1.0] [--tiny]

Each run is `wfexec states FLOW --backend claude --ephemeral` on a one-prompt folder (this tree writes its debug
files, as it does by default), with a fake `claude` that streams the turn's last assistant message (`<print>` and
`<result>`), notes the time it wrote it, keeps the turn open for `--hold` seconds, then ends it with that text as its
result. The latency is the time from that write to the line arriving on wfexec's stdout (wall clock, one machine).
Like with like: the same fake, folder and command; only the wfexec source on PYTHONPATH differs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tiny import parse_sized  # bench/ is on sys.path: the benches run as scripts

ROOT = Path(__file__).resolve().parent.parent
FAKE = """#!{python}
import json, sys, time
session = "s1"
print(json.dumps({{"type": "system", "subtype": "init", "session_id": session}}), flush=True)
with open({stamp!r}, "w") as out:
    out.write(repr(time.time()))
print(json.dumps({{"type": "assistant", "session_id": session, "message": {{"content": [
    {{"type": "text", "text": "<print>working</print><result>done</result>"}}]}}}}), flush=True)
time.sleep({hold})
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False,
                  "result": "<print>working</print><result>done</result>",
                  "session_id": session, "total_cost_usd": 0.0}}), flush=True)
"""


def one_run(tree: Path, folder: Path, env: dict, stamp: Path) -> float:
    environment = {**env, "PYTHONPATH": str(tree)}
    process = subprocess.Popen([sys.executable, "-m", "wfexec.cli", "states", str(folder), "--backend", "claude",
                                "--ephemeral"], cwd=folder.parent, env=environment,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    arrived = time.time()
    process.communicate(timeout=120)
    if line != "working\n" or process.returncode != 0:
        raise SystemExit(f"{tree}: unexpected run ({line!r}, exit {process.returncode})")
    return arrived - float(stamp.read_text())


def floor_run(fake: Path, env: dict, stamp: Path) -> float:
    """The fake's assistant line read straight from its stdout: what any reader of the stream pays."""
    process = subprocess.Popen([str(fake)], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    for line in process.stdout:
        if '"assistant"' in line:
            arrived = time.time()
            break
    process.communicate(timeout=120)
    return arrived - float(stamp.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, default=None, help="another wfexec checkout to measure too")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--hold", type=float, default=1.0)
    args = parse_sized(parser, repeat=1, hold=0.1)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        (work / ".git").mkdir()
        folder = work / "flow"
        folder.mkdir()
        (folder / "START.md").write_text("Go.")
        stamp = work / "written-at"
        fake = work / "bin" / "claude"
        fake.parent.mkdir()
        fake.write_text(FAKE.format(python=sys.executable, stamp=str(stamp), hold=args.hold))
        fake.chmod(0o755)
        env = {**os.environ, "PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}"}
        env.pop("WFEXEC_STORE", None)
        times: dict[str, list[float]] = {"floor": [], "this tree": []}
        if args.baseline is not None:
            times["baseline"] = []
        for _ in range(args.repeat):  # alternating, so drift on the machine falls on every side alike
            times["floor"].append(floor_run(fake, env, stamp))
            times["this tree"].append(one_run(ROOT, folder, env, stamp))
            if args.baseline is not None:
                times["baseline"].append(one_run(args.baseline, folder, env, stamp))
    medians = {side: statistics.median(values) for side, values in times.items()}
    print(json.dumps({"hold_seconds": args.hold, "repeat": args.repeat,
                      "median_print_latency_seconds": {k: round(v, 4) for k, v in medians.items()}}, indent=2))
    print(f"this tree: {medians['this tree'] * 1000:.0f} ms from the write to wfexec's stdout, against "
          f"{medians['floor'] * 1000:.1f} ms reading the stream directly (the turn stays open {args.hold:g} s after it)")
    if args.baseline is not None:
        print(f"baseline {args.baseline}: {medians['baseline'] * 1000:.0f} ms")


if __name__ == "__main__":
    main()
