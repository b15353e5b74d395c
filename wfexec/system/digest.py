"""SHA-256 for wfexec's fingerprints (cache keys, workflow and node hashes): the same digests as
`hashlib.sha256`.

Small inputs are hashed by CPython's own module: `import hashlib` loads OpenSSL first, about 2 ms of the start of
every command that reads the compiled-workflow cache. Big ones (a big workflow's text, its compiled entry), and
every input after one, by OpenSSL's, which on a CPU with SHA instructions is five times faster: a 5,000-node
workflow's cold validate hashes about 10 MB."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hashlib import sha256 as _builtin
else:
    try:  # CPython's module is _sha2 from 3.12 on; each name tried and missing is a search of the whole path
        if sys.version_info >= (3, 12):
            from _sha2 import sha256 as _builtin
        else:
            from _sha256 import sha256 as _builtin
    except ImportError:
        from hashlib import sha256 as _builtin

# From this size on OpenSSL's hashing is worth importing (a few ms of CPU), and once imported it hashes
# everything: a workflow file this big compiles to a cache entry several times bigger, which is digested too (when
# kept, when read back), so the text and the entry are hashed five times faster for one import.
BIG = 1 << 18
_openssl: list = []  # OpenSSL's sha256, once imported


def sha256(data: bytes = b""):  # -> a hashlib-style object: update, digest, hexdigest, copy
    if _openssl:
        return _openssl[0](data)
    if len(data) < BIG:
        return _builtin(data)
    from hashlib import sha256 as openssl

    _openssl.append(openssl)
    return openssl(data)
