"""SHA-256 for wfexec's fingerprints (cache keys, workflow and node hashes): the same digests as
`hashlib.sha256`, from CPython's own module where there is one. `import hashlib` loads OpenSSL first, about 2 ms
of the start of every command that reads the compiled-workflow cache."""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable


def _sha256() -> Callable[..., Any]:
    for module in ("_sha256", "_sha2"):  # CPython 3.11, 3.12 and later
        try:
            return importlib.import_module(module).sha256
        except (ImportError, AttributeError):
            continue
    from hashlib import sha256

    return sha256


sha256 = _sha256()
