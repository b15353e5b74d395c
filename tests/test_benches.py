"""Every bench under bench/ runs once at a tiny size (`--tiny`, bench/tiny.py), as a real process, so that none can
break unnoticed: a bench that stops running (an API it calls moved, a peer's side fails) fails here. Nothing is
timed: at this size the figures mean nothing."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT

BENCHES = sorted(path.name for path in (ROOT / "bench").glob("bench_*.py"))


def test_the_benches_are_found():
    assert {"bench_forks.py", "bench_states.py", "bench_durable.py", "bench_cli.py"} <= set(BENCHES)


@pytest.mark.parametrize("bench", BENCHES)
def test_the_bench_runs_at_a_tiny_size(bench, tmp_path):
    environment = {k: v for k, v in os.environ.items() if k != "WFEXEC_STORE"}
    done = subprocess.run([sys.executable, str(ROOT / "bench" / bench), "--tiny"], cwd=tmp_path, env=environment,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"{bench} --tiny exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), f"{bench} --tiny printed nothing"
