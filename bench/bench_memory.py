"""Peak memory of a durable run at 10,000 and at 100,000 steps: a run keeps a bounded window of its history in
memory (the journal holds the rest), so the peak should barely grow.

    python bench/bench_memory.py [--repeat 3]

Each run is a fresh `python` process running the bench_engine counter loop with the SQLite store; its peak
resident set (ru_maxrss) is read after it ends. The two sizes alternate; medians are printed with the growth
(goal: under 10% from 10k to 100k steps).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from tiny import parse_sized  # noqa: E402  (bench/ is on sys.path: the benches run as scripts)

CHILD = """
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


def peak_kib(iterations: int) -> int:
    script = CHILD.format(bench=str(Path(__file__).resolve().parent))
    process = subprocess.Popen([sys.executable, "-c", script, str(iterations)])
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"the {iterations}-step run failed")
    return usage.ru_maxrss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=5_000, help="loop iterations of the small run (two steps "
                                                                       "each); the large run makes ten times more")
    args = parse_sized(parser, repeat=1, iterations=50)
    small, large = [], []
    for _ in range(args.repeat):
        small.append(peak_kib(args.iterations))
        large.append(peak_kib(10 * args.iterations))
    a, b = statistics.median(small), statistics.median(large)
    print(f"peak RSS, {2 * args.iterations:,} steps : {a / 1024:8.1f} MiB")
    print(f"peak RSS, {20 * args.iterations:,} steps: {b / 1024:8.1f} MiB")
    print(f"growth              : {100 * (b - a) / a:8.1f} %  (goal: < 10%)")


if __name__ == "__main__":
    main()
