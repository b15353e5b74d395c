"""The `wfexec serve` command itself: what it refuses before listening, and a real server process that listens
on 127.0.0.1 and streams a run's steps as they are committed."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("starlette")
httpx = pytest.importorskip("httpx")

from conftest import wfexec_cli  # noqa: E402
from serve_support import start_server, waiting_run, workflows  # noqa: E402


@pytest.mark.parametrize("args, said", [
    (["--host", "0.0.0.0"], "needs --token-file"),
    (["--root", "no-such-folder"], "--root no-such-folder is not a folder"),
    (["--token-file", "no-such-file"], "--token-file no-such-file cannot be read"),
    (["--port", "70000"], "65535"),
])
def test_what_serve_refuses_before_it_listens(args, said, tmp_path):
    done = wfexec_cli("serve", *args, cwd=tmp_path)
    assert done.returncode == 2 and said in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_short_token_file_is_refused(tmp_path):
    (tmp_path / "token").write_text("short\n")
    done = wfexec_cli("serve", "--token-file", "token", cwd=tmp_path)
    assert done.returncode == 2 and "at least 16 characters" in done.stderr


def test_another_host_with_a_token_file_is_warned_about(tmp_path):
    """The warning comes before anything else is checked: here a missing --root stops it before it listens, so
    the test opens no port outside the loopback."""
    (tmp_path / "token").write_text("a-token-of-enough-length\n")
    done = wfexec_cli("serve", "--host", "0.0.0.0", "--token-file", "token", "--root", "missing", cwd=tmp_path)
    assert "warning: serving on 0.0.0.0: anyone who can reach it and knows the token" in done.stderr
    assert done.returncode == 2 and "--root missing is not a folder" in done.stderr


def test_a_file_that_is_not_a_store_is_refused(tmp_path):
    (tmp_path / "notes.db").write_text("not sqlite")
    done = wfexec_cli("serve", "--store", "notes.db", cwd=tmp_path)
    assert done.returncode == 2 and "cannot be read as a run store" in done.stderr


def test_the_server_listens_on_loopback_and_streams_a_run_live(tmp_path, private_run_store):
    """The address printed is 127.0.0.1 with a token; a browser-like client watching a waiting run sees each
    step the resumed run commits, then its ending, and the stream closes."""
    root = workflows(tmp_path / "workflows")
    run_id = waiting_run(root / "greeter")
    live = start_server(private_run_store, "--root", str(root))
    try:
        assert httpx.get(f"{live.base}/healthz").text == "ok\n"
        bearer = {"Authorization": f"Bearer {live.token}"}
        with httpx.Client(base_url=live.base, headers=bearer, timeout=60) as web:
            seen: list[tuple[str, str]] = []
            with web.stream("GET", f"/api/runs/{run_id}/events") as stream:
                event = None
                for line in stream.iter_lines():
                    if line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: "):
                        data = json.loads(line[6:])
                        seen.append((event, data.get("node") or data.get("status")))
                        if seen == [("run", "waiting")]:  # watching: now answer, as a person would
                            assert web.post(f"/api/runs/{run_id}/answer", json={"answer": "warm"}).status_code == 200
            # Each step once, in order, between the waiting run and its ending (a `run` event may come between
            # steps too, when the stream looked while the run went).
            assert seen[0] == ("run", "waiting") and seen[-1] == ("run", "completed")
            assert [s for s in seen if s[0] == "step"] == [("step", "ask"), ("step", "note_warm"), ("step", "greet")]
    finally:
        live.stop()
    assert live.process.returncode == 0
