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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from wfexec.durable.store import StoreError, lease_holder, open_store, remove_files_of_gone_processes
from wfexec.system.files import make_folders, write_atomic
from wfexec.system.run_store import serve_logs_folder

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
    ended_at: float | None = None  # when the server saw it end (seconds since the epoch)

    @property
    def ok(self) -> bool:
        return self.run_id is not None and self.exit_code != 2  # 2: refused, nothing ran

    def to_json(self) -> dict:
        return {"run_id": self.run_id, "exit_code": self.exit_code, "message": self.message,
                "ok": self.ok, "ended_at": self.ended_at}

    @classmethod
    def from_json(cls, data: dict) -> "Started":
        return cls(data["run_id"], data["exit_code"], data["message"], data.get("ended_at"))


class Processes:
    def __init__(self, store: Path, command: tuple[str, ...] = (), temporal: str | None = None):
        self.store = store
        self.temporal = temporal  # runs go to this Temporal cluster (`--temporal`), not to the store
        self.command = command or (sys.executable, "-m", "wfexec")
        # Per run, what its processes said on stderr, one after the other (`<run id>.log`), and how the last one
        # ended (`<run id>.ended`): kept with the store, so the run page of a server started again, or of another
        # server on the same store, shows them too. Made when the first process starts (a read-only server
        # writes nothing).
        self.logs = serve_logs_folder(store)
        # The files that live only as long as a process (what it is given, its stdout, its stderr until its run
        # is named) start with the lease of the server that made them: a later server can tell the leftovers of
        # one that is gone from those of one still serving.
        self._owner = lease_holder()
        self._folder_ready = False
        self._lock = threading.Lock()

    def ended_of(self, run_id: str, updated_at: float | None = None) -> Started | None:
        """How the last process a server (this one or another on the store) started for the run ended; None until
        one has, and None once the run changed after it ended (`updated_at`, the run's last change): resumed or
        cancelled at a terminal, what that process said is no longer the run's news."""
        try:
            ended = Started.from_json(json.loads((self.logs / f"{run_id}.ended").read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if updated_at is not None and ended.ended_at is not None and updated_at > ended.ended_at:
            return None
        return ended

    def _folder(self) -> Path:
        with self._lock:
            if not self._folder_ready:
                try:
                    make_folders(self.logs)
                    # the passing files of servers that are gone (stopped while a process they started ran, or
                    # killed): each starts with the lease of the server that made it
                    remove_files_of_gone_processes(self.logs)
                except OSError as exc:
                    raise StoreError(f"the logs of the runs this server starts cannot be kept in {self.logs}: "
                                     f"{exc.strerror or exc}", "make the store's folder writable") from None
                self._folder_ready = True
        return self.logs

    def _passing_file(self, suffix: str) -> tuple[int, str]:
        return tempfile.mkstemp(dir=self._folder(), prefix=f"{self._owner}~", suffix=suffix)

    def launch(self, workflow: Path, inputs: dict[str, Any] | None = None,
               texts: dict[str, str] | None = None) -> Started:
        """A `wfexec run` of `workflow`. `inputs`: values as given, as the API's and MCP's `inputs` take them (what
        the JSON API was sent, a run's recorded inputs to run it again), in a file the process reads
        (`--input-file`): each keeps its type and every character (NotPassable when one cannot). `texts`: text as
        `--input KEY=VALUE` gives it (the page's form), which the process reads by the type its input declares."""
        from wfexec.running.request import RunRequest, command_line

        files = [self._file(inputs, "input")] if inputs else []
        # --trace on a cluster only: it names its run first (_named_on_cluster); a local run's output is the store's
        request = RunRequest(path=workflow, input_file=files[0] if files else None,
                             text_inputs=[f"{key}={value}" for key, value in (texts or {}).items()],
                             temporal=self.temporal, trace=bool(self.temporal), **_WATCHED)
        return self._start(command_line(request, "run"), None, files)

    def resume(self, run_id: str, answer: tuple[str, Any] | None = None, in_flight: str | None = None) -> Started:
        """`answer`: the question's key and the answer, given in a file (`--answers`), so that it reaches the run
        as it was given, whatever characters it holds. `in_flight`: "rerun" or "skip", what to do with the step
        that was in flight when the run stopped."""
        from wfexec.running.request import RunRequest, command_line

        files = [self._file(dict([answer]), "answer")] if answer is not None else []
        request = RunRequest(run_id=run_id, answer_files=files, rerun=in_flight == "rerun",
                             skip=in_flight == "skip", **_WATCHED)
        return self._start(command_line(request, "resume"), run_id, files)

    def _file(self, values: dict[str, Any], what: str) -> Path:
        """`values` in a file of the logs folder, for a process to read; it goes once the process ends."""
        text = passable_text(values, what)
        handle, name = self._passing_file(".json")
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        return Path(name)

    def _start(self, args: list[str], run_id: str | None, files: Sequence[Path] = ()) -> Started:
        try:
            return self._started(args, run_id, files)
        except BaseException:
            for file in files:
                file.unlink(missing_ok=True)
            raise

    def _started(self, args: list[str], run_id: str | None, files: Sequence[Path]) -> Started:
        handle, out_name = self._passing_file(".out")
        out = os.fdopen(handle, "wb")
        # What a resumed run's process says goes on after what it said before; a new run's file is named once its
        # id is known. (The output of its commands and scripts is in the store: wfexec.durable.outputs.)
        if run_id is not None:
            err_path = self.logs / f"{run_id}.log"
        else:
            handle, err_name = self._passing_file(".new")
            os.close(handle)
            err_path = Path(err_name)
        err = open(err_path, "ab")
        offset = err.tell()
        environment = {**os.environ, "WFEXEC_STORE": str(self.store), "WFEXEC_STATUS": "0", "NO_COLOR": "1"}
        # A session of its own: Ctrl-C at the server's terminal stops the server, not the runs it started.
        child = subprocess.Popen([*self.command, *args], stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                 env=environment, start_new_session=True)
        out.close()
        err.close()
        said = _Said(Path(out_name), err_path, offset, list(files))
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
        ended = replace(_ended(code, started.run_id, said), ended_at=time.time())
        said.out.unlink(missing_ok=True)
        for file in said.given:
            file.unlink(missing_ok=True)
        if ended.run_id is None:
            said.err.unlink(missing_ok=True)
        else:
            try:
                write_atomic(self.logs / f"{ended.run_id}.ended", json.dumps(ended.to_json()))
            except OSError:
                pass  # a folder that became unwritable: the run page only goes without how its process ended


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


@dataclass
class _Said:
    """Where a process writes: its JSON document (stdout), and its stderr from `offset` on; and the files it was
    given to read (its inputs, its answer)."""

    out: Path
    err: Path
    offset: int
    given: list[Path]


class NotPassable(ValueError):
    """A value a process cannot be given as it is (its message says which, and why)."""


# A character past U+FFFF, as JSON escapes it: a pair of surrogates, which YAML does not take (it takes \UXXXXXXXX).
_SURROGATES = re.compile(r"(?<!\\)((?:\\\\)*)\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})", re.IGNORECASE)


def _astral(found: re.Match) -> str:
    high, low = int(found.group(2), 16), int(found.group(3), 16)
    return f"{found.group(1)}\\U{0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00):08x}"


def passable_text(values: dict[str, Any], what: str = "input") -> str:
    """`values` as the text of a file `wfexec run --input-file` or `--answers` reads back to the very same values:
    JSON (which YAML reads as it is) with every character past ASCII escaped (YAML would read a raw U+0085 or
    U+2028 as a line break), and those past U+FFFF in YAML's own escape. Read back to be sure; NotPassable names
    the `what` (input, answer) that does not come back as it went."""
    from wfexec.language.loader import load_text

    try:
        text = _SURROGATES.sub(_astral, json.dumps(values, ensure_ascii=True, allow_nan=False))
    except (TypeError, ValueError):
        text = None
    if text is not None:
        read = load_text(text)
        if not read.diagnostics and read.data == values:
            return text
    for key, value in values.items():  # which one
        try:
            text = _SURROGATES.sub(_astral, json.dumps({key: value}, ensure_ascii=True, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise NotPassable(f"{what} '{key}' cannot be given to the run as it is: {exc}") from None
        read = load_text(text)
        if read.diagnostics or read.data != {key: value}:
            why = read.diagnostics[0].message if read.diagnostics else "it does not read back as it was"
            raise NotPassable(f"{what} '{key}' cannot be given to the run as it is: {why}")
    raise NotPassable(f"the {what}s cannot be given to the run as they are")


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
