"""SHA-256 for wfexec's fingerprints (cache keys, workflow and node hashes): the same digests as
`hashlib.sha256`, from CPython's own module where there is one. `import hashlib` loads OpenSSL first, about 2 ms
of the start of every command that reads the compiled-workflow cache."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hashlib import sha256
else:
    try:  # CPython 3.12 and later; `importlib.import_module` to try both names cost every start its import
        from _sha2 import sha256
    except ImportError:
        try:  # CPython 3.11
            from _sha256 import sha256
        except ImportError:
            from hashlib import sha256
