"""Temporal without a shared disk (issue 28): two workers and a client in three separate empty folders, each
worker's working folder and `--workdir` its own temp folder, the client's workflows in a third. Where the machine
allows it (`unshare -rm`), each worker runs in a mount namespace where the client's folder and the other worker's
are empty, as on other machines; large-state blobs and the compiled-workflow cache are per process too. The runs
bring their workflows with them (the bundle), all of a run's steps go to one worker, and they end as on SQLite."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("temporalio", reason="needs wfexec[temporal]")

from conftest import ROOT, install_plugin  # noqa: E402
from wfexec.api import load  # noqa: E402
from wfexec.temporal.bundle import make_bundle  # noqa: E402
from wfexec.temporal.delivery import PART_CHARS, fetch_parts, parts_of  # noqa: E402
from temporal_support import DevServer, HEARTBEAT_SECONDS, run_id_from, wait_until  # noqa: E402
from test_temporal import SKILL_RUNS, _release_repo  # noqa: E402

pytestmark = pytest.mark.temporal

WORKFLOWS = ROOT / "tests" / "workflows" / "temporal"
PLUGGED = WORKFLOWS / "plugged.yaml"


def _namespaces_work() -> bool:
    try:
        return subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class Place:
    """One machine's folder: its own blobs and cache; a worker's has a working folder and a --workdir."""

    def __init__(self, folder: Path, server: DevServer):
        self.folder, self.server = folder, server
        self.cwd, self.work = folder / "cwd", folder / "work"
        for path in (self.cwd, self.work):
            path.mkdir(parents=True)

    def env(self, **more: str) -> dict:
        return {**os.environ, "PYTHONPATH": str(ROOT), "WFEXEC_TEMPORAL": self.server.address,
                "WFEXEC_TEMPORAL_HEARTBEAT": HEARTBEAT_SECONDS, "WFEXEC_TEMPORAL_BLOBS": str(self.folder / "blobs"),
                "WFEXEC_CACHE_DIR": str(self.folder / "cache"), **more}


class Apart:
    """The client and two workers, apart."""

    def __init__(self, base: Path, server: DevServer):
        self.server = server
        self.client = Place(base / "client", server)
        self.workers = [Place(base / "w1", server), Place(base / "w2", server)]
        self.processes: list[subprocess.Popen] = []
        self.hidden = _namespaces_work()

    def start_worker(self, place: Place, env: dict | None = None, args: tuple[str, ...] | list[str] = ()) -> subprocess.Popen:
        command = [sys.executable, "-m", "wfexec", "worker", "--workdir", str(place.work), *args]
        if self.hidden:  # the other machines' folders are empty here
            others = [self.client.folder] + [w.folder for w in self.workers if w is not place]
            mounts = " && ".join(f"mount -t tmpfs none {shlex.quote(str(folder))}" for folder in others)
            command = ["unshare", "-rm", "sh", "-c", f"{mounts} && exec {shlex.join(command)}"]
        log = place.folder / f"worker-{len(self.processes)}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(command, env=env or place.env(), cwd=place.cwd, stdout=out,
                                       stderr=subprocess.STDOUT)
        self.processes.append(process)
        wait_until(lambda: process.poll() is not None or b"serving task queue" in log.read_bytes(), 60,
                   "a worker to start")
        assert process.poll() is None, log.read_text()
        return process

    def stop_workers(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
        self.processes.clear()

    def wfexec(self, *args, place: Place | None = None, env: dict | None = None, timeout: float = 120):
        place = place or self.client
        done = subprocess.run([sys.executable, "-m", "wfexec", *map(str, args)], cwd=place.cwd,
                              env=env or place.env(), capture_output=True, text=True, timeout=timeout)
        assert "Traceback" not in done.stderr, done.stderr
        return done


@pytest.fixture(scope="module")
def apart(tmp_path_factory):
    server = DevServer(tmp_path_factory.mktemp("temporal-apart"))
    server.start()
    machines = Apart(tmp_path_factory.mktemp("apart"), server)
    for place in machines.workers:
        machines.start_worker(place)
    yield machines
    machines.stop_workers()
    server.kill()


def _in_client(apart: Apart, source: Path, name: str) -> Path:
    """A copy of a workflow (a skill folder, or a file with the folders beside it it names) in the client's
    folder: the path a run starts from is one the workers cannot see."""
    target = apart.client.cwd / "flows" / name
    if source.is_dir():
        shutil.copytree(source, target)
        return target
    target.mkdir(parents=True)
    shutil.copy(source, target / source.name)
    for folder in ("agents",):
        if (source.parent / folder).is_dir():
            shutil.copytree(source.parent / folder, target / folder)
    return target / source.name


def _on_sqlite(apart: Apart, folder: Path, *args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in apart.client.env().items() if k != "WFEXEC_TEMPORAL"}
    folder.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, "-m", "wfexec", *map(str, args), "--store", str(folder / "runs.db")],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def _same_ending(cluster: dict, sqlite: dict) -> None:
    for result in (cluster, sqlite):  # forked agents end in whatever order they finish, on either driver
        for name, value in result["state"]["computed"].items():
            if name.endswith("_forks") and isinstance(value, list):
                value.sort(key=lambda fork: fork["agent"])
    for key in ("status", "ending", "type", "message", "summary", "output", "steps"):
        assert cluster[key] == sqlite[key], (key, cluster[key], sqlite[key])
    assert cluster["state"]["computed"] == sqlite["state"]["computed"]
    assert [e["node"] for e in cluster["state"]["history"]] == [e["node"] for e in sqlite["state"]["history"]]


def _data(folder: Path, skill: str) -> None:
    """What a skill reads as data from its working folder (on the cluster: from each worker's --workdir)."""
    if skill == "release-checklist" and not (folder / "project").exists():
        _release_repo(folder)
    elif skill == "docs-check" and not (folder / "docs").exists():
        (folder / "docs").mkdir(parents=True)
        (folder / "docs" / "a.md").write_text("# A\nsome words TODO here\n")


def _written_in(apart: Apart, name: str) -> list[Path]:
    return [w.work / name for w in apart.workers if (w.work / name).exists()]


@pytest.mark.parametrize("skill", sorted(SKILL_RUNS))
def test_every_example_skill_runs_from_its_bundle_as_on_sqlite(apart, tmp_path, skill):
    sqlite_folder = tmp_path / "sqlite"
    sqlite_folder.mkdir()
    _data(sqlite_folder, skill)
    on_sqlite = _on_sqlite(apart, sqlite_folder, "run", ROOT / "skills" / skill, *SKILL_RUNS[skill],
                           "--format", "json")
    assert on_sqlite.returncode == 0, on_sqlite.stdout + on_sqlite.stderr
    for worker in apart.workers:
        _data(worker.work, skill)
    started = _in_client(apart, ROOT / "skills" / skill, skill)
    on_cluster = apart.wfexec("run", started, *SKILL_RUNS[skill], "--format", "json")
    assert on_cluster.returncode == 0, on_cluster.stdout + on_cluster.stderr
    _same_ending(json.loads(on_cluster.stdout), json.loads(on_sqlite.stdout))
    if skill == "project-setup":  # the files it wrote are in one worker's --workdir, not in the client's folder
        assert len(_written_in(apart, "src/demo/__init__.py")) == 1
        assert not list(apart.client.cwd.rglob("__init__.py"))


def test_a_file_written_by_one_step_is_read_by_the_next(apart, tmp_path):
    on_sqlite = _on_sqlite(apart, tmp_path / "sqlite", "run", WORKFLOWS / "write_then_read.yaml", "--format", "json")
    assert on_sqlite.returncode == 0, on_sqlite.stdout + on_sqlite.stderr
    started = _in_client(apart, WORKFLOWS / "write_then_read.yaml", "write-then-read")
    for _ in range(3):  # whichever worker takes each run, all its steps are on that worker
        on_cluster = apart.wfexec("run", started, "--format", "json")
        assert on_cluster.returncode == 0, on_cluster.stdout + on_cluster.stderr
        cluster = json.loads(on_cluster.stdout)
        _same_ending(cluster, json.loads(on_sqlite.stdout))
        assert cluster["message"] == "read back: one two three (2 out/notes.txt)"
    assert _written_in(apart, "out/notes.txt") and not (apart.client.cwd / "out").exists()


def test_a_states_node_forks_and_asks_from_its_bundle_as_on_sqlite(apart, tmp_path):
    sqlite_folder = tmp_path / "sqlite"
    parked = _on_sqlite(apart, sqlite_folder, "run", WORKFLOWS / "states_node.yaml")
    assert parked.returncode == 3, parked.stderr
    on_sqlite = _on_sqlite(apart, sqlite_folder, "resume", run_id_from(parked.stderr), "--answer", "main=yes",
                           "--format", "json")
    assert on_sqlite.returncode == 0, on_sqlite.stderr
    for worker in apart.workers:
        (worker.work / "runs.log").unlink(missing_ok=True)
    started = _in_client(apart, WORKFLOWS / "states_node.yaml", "states-node")
    parked = apart.wfexec("run", started)
    assert parked.returncode == 3, parked.stderr
    assert "waiting: agent 'main' of node 'agents' asks: Ship it?" in parked.stderr
    done = apart.wfexec("resume", run_id_from(parked.stderr), "--answer", "main=yes", "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    cluster, sqlite = json.loads(done.stdout), json.loads(on_sqlite.stdout)
    _same_ending(cluster, sqlite)
    assert cluster["message"] == "answered yes (2 forks)"
    # every agent state ran on the run's one worker (the node does not say `spread: true`), each once
    (log,) = _written_in(apart, "runs.log")
    assert sorted(log.read_text().splitlines()) == ["ask", "end yes", "start", "work a", "work b"]


def test_a_worker_without_a_plugin_the_workflow_uses_refuses_it_naming_the_plugin(apart, tmp_path):
    site = install_plugin(ROOT / "tests" / "plugins" / "wfexec-hello", tmp_path / "site")
    with_plugin = apart.client.env(PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]))
    started = _in_client(apart, PLUGGED, "plugged")
    refused = apart.wfexec("run", started, "--input", "who=Ada", env=with_plugin)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "lacks the plugin wfexec-hello" in refused.stderr, refused.stderr
    assert "pip install wfexec-hello" in refused.stderr


def _parked_then_its_worker_gone(apart: Apart, tmp_path: Path, workflow: str, queue_name: str):
    """A run of tests/workflows/temporal/WORKFLOW.yaml on a task queue of its own (the module's two workers stay out
    of it), parked at its question after its first step on a worker that is then killed, and a second worker
    started on that queue: (the client's environment, noticing a gone worker within 3 s; the first and the second
    worker's places; the parked `wfexec run`)."""
    env = apart.client.env(WFEXEC_TEMPORAL_WORKER_GONE="3")
    first, second = Place(tmp_path / "first", apart.server), Place(tmp_path / "second", apart.server)
    queue = ["--task-queue", queue_name]
    doomed = apart.start_worker(first, args=queue)
    started = _in_client(apart, WORKFLOWS / f"{workflow}.yaml", workflow.replace("_", "-"))
    parked = apart.wfexec("run", started, *queue, env=env)
    assert parked.returncode == 3, parked.stderr
    assert (first.work / "first.txt").exists()
    doomed.kill()
    doomed.wait(10)
    apart.start_worker(second, args=queue)
    return env, first, second, parked


def test_a_run_whose_worker_is_gone_asks_rerun_or_skip_and_reruns_on_another(apart, tmp_path):
    """The run's first step and its question on one worker, which is then killed; the next step, not safe to run
    twice, waits for that worker until WFEXEC_TEMPORAL_WORKER_GONE, then the run asks, as after a crash; --rerun
    runs it on a worker that claims the run. Its own task queue: the module's two workers stay out of it."""
    env, first, second, parked = _parked_then_its_worker_gone(apart, tmp_path, "ask_between_steps", "gone")
    run_id = run_id_from(parked.stderr)
    asked = apart.wfexec("resume", run_id, "--answer", "ask=go", env=env)
    assert asked.returncode == 3, asked.stdout + asked.stderr
    assert f"node 'second' was running when run {run_id}" in asked.stderr and "not safe to run twice" in asked.stderr
    assert not (first.work / "second.txt").exists() and not (second.work / "second.txt").exists()
    done = apart.wfexec("resume", run_id, "--rerun", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == "second: ran\n"
    assert (second.work / "second.txt").read_text() == "second\n"


def test_a_bundle_larger_than_one_payload_part_arrives_in_pieces(apart):
    """600 kB of incompressible data beside a states script: a bundle of several parts (the first in the run's
    input, the others as signals), each under the size over which a payload would go to the shared blob folder."""
    flow = apart.client.cwd / "flows" / "big-bundle"
    (flow / "big").mkdir(parents=True)
    (flow / "big" / "data.txt").write_text(base64.b64encode(os.urandom(450_000)).decode())
    (flow / "big" / "START.sh").write_text('#!/bin/sh\necho "<result>$(wc -c < "$(dirname "$0")/data.txt" | '
                                           'tr -d \' \')</result>"\n')
    (flow / "workflow.yaml").write_text("name: big-bundle\nversion: '1'\nstart_node: count\nnodes:\n  count:\n"
                                        "    type: states\n    folder: big\n    store_as: computed.size\n"
                                        "    on_success: done\nendings:\n  done: {type: success, message: "
                                        "'data: ${computed.size} bytes'}\n")
    for _ in range(2):  # the second run: a worker unpacks a bundle it has seen once
        done = apart.wfexec("run", flow)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout == "data: 600000 bytes\n"
    assert not any((w.folder / "blobs").exists() for w in [apart.client, *apart.workers])  # no shared folder used
    # what a worker that has not unpacked it reads from the run's history: the bundle, whole
    run_id = json.loads(apart.wfexec("run", flow, "--format", "json").stdout)["run_id"]
    made = make_bundle(load(flow))
    parts = asyncio.run(_parts_in_history(apart.server.address, run_id, len(parts_of(made))))
    assert len(parts) > 1 and all(len(part) <= PART_CHARS for part in parts)
    assert base64.b64decode("".join(parts)) == made.data


async def _parts_in_history(address: str, run_id: str, count: int) -> list[str]:
    from wfexec.temporal.client import connect

    return await fetch_parts(await connect(address), run_id, count)


def test_a_resumed_run_reads_the_workflow_it_started_with_and_a_new_run_the_edited_one(apart):
    started = _in_client(apart, ROOT / "skills" / "quickstart", "quickstart-edited")
    parked = apart.wfexec("run", started)
    assert parked.returncode == 3, parked.stderr
    flow = started / "workflow.yaml"
    flow.write_text(flow.read_text().replace('value: "Hello, ${name}"', 'value: "Goodbye, ${name}"'))
    resumed = apart.wfexec("resume", run_id_from(parked.stderr), "--answer", "ask_mood=cheerful")
    assert (resumed.returncode, resumed.stdout) == (0, "Hello, world!\n  letters: 5\n"), resumed.stderr
    again = apart.wfexec("run", started, "--answer", "ask_mood=cheerful")
    assert (again.returncode, again.stdout) == (0, "Goodbye, world!\n  letters: 5\n"), again.stderr


def test_a_states_folder_run_on_the_cluster_brings_its_folder(apart):
    """`wfexec run FOLDER --temporal`: the one-node workflow written in the client's folder names the states folder
    from where it is written, and the bundle holds both."""
    folder = apart.client.cwd / "flows" / "agents-folder"
    shutil.copytree(WORKFLOWS / "agents", folder)
    parked = apart.wfexec("run", folder)
    assert parked.returncode == 3, parked.stderr
    assert "waiting: agent 'main' of node 'agents' asks: Ship it?" in parked.stderr
    done = apart.wfexec("resume", run_id_from(parked.stderr), "--answer", "main=ok")
    assert (done.returncode, done.stdout) == (0, "answered ok\n"), done.stderr


def test_a_short_step_refused_by_a_worker_that_is_not_the_runs_goes_to_a_worker_that_claims_the_run(apart, tmp_path):
    """The run's worker is killed while the run waits; the answer's workflow task runs on another worker, whose
    local activity refuses the next short step (its files are the run's worker's); the step goes to the run's
    worker's queue, waits for it until WFEXEC_TEMPORAL_WORKER_GONE, and, being idempotent, runs on the worker that
    claims the run next. Its own task queue: the module's two workers stay out of it."""
    env, _first, second, parked = _parked_then_its_worker_gone(apart, tmp_path, "ask_between_short_steps",
                                                               "short-elsewhere")
    done = apart.wfexec("resume", run_id_from(parked.stderr), "--answer", "ask=go", env=env)
    assert (done.returncode, done.stdout) == (0, "wrote second\n"), done.stdout + done.stderr
    assert (second.work / "second.txt").read_text() == "second\n"
