"""Forked agents, on the real path: `wfexec states` (recorded in a run store) against bash forking the same scripts.

    python bench/bench_forks.py [--workers 1000] [--seconds 1.0] [--rounds 3] [--scaling 10,100,1000] [--tiny]

START.sh forks --workers copies of WORK.sh in one output (a multi-fork) and continues at DONE.sh, which
returns; each WORK.sh sleeps --seconds and returns its item. wfexec runs the folder as `python -m wfexec states
FOLDER --store FILE`, a process of its own, as a person would: every agent state is checkpointed in the store
and its transcript kept. The floor is bash starting the same WORK.sh --workers times in the background and
waiting for them (`bash WORK.sh & … wait`): the same processes, with nothing kept.

Part 1 alternates the two sides --rounds times and prints the medians of wall time (the bar: wfexec within
1.5x of the floor) and of CPU (the process and everything it started). Part 2 shows the CPU wfexec spends per
agent state above the floor, at each size of --scaling: (wfexec's CPU − its start-up − the floor's CPU) / states,
where the start-up is a run of a folder of one state. Flat means saving one agent's progress costs the same
whatever the number of agents.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tiny import parse_sized

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
FLOOR = """\
for i in $(seq 1 "$WORKERS"); do
  item=$i bash WORK.sh >/dev/null &
done
wait
"""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], cwd: Path, env: dict) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and all it waited for) of one command, which must succeed."""
    cpu, start = _children_cpu(), time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
    assert done.returncode == 0, (command, done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    return wall, cpu


def write_folder(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (("START.sh", START), ("WORK.sh", WORK), ("DONE.sh", DONE)):
        (folder / name).write_text(text)


class Sides:
    """The commands of one size: wfexec's run of the folder (a new store each time), the floor, start-up."""

    def __init__(self, root: Path, workers: int, seconds: float):
        self.root, self.workers = root, workers
        self.folder = root / f"forks{workers}"
        write_folder(self.folder)
        (self.folder / "floor.sh").write_text(FLOOR)
        self.one = root / "one"
        self.one.mkdir(exist_ok=True)
        (self.one / "START.sh").write_text("echo '<result>ok</result>'\n")
        self.env = dict(os.environ, WORKERS=str(workers), SECONDS_EACH=str(seconds))
        self.count = 0

    def wfexec(self, folder: Path | None = None) -> tuple[float, float]:
        self.count += 1
        store = self.root / f"runs{self.count}.db"
        wall_cpu = timed([sys.executable, "-m", "wfexec", "states", str(folder or self.folder), "--store", str(store)],
                         self.root, self.env)
        store.unlink()
        return wall_cpu

    def floor(self) -> tuple[float, float]:
        return timed(["bash", "floor.sh"], self.folder, self.env)

    def startup(self) -> tuple[float, float]:
        return self.wfexec(self.one)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scaling", default="10,100,1000", help="sizes for part 2, comma-separated")
    args = parse_sized(parser, workers=4, seconds=0.01, rounds=1, scaling="2,4")
    sizes = [int(n) for n in args.scaling.split(",") if n]
    if not args.tiny:  # the children read compiled modules, as an installed wfexec does
        import wfexec

        compileall.compile_dir(Path(wfexec.__file__).parent, quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sides = Sides(root, args.workers, args.seconds)
        sides.startup()  # the first start compiles and warms the file cache: not the point here
        ours, floor = [], []
        for _ in range(args.rounds):  # alternating, so a busy moment of the machine hurts both alike
            ours.append(sides.wfexec())
            floor.append(sides.floor())
        wall, cpu = (statistics.median(x[i] for x in ours) for i in (0, 1))
        floor_wall, floor_cpu = (statistics.median(x[i] for x in floor) for i in (0, 1))
        print(f"forked agents: {args.workers} × a {args.seconds:g} s script, median of {args.rounds} alternating rounds")
        print(f"{'':28}{'wall s':>9}{'CPU s':>9}")
        print(f"{'wfexec states (store)':28}{wall:9.2f}{cpu:9.2f}")
        print(f"{'bash forking WORK.sh':28}{floor_wall:9.2f}{floor_cpu:9.2f}")
        print(f"{'ratio':28}{wall / floor_wall:8.2f}x{cpu / floor_cpu:8.2f}x   (bar: wall ≤ 1.5x)")
        print()
        print("CPU above the floor (wfexec − start-up − bash), one round each; per agent state, and per agent state")
        print("added since the size before (what one more agent costs, without the run's one-time costs):")
        print(f"{'agents':>8}{'states':>8}{'wfexec CPU s':>14}{'floor CPU s':>13}{'start-up s':>12}"
              f"{'per state ms':>14}{'per added ms':>14}")
        before = None
        for size in sizes:
            each = Sides(root, size, args.seconds)
            start_cpu = each.startup()[1]
            _, ours_cpu = each.wfexec()
            _, floor_cpu = each.floor()
            states = size + 2  # START, each WORK, DONE
            above = ours_cpu - start_cpu - floor_cpu
            added = f"{(above - before[1]) / (states - before[0]) * 1000:14.2f}" if before else f"{'':>14}"
            print(f"{size:8d}{states:8d}{ours_cpu:14.2f}{floor_cpu:13.2f}{start_cpu:12.2f}{above / states * 1000:14.2f}"
                  f"{added}")
            before = (states, above)


if __name__ == "__main__":
    main()
