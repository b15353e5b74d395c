"""The compiled-workflow cache: a workflow that loaded without errors is kept, compiled, in the user's cache
(`wfexec.system.cache`), so the next command on the unchanged workflow skips reading YAML, the schema, the
checks and the JavaScript engine's syntax checks.

Why reusing it is safe:
- The entry's key holds everything the result depends on besides the files: the wfexec version and the
  modification times of its own modules (an edited checkout), the installed packages (plugins bring types), the
  working directory (diagnostics name files relative to it), `$CLAUDE_PLUGIN_ROOT`, the path as given and the
  SHA-256 of the workflow file.
- The entry lists every other place the compile looked for a file (imports, sub-workflows, documents, states
  folders, found or not) with a digest of what was there; one differing digest, a file now present that was
  absent or the reverse, and the entry is not used. A folder's digest covers the names and contents of its files.
- Only results without errors are kept: a workflow with errors is checked afresh each time.
- The compiled objects are pickled by reference to the node types and registry types they use (looked up again
  when read) and expressions keep only text (their JavaScript function is bound on first use), so nothing of
  the previous process's engine or plugins is carried over. A stale or corrupt entry is a miss, never trusted.
"""

from __future__ import annotations

import os
# `pickle` is this C module with a Python fallback around it, ~2.5 ms of CPU to import on every start that loads a
# cached workflow; its dumps and loads are these.
import _pickle as pickle
from pathlib import Path

from wfexec.language.gc_pause import collector_paused
from wfexec.system import cache
from wfexec.version import __version__
from wfexec.system.digest import sha256

HIGHEST_PROTOCOL = -1  # pickle's way of saying its highest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_KIND = "workflows"


_stamp: list[str] = []  # once per process: the code that runs is the code this process loaded


def own_code_stamp() -> str:
    """Changes with the wfexec version and with any edit to its own files (a checkout being worked on). An
    install in a `site-packages` folder changes only by being installed again, which renames its `.dist-info`
    folder and so changes the installed fingerprint: its files are not looked at one by one (a few hundred
    `stat` calls at every start)."""
    if _stamp:
        return _stamp[0]
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    if os.path.basename(os.path.dirname(package)) in ("site-packages", "dist-packages"):
        _stamp.append(f"{__version__}\0installed")
        return _stamp[0]
    newest = 0
    for folder, _dirs, files in os.walk(package):
        for name in files:
            if name.endswith((".py", ".js", ".json")):
                try:
                    newest = max(newest, os.stat(os.path.join(folder, name)).st_mtime_ns)
                except OSError:
                    pass
    _stamp.append(f"{__version__}\0{newest}")
    return _stamp[0]


def cache_key(kind: str, *parts: str) -> bytes:
    """A key in the user's cache for something this wfexec made of `parts`: also what it depends on besides them
    (wfexec's own code, the installed packages that may add types, the working directory)."""
    from wfexec.system.plugins import installed_fingerprint

    return "\0".join([kind, own_code_stamp(), installed_fingerprint(), os.getcwd(), *parts]).encode()


def _key(path: Path, content: bytes) -> bytes:
    return cache_key("workflow 1", os.environ.get("CLAUDE_PLUGIN_ROOT", ""), str(path), _content_digest(content))


# The last workflow's bytes and their digest, as one tuple: threads swap it whole.
_last_digest: list[tuple[bytes, str]] = [(b"", "")]


def _content_digest(content: bytes) -> str:
    """The SHA-256 of a workflow file's bytes, the last one remembered: a miss digests the file to look for its
    entry, then again to keep it (comparing the bytes costs a fraction of hashing them)."""
    last_content, digest = _last_digest[0]
    if not digest or content != last_content:
        digest = sha256(content).hexdigest()
        _last_digest[0] = (content, digest)
    return digest


def digest(place: str | os.PathLike) -> str:
    """What is at `place` now: a file's SHA-256, a folder's files (names and contents), or "missing"."""
    try:
        if os.path.isdir(place):
            return _folder_digest(os.fspath(place))
        return sha256(_read(place)).hexdigest()
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except (OSError, ValueError):
        return "unreadable"


def _folder_digest(folder: str) -> str:
    """The files under `folder` as `Path(folder).rglob("*")` finds them (symbolic links to files followed, to
    folders not), by their relative paths in `Path` order (part by part), each path and its content's SHA-256.
    Walked with `os.walk`: the glob compiled a pattern and made a Path of every file, at every start."""
    files = []
    for at, _folders, names in os.walk(folder):
        inside = os.path.relpath(at, folder)
        for name in names:
            if os.path.isfile(os.path.join(at, name)):
                files.append(name if inside == os.curdir else os.path.join(inside, name))
    whole = sha256(b"folder\0")
    for relative in sorted(files, key=lambda relative: relative.split(os.sep)):
        whole.update(relative.encode() + b"\0" + sha256(_read(os.path.join(folder, relative))).digest())
    return whole.hexdigest()


def _read(path: str | os.PathLike) -> bytes:
    with open(path, "rb") as file:
        return file.read()


def workflow_bytes(path: Path) -> bytes | None:
    """The workflow file's bytes, when it is a regular file of a size the loader reads (never a FIFO, a device
    or a huge file: the loader refuses those with a diagnostic)."""
    import stat

    from wfexec.language.limits import max_file_bytes

    try:
        status = os.stat(path)
        if not stat.S_ISREG(status.st_mode) or status.st_size > max_file_bytes():
            return None
        return path.read_bytes()
    except (OSError, ValueError):
        return None


# What this process read from the cache: a command that looks at its workflow twice (is it a workflow or a
# states folder? then check it) unpickles it once.
_this_process: dict = {}


def load(path: Path, memory: dict | None = None) -> Any | None:
    """The `Checked` result kept for the workflow file at `path`, when nothing it read has changed. What is read
    is kept in `memory` (by default this process's), unpickled, so the next load needs only the file digests and
    the workflow's expressions stay compiled (`wfexec mcp` keeps its own)."""
    if memory is None:
        memory = _this_process
    content = workflow_bytes(path)
    if content is None:
        return None
    key = _key(path, content)
    # Read once and dropped with pop: another thread (a worker's) may drop the same stale entry meanwhile.
    kept = memory.get(key)
    if kept is not None:
        looked, checked = kept
        if all(digest(place) == was for place, was in looked):
            return checked
        memory.pop(key, None)
    payload = cache.load(_KIND, key)
    if payload is None:
        return None
    try:
        looked, compiled = pickle.loads(payload)
        if any(digest(place) != was for place, was in looked):
            return None
        checked = pickle.loads(compiled)
    except Exception:  # noqa: BLE001 - an entry from another build or half a file: compile afresh
        return None
    memory[key] = (looked, checked)
    return checked


@collector_paused  # pickling makes a tuple for each compiled object: collections would walk the whole workflow
def keep(path: Path, content: bytes, checked: Any, looked: list[Path]) -> None:
    """Keep a `Checked` result without errors, compiled from `content`, with the places its compile looked at."""
    if cache.cache_dir() is None:
        return  # the cache is off: pickling the result would be thrown away
    try:
        if workflow_bytes(path) != content:
            return  # edited while it compiled: the result belongs to neither version
        compiled = pickle.dumps(checked, protocol=HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - unreadable now, or a plugin's object that cannot be pickled: no entry
        return
    places = sorted({str(place) for place in looked})
    payload = pickle.dumps(([(place, digest(place)) for place in places], compiled),
                           protocol=HIGHEST_PROTOCOL)
    cache.store(_KIND, _key(path, content), payload)


def places_looked(path: Path) -> list[Path] | None:
    """Every place the kept compile of the workflow at `path` looked at (imports, sub-workflows, documents, states
    folders, found or not), when its entry is still good; None when there is none (the cache is off, or the
    workflow or one of those places changed). A run on a Temporal cluster bundles the files found there."""
    content = workflow_bytes(path)
    if content is None:
        return None
    key = _key(path, content)
    if key not in _this_process and load(path) is None:
        return None
    kept = _this_process.get(key)
    return [Path(place) for place, _ in kept[0]] if kept is not None else None
