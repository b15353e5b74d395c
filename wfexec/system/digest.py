"""SHA-256 for wfexec's fingerprints (cache keys, workflow and node hashes): the same digests as
`hashlib.sha256`, from CPython's own module where there is one. `import hashlib` loads OpenSSL first, about 2 ms
of the start of every command that reads the compiled-workflow cache."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hashlib import sha256
else:
    try:  # CPython's module is _sha2 from 3.12 on; each name tried and missing is a search of the whole path
        if sys.version_info >= (3, 12):
            from _sha2 import sha256
        else:
            from _sha256 import sha256
    except ImportError:
        from hashlib import sha256
