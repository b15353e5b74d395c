"""The lint of a states folder is kept by the folder's content (wfexec.protocol.lint_cache): each case runs the
real `wfexec` in processes of their own, with a cache folder of its own, and checks that what a later start finds
in the cache is what linting the folder afresh reports — after an edit, too, and with a damaged entry."""

from __future__ import annotations

from conftest import wfexec_cli
from protocol_support import write_states


def _cached(tmp_path) -> dict:
    return {"WFEXEC_CACHE_DIR": str(tmp_path / "cache"), "NO_COLOR": "1"}


def test_an_edit_that_breaks_the_folder_is_refused_although_its_clean_lint_was_kept(tmp_path):
    flow = write_states(tmp_path / "flow", {"START.sh": "echo '<result>ok</result>'"})
    for _ in range(2):  # the second start finds the lint in the cache
        done = wfexec_cli("states", flow, cwd=tmp_path, env=_cached(tmp_path))
        assert (done.returncode, done.stdout) == (0, "ok\n"), done.stderr
    assert list((tmp_path / "cache" / "states-lint").glob("*.bin"))
    (flow / "START.sh").write_text("echo '<goto>NOWHERE</goto>'\n")
    refused = wfexec_cli("validate", flow, cwd=tmp_path, env=_cached(tmp_path))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "START.sh:1:" in refused.stdout and "[missing-target]" in refused.stdout, refused.stdout
    (flow / "START.sh").write_text("echo '<result>ok</result>'\n")  # as it was: the kept entry applies again
    assert wfexec_cli("states", flow, cwd=tmp_path, env=_cached(tmp_path)).returncode == 0


def test_findings_read_from_the_cache_are_those_of_a_fresh_lint(tmp_path):
    flow = write_states(tmp_path / "flow", {"START.md": "<result>done</result>", "LOST.md": "<goto>START</goto>"})
    fresh = wfexec_cli("validate", flow, cwd=tmp_path, env={"WFEXEC_NO_CACHE": "1"})
    assert "[unreachable-state]" in fresh.stdout, fresh.stdout + fresh.stderr
    first = wfexec_cli("validate", flow, cwd=tmp_path, env=_cached(tmp_path))
    again = wfexec_cli("validate", flow, cwd=tmp_path, env=_cached(tmp_path))
    assert (again.returncode, again.stdout) == (first.returncode, first.stdout) == (fresh.returncode, fresh.stdout)


def test_a_damaged_entry_is_linted_afresh(tmp_path):
    flow = write_states(tmp_path / "flow", {"START.sh": "echo '<goto>NOWHERE</goto>'"})
    first = wfexec_cli("validate", flow, cwd=tmp_path, env=_cached(tmp_path))
    assert first.returncode == 2, first.stdout + first.stderr
    [entry] = (tmp_path / "cache" / "states-lint").glob("*.bin")
    entry.write_bytes(entry.read_bytes()[:-3] + b"[]]")  # its checksum no longer matches
    again = wfexec_cli("validate", flow, cwd=tmp_path, env=_cached(tmp_path))
    assert (again.returncode, again.stdout) == (first.returncode, first.stdout)
