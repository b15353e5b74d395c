"""In CI a skip for want of something the project installs is a failure (tests/conftest.py): a broken install
must not pass as a row of skips."""

from __future__ import annotations

import os
import subprocess
import sys

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
