"""The runs the server starts: each one a `wfexec run` or `wfexec resume` process of its own, as the command line
would start it, which holds the run's lease; the server only watches the store until that process has taken the
run (or has ended), then tells who asked. The processes outlive the server: it owns none of them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from wfexec.durable.store import StoreError, lease_holder, open_store

# How often the store is looked at while a new process takes its run: well under what a person notices.
POLL_SECONDS = 0.05
# A process that neither took its run nor ended by then is reported as started, and left to go on.
PATIENCE_SECONDS = 30.0


# What every process the server starts is asked besides the run itself: it asks nobody, prints its result as JSON,
# and traces each step into its log (which the run page shows).
_WATCHED = {"non_interactive": True, "format": "json"}


@dataclass
class Started:
    """What became of a process the server started: the run it drives (or drove), and when it has already
    ended, how (its exit code, and what it printed on stderr)."""

    run_id: str | None
    exit_code: int | None = None
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.run_id is not None and self.exit_code != 2  # 2: refused, nothing ran

    def to_json(self) -> dict:
        return {"run_id": self.run_id, "exit_code": self.exit_code, "message": self.message,
                "ok": self.ok}


class Processes:
    def __init__(self, store: Path, command: tuple[str, ...] = (), temporal: str | None = None):
        self.store = store
        self.temporal = temporal  # runs go to this Temporal cluster (`--temporal`), not to the store
        self.command = command or (sys.executable, "-m", "wfexec")
        self.logs = Path(tempfile.mkdtemp(prefix="wfexec-serve-"))
        self.ended: dict[str, Started] = {}  # run id → how the last process the server started for it ended
        self._lock = threading.Lock()

    def launch(self, workflow: Path, inputs: dict[str, str]) -> Started:
        from wfexec.running.request import RunRequest, command_line

        # --trace on a cluster only: it names its run first (_named_on_cluster); a local run's output is the store's
        request = RunRequest(path=workflow, text_inputs=[f"{key}={value}" for key, value in inputs.items()],
                             temporal=self.temporal, trace=bool(self.temporal), **_WATCHED)
        return self._start(command_line(request, "run"), None)

    def resume(self, run_id: str, answer: tuple[str, str] | None = None, in_flight: str | None = None) -> Started:
        """`in_flight`: "rerun" or "skip", what to do with the step that was in flight when the run stopped."""
        from wfexec.running.request import RunRequest, command_line

        request = RunRequest(run_id=run_id, answers=dict([answer]) if answer is not None else {},
                             rerun=in_flight == "rerun", skip=in_flight == "skip", **_WATCHED)
        return self._start(command_line(request, "resume"), run_id)

    def _start(self, args: list[str], run_id: str | None) -> Started:
        out = tempfile.NamedTemporaryFile(dir=self.logs, suffix=".out", delete=False)
        # What a resumed run's process says goes on after what it said before; a new run's file is named once its
        # id is known. (The output of its commands and scripts is in the store: wfexec.durable.outputs.)
        err_path = self.logs / f"{run_id}.log" if run_id is not None else _fresh_file(self.logs, ".new")
        err = open(err_path, "ab")
        offset = err.tell()
        environment = {**os.environ, "WFEXEC_STORE": str(self.store), "WFEXEC_STATUS": "0", "NO_COLOR": "1"}
        # A session of its own: Ctrl-C at the server's terminal stops the server, not the runs it started.
        child = subprocess.Popen([*self.command, *args], stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                 env=environment, start_new_session=True)
        out.close()
        err.close()
        said = _Said(Path(out.name), err_path, offset)
        started = self._taken(child, run_id, said)
        if run_id is None and started.run_id is not None:
            said.err = err_path.rename(self.logs / f"{started.run_id}.log")
        threading.Thread(target=self._reap, args=(child, started, said), daemon=True).start()
        return started

    def _taken(self, child: subprocess.Popen, run_id: str | None, said: "_Said") -> Started:
        """Wait until the process drives its run past every refusal (its lease on a run marked running) or has
        ended; a resumed run that refuses its answer ends without ever being marked running."""
        lease = lease_holder(child.pid)
        deadline = time.monotonic() + PATIENCE_SECONDS
        while time.monotonic() < deadline:
            code = child.poll()
            if code is not None:
                return _ended(code, run_id, said)
            if self.temporal:  # no lease on a cluster: the run is started once its process names it (--trace)
                named = _named_on_cluster(said)
                if named is not None:
                    return Started(named)
                time.sleep(POLL_SECONDS)
                continue
            record = self._driven_by(lease)
            if record is not None and record.status == "running" and (run_id is None or record.id == run_id):
                return Started(record.id)
            time.sleep(POLL_SECONDS)
        return Started(run_id, None, "the run's process is still starting")

    def _driven_by(self, lease: str):
        if not self.store.exists():
            return None
        try:
            store = open_store(self.store, readonly=True)
        except StoreError:  # the first run of a new store is creating its tables right now
            return None
        try:
            return store.driven_by(lease)
        finally:
            store.close()

    def _reap(self, child: subprocess.Popen, started: Started, said: "_Said") -> None:
        code = child.wait()
        ended = _ended(code, started.run_id, said)
        said.out.unlink(missing_ok=True)
        if ended.run_id is None:
            said.err.unlink(missing_ok=True)
        if ended.run_id is not None:
            with self._lock:
                self.ended[ended.run_id] = ended


def _named_on_cluster(said: "_Said") -> str | None:
    """The run id a `wfexec run --temporal --trace` process prints first (`Run ID (Temporal ...)`), once it has."""
    try:
        with open(said.err, "rb") as stderr:
            stderr.seek(said.offset)
            first = stderr.readline().decode("utf-8", errors="replace")
    except OSError:
        return None
    found = re.match(r"Run (\S+) \(Temporal ", first)
    return found.group(1) if found else None


def _fresh_file(folder: Path, suffix: str) -> Path:
    handle, name = tempfile.mkstemp(dir=folder, suffix=suffix)
    os.close(handle)
    return Path(name)


@dataclass
class _Said:
    """Where a process writes: its JSON document (stdout), and its stderr from `offset` on."""

    out: Path
    err: Path
    offset: int


def _ended(code: int, run_id: str | None, said: _Said) -> Started:
    """How a run's process ended, from its exit code and the JSON document `--format json` printed."""
    try:
        document = json.loads(said.out.read_text(encoding="utf-8") or "null")
    except (OSError, ValueError):
        document = None
    if isinstance(document, dict) and isinstance(document.get("run_id"), str):
        run_id = document["run_id"]
    try:
        with open(said.err, "rb") as stderr:
            stderr.seek(said.offset)
            text = stderr.read().decode("utf-8", errors="replace").strip()
    except OSError:
        text = ""
    lines = [line for line in text.splitlines() if line.strip()]
    # The first `error:` line says why; the rest is the run's own output or how to go on at a terminal.
    message = next((line for line in lines if line.startswith(("error", "internal error"))), lines[0] if lines else "")
    if isinstance(document, dict) and document.get("error") and code not in (0, 3):
        message = str(document["error"])
    return Started(run_id, code, message if code not in (0, 3) else "")
