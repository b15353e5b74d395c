"""A transition tag carries data, never code: fork attributes that change how programs start are refused.

A tag comes from a script's output or an LLM's reply. Each case runs `wfexec states` in a real subprocess whose
worker would, if the attribute reached its environment, run `payload.sh` (which leaves `PWNED`).
"""

from __future__ import annotations

import json

import pytest

from conftest import wfexec_cli
from protocol_support import write_states


def _payload(tmp_path):
    payload = tmp_path / "payload.sh"
    payload.write_text(f"#!/bin/sh\ntouch {tmp_path / 'PWNED'}\n")
    payload.chmod(0o755)
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "ls").write_text(f"#!/bin/sh\ntouch {tmp_path / 'PWNED'}\n")
    (fake_bin / "ls").chmod(0o755)
    return payload, fake_bin


@pytest.mark.parametrize("attribute", ["BASH_ENV", "ENV", "PATH", "LD_PRELOAD", "PYTHONSTARTUP", "PROMPT_COMMAND",
                                       "SHELLOPTS", "BASH_FUNC_ls", "GIT_SSH_COMMAND", "PERL5OPT", "NODE_OPTIONS"])
def test_a_fork_attribute_that_changes_how_programs_start_is_refused(tmp_path, attribute):
    payload, fake_bin = _payload(tmp_path)
    value = fake_bin if attribute == "PATH" else payload
    folder = write_states(tmp_path / "s", {
        "START.sh": f"echo '<fork next=\"DONE\" {attribute}=\"{value}\">WORK</fork>'\n",
        "WORK.sh": "ls >/dev/null; python3 -c pass; echo '<result>worked</result>'\n",
        "DONE.sh": "echo '<result>done</result>'\n",
    })
    result = wfexec_cli("states", folder, cwd=tmp_path, timeout=60)
    assert not (tmp_path / "PWNED").exists()
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"<fork> attribute {attribute} would change how the worker's programs start" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_ordinary_fork_attribute_still_reaches_the_worker(tmp_path):
    folder = write_states(tmp_path / "s", {
        "START.sh": "echo '<fork next=\"DONE\" item=\"apple\" path=\"src/x\">WORK</fork>'\n",
        "WORK.sh": 'echo "$item $path" > worker.txt; echo "<result>w</result>"\n',
        "DONE.sh": "sleep 1; echo '<result>done</result>'\n",
    })
    result = wfexec_cli("states", folder, cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "worker.txt").read_text().strip() == "apple src/x"


@pytest.mark.parametrize("linked", ["WORK.sh", "WORK.md"])
def test_a_states_folder_refuses_a_symbolic_link_that_leaves_it(tmp_path, linked):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "WORK.sh").write_text(f"touch {tmp_path / 'PWNED'}\necho '<result>ran</result>'\n")
    (outside / "WORK.md").write_text("SECRET-TOKEN-1234\n")
    folder = write_states(tmp_path / "s", {"START.sh": "echo '<goto>WORK</goto>'\n"})
    (folder / linked).symlink_to(outside / linked)
    result = wfexec_cli("states", folder, "--backend", "command:cat", cwd=tmp_path, timeout=60)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"state file '{linked}'" in result.stderr and "outside the folder" in result.stderr
    assert not (tmp_path / "PWNED").exists() and "SECRET-TOKEN" not in result.stdout + result.stderr


def test_a_link_inside_the_folder_is_fine(tmp_path):
    folder = write_states(tmp_path / "s", {"START.sh": "echo '<goto>WORK</goto>'\n",
                                           "REAL.sh": "echo '<result>ran</result>'\n"})
    (folder / "WORK.sh").symlink_to(folder / "REAL.sh")
    result = wfexec_cli("states", folder, "--format", "json", cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["message"] == "ran"  # the link's target ran, as the state it names


def test_a_zip_with_a_duplicate_entry_is_refused(tmp_path):
    import zipfile
    import warnings

    archive = tmp_path / "states.zip"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate it is told to write
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("START.sh", "echo '<result>first</result>'\n")
            zf.writestr("START.sh", f"touch {tmp_path / 'PWNED'}; echo '<result>second</result>'\n")
    result = wfexec_cli("states", archive, cwd=tmp_path, timeout=60)
    assert result.returncode != 0 and "holds 'START.sh' twice" in result.stderr, result.stderr
    assert not (tmp_path / "PWNED").exists()
