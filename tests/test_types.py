"""wfexec is type-checked ([tool.mypy] in pyproject.toml) and says so to its users (py.typed in the wheel)."""

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_finds_no_errors_in_wfexec():
    # The cache stays in the project (.mypy_cache, git-ignored) so a re-run checks only what changed.
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", "--hide-error-context"],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_wheel_ships_py_typed(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True, text=True,
    )
    (wheel,) = tmp_path.glob("wfexec-*.whl")
    assert "wfexec/py.typed" in zipfile.ZipFile(wheel).namelist()
