"""The entry points of installed packages, read once per install rather than once per command.

Scanning every distribution's metadata (importlib.metadata) costs more than a whole cached run. What is installed
changes only when a package is installed, upgraded or removed, and each of those adds, renames or removes a
`*.dist-info` folder, which changes the modification time of the folder on `sys.path` that holds it. So the
entry points are cached under a key made of `sys.path` and those times (`installed_fingerprint`), which also tells
other caches when the installed plugins changed.
"""

from __future__ import annotations

import json
import os
import sys
from wfexec.records import dataclass

from wfexec.system import cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True)
class Point:
    """One entry point: `name = value` (module:attribute) of a distribution."""

    group: str
    name: str
    value: str
    dist: str | None

    def load(self) -> Any:
        import importlib

        module, _, attribute = self.value.partition(":")
        loaded: Any = importlib.import_module(module.strip())
        for part in attribute.strip().split(".") if attribute.strip() else ():
            loaded = getattr(loaded, part)
        return loaded


_fingerprint: list[str] = []
_points: dict[str, list[Point]] = {}


def installed_fingerprint() -> str:
    """Changes whenever a package is installed, upgraded or removed on this interpreter's path."""
    if not _fingerprint:
        parts = [sys.version]
        # sys.path[0] is the script's folder or the working directory: it changes as a person works, and
        # installs never go there.
        for entry in sys.path[1:]:
            try:
                parts.append(f"{entry}\0{os.stat(entry or '.').st_mtime_ns}")
            except OSError:
                parts.append(f"{entry}\0-")
        _fingerprint.append("\n".join(parts))
    return _fingerprint[0]


def entry_points(group: str) -> list[Point]:
    """The installed entry points of `group`, from the cache when nothing was installed since."""
    if group in _points:
        return _points[group]
    key = f"entry-points\0{group}\0{installed_fingerprint()}".encode()
    cached = cache.load("entry-points", key)
    points = None
    if cached is not None:
        try:
            points = [Point(group, *row) for row in json.loads(cached)]
        except (ValueError, TypeError):
            points = None
    if points is None:
        from importlib.metadata import entry_points as scan

        points = [Point(group, ep.name, ep.value, ep.dist.name if ep.dist is not None else None)
                  for ep in scan(group=group)]
        cache.store("entry-points", key, json.dumps([[p.name, p.value, p.dist] for p in points]).encode())
    _points[group] = points
    return points
