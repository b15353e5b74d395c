"""Where the run store is, and the rule that keeps it out of a workflow's reach.

The store (default `.wfexec/runs.db`, `--store FILE` or $WFEXEC_STORE to choose
another) belongs to wfexec: a workflow that wrote, moved or deleted it, its
companions (SQLite's `-wal`, `-shm`, `-journal`, `-states/`, the workflows
`wfexec states` writes, and `-serve/`, the logs of the runs `wfexec serve` starts) or anything in `.wfexec/` would leave every later
command with "not a wfexec run store" or a run that cannot resume.
`store_conflict` says whether a path a file consequence is about to change is one of those; every
file consequence asks it through `wfexec.system.files.guarded_path`.
"""

from __future__ import annotations

import os
from pathlib import Path

STORE_FOLDER = ".wfexec"
DEFAULT_STORE = Path(STORE_FOLDER) / "runs.db"


def store_location(path: str | os.PathLike | None = None) -> Path:
    """Where the store is: `path`, else $WFEXEC_STORE, else .wfexec/runs.db under the current directory."""
    return Path(path or os.environ.get("WFEXEC_STORE") or DEFAULT_STORE).expanduser()


def states_workflows_folder(store: str | os.PathLike | None = None) -> Path:
    """Where `wfexec states FOLDER` (and `wfexec run FOLDER`) writes the one-node workflow it runs: beside the
    store, named after it as SQLite names its companions (`.wfexec/runs.db-states/`), so a store the user put in
    a folder of their own never has wfexec write into a folder of theirs (a `states/` beside `./runs.db` may
    well be one)."""
    store = store_location(store)
    return store.with_name(store.name + "-states")


def serve_logs_folder(store: str | os.PathLike | None = None) -> Path:
    """Where `wfexec serve` keeps what the processes of the runs it starts say (`.wfexec/runs.db-serve/`): beside
    the store, as its `-states` folder is, so a server started again, or another one on the same store, finds
    them, and none of them piles up in the system's temporary folder."""
    store = store_location(store)
    return store.with_name(store.name + "-serve")


def _fold(path: str) -> str:
    """A path compared without regard to case: on a case-insensitive file system `.WFEXEC/RUNS.DB` is the store,
    and whether one is cannot be known before the file exists, so case variants are refused everywhere."""
    return os.path.normcase(path).casefold()


def _spellings(path: str | os.PathLike) -> set[str]:
    """The absolute path as given and with its symbolic links resolved (both name it)."""
    given = os.path.abspath(os.path.expanduser(os.fspath(path)))
    return {given, os.path.realpath(given)}


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def protected(cwd: str | os.PathLike, store: str | os.PathLike | None = None) -> tuple[set[str], set[str]]:
    """(store files, folders) a workflow may not change: the run's store and the one $WFEXEC_STORE or the default
    names, and `.wfexec/` in the run's working directory and in the current one, existing or not (a store planted
    there before the first durable run would be as broken), and the folder of any store kept in a `.wfexec`."""
    stores: set[str] = set()
    for location in {os.fspath(store_location(store)), os.fspath(store_location())}:
        stores |= _spellings(location)
    folders: set[str] = set()
    for base in {os.fspath(cwd), os.getcwd()}:
        folders |= _spellings(os.path.join(base, STORE_FOLDER))
    for location in list(stores):
        parent = os.path.dirname(location)
        if os.path.basename(parent).casefold() == STORE_FOLDER:
            folders |= _spellings(parent)
    return stores, folders


def store_conflict(real: str | os.PathLike, cwd: str | os.PathLike,
                   store: str | os.PathLike | None = None) -> str | None:
    """Why changing the file at `real` (an absolute path, symbolic links resolved) would touch the run store, in
    words for an error message; None when it would not."""
    real = os.fspath(real)
    folded = _fold(real)
    stores, folders = protected(cwd, store)
    for location in sorted(stores):
        name = _fold(os.path.basename(location))
        # -wal, -shm, -journal beside it, or anything in its -states folder
        home = _fold(os.path.dirname(location)).rstrip(os.sep)
        beside = folded[len(home) + 1:] if folded.startswith(home + os.sep) else ""
        companion = beside.split(os.sep, 1)[0].startswith(name + "-")
        if folded == _fold(location) or companion or _same_file(real, location):
            return f"is {'a file of ' if companion else ''}wfexec's run store ({location})"
    for folder in sorted(folders):
        if _under(folded, _fold(folder)):
            return f"is in {folder}, the folder of wfexec's run store"
    return None


def _same_file(a: str, b: str) -> bool:
    """The same file by another name (a hard link, a case variant on a case-insensitive file system)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
