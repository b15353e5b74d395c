"""Forked agents run at the same time: N workers each running a 1-second script.

    python bench/bench_forks.py [--workers 50] [--seconds 1.0]

START.sh forks --workers copies of WORK.sh in one output (a multi-fork), and
continues at DONE.sh, which returns. Each WORK.sh sleeps --seconds and returns
its item. Run one after another this would take workers × seconds; the quality
bar is ≤ 1.3 s of wall time for 50 one-second workers. Prints the wall time,
the serial time it replaces, and the overhead above one script's duration.
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
from pathlib import Path

START = """\
for i in $(seq 1 "$WORKERS"); do
  echo "<fork next=\\"DONE\\" item=\\"$i\\">WORK</fork>"
done
"""
WORK = """\
sleep "$SECONDS_EACH"
echo "<result>done $item</result>"
"""
DONE = """\
echo "<result>forked $WORKERS</result>"
"""


def main() -> None:
    import os

    from wfexec.running.console import Console
    from wfexec.protocol import run_states_path

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    os.environ["WORKERS"] = str(args.workers)
    os.environ["SECONDS_EACH"] = str(args.seconds)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, text in (("START.sh", START), ("WORK.sh", WORK), ("DONE.sh", DONE)):
            (folder / name).write_text(text)
        quiet = Console(out=io.StringIO(), err=io.StringIO())
        warm = folder / "warm"
        warm.mkdir()
        (warm / "START.sh").write_text("echo '<result>ok</result>'\n")
        run_states_path(warm, io=quiet, cwd=folder)  # imports and first-call costs are not the point here
        start = time.perf_counter()
        result = run_states_path(folder, io=quiet, cwd=folder)
        wall = time.perf_counter() - start
    assert result.exit_code == 0, result.to_json()
    assert len(result.forks) == args.workers, len(result.forks)
    assert sorted(f["result"] for f in result.forks) == sorted(f"done {i}" for i in range(1, args.workers + 1))
    print(f"forked workers:        {args.workers} × a {args.seconds:g} s script")
    print(f"wall time:             {wall:6.3f} s   (bar: ≤ 1.3 s for 50 × 1 s)")
    print(f"serial time replaced:  {args.workers * args.seconds:6.1f} s   (speed-up {args.workers * args.seconds / wall:.1f}x)")
    print(f"overhead above one:    {wall - args.seconds:6.3f} s   ({(wall - args.seconds) / args.workers * 1000:.1f} ms "
          "per worker)")


if __name__ == "__main__":
    main()
