"""wfexec's SHA-256 gives hashlib's digests whatever the size, and takes OpenSSL's only for big inputs (importing
hashlib costs every command's start more than hashing a small input saves)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest

from wfexec.system.digest import BIG, sha256


@pytest.mark.parametrize("size", [0, 1, 64, 1000, BIG - 1, BIG, 3 * BIG + 7])
def test_the_digest_is_hashlibs(size):
    data = os.urandom(size)
    assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    grown = sha256(data)
    grown.update(b"more")
    assert grown.digest() == hashlib.sha256(data + b"more").digest()


def test_only_a_big_input_imports_hashlib():
    probe = ("import sys; from wfexec.system.digest import BIG, sha256; sha256(b'x' * 1000).hexdigest(); "
             "print('hashlib' in sys.modules); sha256(bytes(BIG)).hexdigest(); print('hashlib' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]
