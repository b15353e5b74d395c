"""States archives fetched from a URL (reference §1.9): `wfexec states https://host/path/NAME-<sha256>.zip`, or
such a URL between cross-workflow tags.

The file name must hold the archive's SHA-256 (64 lower-case hex digits, once): that is what makes the download
safe to run. It is fetched once into `.raymond/registry/<sha256>.zip` (`.raymond` as `ray` finds it) and checked
there: the hash again, then everything a local zip is checked for (layout, size). A download larger than a
states archive may unpack to (wfexec.protocol.archives.MAX_ZIP_BYTES) is refused before it is all read.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

from wfexec.protocol.errors import ScopeError
from wfexec.system.patterns import lazy

_HASH = lazy(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")
TIMEOUT = 60.0


_SCHEME = lazy(r"^([A-Za-z][A-Za-z0-9+.-]+):/+")


def as_url(text: str) -> str | None:
    """`text` as a URL when it is one (a command line's Path has turned `https://` into `https:/`), else None."""
    found = _SCHEME.match(text) if ":/" in text else None  # a local path (nearly always): no pattern needed
    return _SCHEME.sub(lambda m: m.group(1) + "://", text, count=1) if found else None


def fetch_zip(url: str, cwd: str | os.PathLike | None = None) -> Path:
    """The local copy of the archive at `url`, fetched when not cached yet. Raises ScopeError."""
    from wfexec.protocol.archives import MAX_ZIP_BYTES
    from wfexec.protocol.raymond_dir import find_raymond_dir
    from wfexec.system.digest import sha256

    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https"):
        raise ScopeError(f"'{url}': only http:// and https:// workflows can be fetched")
    name = parsed.path.rsplit("/", 1)[-1]
    hashes = _HASH.findall(name)
    if len(hashes) != 1 or not name.lower().endswith(".zip"):
        raise ScopeError(f"'{url}': a workflow fetched from a URL is a .zip whose file name holds its SHA-256 once "
                         "(64 lower-case hex digits)", "name the archive e.g. review-<sha256 of the file>.zip")
    digest = hashes[0]
    raymond = find_raymond_dir(cwd, create=True)
    assert raymond is not None  # made when missing
    cached = raymond / "registry" / f"{digest}.zip"
    if cached.is_file():
        return cached
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
            length = response.headers.get("Content-Length")
            if length and length.isdigit() and int(length) > MAX_ZIP_BYTES:
                raise ScopeError(f"'{url}' is {length} bytes, more than a states archive may be ({MAX_ZIP_BYTES})")
            data = response.read(MAX_ZIP_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise ScopeError(f"'{url}' could not be fetched: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise ScopeError(f"'{url}' could not be fetched: {getattr(exc, 'reason', exc)}") from None
    if len(data) > MAX_ZIP_BYTES:
        raise ScopeError(f"'{url}' is more than {MAX_ZIP_BYTES} bytes, more than a states archive may be")
    got = sha256(data).hexdigest()
    if got != digest:
        raise ScopeError(f"'{url}' does not match the SHA-256 in its name (its content hashes to {got})",
                         "the archive changed after it was named; get the published one again")
    cached.parent.mkdir(parents=True, exist_ok=True)
    from wfexec.system.files import write_atomic

    write_atomic(cached, data)
    return cached
