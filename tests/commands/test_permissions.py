"""Paths this user may not read or write: one line naming the path and why, exit 2, never a PermissionError
traceback (pathlib's is_file/is_dir raise it for a path inside a folder the user may not enter).

Root reads and writes anything, so as root these run wfexec as `nobody` through setpriv (util-linux); as any
other user, as that user."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT, with_coverage

NOBODY = 65534


@pytest.fixture
def place():
    """A folder every user may enter (pytest's tmp_path is under a folder only its owner may), removed after."""
    folder = Path(tempfile.mkdtemp(prefix="wfexec-permissions-"))
    folder.chmod(0o777)
    yield folder
    for inside, folders, _ in os.walk(folder):
        for name in folders:
            os.chmod(os.path.join(inside, name), 0o700)
    shutil.rmtree(folder)


def as_a_user(place: Path, *args):
    """`wfexec ARGS` as a user without root's override, with a cache and store of its own under `place`."""
    command = [sys.executable, "-m", "wfexec", *map(str, args)]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("needs `setpriv` (util-linux) to run wfexec as another user than root, who may read anything")
        command = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *command]
    home = place / "home"
    home.mkdir(exist_ok=True)
    home.chmod(0o777)
    env = with_coverage({"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
                         "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT)),
                         "WFEXEC_CACHE_DIR": str(home / "cache"), "WFEXEC_STORE": str(home / "runs.db")})
    return subprocess.run(command, cwd=place, capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture
def closed_skill(place):
    """place/x/sub/workflow.yaml, with x closed to everyone (chmod 000): sub cannot even be looked at."""
    sub = place / "x" / "sub"
    sub.mkdir(parents=True)
    shutil.copy(ROOT / "skills" / "quickstart" / "workflow.yaml", sub / "workflow.yaml")
    (place / "x").chmod(0)
    return sub


@pytest.mark.parametrize("command", ["validate", "plan", "expand", "graph", "run", "states", "skill", "test",
                                     "convert"])
def test_a_path_inside_a_folder_the_user_may_not_enter_is_said_to_be(place, closed_skill, command):
    done = as_a_user(place, command, closed_skill)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    said = done.stdout + done.stderr
    assert "Traceback" not in said and "PermissionError" not in said, said
    assert f"{place / 'x'}, which this user may not enter" in said, said
    assert "ask the owner for access" in said, said


def test_validate_json_reports_it_as_a_diagnostic(place, closed_skill):
    done = as_a_user(place, "validate", closed_skill, "--format", "json")
    assert done.returncode == 2, done.stderr
    [diagnostic] = json.loads(done.stdout)["diagnostics"]
    assert diagnostic["code"] == "file-unreadable" and diagnostic["file"] == str(closed_skill)


def test_a_workflow_file_the_user_may_not_read_says_so_and_how_to_fix_it(place):
    skill = place / "a"
    skill.mkdir()
    shutil.copy(ROOT / "skills" / "quickstart" / "workflow.yaml", skill / "workflow.yaml")
    (skill / "workflow.yaml").chmod(0)
    done = as_a_user(place, "validate", "a")
    assert done.returncode == 2 and "Permission denied" in done.stdout, done.stdout + done.stderr
    assert "ask the owner for access" in done.stdout and "pass a workflow.yaml" not in done.stdout


def test_an_output_folder_the_user_may_not_write_in_is_said_to_be(place):
    closed = place / "ro"
    closed.mkdir()
    closed.chmod(0o555)  # nobody may write in it (but root, who is not the user here)
    done = as_a_user(place, "schema", "-o", closed / "schema.json")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert f"cannot write {closed / 'schema.json'}: it is inside {closed}, which this user may not write in" \
        in done.stderr, done.stderr
    done = as_a_user(place, "test", ROOT / "skills" / "quickstart", "--junit", closed / "junit.xml")
    assert done.returncode == 2 and not done.stdout.strip(), (done.stdout, done.stderr)  # no case ran
    assert "give --junit a file path" in done.stderr
