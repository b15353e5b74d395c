"""Hand-written parts replaced by libraries, or measured against them:

- the process scan `kill_tagged` uses: /proc on Linux, psutil elsewhere — both must find the same real processes
  (psutil is exercised here on Linux too, so the branch other platforms take is tested);
- the cache folder: what platformdirs gives on this platform, with $WFEXEC_CACHE_DIR and $XDG_CACHE_HOME kept.
"""

from __future__ import annotations

import os
import signal
import subprocess
import uuid

import pytest

from wfexec.system import cache
from wfexec.system.subprocesses import RUN_TAG_VARIABLE, _groups_from_proc, groups_from_psutil, kill_tagged


def test_proc_and_psutil_find_the_same_tagged_groups_and_kill_tagged_ends_them():
    tag = uuid.uuid4().hex
    env = {**os.environ, RUN_TAG_VARIABLE: tag}
    started = [subprocess.Popen(["sleep", "60"], env=env, start_new_session=True) for _ in range(2)]
    untagged = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        expected = {p.pid for p in started}  # each leads its own group
        assert _groups_from_proc(f"{RUN_TAG_VARIABLE}={tag}".encode()) == expected
        assert groups_from_psutil(tag) == expected
        assert kill_tagged(tag) == 2
        for process in started:
            assert process.wait(timeout=30) == -signal.SIGKILL
        assert untagged.poll() is None
        assert groups_from_psutil(tag) == set()
    finally:
        for process in started + [untagged]:
            if process.poll() is None:
                process.kill()
                process.wait()


@pytest.mark.parametrize("xdg", [None, "/tmp/xdg-cache-somewhere"])
def test_the_cache_folder_is_the_one_platformdirs_names(monkeypatch, xdg):
    import platformdirs

    monkeypatch.delenv(cache.CACHE_VARIABLE, raising=False)
    monkeypatch.delenv(cache.NO_CACHE_VARIABLE, raising=False)
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    assert cache.cache_dir() == cache.platform_cache_dir() == \
        __import__("pathlib").Path(platformdirs.user_cache_dir("wfexec", appauthor=False))
    monkeypatch.setenv(cache.CACHE_VARIABLE, "/tmp/chosen")
    assert str(cache.cache_dir()) == "/tmp/chosen"
    monkeypatch.setenv(cache.NO_CACHE_VARIABLE, "1")
    assert cache.cache_dir() is None
