"""What tests/conftest.py does for the whole suite: in CI a skip for want of something the project installs is a
failure (a broken install must not pass as a row of skips), and the suite's cache folder goes with its session."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT

PROBE = '''
import pytest

def test_wants_a_package():
    pytest.importorskip("a_package_nobody_installed")

def test_wants_a_capability():
    pytest.skip("needs `unshare -m` and bind mounts")
'''
CONFTEST = f'''
import importlib.util, sys
sys.path.insert(0, {str(ROOT / "tests")!r})
spec = importlib.util.spec_from_file_location("wfexec_tests_conftest", {str(ROOT / "tests" / "conftest.py")!r})
shared = importlib.util.module_from_spec(spec)
spec.loader.exec_module(shared)
pytest_make_collect_report = shared.pytest_make_collect_report
pytest_runtest_makereport = shared.pytest_runtest_makereport
'''


def run_probe(tmp_path, ci: bool):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_probe.py").write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if k != "CI"} | ({"CI": "true"} if ci else {})
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--no-cov", "-rs",
                           "-c", os.devnull, str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)


def test_a_missing_package_fails_in_ci_and_only_skips_elsewhere(tmp_path):
    in_ci = run_probe(tmp_path, ci=True)
    assert in_ci.returncode == 1, in_ci.stdout
    assert "1 failed, 1 skipped" in in_ci.stdout
    assert "skipped in CI: Skipped: could not import 'a_package_nobody_installed'" in in_ci.stdout
    elsewhere = run_probe(tmp_path, ci=False)
    assert elsewhere.returncode == 0 and "2 skipped" in elsewhere.stdout, elsewhere.stdout


# -- the suite's cache folder --------------------------------------------------------------------------------------

CACHE_PROBE = '''
import os

def test_a(): _seen()
def test_b(): _seen()

def _seen():
    folder = os.environ["WFEXEC_CACHE_DIR"]
    assert os.path.isdir(folder)
    with open(os.path.join(os.environ["SEEN"], f"{os.getpid()}"), "w") as record:
        record.write(folder)
'''


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_each_cache_folder_the_suite_makes_is_removed_when_its_session_ends(tmp_path, workers):
    """Every session, and every pytest-xdist worker of one, made a wfexec-test-cache-* folder in the temporary
    folder and left it there (500 of them on one machine)."""
    temporary, seen, probe = tmp_path / "tmp", tmp_path / "seen", tmp_path / "probe"
    for folder in (temporary, seen, probe):
        folder.mkdir()
    (probe / "conftest.py").write_text(CONFTEST + "if hasattr(shared, 'pytest_sessionfinish'):\n"
                                                  "    pytest_sessionfinish = shared.pytest_sessionfinish\n")
    (probe / "test_probe.py").write_text(CACHE_PROBE)
    inherited = ("WFEXEC_CACHE_DIR", "WFEXEC_TEST_CACHE_OF", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_TESTRUNUID")
    env = {k: v for k, v in os.environ.items() if k not in inherited} | {"TMPDIR": str(temporary), "SEEN": str(seen)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--no-cov", *workers,
                           "-c", os.devnull, str(probe)], cwd=probe, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout + done.stderr
    used = {record.read_text() for record in seen.iterdir()}
    assert used and all(folder.startswith(str(temporary)) for folder in used), used
    assert not [p.name for p in temporary.iterdir() if p.name.startswith("wfexec-test-cache-")]
