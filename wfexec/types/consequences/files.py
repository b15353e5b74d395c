"""Consequences that read and write local files (seed names and v3 `local_file_ops`).

Relative paths are relative to the run's working directory. Writes are atomic
(a temporary file renamed over the target), so a crash never leaves a file
half-written.

Writes and deletes stay inside the working directory: a path that leaves it
through `..` or through a symbolic link is refused, unless the workflow itself
spells out an absolute path (`path: /etc/app.conf`, no `${...}`). A path
computed at run time can therefore never aim a write at a place the author
did not name.
"""

from __future__ import annotations

import functools
import io
import json
import os
from pathlib import Path
from typing import Any

from wfexec.language.expressions import to_text
from wfexec.system.files import guarded_path, make_folders, write_atomic
from wfexec.types.registry import ActionFailed, TypeList

TYPES = TypeList()

PATH = {"type": "string", "description": "a file path, relative to the working directory"}
STORE_AS = {"type": "string", "description": "the state path to store the result at, e.g. computed.text"}
CONTENT = {"description": "text to write; a mapping or list is written as YAML (.yaml/.yml) or JSON (otherwise)"}
APPEND = {"type": "boolean", "description": "add to the end of the file instead of replacing it "
                                           "(not safe to re-run after a crash: the text would be added twice)"}


# -- reading ----------------------------------------------------------------

def _read_text(params, ctx) -> str:
    shown = params["path"]
    path = ctx.resolve_file(shown)
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ActionFailed(f"no such file: '{shown}'", f"check the path; relative paths start at the working "
                                                       f"directory {ctx.cwd}") from None
    except IsADirectoryError:
        raise ActionFailed(f"'{shown}' is a directory, not a file") from None
    except UnicodeDecodeError as exc:
        raise ActionFailed(f"'{shown}' is not UTF-8 text (undecodable byte at offset {exc.start})",
                           "only text files can be read into state") from None
    except OSError as exc:
        raise ActionFailed(f"cannot read '{shown}': {exc.strerror or exc}") from None


@TYPES.consequence("read_file", {
    "path": PATH, "store_as": STORE_AS,
    "on_failure": {"enum": ["create_empty"], "description": "`create_empty`: a file that is not there reads as "
                   "empty text (hiivmind-corpus's refresh reads `.gitignore` so); it is not created, and any other "
                   "failure still fails the step"}}, ["path", "store_as"], paths=("store_as",), effects=("files",))
def read_file(params, ctx):
    """Read a UTF-8 text file into state at `store_as`."""
    if params.get("on_failure") == "create_empty" and not ctx.resolve_file(params["path"]).exists():
        ctx.set(params["store_as"], "")
        return
    ctx.set(params["store_as"], _read_text(params, ctx))


@TYPES.consequence("list_files", {
    "pattern": {"type": "string", "description": "a glob from the working directory: `docs/**/*.md`, `*.yaml`; "
                                                 "a trailing / lists folders"},
    "store_as": STORE_AS}, ["pattern", "store_as"], paths=("store_as",), effects=("files",),
    example={"pattern": "docs/**/*.md", "store_as": "computed.pages"})
def list_files(params, ctx):
    """Store the sorted paths the glob `pattern` matches (files; folders with a trailing /), relative as written:
    no shell, so `ls` in a script is not needed to see what is there."""
    import glob

    pattern = os.path.expanduser(to_text(params["pattern"]))
    folders = pattern.endswith("/")
    found = set()
    for match in glob.glob(pattern, root_dir=ctx.cwd, recursive=True):
        full = ctx.resolve_file(match)
        if full.is_dir() if folders else full.is_file():
            found.add(Path(match.rstrip("/\\")).as_posix())
    ctx.set(params["store_as"], sorted(found))


@TYPES.consequence("read_yaml", {"path": PATH, "store_as": STORE_AS}, ["path", "store_as"],
                   paths=("store_as",), effects=("files",))
def read_yaml(params, ctx):
    """Parse a YAML file into state at `store_as`."""
    from wfexec.language.loader import load_text

    document = load_text(_read_text(params, ctx), params["path"])
    errors = [d for d in document.diagnostics if d.severity == "error"]
    if errors:
        first = errors[0]
        raise ActionFailed(f"cannot read YAML from '{params['path']}': {first.message} (line {first.line})",
                           first.hint)
    ctx.set(params["store_as"], document.data)


@TYPES.consequence("read_json", {"path": PATH, "store_as": STORE_AS}, ["path", "store_as"],
                   paths=("store_as",), effects=("files",))
def read_json(params, ctx):
    """Parse a JSON file into state at `store_as`."""
    text = _read_text(params, ctx)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ActionFailed(f"'{params['path']}' is not valid JSON: {exc.msg} (line {exc.lineno}, "
                           f"column {exc.colno})") from None
    ctx.set(params["store_as"], data)


def _write_target(params, ctx) -> Path:
    """Where a write lands: the real path, so writing through a symlink keeps the link."""
    return guarded_path(ctx, params, "path", "write")


def _delete_target(params, ctx) -> Path:
    """Where a delete acts: a symlink itself is removed (its target is untouched)."""
    return guarded_path(ctx, params, "path", "delete", the_link_itself=True)


# -- writing ----------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _yaml_dumper():
    from ruamel.yaml import YAML
    from ruamel.yaml.representer import SafeRepresenter

    class Representer(SafeRepresenter):  # a subclass, so the shared SafeRepresenter is left as it was
        pass

    def text_block(representer, text):
        # Multi-line text reads best as a `|` block; the emitter falls back when a block cannot hold it.
        return representer.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)

    Representer.add_representer(str, text_block)
    yaml = YAML(typ="safe", pure=True)
    yaml.Representer = Representer
    yaml.default_flow_style = False
    yaml.allow_unicode = True
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]  # keep the order the workflow built (ruamel declares it None; it takes a bool)
    return yaml


def _yaml_text(value: Any) -> str:
    stream = io.StringIO()
    _yaml_dumper().dump(value, stream)
    return stream.getvalue()


def _file_text(content: Any, target: Path) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, (dict, list)):
        if target.suffix.lower() in (".yaml", ".yml"):
            return _yaml_text(content)
        return json.dumps(content, indent=2, ensure_ascii=False, default=str) + "\n"
    return to_text(content)


def _write(params, ctx, append: bool = False) -> None:
    target = _write_target(params, ctx)
    text = _file_text(params["content"], target)
    shown = params["path"]
    try:
        if append and target.is_file():
            text = target.read_text(encoding="utf-8") + text
        write_atomic(target, text)
    except IsADirectoryError:
        raise ActionFailed(f"cannot write '{shown}': it is a directory") from None
    except UnicodeDecodeError:
        raise ActionFailed(f"cannot append to '{shown}': it is not UTF-8 text") from None
    except OSError as exc:
        raise ActionFailed(f"cannot write '{shown}': {exc.strerror or exc}") from None
    ctx.trace(f"  wrote {len(text)} characters to {target}")


@TYPES.consequence("write_file", {"path": PATH, "content": CONTENT, "append": APPEND}, ["path", "content"],
                   effects=("files",))
def write_file(params, ctx):
    """Write `content` to a file atomically, creating parent folders (`append: true` adds to the end)."""
    _write(params, ctx, append=bool(params.get("append", False)))


@TYPES.consequence("create_directory", {"path": PATH}, ["path"], effects=("files",))
def create_directory(params, ctx):
    """Create a directory and its parents (mkdir -p); an existing directory is fine."""
    shown = params["path"]
    try:
        make_folders(guarded_path(ctx, params, "path", "create"))
    except FileExistsError:
        raise ActionFailed(f"cannot create directory '{shown}': a file with that name exists") from None
    except OSError as exc:
        raise ActionFailed(f"cannot create directory '{shown}': {exc.strerror or exc}") from None


@TYPES.consequence("delete_file", {"path": PATH}, ["path"], effects=("files",))
def delete_file(params, ctx):
    """Delete a file if it exists (a missing file is not an error; directories are refused)."""
    target = _delete_target(params, ctx)
    shown = params["path"]
    if not target.is_symlink() and target.is_dir():
        raise ActionFailed(f"'{shown}' is a directory; delete_file deletes files only",
                           "point `path` at a file, or remove the folder by other means")
    try:
        target.unlink()
    except FileNotFoundError:
        ctx.trace(f"  nothing to delete at {target}")
    except OSError as exc:
        raise ActionFailed(f"cannot delete '{shown}': {exc.strerror or exc}") from None


def _read_into_state(params, ctx):
    if "store_as" not in params:
        raise ActionFailed("local_file_ops read needs `store_as` to keep the text")
    read_file(params, ctx)


def _write_content(params, ctx):
    if "content" not in params:
        raise ActionFailed("local_file_ops write needs `content`")
    _write(params, ctx)


_OPERATIONS = {"read": _read_into_state, "write": _write_content, "mkdir": create_directory, "delete": delete_file}


@TYPES.consequence("local_file_ops", {"operation": {"enum": list(_OPERATIONS)}, "path": PATH, "content": CONTENT,
                                      "store_as": STORE_AS}, ["operation", "path"],
                   paths=("store_as",), effects=("files",))
def local_file_ops(params, ctx):
    """v3: `operation` read (into `store_as`), write (`content`), mkdir or delete at `path`."""
    operation = _OPERATIONS.get(params["operation"])
    if operation is None:
        raise ActionFailed(f"local_file_ops has no operation '{params['operation']}'",
                           f"use one of: {', '.join(_OPERATIONS)}")
    operation(params, ctx)
