"""Preconditions over files and folders (seed names and v3 `path_check`).

Relative paths are relative to the run's working directory.
"""

from __future__ import annotations

from wfexec.types.registry import TypeList

TYPES = TypeList()

PATH = {"type": "string", "description": "a file path, relative to the working directory"}


@TYPES.precondition("file_exists", {"path": PATH}, ["path"], effects=("files",))
def file_exists(params, ctx):
    """True when `path` is an existing file."""
    return ctx.resolve_file(params["path"]).is_file()


@TYPES.precondition("directory_exists", {"path": PATH}, ["path"], effects=("files",))
def directory_exists(params, ctx):
    """True when `path` is an existing directory."""
    return ctx.resolve_file(params["path"]).is_dir()


@TYPES.precondition("path_check", {
    "path": PATH,
    "check": {"enum": ["exists", "is_file", "is_directory", "contains_text"]},
    "args": {"type": "object", "properties": {"pattern": {"type": "string", "description": "a glob the path must match"}},
             "additionalProperties": False},
}, ["path"], effects=("files",))
def path_check(params, ctx):
    """v3: `check` a path: exists (default), is_file, is_directory, contains_text (args.pattern)."""
    path = ctx.resolve_file(params["path"])
    check = params.get("check", "exists")
    if check == "exists":
        return path.exists()
    if check == "is_file":
        return path.is_file()
    if check == "is_directory":
        return path.is_dir()
    pattern = (params.get("args") or {}).get("pattern", "")
    try:
        return path.is_file() and pattern in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
