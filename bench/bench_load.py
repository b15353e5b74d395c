"""Load + validate a 5,000-line, 500-node workflow, against PyYAML's C loader parsing the same text.

    python bench/bench_load.py [--nodes 500] [--repeat 15]

Prints both median times and the ratio (the quality bar is under 3x), with the compiled-workflow cache off;
then the same validate served from the cache, for information.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tiny import parse_sized  # noqa: E402  (bench/ is on sys.path: the benches run as scripts)

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workloads import large_workflow  # noqa: E402


def median_seconds(fn, repeat: int) -> float:
    fn()  # warm caches and imports
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=15)
    args = parse_sized(parser, nodes=20, repeat=1)

    import yaml

    import wfexec

    text = large_workflow(args.nodes)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "workflow.yaml"
        path.write_text(text)

        def pyyaml_parse():
            yaml.load(path.read_text(), Loader=yaml.CSafeLoader)

        def wfexec_validate():
            diagnostics = wfexec.validate(path)
            assert not [d for d in diagnostics if d.severity == "error"], diagnostics[:3]

        os.environ["WFEXEC_NO_CACHE"] = "1"  # the load itself, not the compiled-workflow cache
        baseline = median_seconds(pyyaml_parse, args.repeat)
        ours = median_seconds(wfexec_validate, args.repeat)
        del os.environ["WFEXEC_NO_CACHE"]
        os.environ.setdefault("WFEXEC_CACHE_DIR", str(Path(folder) / "cache"))
        cached = median_seconds(wfexec_validate, args.repeat)
    print(f"workflow: {text.count(chr(10))} lines, {args.nodes} nodes")
    print(f"PyYAML CSafeLoader parse : {baseline * 1000:8.1f} ms")
    print(f"wfexec load + validate   : {ours * 1000:8.1f} ms")
    print(f"ratio                    : {ours / baseline:8.2f}x  (bar: < 3x)")
    print(f"from the compiled cache  : {cached * 1000:8.1f} ms  ({cached / baseline:.2f}x)")


if __name__ == "__main__":
    main()
