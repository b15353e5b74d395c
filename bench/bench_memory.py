"""Peak memory of long runs: a run keeps a bounded window of its history in memory (the step loop's
HISTORY_WINDOW; a durable run's journal holds the rest), so the peak should barely grow with the run's length.

    python bench/bench_memory.py [--repeat 3] [--ephemeral-steps 1000000]

Two sides, each a fresh `python` process running the bench_engine counter loop; its peak resident set
(ru_maxrss) is read after it ends:
- durable: the SQLite store, at 10,000 and at 100,000 steps (goal: under 10% growth);
- ephemeral: `wfexec run --ephemeral` at 10,000 steps and at `--ephemeral-steps` (goal: under 60 MiB at
  1,000,000 steps).
The sizes alternate; medians are printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from bench_engine import WORKFLOW  # noqa: E402
from tiny import parse_sized  # noqa: E402

DURABLE = """
import io, sys, tempfile
from pathlib import Path
sys.path.insert(0, {bench!r})
from bench_engine import counter_workflow
from wfexec.durable.journal import start_run
from wfexec.durable.store import Store
from wfexec.running.console import Console
from wfexec.running.engine import Options

iterations = int(sys.argv[1])
with tempfile.TemporaryDirectory() as folder:
    store = Store(Path(folder) / "runs.db")
    quiet = Console(out=io.StringIO(), err=io.StringIO())
    driven = start_run(store, counter_workflow(), inputs={{"limit": iterations}}, overrides={{}}, io=quiet,
                       options=Options(max_steps=3 * iterations + 10))
    assert driven.result.message == str(iterations), driven
    store.close()
"""


def _peak_kib(command: list[str], what: str, cwd: str | None = None) -> int:
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"the {what} failed")
    return usage.ru_maxrss


def durable_peak_kib(iterations: int) -> int:
    script = DURABLE.format(bench=str(BENCH))
    return _peak_kib([sys.executable, "-c", script, str(iterations)], f"{iterations}-iteration durable run")


def ephemeral_peak_kib(steps: int) -> int:
    """`wfexec run --ephemeral` of the counter loop, `steps` node steps long (two per iteration)."""
    iterations = steps // 2
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "counter.yaml"
        path.write_text(WORKFLOW)
        return _peak_kib([sys.executable, "-m", "wfexec.cli", "run", str(path), "--ephemeral", "--input",
                          f"limit={iterations}", "--max-steps", str(steps + 10)],
                         f"{steps}-step ephemeral run", cwd=folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--durable-iterations", type=int, nargs=2, default=(5_000, 50_000), metavar=("SMALL", "LARGE"),
                        help="loop iterations of the two durable runs (two steps each)")
    parser.add_argument("--ephemeral-steps", type=int, default=1_000_000)
    args = parse_sized(parser, repeat=1, durable_iterations=(50, 500), ephemeral_steps=1_000)
    small, large = args.durable_iterations
    samples: dict[str, list[int]] = {"durable small": [], "durable large": [], "ephemeral small": [],
                                     "ephemeral large": []}
    for _ in range(args.repeat):
        samples["durable small"].append(durable_peak_kib(small))
        samples["durable large"].append(durable_peak_kib(large))
        samples["ephemeral small"].append(ephemeral_peak_kib(2 * small))
        samples["ephemeral large"].append(ephemeral_peak_kib(args.ephemeral_steps))
    mib = {side: statistics.median(values) / 1024 for side, values in samples.items()}
    print(f"durable,   {2 * small:>9,} steps: {mib['durable small']:8.1f} MiB peak RSS")
    print(f"durable,   {2 * large:>9,} steps: {mib['durable large']:8.1f} MiB  "
          f"(growth {100 * (mib['durable large'] - mib['durable small']) / mib['durable small']:.1f} %; goal < 10%)")
    print(f"ephemeral, {2 * small:>9,} steps: {mib['ephemeral small']:8.1f} MiB peak RSS")
    print(f"ephemeral, {args.ephemeral_steps:>9,} steps: {mib['ephemeral large']:8.1f} MiB  (goal at 1,000,000 "
          "steps: < 60 MiB)")


if __name__ == "__main__":
    main()
