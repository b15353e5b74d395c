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
    temporary = tmp_path / "tmp"  # the bench's own, to see that it leaves nothing there (bench_serve left its store)
    temporary.mkdir()
    environment = {**{k: v for k, v in os.environ.items() if k != "WFEXEC_STORE"}, "TMPDIR": str(temporary)}
    done = subprocess.run([sys.executable, str(ROOT / "bench" / bench), "--tiny"], cwd=tmp_path, env=environment,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"{bench} --tiny exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), f"{bench} --tiny printed nothing"
    assert sorted(p.name for p in temporary.iterdir()) == [], f"{bench} left these in the temporary folder"


def _durable_against(other, tmp_path) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "WFEXEC_STORE"}
    return subprocess.run([sys.executable, str(ROOT / "bench" / "bench_durable.py"), "--tiny", "--against",
                           str(other)], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def test_bench_durable_compares_a_step_with_another_checkouts(tmp_path):
    done = _durable_against(ROOT, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "part 3" in done.stdout and done.stdout.count(str(ROOT)) == 2, done.stdout[-2000:]


def test_bench_durable_refuses_a_checkout_whose_wfexec_it_did_not_import(tmp_path):
    """A folder holding no wfexec would silently measure this checkout's code twice."""
    done = _durable_against(tmp_path, tmp_path)
    assert done.returncode != 0 and "imported wfexec from" in done.stderr, done.stderr[-2000:]


def _validate_against(other, tmp_path) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "WFEXEC_STORE"}
    return subprocess.run([sys.executable, str(ROOT / "bench" / "bench_validate.py"), "--tiny", "--shapes", "chain",
                           "--against", str(other)], cwd=tmp_path, env=environment, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def test_bench_validate_compares_a_cold_validate_with_another_checkouts(tmp_path):
    done = _validate_against(ROOT, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "other/Py" in done.stdout and done.stdout.count(str(ROOT)) == 2, done.stdout[-2000:]
    rows = [row.split() for row in done.stdout.splitlines() if row.startswith("chain")]
    # ... PyYAML s, this s, this/Py, other s, other/Py: each checkout's own figure and ratio; then this checkout's
    # growth in new processes, "2.0x (2x)"
    assert rows and all(row[-3].endswith("x") and row[-5].endswith("x") and float(row[-6]) >= 0 and
                        row[-1].startswith("(") for row in rows), done.stdout


def test_bench_validate_refuses_a_checkout_whose_wfexec_it_did_not_import(tmp_path):
    done = _validate_against(tmp_path, tmp_path)
    assert done.returncode != 0 and "imported wfexec from" in done.stderr, done.stderr[-2000:]
