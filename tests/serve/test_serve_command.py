"""The `wfexec serve` command itself: what it refuses before listening, and a real server process that listens
on 127.0.0.1 and streams a run's steps as they are committed."""

from __future__ import annotations

import json
import signal

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


class _Events:
    """An all-runs event stream read in a thread of its own: its events as they come, as (id, run, status)."""

    def __init__(self, live, last_event_id: str | None = None):
        import queue
        import threading

        self.got: queue.Queue = queue.Queue()
        headers = {"Authorization": f"Bearer {live.token}",
                   **({"Last-Event-ID": last_event_id} if last_event_id else {})}
        self.ended = threading.Event()

        def read() -> None:
            try:
                with httpx.stream("GET", f"{live.base}/api/events", headers=headers, timeout=None) as stream:
                    self.got.put("open")
                    event_id = None
                    for line in stream.iter_lines():
                        if line.startswith("id: "):
                            event_id = line[4:]
                        elif line.startswith("data: "):
                            data = json.loads(line[6:])
                            self.got.put((event_id, data["id"], data["status"]))
            except httpx.HTTPError:
                pass
            finally:
                self.ended.set()

        threading.Thread(target=read, daemon=True).start()
        assert self.got.get(timeout=60) == "open"

    def until(self, run_id: str, status: str) -> list[tuple]:
        """Every event up to the one saying `run_id` is `status` (that one included)."""
        seen = []
        while not seen or seen[-1][1:] != (run_id, status):
            seen.append(self.got.get(timeout=60))
        return seen


def test_the_all_runs_stream_replays_from_last_event_id_after_a_restart(tmp_path, private_run_store):
    """Its ids are the store's own change times, so the next server on the same store gets a reconnect exactly
    the runs that changed while nobody watched: no earlier one, none twice."""
    root = workflows(tmp_path / "workflows")
    before = waiting_run(root / "greeter")
    live = start_server(private_run_store)
    try:
        watching = _Events(live)
        first = waiting_run(root / "greeter")
        last_id = watching.until(first, "waiting")[-1][0]
    finally:
        live.stop()
    meanwhile = waiting_run(root / "greeter")
    assert wfexec_cli("cancel", first).returncode == 0
    live = start_server(private_run_store)
    try:
        replayed = _Events(live, last_id).until(first, "cancelled")
    finally:
        live.stop()
    assert [(run, status) for _, run, status in replayed] == [(meanwhile, "waiting"), (first, "cancelled")]
    assert before not in {run for _, run, _ in replayed}
    assert all(float(event_id) > float(last_id) for event_id, _, _ in replayed)


def test_stopping_the_server_ends_its_open_event_streams_at_once(tmp_path, private_run_store):
    """SIGTERM with streams open (one run's, and all runs'): each stream is ended by the server, and the server
    exits 0, rather than waiting for its clients to hang up."""
    root = workflows(tmp_path / "workflows")
    run_id = waiting_run(root / "greeter")
    live = start_server(private_run_store)
    streams = [_Events(live) for _ in range(4)]
    bearer = {"Authorization": f"Bearer {live.token}"}
    one_run = httpx.stream("GET", f"{live.base}/api/runs/{run_id}/events", headers=bearer, timeout=None)
    with one_run as stream:
        lines = stream.iter_lines()
        assert next(line for line in lines if line.startswith("event: ")) == "event: run"
        live.process.send_signal(signal.SIGTERM)
        try:
            for _ in lines:  # read to the end the server gives it
                pass
        except httpx.RemoteProtocolError:  # or the end of its graceful wait closed the connection: ended all the same
            pass
    for events in streams:
        assert events.ended.wait(timeout=60)
    assert live.process.wait(timeout=60) == 0


LOOPS = """\
name: loops
version: "1.0.0"
start_node: again
nodes:
  again:
    type: action
    max_visits: 3
    actions:
      - {type: set_flag, flag: looped, value: true}
    on_success: again
    on_failure: again
endings:
  done: {type: success, message: ok}
"""


def _process_once_ended(web, run_id: str) -> dict:
    """How the server says the process of `run_id` ended, once it has (a launch answers as the process starts)."""
    import time

    deadline = time.monotonic() + 60
    while (process := web.get(f"/api/runs/{run_id}").json()["process"]) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return process


def test_how_a_runs_process_ended_is_no_longer_shown_once_the_run_changed_at_a_terminal(tmp_path, private_run_store):
    """The page said "Its process: exit 4: …" of a run that had since been resumed or cancelled at a terminal, as if
    that were the run's news."""
    root = workflows(tmp_path / "workflows")
    (root / "loops").mkdir()
    (root / "loops" / "workflow.yaml").write_text(LOOPS, encoding="utf-8")
    server = start_server(private_run_store, "--root", str(root))
    try:
        with httpx.Client(base_url=server.base, headers={"Authorization": f"Bearer {server.token}"},
                          timeout=60) as web:
            listed = {w["shown"]: w["id"] for w in web.get("/api/workflows").json()["workflows"]}
            run_id = web.post("/api/launch", json={"workflow": listed["loops"]}).json()["run_id"]
            ended = _process_once_ended(web, run_id)
            assert ended is not None and ended["exit_code"] == 4, ended
            assert "Its process" in web.get(f"/runs/{run_id}").text
            cancelled = wfexec_cli("cancel", run_id, "--store", str(private_run_store), cwd=tmp_path)
            assert cancelled.returncode == 0, cancelled.stderr
            record = web.get(f"/api/runs/{run_id}").json()
            page = web.get(f"/runs/{run_id}").text
    finally:
        server.stop()
    assert record["status"] == "cancelled" and record["process"] is None, record
    assert "Its process" not in page


def test_a_server_started_again_shows_how_the_runs_processes_ended_and_none_of_it_is_left_in_tmp(
        tmp_path, private_run_store):
    """Each start of the server once made a folder in the system's temporary folder for its runs' logs and left it
    there (1,800 of them on one machine), and the next server knew nothing of how those runs' processes ended."""
    root = workflows(tmp_path / "workflows")
    (root / "loops").mkdir()
    (root / "loops" / "workflow.yaml").write_text(LOOPS, encoding="utf-8")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {"TMPDIR": str(temporary)}
    first = start_server(private_run_store, "--root", str(root), env=env)
    try:
        with httpx.Client(base_url=first.base, headers={"Authorization": f"Bearer {first.token}"}, timeout=60) as web:
            listed = {w["shown"]: w["id"] for w in web.get("/api/workflows").json()["workflows"]}
            launched = web.post("/api/launch", json={"workflow": listed["loops"]})
            assert launched.status_code == 200, launched.text
            run_id = launched.json()["run_id"]
            ended = _process_once_ended(web, run_id)
    finally:
        first.stop()
    assert ended is not None and ended["exit_code"] == 4 and "more than its max_visits" in ended["message"], ended
    again = start_server(private_run_store, "--root", str(root), "--read-only", env=env)
    try:
        with httpx.Client(base_url=again.base, headers={"Authorization": f"Bearer {again.token}"}, timeout=60) as web:
            assert web.get(f"/api/runs/{run_id}").json()["process"] == ended
            page = web.get(f"/runs/{run_id}")
    finally:
        again.stop()
    assert page.status_code == 200 and "exit 4: node &#39;again&#39; was entered 4 times" in page.text
    assert list(temporary.iterdir()) == []
    kept = private_run_store.with_name(private_run_store.name + "-serve")
    assert sorted(p.name for p in kept.iterdir()) == [f"{run_id}.ended", f"{run_id}.log"]
    assert "more than its max_visits" in (kept / f"{run_id}.log").read_text()  # what the process said
