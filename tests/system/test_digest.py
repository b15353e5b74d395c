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


def test_once_a_big_input_brought_openssl_in_it_hashes_the_small_ones_too():
    """A big workflow's cold validate digests its text, then its compiled entry (several times bigger): the
    text's digest imports OpenSSL's hashing, and the entry's, and whatever comes after, are hashed by it."""
    probe = ("import sys; from wfexec.system.digest import BIG, sha256; print(type(sha256(b'x')).__module__); "
             "sha256(bytes(BIG)); print(type(sha256(b'x')).__module__)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["_sha256" if sys.version_info < (3, 12) else "_sha2", "_hashlib"]
    assert BIG <= 256 * 1024  # the text of 1,000 nodes of long expressions (~300 KB) is big
