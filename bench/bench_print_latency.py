"""How soon a `<print>` an LLM writes reaches the terminal (issue 30, point 3), for this tree against a baseline
tree (default: /work/main), alternating runs in the same process.

    python bench/bench_print_latency.py [--baseline /work/main] [--repeat 7] [--hold 1.0]

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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", type=Path, default=Path("/work/main"))
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--hold", type=float, default=1.0)
    args = parser.parse_args()
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
        times: dict[str, list[float]] = {"baseline": [], "this tree": []}
        for _ in range(args.repeat):  # alternating, so drift on the machine falls on both sides alike
            times["baseline"].append(one_run(args.baseline, folder, env, stamp))
            times["this tree"].append(one_run(ROOT, folder, env, stamp))
    medians = {side: statistics.median(values) for side, values in times.items()}
    print(json.dumps({"hold_seconds": args.hold, "repeat": args.repeat,
                      "median_print_latency_seconds": {k: round(v, 4) for k, v in medians.items()}}, indent=2))
    print(f"this tree shows the <print> {medians['baseline'] / medians['this tree']:.1f}x sooner "
          f"({medians['this tree'] * 1000:.0f} ms against {medians['baseline'] * 1000:.0f} ms; the turn stays open "
          f"{args.hold:g} s after it)")


if __name__ == "__main__":
    main()
