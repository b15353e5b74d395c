"""The blobs of a run's large state (wfexec.temporal.blob_stores) have a lifecycle: a worker's sweep removes them
once the run ended and --blob-retention passed, `wfexec gc` removes what no live run refers to (asking the server),
and the S3 store keeps and removes them in a real S3-compatible server (moto's, started here on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("temporalio", reason="needs wfexec[temporal]")

try:  # the shared Temporal fixtures, wherever the tests' reorganisation puts them
    from temporal_support import (BIG_STATE, ROOT, Workers, environment, free_port, run_id_from,  # noqa: F401
                                  server, wait_until, wfexec)
except ImportError:
    from test_temporal import (BIG_STATE, ROOT, Workers, environment, free_port, run_id_from,  # noqa: F401
                               server, wait_until, wfexec)

pytestmark = pytest.mark.temporal

BIG_STATE_ASKS = ROOT / "tests" / "workflows" / "temporal" / "big_state_asks.yaml"


def _env(server, blobs: Path | str, **more) -> dict:
    return {**environment(server), "WFEXEC_TEMPORAL_BLOBS": str(blobs), **more}


def _run_folders(blobs: Path) -> set[str]:
    runs = blobs / "runs"
    return {p.name for p in runs.iterdir() if not p.name.startswith(".")} if runs.is_dir() else set()


def _finished_big_run(server, tmp_path: Path, queue: str, env: dict) -> str:
    done = wfexec(server, "run", BIG_STATE, "--task-queue", queue, "--format", "json", cwd=tmp_path, check_code=0,
                  env=env)
    result = json.loads(done.stdout)
    assert result["message"] == "3000000 characters"
    return result["run_id"]


def _parked_big_run(server, tmp_path: Path, queue: str, env: dict) -> str:
    return run_id_from(wfexec(server, "run", BIG_STATE_ASKS, "--task-queue", queue, cwd=tmp_path, check_code=3,
                              env=env).stderr)


def test_a_runs_blobs_are_gone_once_it_ended_or_was_cancelled_with_retention_0_and_an_open_runs_stay(
        server, tmp_path):
    blobs = tmp_path / "blobs"
    env = _env(server, blobs, WFEXEC_BLOB_RETENTION="off")
    (tmp_path / "keeping").mkdir()
    (tmp_path / "sweeping").mkdir()
    keeping = Workers(server, "retention", tmp_path / "keeping")
    keeping.start(env)
    try:
        ended = _finished_big_run(server, tmp_path, "retention", env)
        waiting = _parked_big_run(server, tmp_path, "retention", env)
    finally:
        keeping.stop()
    # both runs' state went by reference, each into the run's own folder (and nothing outside them)
    assert _run_folders(blobs) == {ended, waiting}
    assert max(p.stat().st_size for p in (blobs / "runs" / ended).iterdir()) > 3_000_000
    assert not (blobs / "sha256").exists()
    sweeping = Workers(server, "retention", tmp_path / "sweeping")  # the same queue: the waiting run goes on there
    sweeping.start(_env(server, blobs, WFEXEC_BLOB_RETENTION="0"))
    try:
        wait_until(lambda: ended not in _run_folders(blobs), 60, "the ended run's blobs to be removed")
        # in the same sweep, an open run's were kept: it reads them when it goes on
        assert waiting in _run_folders(blobs)
        # ... and once it is cancelled, they go too
        wfexec(server, "cancel", waiting, cwd=tmp_path, check_code=0, env=_env(server, blobs))
        wait_until(lambda: not _run_folders(blobs), 60, "the cancelled run's blobs to be removed")
    finally:
        sweeping.stop()
    said = Path(sweeping.processes[-1].log).read_text()  # type: ignore[attr-defined]
    assert "removed the blobs of 1 ended run(s)" in said, said
    # with retention 0, a finished run's state is gone as soon as it ends: `show` says why it cannot read it
    shown = wfexec(server, "show", ended, "--state", cwd=tmp_path, env=_env(server, blobs))
    assert shown.returncode == 5 and "--blob-retention" in shown.stderr, shown.stderr


def test_gc_removes_what_no_live_run_refers_to_and_keeps_a_run_that_is_starting(server, tmp_path):
    blobs = tmp_path / "blobs"
    env = _env(server, blobs, WFEXEC_BLOB_RETENTION="off")
    pool = Workers(server, "gc", tmp_path)
    pool.start(env)
    try:
        ended = _finished_big_run(server, tmp_path, "gc", env)
        waiting = _parked_big_run(server, tmp_path, "gc", env)
        # a run being started right now: its first blob is stored before the server knows the run
        starting = blobs / "runs" / "starting0run0id"
        starting.mkdir()
        (starting / ("0" * 64)).write_bytes(b"payload")
        # a run the server never knew, its blobs two hours old: left by a client that died before starting it
        orphan = blobs / "runs" / "orphan0run0id"
        orphan.mkdir()
        (orphan / ("1" * 64)).write_bytes(b"payload")
        two_hours_ago = time.time() - 7200
        os.utime(orphan / ("1" * 64), (two_hours_ago, two_hours_ago))
        # blobs of no run (as wfexec wrote them before they were kept by run): kept while any run is open
        legacy = blobs / "sha256" / "ab"
        legacy.mkdir(parents=True)
        (legacy / ("ab" * 32)).write_bytes(b"old")
        os.utime(legacy / ("ab" * 32), (two_hours_ago, two_hours_ago))

        kept_by_retention = json.loads(wfexec(server, "gc", "--retention", "1d", "--dry-run", "--format", "json",
                                              cwd=tmp_path, check_code=0, env=env).stdout)
        assert {row["run"] for row in kept_by_retention["removed"]} == {"orphan0run0id"}
        why = {row["run"]: row["why"] for row in kept_by_retention["kept"]}
        assert why[ended] == "closed within the retention time" and why[waiting] == "open"
        dry = wfexec(server, "gc", "--dry-run", cwd=tmp_path, check_code=0, env=env)
        assert f"would remove {ended}" in dry.stdout and "would remove orphan0run0id" in dry.stdout, dry.stdout
        assert _run_folders(blobs) == {ended, waiting, "starting0run0id", "orphan0run0id"}  # nothing removed

        collected = json.loads(wfexec(server, "gc", "--format", "json", cwd=tmp_path, check_code=0, env=env).stdout)
        assert {row["run"] for row in collected["removed"]} == {ended, "orphan0run0id"}
        assert collected["freed_bytes"] > 3_000_000
        assert _run_folders(blobs) == {waiting, "starting0run0id"}
        assert (legacy / ("ab" * 32)).exists()
        # the open run goes on from its blobs, and gc removes them once it has ended
        done = wfexec(server, "resume", waiting, "--answer", "ask=yes", "--format", "json",
                      cwd=tmp_path, check_code=0, env=env)
        assert json.loads(done.stdout)["message"] == "3000000 characters"
        wfexec(server, "gc", cwd=tmp_path, check_code=0, env=env)
        assert _run_folders(blobs) == {"starting0run0id"}
    finally:
        pool.stop()
    # a wrong duration is a usage error that says how to write one
    refused = wfexec(server, "gc", "--retention", "soon", cwd=tmp_path, check_code=2, env=env)
    assert "'soon' is not a duration" in refused.stderr


@pytest.fixture
def s3_server(tmp_path):
    """moto's S3-compatible server on 127.0.0.1, started for the test, with an empty bucket."""
    pytest.importorskip("moto", reason="needs moto[server] (wfexec[test])")
    import boto3

    port = free_port()
    log = open(tmp_path / "moto.log", "wb")
    process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                               stdout=log, stderr=subprocess.STDOUT)
    settings = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
    s3 = boto3.client("s3", endpoint_url=settings["AWS_ENDPOINT_URL"], aws_access_key_id="testing",
                      aws_secret_access_key="testing", region_name="us-east-1")

    def answers() -> bool:
        try:
            s3.list_buckets()
            return True
        except Exception:
            return process.poll() is not None

    try:
        wait_until(answers, 60, "moto's S3 server", interval=0.2)
        assert process.poll() is None, (tmp_path / "moto.log").read_text()
        s3.create_bucket(Bucket="wfexec-blobs")
        yield s3, settings
    finally:
        process.kill()  # it keeps nothing worth a graceful stop
        process.wait(10)
        log.close()


def test_the_s3_store_keeps_a_runs_state_in_the_bucket_and_gc_removes_it(server, s3_server, tmp_path):
    s3, settings = s3_server
    env = {**_env(server, "s3://wfexec-blobs", WFEXEC_BLOB_RETENTION="off"), **settings}
    folder_default = tmp_path / "xdg"
    env["XDG_DATA_HOME"] = str(folder_default)  # where a folder store would have gone: never used here
    pool = Workers(server, "s3", tmp_path)
    pool.start(env)
    try:
        done = wfexec(server, "run", BIG_STATE, "--task-queue", "s3", "--format", "json", cwd=tmp_path, check_code=0,
                      env=env)
        result = json.loads(done.stdout)
        assert result["message"] == "3000000 characters"
        assert result["state"]["computed"]["big"] == "x" * 3_000_000  # read back from the bucket
        shown = wfexec(server, "show", result["run_id"], "--state", "--format", "json", cwd=tmp_path, check_code=0,
                       env=env)
        assert json.loads(shown.stdout)["state"]["computed"]["big"] == "x" * 3_000_000
    finally:
        pool.stop()
    objects = s3.list_objects_v2(Bucket="wfexec-blobs").get("Contents") or []
    assert objects and all(f"/wi/{result['run_id']}/" in item["Key"] for item in objects)
    assert max(item["Size"] for item in objects) > 3_000_000
    assert not folder_default.exists()
    collected = json.loads(wfexec(server, "gc", "--format", "json", cwd=tmp_path, check_code=0, env=env).stdout)
    assert collected["store"] == "s3://wfexec-blobs"
    assert [row["run"] for row in collected["removed"]] == [result["run_id"]]
    assert not s3.list_objects_v2(Bucket="wfexec-blobs").get("Contents")
    # a store that does not answer is one line, not a traceback
    unreachable = {**env, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}"}
    failed = wfexec(server, "gc", cwd=tmp_path, env=unreachable)
    assert failed.returncode != 0 and len(failed.stderr.strip().splitlines()) == 1, failed.stderr


def test_blob_retention_is_refused_when_it_is_not_a_duration(tmp_path):
    done = subprocess.run([sys.executable, "-m", "wfexec", "worker", "--temporal", "127.0.0.1:1",
                           "--blob-retention", "a week"], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and "'a week' is not a duration" in done.stderr, done.stderr
