"""Zip scopes (reference §1.9): a flat archive, or one top-level folder of states.

Refused: absolute or Windows paths, `..`, symbolic links, deeper nesting,
several folders, files beside a folder, an empty archive, more than 64 MiB
unpacked. When the file name holds one run of 64 hex digits, it is the
archive's SHA-256 and must match.
"""

from __future__ import annotations

import re
import stat
import zipfile
from pathlib import Path, PurePosixPath

from wfexec.protocol.errors import ScopeError
from wfexec.protocol.scopes import ZipScope
from wfexec.system.digest import sha256

MAX_ZIP_BYTES = 64 * 1024 * 1024
_SHA_RUN = re.compile(r"[0-9a-fA-F]{64,}")


def open_zip(path: Path, label: str) -> ZipScope:
    _check_zip_hash(path, label)
    try:
        with zipfile.ZipFile(path) as archive:
            members = [m for m in archive.infolist() if not m.is_dir()]
            layout = _zip_layout(members, label)
            total = sum(m.file_size for m in members)
            if total > MAX_ZIP_BYTES:
                raise ScopeError(f"{label} unpacks to {total} bytes, more than a states archive may hold "
                                 f"({MAX_ZIP_BYTES})")
            files = {}
            for member in members:
                name = PurePosixPath(member.filename).name
                # Other files (a README, an image) may sit beside the states; only states are read as text.
                files[name] = archive.read(member).decode("utf-8", errors="replace")
    except zipfile.BadZipFile as exc:
        raise ScopeError(f"{label} is not a readable zip archive: {exc}") from None
    scope = ZipScope(f"{label}{layout}", path.resolve().parent, files)
    scope.location = path.resolve()
    return scope


def _check_zip_hash(path: Path, label: str) -> None:
    runs = _SHA_RUN.findall(path.name)
    if not runs:
        return
    if len(runs) > 1 or len(runs[0]) != 64:
        raise ScopeError(f"the name of {label} holds an ambiguous hash (a SHA-256 is exactly 64 hex digits, once)")
    digest = sha256(path.read_bytes()).hexdigest()
    if digest != runs[0].lower():
        raise ScopeError(f"{label} does not match the SHA-256 in its name (its content hashes to {digest})",
                         "the archive changed after it was named; get the published one again")


def _zip_layout(members: list, label: str) -> str:
    """Check member names; return the single top folder ('/name') or '' for a flat archive."""
    if not members:
        raise ScopeError(f"{label} is empty")
    tops = set()
    seen: set[str] = set()
    flat = nested = False
    for member in members:
        raw = member.filename
        if raw in seen:
            raise ScopeError(f"{label} holds '{raw}' twice", "an archive with duplicate entries is ambiguous: "
                             "rebuild it so that each file appears once")
        seen.add(raw)
        if raw.startswith("/") or "\\" in raw or re.match(r"^[A-Za-z]:", raw):
            raise ScopeError(f"{label} holds an absolute or Windows path '{raw}'", "a states archive holds plain files")
        parts = PurePosixPath(raw).parts
        if ".." in parts or "." in parts:
            raise ScopeError(f"{label} holds a path that leaves the archive: '{raw}'")
        if stat.S_ISLNK(member.external_attr >> 16):
            raise ScopeError(f"{label} holds a symbolic link '{raw}'", "a states archive holds plain files only")
        if len(parts) == 1:
            flat = True
        elif len(parts) == 2:
            nested = True
            tops.add(parts[0])
        else:
            raise ScopeError(f"{label} nests '{raw}' too deeply",
                             "put the states at the root, or in one top-level folder")
    if flat and nested:
        raise ScopeError(f"{label} mixes files at its root with a folder", "use one layout: flat, or one folder")
    if len(tops) > 1:
        raise ScopeError(f"{label} has several top-level folders ({', '.join(sorted(tops))})",
                         "keep the states in one folder")
    return f"/{tops.pop()}" if tops else ""
