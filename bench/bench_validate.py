"""Validate big workflows of several shapes, against PyYAML's C loader reading the same file.

    python bench/bench_validate.py [--sizes 5000,10000,50000] [--repeat 3] [--shapes chain,conditionals,...] [--fresh]
                                   [--against OTHER_CHECKOUT]

Shapes (bench/workloads.py VALIDATION_SHAPES): a chain of `action` nodes with one `compute` each, v8 conditionals
on nested combinators with `gated_action` composites, nodes that read what earlier nodes wrote (`${...}`), and
`compute` programs of about 200 characters. For each shape and size, in rounds that alternate the order (of the
sides, and of the sizes: each round measures every size, so a growth compares times taken side by side, not
minutes apart):

- PyYAML : `yaml.load(text, Loader=yaml.CSafeLoader)` on the file's text (the baseline: parsing alone, into plain
           data, no positions, no checks);
- cold   : `wfexec.validate(path)` on a cache miss (an empty cache folder each time, so the entry is written, as
           on a first validate; the process's memos of analysed expressions and parsed paths emptied first);
- cached : `wfexec.validate(path)` served from the compiled-workflow cache on disk (the in-process memo is
           emptied first, so each round reads and unpickles the entry, as a new process would).

Times are CPU seconds of this process (`time.process_time`): the machine is shared, and wall time measures the
neighbours. Both sides run in one process after a first validate, so imports are not counted. Before each timed
side, what the process holds is frozen out of the collector's walks (`gc.freeze`): PyYAML's load runs its
collector over and over (half its time, even alone), and in a heap that still held the earlier rounds' workflows
each of those walks would cover them too, making PyYAML ~1.6x slower than in a process of its own and the ratios
look better than they are. That freeze also turns off wfexec's own move of a finished check's objects to the oldest
generation (gc_pause: it stands aside when something else froze objects), so the in-process cold column measures
wfexec without it; `--fresh` measures what a user's process does. Medians; ratios are within one run. `growth` is
a size's cold time over the smallest size's, with the node-count ratio beside it (linear: equal); with --fresh, a
second `growth` column gives the same for the new-process cold times (this checkout's). Targets (issue 27): cold
< 2x PyYAML, growth 5k→50k < 12x.

`--fresh` adds that stricter comparison: each round, one new process times PyYAML's load of the file and another
times a cold `wfexec.validate` of it (after a first validate of a 20-node workflow, so imports are not counted on
either side), the two alternating: what a user's `wfexec validate` does against loading the file alone.

`--against OTHER_CHECKOUT` (another clone of wfexec, main say) makes that comparison for this checkout and that one
in the same rounds, each side's processes importing wfexec from its own folder, all three sides alternating:
before and after a change, on the same machine in one run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tiny import parse_sized  # noqa: E402
from workloads import VALIDATION_SHAPES, validation_workflow  # noqa: E402


def cpu_seconds(fn) -> float:
    """CPU seconds of `fn` with everything the process already holds frozen out of the collector's walks: what
    `fn` would cost in a process of its own, whatever earlier rounds left."""
    gc.collect()
    gc.freeze()
    try:
        start = time.process_time()
        fn()
        return time.process_time() - start
    finally:
        gc.unfreeze()


def forget_what_this_process_learned() -> None:
    """Empty the per-process memos (expressions analysed, state paths parsed) the previous round filled: a cold
    validate is a new process's first."""
    from wfexec.language import expressions, paths

    expressions._analysed.clear()
    paths._parsed.cache_clear()


def in_process_sides(path: Path, scratch: Path) -> dict[str, Callable[[], None]]:
    """The in-process sides for the file at `path` (PyYAML's load, a cold validate, a cached one), after a first
    validate: the imports, and the entry `cached` reads."""
    import yaml

    import wfexec
    from wfexec.language import workflow_cache

    def pyyaml():
        yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)

    def validate():
        errors = [d for d in wfexec.validate(path) if d.severity == "error"]
        assert not errors, errors[:3]

    fresh = iter(range(10**9))

    def cold():
        os.environ["WFEXEC_CACHE_DIR"] = str(scratch / f"empty{next(fresh)}")
        workflow_cache._this_process.clear()
        forget_what_this_process_learned()
        validate()

    kept = scratch / "kept"

    def cached():
        os.environ["WFEXEC_CACHE_DIR"] = str(kept)
        workflow_cache._this_process.clear()  # a new process has no memo: read the entry from disk
        validate()

    os.environ["WFEXEC_CACHE_DIR"] = str(kept)
    validate()
    return {"pyyaml": pyyaml, "cold": cold, "cached": cached}


# One side of --fresh, in a process of its own: CPU seconds of PyYAML's load, or of a cold validate, and where
# wfexec was imported from.
FRESH = r"""
import json, os, sys, tempfile, time
from pathlib import Path
side, path, small = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
imported = ""
if side == "pyyaml":
    import yaml
    text = path.read_text(encoding="utf-8")
    start = time.process_time()
    yaml.load(text, Loader=yaml.CSafeLoader)
else:
    import wfexec
    imported = wfexec.__file__
    cache = tempfile.TemporaryDirectory()  # cold, and gone when this process ends
    os.environ["WFEXEC_CACHE_DIR"] = cache.name
    wfexec.validate(small)  # the imports a validate makes, and its one-time set-up
    start = time.process_time()
    errors = [d for d in wfexec.validate(path) if d.severity == "error"]
    assert not errors, errors[:3]
print(json.dumps([time.process_time() - start, imported]))
"""

ROOT = Path(__file__).resolve().parents[1]


def fresh_round(path: Path, small: Path, order: list) -> dict:
    """CPU seconds of PyYAML's load ("pyyaml") and of a cold validate by each checkout's wfexec (None: the one this
    interpreter imports), each in a new process, in this order."""
    seconds_of = {}
    for side in order:
        environment = dict(os.environ)
        if side not in ("pyyaml", None):
            environment["PYTHONPATH"] = str(side)
        # Run from the workflow's folder: `-c` puts the working directory first on sys.path, where a checkout
        # would shadow PYTHONPATH's.
        done = subprocess.run([sys.executable, "-c", FRESH, "pyyaml" if side == "pyyaml" else "wfexec", str(path),
                               str(small)], check=True, capture_output=True, text=True, env=environment,
                              cwd=path.parent)
        seconds, imported = json.loads(done.stdout)
        if side not in ("pyyaml", None) and not Path(imported).resolve().is_relative_to(side):
            sys.exit(f"the round for {side} imported wfexec from {imported}")  # else one checkout, twice
        seconds_of[side] = seconds
    return seconds_of


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="5000,10000,50000", help="node counts, comma-separated")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shapes", default=",".join(VALIDATION_SHAPES))
    parser.add_argument("--fresh", action="store_true",
                        help="also time PyYAML and a cold validate each in a new process, alternating")
    parser.add_argument("--against", type=Path, default=None,
                        help="another checkout: --fresh's comparison for this checkout and that one, alternating")
    args = parse_sized(parser, sizes="20,40", repeat=1, fresh=True)
    checkouts: list[Path | None] = [ROOT, args.against.resolve()] if args.against else [None]
    args.fresh = args.fresh or args.against is not None
    sizes = [int(size) for size in args.sizes.split(",")]
    shapes = args.shapes.split(",")
    saved = {name: os.environ.get(name) for name in ("WFEXEC_CACHE_DIR", "WFEXEC_NO_CACHE")}
    os.environ.pop("WFEXEC_NO_CACHE", None)
    if args.against:
        print(f"new process columns: `this` is {ROOT}, `other` {checkouts[1]}")
    print(f"{'shape':<17}{'nodes':>7}{'MB':>7}{'PyYAML s':>10}{'cold s':>9}{'cold/Py':>9}"
          f"{'cached s':>10}{'cached/Py':>11}{'growth':>15}"
          + (f"{'new process: PyYAML s':>23}{'cold s':>9}{'cold/Py':>9}" if args.fresh and not args.against else "")
          + (f"{'new process: PyYAML s':>23}{'this s':>9}{'this/Py':>9}{'other s':>9}{'other/Py':>9}"
             if args.against else "")
          + (f"{'growth':>15}" if args.fresh else ""))
    try:
        for shape in shapes:
            with tempfile.TemporaryDirectory() as folder:
                measure_shape(shape, sizes, args.repeat, checkouts if args.fresh else [], Path(folder))
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def measure_shape(shape: str, sizes: list[int], repeat: int, checkouts: list[Path | None], folder: Path) -> None:
    """One row per size. Each round measures every size, in an order that turns round by round, so the growth from
    one size to the next compares times taken side by side, not minutes apart (the machine's speed drifts)."""
    files = {}
    for size in sizes:
        scratch = folder / str(size)
        scratch.mkdir()
        path = scratch / "workflow.yaml"
        path.write_text(validation_workflow(shape, size), encoding="utf-8")
        small = scratch / "small.yaml"
        small.write_text(validation_workflow(shape, 20), encoding="utf-8")
        files[size] = (path, small, in_process_sides(path, scratch))
    samples: dict[int, dict] = {size: {} for size in sizes}
    in_process_order = ["pyyaml", "cold", "cached"]
    fresh_order: list = ["pyyaml", *checkouts]
    size_order = list(sizes)
    for _ in range(repeat):
        for size in size_order:
            path, small, sides = files[size]
            for name in in_process_order:
                samples[size].setdefault(name, []).append(cpu_seconds(sides[name]))
            if checkouts:
                for side, seconds in fresh_round(path, small, fresh_order).items():
                    samples[size].setdefault(("fresh", side), []).append(seconds)
        in_process_order = in_process_order[1:] + in_process_order[:1]
        fresh_order.reverse()
        size_order.reverse()
    first = sizes[0]
    median = {size: {side: statistics.median(values) for side, values in samples[size].items()} for size in sizes}
    for size in sizes:
        times = median[size]

        def growth(side) -> str:
            """This size's time of `side` over the smallest size's, and the node-count ratio (linear: equal)."""
            return f"{times[side] / median[first][side]:6.1f}x ({size / first:g}x)"

        megabytes = files[size][0].stat().st_size / 1e6
        row = (f"{shape:<17}{size:>7}{megabytes:>7.1f}{times['pyyaml']:>10.2f}{times['cold']:>9.2f}"
               f"{times['cold'] / times['pyyaml']:>8.2f}x{times['cached']:>10.2f}"
               f"{times['cached'] / times['pyyaml']:>10.2f}x{growth('cold'):>15}")
        if checkouts:
            baseline = times[("fresh", "pyyaml")]
            row += f"{baseline:>23.2f}" + "".join(
                f"{times[('fresh', side)]:>9.2f}{times[('fresh', side)] / baseline:>8.2f}x" for side in checkouts
            ) + f"{growth(('fresh', checkouts[0])):>15}"
        print(row, flush=True)


if __name__ == "__main__":
    main()
