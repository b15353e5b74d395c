"""Where Raymond keeps its project files: the `.raymond` folder (config.toml, debug files, cached URL zips).

`ray` looks for it upwards from the working directory and stops at the folder holding `.git` (the project's
root); when there is none and one is needed, it is made at that root, else in the working directory.
"""

from __future__ import annotations

import os
from pathlib import Path

RAYMOND = ".raymond"


def find_raymond_dir(cwd: str | os.PathLike | None = None, create: bool = False) -> Path | None:
    """The project's `.raymond` folder, searched from `cwd` upwards as far as the folder with `.git`; made there
    (or in `cwd`) when `create` and none exists; else None."""
    start = Path(cwd or os.getcwd()).resolve()
    root = None
    for folder in (start, *start.parents):
        if (folder / RAYMOND).is_dir():
            return folder / RAYMOND
        if (folder / ".git").exists():
            root = folder
            break
    if not create:
        return None
    made = (root or start) / RAYMOND
    made.mkdir(parents=True, exist_ok=True)
    return made
