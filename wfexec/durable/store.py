"""The SQLite run store: runs, their journal of steps, the latest state.

One file (default `.wfexec/runs.db`), WAL mode. Its durability (`--durability`,
$WFEXEC_DURABILITY): `normal` (SQLite's `synchronous=NORMAL`, the default): a
commit survives the process being killed (the WAL is written before commit
returns); only a power cut or an OS crash can lose the last commits, which
resume then re-runs like an in-flight step. `full` (`synchronous=FULL`): the WAL
is also flushed to the disk (fsync) at every commit, so a commit survives a
power cut too, at the price of a disk flush per commit.

Tables:
- `runs`: one row per run: workflow, status, current node, the step in flight,
  a pending question, the ending, who is driving it (pid lease).
- `journal`: append-only, one row per commit holding the steps it committed
  (one step for a step with outside effects, up to a thousand for steps that
  only change state: a row per step would cost more than the steps). A row's
  key is its run's `number` << 32 | its first step: an integer key, so the
  table is SQLite's own rowid B-tree, the cheapest to append to (a key of run
  id and step costs a commit about a quarter more), and a run's rows are one range
  of keys (`_key_range`). Each step
  is `[step, node, type, outcome, target, at, changes, duration_us]`, then
  `appended, removed` when it has either (wfexec.durable.changes): what the
  step changed, never a copy of the state. A row also holds the run's current
  node after it and when it was committed: the last row is the run's progress
  (`RunRecord.from_row`), so a commit of state-only steps is one statement.
- `node_states` and `node_state_changes`: what a long-running node (a
  `states` node's agents) needs to continue after a crash: a whole copy, and
  the changes since it, each a row of its own (`merge_change`), until they
  outweigh the copy and a new one replaces them.
- `outputs`: what the commands and scripts of each step wrote (wfexec.durable.outputs): the bytes it wrote in
  all, where they start in the run's output, and the last of them (at most `outputs.KEEP_BYTES`).
- `snapshots`: a full state of each run (without `history`, which is the
  journal itself) as of a step, rewritten now and then, in the same
  transaction as a journal row (wfexec.durable.journal decides when). The
  state after any commit is that snapshot with the journal rows after it
  replayed (`Store.replay`); resume rebuilds history from the journal.
"""

from __future__ import annotations

import _thread  # threading's RLock, without importing threading on every open of a store
import builtins
import json
import os
# The `sqlite3` package is `_sqlite3` plus default adapters for dates, which the store never hands SQLite (its
# times are numbers); the package imports datetime for them, ~2.5 ms of CPU on every start that opens a store.
# So the store, the one module that opens SQLite for a run, takes the C module directly.
import _sqlite3 as sqlite3
import time
from wfexec.records import dataclass
from pathlib import Path

from wfexec.errors import WfexecError
from wfexec.system.run_store import DEFAULT_STORE, store_location  # noqa: F401  (where the store is: one definition)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, NoReturn, Sequence

APP_ID = "wfexec"
SCHEMA_VERSION = 8
# Read as they are by the commands that only read (schemas 3 to 6 added columns and tables that older stores
# simply lack; before 7, `_read_older_journal` shows theirs in today's shape); anything that writes upgrades the
# store first.
READS_SCHEMAS = (2, 3, 4, 5, 6, 7, 8)

MIGRATIONS = {
    1: """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        workflow_path TEXT NOT NULL,
        workflow_name TEXT NOT NULL,
        workflow_hash TEXT NOT NULL,
        node_hashes TEXT NOT NULL,
        status TEXT NOT NULL,
        current_node TEXT,
        in_flight TEXT,
        pending_question TEXT,
        last_error TEXT,
        ending TEXT,
        ending_type TEXT,
        result TEXT,
        inputs TEXT NOT NULL DEFAULT '{}',
        steps INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        finished_at REAL,
        lease TEXT
    );
    CREATE INDEX runs_status ON runs(status);
    CREATE TABLE journal (
        run_id TEXT NOT NULL REFERENCES runs(id),
        first_step INTEGER NOT NULL,
        last_step INTEGER NOT NULL,
        steps TEXT NOT NULL,
        PRIMARY KEY (run_id, first_step)
    ) WITHOUT ROWID;
    CREATE TABLE snapshots (
        run_id TEXT PRIMARY KEY REFERENCES runs(id),
        step INTEGER NOT NULL,
        state TEXT NOT NULL
    );
    """,
    2: """
    CREATE TABLE node_states (
        run_id TEXT NOT NULL REFERENCES runs(id),
        node TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (run_id, node)
    ) WITHOUT ROWID;
    """,
    3: """
    ALTER TABLE journal ADD COLUMN current_node TEXT;
    ALTER TABLE journal ADD COLUMN committed_at REAL;
    """,
    4: """
    CREATE TABLE transcripts (
        run_id TEXT NOT NULL REFERENCES runs(id),
        seq INTEGER NOT NULL,
        node TEXT NOT NULL,
        agent TEXT NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
    ) WITHOUT ROWID;
    """,
    5: """
    CREATE TABLE node_state_changes (
        run_id TEXT NOT NULL REFERENCES runs(id),
        node TEXT NOT NULL,
        seq INTEGER NOT NULL,
        change TEXT NOT NULL,
        PRIMARY KEY (run_id, node, seq)
    ) WITHOUT ROWID;
    """,
    6: """
    CREATE TABLE outputs (
        run_id TEXT NOT NULL REFERENCES runs(id),
        step INTEGER NOT NULL,
        node TEXT NOT NULL,
        start INTEGER NOT NULL,
        written INTEGER NOT NULL,
        text BLOB NOT NULL,
        PRIMARY KEY (run_id, step)
    ) WITHOUT ROWID;
    """,
    7: """
    ALTER TABLE runs ADD COLUMN number INTEGER;
    UPDATE runs SET number = rowid;
    CREATE UNIQUE INDEX runs_number ON runs(number);
    ALTER TABLE journal RENAME TO journal_6;
    CREATE TABLE journal (
        key INTEGER PRIMARY KEY,
        last_step INTEGER NOT NULL,
        steps TEXT NOT NULL,
        current_node TEXT,
        committed_at REAL
    );
    INSERT INTO journal SELECT (runs.number << 32) | j.first_step, j.last_step, j.steps, j.current_node,
        j.committed_at FROM journal_6 j JOIN runs ON runs.id = j.run_id;
    DROP TABLE journal_6;
    """,
    8: """
    ALTER TABLE runs ADD COLUMN answers TEXT;
    """,
}

# A journal row's key: its run's number in the high bits, its first step in the low STEP_BITS.
STEP_BITS = 32
LAST_STEP = (1 << STEP_BITS) - 1

# A run as `get` and `list` read it: its row, and its journal's last row, which is newer than the row's
# progress columns while the run goes (see RunRecord.from_row).
_LAST_ROW = (f"j.key = (SELECT key FROM journal WHERE key BETWEEN runs.number << {STEP_BITS} AND "
             f"(runs.number << {STEP_BITS}) | {LAST_STEP} ORDER BY key DESC LIMIT 1)")
_SELECT_RUNS = ("SELECT runs.*, j.last_step AS journal_step, j.current_node AS journal_node, "
                f"j.committed_at AS journal_at FROM runs LEFT JOIN journal j ON {_LAST_ROW}")

STATUSES = ("running", "waiting", "completed", "failed", "stopped", "cancelled")
FINISHED = ("completed", "failed", "cancelled")


# A run is named by its whole id or by a prefix at least this long: `wfexec cancel 0` must not pick a run.
MIN_PREFIX = 4
AMBIGUOUS_SHOWN = 10  # the candidates an ambiguous prefix lists


# A node's saved state is saved whole again once the changes saved since its last whole copy add up to that copy's
# size, and to at least this much (a few agents' changes are not worth a new copy).
NODE_CHANGES_MIN_BYTES = 64 * 1024


# --durability: how each commit reaches the disk (SQLite's `synchronous` in WAL mode).
DURABILITY = {"normal": "NORMAL", "full": "FULL"}
DURABILITY_VARIABLE = "WFEXEC_DURABILITY"


def durability_setting(durability: str | None = None) -> str:
    """The durability asked for: `durability`, else $WFEXEC_DURABILITY, else `normal`."""
    chosen = (durability or os.environ.get(DURABILITY_VARIABLE) or "normal").strip().lower()
    if chosen not in DURABILITY:
        source = f"${DURABILITY_VARIABLE}" if durability is None else "the durability"
        raise StoreError(f"{source} is '{chosen}', which is not a durability",
                         "use normal (a commit survives a kill) or full (it survives a power cut too: an fsync per "
                         "commit)")
    return chosen


# How long a write waits for another process's transaction on the store before it is reported as locked.
LOCK_WAIT_SECONDS = 10.0

# What SQLite raises, for the modules beside the store to catch without importing the sqlite3 package.
SQLiteError = sqlite3.Error


class StoreError(WfexecError):
    """The store cannot be used: not a wfexec store, corrupt, locked, or a run is unknown/busy."""


class StoreWriteError(StoreError):
    """A commit failed (a full disk, a file-size limit, an I/O error): the run stops where it is, and its last
    commit is intact for `show` and `resume` once the cause is gone (exit 4)."""

    outcome = "stopped"


def refuse_empty_run_id(run_id: str) -> None:
    """An empty run id names no run (every door refuses it, exit 2)."""
    if not isinstance(run_id, str) or not run_id.strip():
        raise StoreError("the run id is empty", "give the run's id (`wfexec runs` lists them)")


def new_run_id() -> str:
    """Short and sortable by creation time: 9 base-36 digits of milliseconds + 6 random (31 bits: a collision
    needs thousands of runs in one millisecond, and `create_run` retries one anyway)."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"

    def base36(n: int, width: int) -> str:
        out = ""
        for _ in range(width):
            n, r = divmod(n, 36)
            out = digits[r] + out
        return out

    return base36(int(time.time() * 1000), 9) + base36(int.from_bytes(os.urandom(4), "big") % 36 ** 6, 6)


# ASCII output: the C encoder's ASCII path is the fastest, and \u escapes read back the same.
_dumps = json.JSONEncoder(separators=(",", ":"), default=str).encode
# The journal's rows, at every commit: `_dumps` sets up a new C encoder (and a dict to catch circular references)
# at each call, which costs more than encoding a row of a step or two. This one is set up once and writes the same
# text; a step's values come from state, which holds JSON values and so no circle.
_row_encoder = json.encoder.c_make_encoder(  # type: ignore[attr-defined]
    None, str, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, True) \
    if json.encoder.c_make_encoder is not None else None  # type: ignore[attr-defined]


# orjson encodes a step's row in a sixth of the json module's time (a twentieth of a durable step's CPU), but
# importing it costs what about 400 rows save: a process switches to it after its first ROWS_BEFORE_ORJSON rows,
# so a short run (a skill's question, a test) never pays the import.
ROWS_BEFORE_ORJSON = 512
_rows_encoded = 0
_fast_row_encoder: Callable[[Sequence[Sequence[Any]]], str | None] | None = None


def _encode_steps(steps: Sequence[Sequence[Any]]) -> str:
    """A journal row's text: JSON that reads back as `steps` (`_dumps`'s text, or orjson's with the same values)."""
    global _rows_encoded, _fast_row_encoder
    if _fast_row_encoder is not None:
        text = _fast_row_encoder(steps)
        if text is not None:
            return text
    elif _rows_encoded < ROWS_BEFORE_ORJSON:
        _rows_encoded += 1
    else:
        _fast_row_encoder = _orjson_row_encoder()
    if _row_encoder is None:  # an interpreter without the json module's C part
        return _dumps(steps)
    return "".join(_row_encoder(steps, 0))


def _orjson_row_encoder() -> Callable[[Sequence[Sequence[Any]]], str | None]:
    """orjson's row text where it reads back as the json module's would; None (use the json module) elsewhere."""
    try:
        from orjson import OPT_PASSTHROUGH_DATACLASS, OPT_PASSTHROUGH_DATETIME, dumps
    except ImportError:  # installed without it: the json module writes every row
        return lambda steps: None

    def refuse(value: Any) -> Any:
        # Not a JSON type: the json module writes it as `str(value)`. Dates and dataclasses are passed here; an
        # Enum member is the one value orjson writes otherwise (its value), and neither reads back as the member.
        raise TypeError

    def encode(steps: Sequence[Sequence[Any]]) -> str | None:
        try:
            text = dumps(steps, default=refuse, option=OPT_PASSTHROUGH_DATACLASS | OPT_PASSTHROUGH_DATETIME)
        except TypeError:  # also an integer past 64 bits, a lone surrogate, a key that is not a string
            return None
        # orjson writes NaN and ±Infinity as null, where the json module writes NaN and Infinity, which read back.
        return None if b"null" in text else text.decode()

    return encode


_APPEND_STEPS = "INSERT OR REPLACE INTO journal VALUES (?, ?, ?, ?, ?)"


def _hostname() -> str:
    return os.uname().nodename  # what socket.gethostname() says, without importing socket


def _process_started(pid: int) -> str:
    """When process `pid` started, in clock ticks since the machine booted (Linux's /proc/PID/stat, field 22); ""
    where that cannot be read. With the pid it names one process for good: a pid is reused, its start is not."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            # After the command's name, in parentheses (which may hold spaces): field 3 on.
            return stat.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError, ValueError):
        return ""


_own_lease: dict[int, str] = {}  # by pid: a forked child is another process


def lease_holder(pid: int | None = None) -> str:
    """How the store names the process driving a run: the lease it writes (this process's, or process `pid`'s of
    this machine): `pid@host`, and `#start` where the process's start can be read."""
    if pid is None:
        pid = os.getpid()
        own = _own_lease.get(pid)
        if own is not None:
            return own
    started = _process_started(pid)
    lease = f"{pid}@{_hostname()}" + (f"#{started}" if started else "")
    if pid == os.getpid():
        _own_lease[pid] = lease
    return lease


def _answers_text(answers: dict | None) -> str | None:
    """The `answers` column: the answers not taken yet, NULL when there are none."""
    return _dumps(answers) if answers else None


def _lease_parts(lease: str) -> tuple[str, str, str]:
    """A lease's pid, host and start (`pid@host#start`; "" where it has none)."""
    pid_text, _, place = lease.partition("@")
    host, _, started = place.partition("#")
    return pid_text, host, started


def lease_alive(lease: str | None) -> bool:
    """Whether the process named by a lease still runs; on another host we cannot tell: yes. A process with the
    lease's pid that started at another time is another process (the pid was reused: after a reboot, or in a
    container where every first process is pid 1)."""
    if not lease:
        return False
    pid_text, host, started = _lease_parts(lease)
    if host != _hostname():
        return True  # another machine: we cannot tell, so we do not steal it
    try:
        pid = int(pid_text)
        os.kill(pid, 0)
    except (ProcessLookupError, ValueError, OverflowError):
        return False
    except PermissionError:
        pass
    return not started or _process_started(pid) in (started, "")


@dataclass
class RunRecord:
    id: str
    workflow_path: str
    workflow_name: str
    workflow_hash: str
    node_hashes: dict
    status: str
    current_node: str | None
    in_flight: dict | None
    pending_question: dict | None
    last_error: str | None
    ending: str | None
    ending_type: str | None
    result: dict | None
    inputs: dict
    steps: int
    created_at: float
    updated_at: float
    finished_at: float | None
    lease: str | None
    answers: dict                               # given up front and not taken yet (Answers.to_dict)

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> "RunRecord":
        """A run from `_SELECT_RUNS`. Committing steps writes only their journal row (one statement), so the
        journal's last row is the run's progress: its step count, its current node while it goes, the time of
        its last commit, and whether the step marked in flight has ended since."""
        data = dict(row)
        del data["number"]  # the store's own: it keys the run's journal rows
        journal_step, journal_node, journal_at = data.pop("journal_step"), data.pop("journal_node"), \
            data.pop("journal_at")
        data.setdefault("answers", None)  # a store before schema 8, read as it is
        for key in ("node_hashes", "in_flight", "pending_question", "result", "inputs", "answers"):
            data[key] = json.loads(data[key]) if data[key] else \
                ({} if key in ("node_hashes", "inputs", "answers") else None)
        if journal_step is not None and journal_step >= data["steps"]:
            data["steps"] = journal_step
            if data["status"] not in FINISHED and journal_node is not None:
                data["current_node"] = journal_node
            if journal_at is not None and journal_at > data["updated_at"]:
                data["updated_at"] = journal_at
            if data["in_flight"] and data["in_flight"]["step"] <= journal_step:
                data["in_flight"] = None
        return cls(**data)

    @property
    def shown_status(self) -> str:
        """The status as it is: a run still marked `running` whose driving process is gone was interrupted
        (killed, or the machine went down) and waits for `wfexec resume`."""
        if self.status == "running" and not lease_alive(self.lease):
            return "interrupted"
        return self.status

    def to_json(self) -> dict:
        out = dict(self.__dict__)
        out.pop("node_hashes")
        out["status"] = self.shown_status
        return out


# A store being made is built under its name plus this, the lease of the process making it and its thread
# (Store._create): a companion of the store, as SQLite's `-wal` is, so no workflow may touch it.
_BUILDING = "-new-"


def _companions(path: Path) -> list[str]:
    """The file at `path` and those SQLite keeps beside it."""
    return [str(path)] + [f"{path}{suffix}" for suffix in ("-wal", "-shm", "-journal")]


def remove_files_of_gone_processes(folder: Path, prefix: str = "") -> None:
    """The files in `folder` named `<prefix><lease>~…` whose process, the lease's, is gone: what a killed process
    was making (a store) or passing to another (the web page's server). Raises OSError when `folder` cannot be
    listed."""
    names = [entry.name for entry in os.scandir(folder) if entry.name.startswith(prefix)]
    for name in names:
        lease, mark, _ = name[len(prefix):].partition("~")  # a lease holds no `~`
        if mark and lease and not lease_alive(lease):
            try:
                os.unlink(folder / name)
            except OSError:  # another process removed it first
                pass


def _link_new(building: Path, store: Path) -> None:
    """Give the whole store file `building` its name `store`, unless a store of that name appeared meanwhile."""
    try:
        os.link(building, store)
    except FileExistsError:
        pass  # another process made it first: it is whole too, and it is the one to use
    except OSError:  # a file system without hard links: a rename, which could replace one made this very moment
        if not store.exists():
            os.replace(building, store)


def refuse_a_folder(path: Path) -> None:
    """Raise StoreError when `path`, given as the store, is a folder (`--store .`)."""
    if path.is_dir():
        raise StoreError(f"the run store {path} is a folder, not a file", "pass --store FILE")


class Store:
    def __init__(self, path: str | os.PathLike, *, readonly: bool = False, durability: str | None = None):
        self.path = Path(path)
        self.readonly = readonly
        self.durability = "normal" if readonly else durability_setting(durability)  # a reader commits nothing
        # A states node's agents report from the event loop's worker threads too.
        self._lock = _thread.RLock()
        # (run id, node) → [bytes of its whole saved state, bytes of the changes saved since] (change_node_state)
        self._node_sizes: dict[tuple[str, str], list[int]] = {}
        self._key_bases: dict[str, int] = {}  # run id → its number << STEP_BITS: its journal rows' first key
        self.schema = SCHEMA_VERSION  # of a store opened read-only: what its file says
        self.db = self._open_readonly() if readonly else self._open()
        # The one cursor every single-statement write goes through (under the lock): `Connection.execute` makes and
        # frees a cursor per call, about 7% of SQLite's own work for a journal row.
        self._writer = self.db.cursor()

    def _open_readonly(self) -> sqlite3.Connection:
        """For commands that only read (`runs`, `show`): no write at all, so a user who may not write the
        store can still list its runs, and a full disk does not stop them."""
        path = self.path
        refuse_a_folder(path)
        try:
            try:
                db, row = self._connect_readonly("mode=ro")
            except sqlite3.OperationalError:
                # A WAL store in a folder we may not write: SQLite cannot make the shared-memory file it reads
                # through, so read the file as it is (what the last checkpoint holds).
                db, row = self._connect_readonly("mode=ro&immutable=1")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{path} cannot be read as a run store: {exc}",
                             "check that it exists and can be read, or pass --store with another path") from None
        version = int(row[0]) if row else 0
        self.schema = version
        if version not in READS_SCHEMAS:
            db.close()
            how = "upgrade wfexec" if version > SCHEMA_VERSION else "any wfexec command that writes (run, resume) " \
                                                                  "upgrades it"
            raise StoreError(f"{path} has store schema {version}; this wfexec reads {SCHEMA_VERSION}", how)
        if version < 7:
            _read_older_journal(db, version)
        return db

    # -- opening ------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        path = self.path
        refuse_a_folder(path)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            self._create(path)
        elif path.stat().st_size > 0:
            with open(path, "rb") as handle:
                if handle.read(16) != b"SQLite format 3\x00":
                    raise StoreError(f"{path} is not a wfexec run store (not an SQLite database); it was left as is",
                                     "move it away, or pass --store with another path")
        try:
            return self._connect(path)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{path} cannot be used as a run store: {exc}; it was left as is",
                             "move it away, or pass --store with another path") from None

    def _connect(self, path: Path) -> sqlite3.Connection:
        """A connection to the store file at `path`, its tables made or brought up to date."""
        db = sqlite3.connect(str(path), timeout=LOCK_WAIT_SECONDS, isolation_level=None, check_same_thread=False)
        try:
            db.row_factory = sqlite3.Row
            self._refuse_foreign(db)  # before any PRAGMA: switching to WAL rewrites the file header
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={DURABILITY[self.durability]}")
            db.execute("PRAGMA foreign_keys=ON")
            self._migrate(db)
        except BaseException:
            db.close()
            raise
        return db

    def _create(self, path: Path) -> None:
        """Make the store at `path` so that a process killed at any moment leaves no store or a whole one: made
        in place, a kill between SQLite making the file and the tables' commit left a file every later reader
        refused ("no such table: wfexec_meta"). So the tables are made in a file of their own beside it, which
        is then linked into place whole; a link, unlike a rename, never replaces a store another process made
        meanwhile (theirs is used)."""
        try:  # the files of stores whose making was killed before they were linked into place
            remove_files_of_gone_processes(path.parent, path.name + _BUILDING)
        except OSError:
            pass  # a folder that cannot be listed: making the store says what is wrong with it
        building = path.with_name(f"{path.name}{_BUILDING}{lease_holder()}~{_thread.get_ident()}")
        try:
            try:
                self._connect(building).close()  # the last connection: SQLite folds its -wal into the file
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"the run store {path} cannot be made: {exc}",
                                 "make its folder writable, or pass --store with another path") from None
            _link_new(building, path)
        finally:
            for name in _companions(building):
                Path(name).unlink(missing_ok=True)

    def _connect_readonly(self, options: str) -> tuple[sqlite3.Connection, sqlite3.Row | None]:
        db = sqlite3.connect(f"{self.path.resolve().as_uri()}?{options}", uri=True, timeout=LOCK_WAIT_SECONDS,
                             isolation_level=None, check_same_thread=False)
        try:
            db.row_factory = sqlite3.Row
            if not self._refuse_foreign(db):
                raise StoreError(f"{self.path} is an empty SQLite file, not yet a run store (a wfexec killed while it "
                                 "made the store, before this version, left one so): it holds no runs",
                                 "any `wfexec run` with this store makes it whole; or delete the file")
            return db, db.execute("SELECT value FROM wfexec_meta WHERE key='schema_version'").fetchone()
        except BaseException:
            db.close()
            raise

    def _refuse_foreign(self, db: sqlite3.Connection) -> set[str]:
        """The database's tables, when it is none of something else's."""
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if tables and "wfexec_meta" not in tables:
            db.close()
            raise StoreError(f"{self.path} is an SQLite database of something else (tables: "
                             f"{', '.join(sorted(tables))}); it was left as is",
                             "pass --store with another path")
        return tables

    def _migrate(self, db: sqlite3.Connection) -> None:
        if self._schema_current(db):
            return  # nearly every open: no write transaction for it
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("CREATE TABLE IF NOT EXISTS wfexec_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            row = db.execute("SELECT value FROM wfexec_meta WHERE key='schema_version'").fetchone()
            version = int(row[0]) if row else 0
            if version > SCHEMA_VERSION:
                raise StoreError(f"{self.path} was written by a newer wfexec (store schema {version}, this one "
                                 f"knows {SCHEMA_VERSION})", "upgrade wfexec")
            for number in range(version + 1, SCHEMA_VERSION + 1):
                # executescript would commit on its own; statements one by one stay in this transaction.
                statement = ""
                for piece in MIGRATIONS[number].split(";"):
                    statement += piece + ";"
                    if sqlite3.complete_statement(statement):  # not a `;` inside a trigger's body
                        if statement.strip(" \n;"):
                            db.execute(statement)
                        statement = ""
            db.execute("INSERT OR REPLACE INTO wfexec_meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            db.execute("INSERT OR REPLACE INTO wfexec_meta VALUES ('app', ?)", (APP_ID,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    @staticmethod
    def _schema_current(db: sqlite3.Connection) -> bool:
        try:
            row = db.execute("SELECT value FROM wfexec_meta WHERE key='schema_version'").fetchone()
        except sqlite3.OperationalError:  # a new store: no table yet
            return False
        return row is not None and row[0] == str(SCHEMA_VERSION)

    def close(self) -> None:
        self.db.close()

    def _key_range(self, run_id: str) -> tuple[int, int]:
        """The first and last key a journal row of the run can have."""
        base = self._key_bases.get(run_id)
        if base is None:
            row = self.db.execute("SELECT number FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                raise StoreError(f"no run '{run_id}' in {self.path}", "`wfexec runs` lists them")
            base = self._key_bases[run_id] = row[0] << STEP_BITS
        return base, base | LAST_STEP

    # -- runs ---------------------------------------------------------------
    def create_run(self, *, workflow_path: str, workflow_name: str, workflow_hash: str, node_hashes: dict,
                   inputs: dict, state: dict, start_node: str, answers: dict | None = None) -> str:
        """A new run, `running`, at `start_node`; `answers`: the answers given up front (`Answers.to_dict`), kept
        until questions take them, so a run stopped or killed before its questions still has them."""
        now = time.time()
        with self.transaction():
            for _attempt in range(8):
                run_id = new_run_id()
                if self.db.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
                    break
            # Numbers are never reused: in the transaction, so two processes cannot take the same one.
            number = self.db.execute("SELECT coalesce(max(number), 0) + 1 FROM runs").fetchone()[0]
            self.db.execute(
                "INSERT INTO runs (id, workflow_path, workflow_name, workflow_hash, node_hashes, status, current_node,"
                " inputs, created_at, updated_at, lease, number, answers) VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?,"
                " ?, ?, ?)",
                (run_id, workflow_path, workflow_name, workflow_hash, _dumps(node_hashes), start_node,
                 _dumps(inputs), now, now, lease_holder(), number, _answers_text(answers)))
            self.db.execute("INSERT INTO snapshots VALUES (?, 0, ?)", (run_id, _dumps(state)))
        self._key_bases[run_id] = number << STEP_BITS
        return run_id

    def get(self, run_id: str) -> RunRecord:
        """The run with this id, or the one run whose id starts with it (at least MIN_PREFIX characters, taken
        literally: `%` and `_` are characters, not wildcards). The one lookup of every door (CLI, API, MCP)."""
        refuse_empty_run_id(run_id)
        row = self.db.execute(f"{_SELECT_RUNS} WHERE runs.id = ?", (run_id,)).fetchone()
        if row is not None:
            return RunRecord.from_row(row)
        if len(run_id) < MIN_PREFIX:
            raise StoreError(f"no run '{run_id}' in {self.path}",
                             f"give the run's whole id, or at least {MIN_PREFIX} of its first characters "
                             "(`wfexec runs` lists them)")
        pattern = run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        # LIKE folds ASCII case: the substr comparison keeps the prefix exact as typed.
        ids = [r[0] for r in self.db.execute("SELECT id FROM runs WHERE id LIKE ? ESCAPE '\\' AND substr(id, 1, ?) = ? "
                                             "ORDER BY id DESC LIMIT ?",
                                             (pattern, len(run_id), run_id, AMBIGUOUS_SHOWN + 1))]
        if not ids:
            raise StoreError(f"no run '{run_id}' in {self.path}", "`wfexec runs` lists them")
        if len(ids) > 1:
            more = ", …" if len(ids) > AMBIGUOUS_SHOWN else ""
            raise StoreError(f"'{run_id}' is the start of several runs' ids: {', '.join(ids[:AMBIGUOUS_SHOWN])}{more}",
                             "give more characters of the id")
        return RunRecord.from_row(self.db.execute(f"{_SELECT_RUNS} WHERE runs.id = ?", (ids[0],)).fetchone())

    def count(self, status: str | None = None) -> int:
        if status == "interrupted":  # stored as running: each one's process must be looked at
            return len(self.list("interrupted", -1))
        if status:
            return self.db.execute("SELECT count(*) FROM runs WHERE status = ?", (status,)).fetchone()[0]
        return self.db.execute("SELECT count(*) FROM runs").fetchone()[0]

    def list(self, status: str | None = None, limit: int = 50, before: str | None = None, *,
             workflow: str | None = None, text: str | None = None) -> list[RunRecord]:
        """The newest `limit` runs (-1: all), only those older than the run `before` when given (ids sort by
        creation time: a page that stays put while new runs arrive); only those of the workflow named `workflow`,
        and those where `text` appears (case aside) in the id, the workflow's name or path, the current node, the
        ending, the last error or the question, when given."""
        if status == "interrupted":  # stored as running; its process is gone
            return [r for r in self.list("running", -1, before, workflow=workflow, text=text)
                    if r.shown_status == "interrupted"][:limit if limit >= 0 else None]
        where, values = [], []
        if status:
            where.append("runs.status = ?")
            values.append(status)
        if before:
            where.append("runs.id < ?")
            values.append(before)
        if workflow:
            where.append("runs.workflow_name = ?")
            values.append(workflow)
        if text:
            pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            columns = ("runs.id", "runs.workflow_name", "runs.workflow_path", "runs.current_node", "runs.ending",
                       "runs.last_error", "runs.pending_question")
            where.append("(" + " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in columns) + ")")
            values += [pattern] * len(columns)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self.db.execute(f"{_SELECT_RUNS}{clause} ORDER BY runs.id DESC LIMIT ?", (*values, limit))
        return [RunRecord.from_row(r) for r in rows]

    def workflow_names(self) -> builtins.list[str]:
        """The names of the workflows the store has runs of, sorted."""
        return [r[0] for r in self.db.execute("SELECT DISTINCT workflow_name FROM runs ORDER BY workflow_name")]

    def data_version(self) -> int:
        """A number that moves whenever another connection commits to the store (SQLite's `data_version`): a
        watcher that sees it unchanged knows nothing happened without reading a row."""
        return self.db.execute("PRAGMA data_version").fetchone()[0]

    def changed_since(self, after: float) -> builtins.list[RunRecord]:
        """The runs whose row or journal changed after `after` (a `time.time()`), oldest change first: what a
        watcher that saw every change up to `after` has missed. A going run's journal moves without its row, so
        the last journal row of each run marked running is looked at too (one index lookup each)."""
        ids = {r[0] for r in self.db.execute("SELECT id FROM runs WHERE updated_at > ?", (after,))}
        ids.update(r[0] for r in self.db.execute(
            f"SELECT runs.id FROM runs JOIN journal j ON {_LAST_ROW} WHERE runs.status = 'running' AND "
            "j.committed_at > ?", (after,)))
        records: builtins.list[RunRecord] = []
        listed = sorted(ids)
        for start in range(0, len(listed), 500):  # SQLite's limit on bound values
            chunk = listed[start:start + 500]
            rows = self.db.execute(f"{_SELECT_RUNS} WHERE runs.id IN ({', '.join('?' * len(chunk))})", chunk)
            records += [RunRecord.from_row(r) for r in rows]
        return sorted((r for r in records if r.updated_at > after), key=lambda r: (r.updated_at, r.id))

    def driven_by(self, lease: str) -> RunRecord | None:
        """The run this process (`pid@host`, as `lease_holder` says) is driving now, if any."""
        row = self.db.execute(f"{_SELECT_RUNS} WHERE runs.lease = ? ORDER BY runs.id DESC LIMIT 1",
                              (lease,)).fetchone()
        return RunRecord.from_row(row) if row is not None else None

    def acquire(self, run_id: str, take_over: bool = False) -> None:
        """Become the process driving this run, unless a live process already is. `take_over`: also when the
        lease names a process on another machine, which cannot be checked from here (the person says it is gone)."""
        me = lease_holder()
        with self.transaction():
            record = self.get(run_id)
            if record.lease and record.lease != me and lease_alive(record.lease):
                elsewhere = _lease_parts(record.lease)[1] != _hostname()
                if not (take_over and elsewhere):
                    raise StoreError(f"run {record.id} is being driven by process {record.lease}",
                                     "that machine's process cannot be checked from here: once it is surely gone "
                                     "(a container that was replaced), say so with --take-over" if elsewhere else
                                     "wait for it to stop, or stop it first")
            self.db.execute("UPDATE runs SET lease = ? WHERE id = ?", (me, record.id))

    def release(self, run_id: str) -> None:
        try:
            self.db.execute("UPDATE runs SET lease = NULL WHERE id = ? AND lease = ?", (run_id, lease_holder()))
        except sqlite3.OperationalError:  # a full disk: a lease whose process is gone is stale all the same
            pass

    def transaction(self):
        return _Transaction(self.db, self.path)

    # -- steps --------------------------------------------------------------
    def _write(self, sql: str, values: Sequence[Any]) -> None:
        """One statement, committed on its own (SQLite makes a single statement a transaction): a third of the
        calls of BEGIN … COMMIT around it."""
        with self._lock:
            try:
                self._writer.execute(sql, values)
            except sqlite3.OperationalError as exc:
                self._write_failed(exc)

    def _write_failed(self, exc: sqlite3.OperationalError) -> NoReturn:
        if self.db.in_transaction:  # a transaction around the write is open: that transaction reports it
            raise exc
        raise _Transaction(self.db, self.path).write_error(exc) from None

    def mark_in_flight(self, run_id: str, step: int, node: str, started_at: float | None = None) -> None:
        """Record that a step with outside effects is starting (committed before it starts)."""
        started_at = time.time() if started_at is None else started_at
        self._write("UPDATE runs SET in_flight = ?, current_node = ?, updated_at = ? WHERE id = ?",
                    (_dumps({"step": step, "node": node, "started_at": started_at}), node, time.time(), run_id))

    def append_steps(self, run_id: str, steps: Sequence[Sequence[Any]], current_node: str) -> int:
        """Journal steps and nothing else (most commits): one statement, committed on its own. Returns the bytes
        of the row. What `_journal_row` and `_write` do, written out here: this is every durable step's commit,
        and their two calls were a tenth of its Python."""
        last = steps[-1][0]
        base = self._key_bases.get(run_id)
        if base is None or last > LAST_STEP:
            base = self._key_base(run_id, last)
        text = _encode_steps(steps)
        with self._lock:
            try:
                self._writer.execute(_APPEND_STEPS, (base | steps[0][0], last, text, current_node, time.time()))
            except sqlite3.OperationalError as exc:
                self._write_failed(exc)
        return len(text)

    def _journal_row(self, run_id: str, steps: Sequence[Sequence[Any]], current_node: str) -> tuple:
        """The values of the journal row holding `steps` (_APPEND_STEPS)."""
        last = steps[-1][0]
        return (self._key_base(run_id, last) | steps[0][0], last, _encode_steps(steps), current_node,
                time.time())

    def _key_base(self, run_id: str, last: int) -> int:
        """The first key of the run's journal rows, for a row whose last step is `last` (refused past what a key
        holds)."""
        if last > LAST_STEP:
            raise StoreWriteError(f"run {run_id} reached step {last:,}; a run's journal holds at most "
                                  f"{LAST_STEP:,} steps", "start a new run, or lower --max-steps")
        base = self._key_bases.get(run_id)
        return self._key_range(run_id)[0] if base is None else base

    def commit_steps(self, run_id: str, steps: Sequence[Sequence[Any]], current_node: str, *,
                     snapshot: dict | None = None, cleared_nodes: Sequence[str] = (),
                     answers: dict | None = None) -> tuple[int, int]:
        """Journal steps (the run's step count and current node follow), with a full snapshot of the state
        after them when given, and clear the saved state of `cleared_nodes` (nodes those steps finished): all
        in one transaction, with the answers still untaken when given (a step took one). Returns the bytes
        written: of the journal row, and of the snapshot (0: none)."""
        if snapshot is None and not cleared_nodes and answers is None:
            return self.append_steps(run_id, steps, current_node), 0
        values = self._journal_row(run_id, steps, current_node)
        state = _dumps(snapshot) if snapshot is not None else ""
        with self._lock, self.transaction():
            for node in cleared_nodes:
                self._clear_node_state(run_id, node)
            self.db.execute(_APPEND_STEPS, values)
            if snapshot is not None:
                self.db.execute("UPDATE snapshots SET step = ?, state = ? WHERE run_id = ?",
                                (steps[-1][0], state, run_id))
            if answers is not None:
                self.db.execute("UPDATE runs SET answers = ? WHERE id = ?", (_answers_text(answers), run_id))
        return len(values[2]), len(state)

    def set_status(self, run_id: str, status: str, **fields) -> None:
        assert status in STATUSES, status
        columns = {"status": status, "updated_at": time.time(), **fields}
        if status in FINISHED or status == "stopped":
            columns.setdefault("finished_at", time.time())
        if "answers" in columns:
            columns["answers"] = _answers_text(columns["answers"])
        for key in ("pending_question", "result", "in_flight"):
            if key in columns and columns[key] is not None and not isinstance(columns[key], str):
                columns[key] = _dumps(columns[key])
        assignments = ", ".join(f"{k} = ?" for k in columns)
        # The row catches up with the journal at each change of status, for whoever reads it alone.
        self._write(f"UPDATE runs SET {assignments}, steps = coalesce((SELECT last_step FROM journal "
                    "WHERE key BETWEEN ? AND ? ORDER BY key DESC LIMIT 1), steps) WHERE id = ?",
                    (*columns.values(), *self._key_range(run_id), run_id))

    def save_node_state(self, run_id: str, node: str, data: dict | None) -> None:
        """What a long-running node (a `states` node's agents) needs to continue after a crash, whole (replacing
        the changes saved before it); None clears it."""
        with self._lock, self.transaction():
            self._clear_node_state(run_id, node)
            if data is not None:
                text = _dumps(data)
                self.db.execute("INSERT INTO node_states VALUES (?, ?, ?)", (run_id, node, text))
                self._node_sizes[(run_id, node)] = [len(text), 0]

    def change_node_state(self, run_id: str, node: str, change: dict, whole: Callable[[], dict]) -> None:
        """One change to a node's saved state (see `merge_change`), committed on its own: a row of its own, so
        that it costs what changed, not what the node holds. Once the changes since the last whole copy outweigh
        it (and SNAPSHOT_MIN_BYTES), or when there is none, `whole()` is saved instead and replaces them: saving
        stays linear, and reading the state back merges at most about a copy's worth of changes."""
        key = (run_id, node)
        with self._lock:
            sizes = self._node_sizes.get(key)
            if sizes is None:
                sizes = self._node_sizes[key] = self._saved_node_sizes(run_id, node)
            text = _dumps(change)
            if sizes[0] == 0 or sizes[1] + len(text) > max(NODE_CHANGES_MIN_BYTES, sizes[0]):
                self.save_node_state(run_id, node, whole())
                return
            self._write("INSERT INTO node_state_changes SELECT ?, ?, coalesce(max(seq), 0) + 1, ? FROM "
                        "node_state_changes WHERE run_id = ? AND node = ?", (run_id, node, text, run_id, node))
            sizes[1] += len(text)

    def _saved_node_sizes(self, run_id: str, node: str) -> builtins.list[int]:
        """[bytes of the node's whole saved copy (0: none), bytes of the changes saved since]."""
        row = self.db.execute("SELECT length(data) FROM node_states WHERE run_id = ? AND node = ?",
                              (run_id, node)).fetchone()
        since = self.db.execute("SELECT coalesce(sum(length(change)), 0) FROM node_state_changes WHERE run_id = ? "
                                "AND node = ?", (run_id, node)).fetchone()[0]
        return [row[0] if row else 0, since]

    def _clear_node_state(self, run_id: str, node: str) -> None:
        self.db.execute("DELETE FROM node_states WHERE run_id = ? AND node = ?", (run_id, node))
        self.db.execute("DELETE FROM node_state_changes WHERE run_id = ? AND node = ?", (run_id, node))
        self._node_sizes.pop((run_id, node), None)

    def add_transcript(self, run_id: str, node: str, agent: str, record: dict) -> None:
        """One agent state's record (what was sent and received), after the run's others."""
        self._write("INSERT INTO transcripts SELECT ?, coalesce(max(seq), 0) + 1, ?, ?, ? FROM transcripts "
                    "WHERE run_id = ?", (run_id, node, agent, _dumps(record), run_id))

    # -- output of commands and scripts (wfexec.durable.outputs) ----------------
    def keep_output(self, run_id: str, step: int, node: str, start: int, written: int, text: bytes) -> None:
        """What step `step` wrote so far: `written` bytes in all, from byte `start` of the run's output on, of
        which `text` are the last (the rest was not kept)."""
        self._write("INSERT OR REPLACE INTO outputs VALUES (?, ?, ?, ?, ?, ?)",
                    (run_id, step, node, start, written, text))

    def output_rows(self, run_id: str, after: int = 0, step: int | None = None) -> builtins.list[tuple]:
        """(step, node, start, written, text) of each step whose output goes on past byte `after` of the run's
        output (only step `step`'s, when given), in order."""
        if self.schema < 6:  # an older store, read as it is: it kept none
            return []
        if step is not None:
            return self.db.execute("SELECT step, node, start, written, text FROM outputs WHERE run_id = ? AND "
                                   "step = ?", (run_id, step)).fetchall()
        return self.db.execute("SELECT step, node, start, written, text FROM outputs WHERE run_id = ? AND "
                               "start + written > ? ORDER BY step", (run_id, after)).fetchall()

    def output_size(self, run_id: str) -> int:
        """Bytes the run's commands and scripts wrote in all (kept or not)."""
        if self.schema < 6:
            return 0
        row = self.db.execute("SELECT start + written FROM outputs WHERE run_id = ? ORDER BY step DESC LIMIT 1",
                              (run_id,)).fetchone()
        return row[0] if row else 0

    def transcript(self, run_id: str, agent: str | None = None) -> builtins.list[dict]:
        """The run's agent records in order (only `agent`'s when given), each with its node and agent."""
        if self.schema < 4:  # an older store, read as it is: it kept none
            return []
        rows = self.db.execute("SELECT node, agent, record FROM transcripts WHERE run_id = ?" +
                               (" AND agent = ?" if agent else "") + " ORDER BY seq",
                               (run_id, agent) if agent else (run_id,))
        return [{"node": node, "agent": who, **json.loads(record)} for node, who, record in rows]

    def node_state(self, run_id: str, node: str) -> dict | None:
        """The node's saved state: its last whole copy with the changes since merged in, in order."""
        row = self.db.execute("SELECT data FROM node_states WHERE run_id = ? AND node = ?", (run_id, node)).fetchone()
        if row is None:
            return None
        data = json.loads(row[0])
        if self.schema >= 5:
            for (change,) in self.db.execute("SELECT change FROM node_state_changes WHERE run_id = ? AND node = ? "
                                             "ORDER BY seq", (run_id, node)):
                merge_change(data, json.loads(change))
        return data

    def replay(self, run_id: str) -> "Replayed":
        """The run's state after its last commit: the latest snapshot, with the journal rows after it replayed."""
        from wfexec.durable.changes import replay

        step, text = self.db.execute("SELECT step, state FROM snapshots WHERE run_id = ?", (run_id,)).fetchone()
        state = json.loads(text)
        replayed = 0
        first, last = self._key_range(run_id)
        for last_step, steps in self.db.execute("SELECT last_step, steps FROM journal WHERE key BETWEEN ? AND ? "
                                                "ORDER BY key", (first + step + 1, last)):
            replayed += len(steps)
            for row in json.loads(steps):
                replay(state, *row[6:7], *row[8:10])
            step = last_step
        return Replayed(step, state, len(text), replayed)

    def snapshot(self, run_id: str) -> tuple[int, dict]:
        """(steps done, state) after the run's last commit."""
        replayed = self.replay(run_id)
        return replayed.step, replayed.state

    def journal_tail(self, run_id: str, count: int) -> builtins.list[dict]:
        """The last `count` steps of the journal (at most), oldest first, without reading the rest."""
        tail: builtins.list[dict] = []
        rows = self.db.execute("SELECT steps FROM journal WHERE key BETWEEN ? AND ? ORDER BY key DESC",
                               self._key_range(run_id))
        for row in rows:
            tail[:0] = [_journal_entry(step) for step in json.loads(row[0])]
            if len(tail) >= count:
                break
        return tail[-count:] if count else []

    def journal_since(self, run_id: str, step: int) -> builtins.list[dict]:
        """The journal's steps after `step`, oldest first, reading only the rows that hold them (what a watcher
        that saw up to `step` has missed)."""
        rows = self.db.execute("SELECT steps FROM journal WHERE key BETWEEN ? AND ? AND last_step > ? ORDER BY key",
                               (*self._key_range(run_id), step))
        return [_journal_entry(s) for row in rows for s in json.loads(row[0]) if s[0] > step]

    def journal_nodes(self, run_id: str) -> set[str]:
        """Every node that completed a step, read a batch at a time."""
        nodes: set[str] = set()
        for row in self.db.execute("SELECT steps FROM journal WHERE key BETWEEN ? AND ?", self._key_range(run_id)):
            nodes.update(step[1] for step in json.loads(row[0]))
        return nodes

    def journal(self, run_id: str) -> builtins.list[dict]:  # builtins: `list` here is Store.list
        rows = self.db.execute("SELECT steps FROM journal WHERE key BETWEEN ? AND ? ORDER BY key",
                               self._key_range(run_id))
        return [_journal_entry(step) for row in rows for step in json.loads(row[0])]


def _read_older_journal(db: sqlite3.Connection, version: int) -> None:
    """An older store, read as it is (a command that only reads writes nothing, not even an upgrade): views in
    the connection's own temp schema, which SQLite looks in before the file's, show its runs numbered and its
    journal keyed as schema 7 has them."""
    db.execute("CREATE TEMP VIEW runs AS SELECT *, rowid AS number FROM main.runs")
    progress = "j.current_node, j.committed_at" if version >= 3 else "NULL, NULL"  # schema 2 had neither
    db.execute(f"CREATE TEMP VIEW journal (key, last_step, steps, current_node, committed_at) AS SELECT "
               f"(r.rowid << {STEP_BITS}) | j.first_step, j.last_step, j.steps, {progress} FROM main.journal j "
               "JOIN main.runs r ON r.id = j.run_id")


def merge_change(data: dict, change: dict) -> None:
    """Merge a change to a node's saved state into it, key by key one level deep: a mapping in the change
    updates the saved mapping under its key (entries given replace or join those saved, in order); any other
    value replaces the saved one."""
    for key, value in change.items():
        saved = data.get(key)
        if isinstance(value, dict) and isinstance(saved, dict):
            saved.update(value)
        else:
            data[key] = value


_ENTRY_KEYS = ("step", "node", "type", "outcome", "target", "at", "changes")


def _journal_entry(step: list) -> dict:
    """A journal step as `show` and the API give it: `appended` and `removed` only when it has them."""
    entry = {**dict(zip(_ENTRY_KEYS, step)), "duration_ms": step[7] / 1000}
    if len(step) > 8:
        if step[8]:
            entry["appended"] = step[8]
        if step[9]:
            entry["removed"] = step[9]
    return entry


@dataclass
class Replayed:
    """A run's state rebuilt from its store: the steps it covers, and the bytes of snapshot and of journal
    rows it took (what the next snapshot is weighed against)."""

    step: int
    state: dict
    snapshot_bytes: int
    replayed_bytes: int


class _Transaction:
    """BEGIN IMMEDIATE … COMMIT, nesting-safe (an inner one joins the outer).

    A failed write (SQLITE_FULL, SQLITE_IOERR) may already have rolled the transaction back inside SQLite:
    ROLLBACK is only issued while one is open, so the store stays usable, and the failure is reported as a
    StoreWriteError rather than SQLite's words alone."""

    def __init__(self, db: sqlite3.Connection, path: Path):
        self.db = db
        self.path = path
        self.outer = False

    def __enter__(self):
        if not self.db.in_transaction:
            try:
                self.db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise self.write_error(exc) from None
            self.outer = True
        return self.db

    def __exit__(self, kind, value, traceback):
        if not self.outer:
            return False
        if kind is None:
            try:
                self.db.execute("COMMIT")
                return False
            except sqlite3.OperationalError as exc:
                value = exc
        if self.db.in_transaction:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:  # already rolled back by SQLite: nothing of the transaction is in the file
                pass
        if isinstance(value, sqlite3.OperationalError):
            raise self.write_error(value) from None
        return False

    def write_error(self, exc: sqlite3.OperationalError) -> StoreWriteError:
        """What failed, in the person's terms: SQLite's own name for the error says which of the causes it was."""
        name = getattr(exc, "sqlite_errorname", "") or ""
        stopped = "a run that had started stopped after its last commit"
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
            return StoreWriteError(f"the run store {self.path} is locked by another process ({exc}); {stopped}",
                                   "wait until the other process lets go of it (a long transaction, a copy, a "
                                   "backup), then try again; `wfexec resume` continues a run that had started")
        if name.startswith(("SQLITE_READONLY", "SQLITE_PERM", "SQLITE_CANTOPEN", "SQLITE_AUTH")):
            return StoreWriteError(f"the run store {self.path} cannot be written: it is read-only to this user "
                                   f"({exc}); {stopped}",
                                   "make the store, its -wal and -shm files and its folder writable, or name "
                                   "another store with --store")
        return StoreWriteError(f"the run store {self.path} could not be written ({exc}); {stopped}",
                               "make room on the disk (or raise the file-size limit, `ulimit -f`), then continue "
                               "with `wfexec resume`")

def open_store(path: str | os.PathLike | None = None, *, readonly: bool = False,
               durability: str | None = None) -> Store:
    """The store at store_location(path); created when missing, unless `readonly`. Its commits are as durable as
    `durability` says (durability_setting). Only what starts runs may create one: see store_of_run."""
    return Store(store_location(path), readonly=readonly, durability=durability)


def store_of_run(path: str | os.PathLike | None, run_id: str, *, readonly: bool = True,
                 durability: str | None = None) -> Store:
    """The store that should hold run `run_id`, which must exist: a command about one run (resume, cancel, show)
    never makes a store, so a mistyped `--store` is said as such rather than becoming a new, empty store."""
    location = store_location(path)
    if not location.exists():
        raise no_store_error(location, f"no run '{run_id}': ")
    return Store(location, readonly=readonly, durability=durability)


def store_to_list(path: str | os.PathLike | None) -> Store | None:
    """The store whose runs a listing reads (read-only): None where no run was made yet, the default store not
    being there (no runs); a store named by `path` or $WFEXEC_STORE that is not there is a mistyped name or the
    wrong folder, refused as such (StoreError)."""
    location = store_location(path)
    if location.exists():
        return Store(location, readonly=True)
    if path is not None or os.environ.get("WFEXEC_STORE"):
        raise no_store_error(location)
    return None


def no_store_error(location: Path, lead: str = "") -> StoreError:
    return StoreError(f"{lead}there is no run store at {location}",
                      "run a workflow first, or point --store (or $WFEXEC_STORE) at the store that has it")


def ending_status(ending_type: str) -> str:
    """A run's status once it reached an ending: the one rule `runs`, `show` and `run --format json` share."""
    return "completed" if ending_type == "success" else "failed"
