"""A per-user cache of work that depends only on content. A stale or corrupt entry is a miss, never trusted.

An entry's file name is the SHA-256 of its key, and the key is everything the work read (the caller builds it:
file contents, the wfexec version, the installed plugins). So an entry is only ever found by the exact inputs it
was made from, and an edit anywhere gives another name. Each file also holds its key and a checksum of its
payload: a truncated, edited or foreign file reads as a miss. When the cache cannot be read or written (a
read-only home, a full disk) the work is simply done again.

Where: `$WFEXEC_CACHE_DIR`, else the platform's user cache folder as platformdirs names it (on Linux and other
XDG systems `$XDG_CACHE_HOME/wfexec`, else `~/.cache/wfexec`; `~/Library/Caches/wfexec` on macOS;
`%LOCALAPPDATA%\\wfexec\\Cache` on Windows). `WFEXEC_NO_CACHE=1` turns it off.
"""

from __future__ import annotations

import os
import sys
from wfexec.system.digest import sha256
from pathlib import Path

CACHE_VARIABLE = "WFEXEC_CACHE_DIR"
NO_CACHE_VARIABLE = "WFEXEC_NO_CACHE"
_MAGIC = b"wfexec-cache 1\n"
# Entries kept per kind: past it, a write removes the least recently used quarter (a hit marks an entry used).
MAX_ENTRIES = 256


def cache_dir() -> Path | None:
    """The cache folder, or None when the cache is off."""
    if os.environ.get(NO_CACHE_VARIABLE, "") not in ("", "0"):
        return None
    chosen = os.environ.get(CACHE_VARIABLE)
    if chosen:
        return Path(chosen)
    return platform_cache_dir()


def platform_cache_dir() -> Path:
    """platformdirs' user cache folder for wfexec. On an XDG system (Linux, the BSDs) its rule is written out
    here: the cache is read at the start of every `wfexec run`, and importing platformdirs costs about 11 ms
    (`python -X importtime`) of a start-up kept near the interpreter's own; tests/system/test_portable_helpers.py holds
    the two to the same answer."""
    if sys.platform not in ("darwin", "win32", "cygwin"):
        xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
        return Path(xdg) / "wfexec" if xdg else Path.home() / ".cache" / "wfexec"
    import platformdirs

    return Path(platformdirs.user_cache_dir("wfexec", appauthor=False))


def _entry(kind: str, key: bytes) -> tuple[Path, bytes] | None:
    folder = cache_dir()
    if folder is None:
        return None
    digest = sha256(key).hexdigest()
    return folder / kind / f"{digest}.bin", digest.encode()


def load(kind: str, key: bytes) -> bytes | None:
    """The payload stored under `key`, or None (absent, unreadable, or not intact)."""
    entry = _entry(kind, key)
    if entry is None:
        return None
    path, digest = entry
    try:
        data = path.read_bytes()
    except OSError:
        return None
    header_end = len(_MAGIC) + 2 * 65
    if not data.startswith(_MAGIC) or len(data) < header_end:
        return None
    key_line, sum_line = data[len(_MAGIC):len(_MAGIC) + 65], data[len(_MAGIC) + 65:header_end]
    payload = data[header_end:]
    if key_line != digest + b"\n" or sum_line != sha256(payload).hexdigest().encode() + b"\n":
        return None
    try:
        os.utime(path)  # used now: the last to be evicted
    except OSError:
        pass
    return payload


def store(kind: str, key: bytes, payload: bytes) -> None:
    """Keep `payload` under `key`; silently nothing when the cache is off or cannot be written."""
    import threading  # here, not at start-up: only a miss writes

    entry = _entry(kind, key)
    if entry is None:
        return
    path, digest = entry
    data = _MAGIC + digest + b"\n" + sha256(payload).hexdigest().encode() + b"\n" + payload
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written under a unique name, then renamed: a reader sees the old entry, the new one, or none. Unique to
        # the thread too: a worker's threads may keep the same entry at once, and one must not rename the file
        # another is still writing.
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        temporary.write_bytes(data)
        os.replace(temporary, path)
        _evict(path.parent)
    except OSError:
        try:
            temporary.unlink()
        except (OSError, UnboundLocalError):
            pass


def _evict(folder: Path) -> None:
    """Keep at most MAX_ENTRIES entries in `folder`, dropping the least recently used first."""
    entries = [entry for entry in os.scandir(folder) if entry.name.endswith(".bin")]
    if len(entries) <= MAX_ENTRIES:
        return
    entries.sort(key=lambda entry: entry.stat().st_mtime_ns)
    for entry in entries[:len(entries) - MAX_ENTRIES * 3 // 4]:
        try:
            os.unlink(entry.path)
        except OSError:  # another process removed it first
            pass

