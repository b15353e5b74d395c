"""Writing files so that a crash never leaves one half-written."""

from __future__ import annotations

import os
import tempfile
from glob import escape as glob_escape
from pathlib import Path


def make_folders(folder: str | os.PathLike) -> None:
    """`mkdir -p`, one level at a time: pathlib's and os.makedirs recurse once per level, so a path a thousand
    folders deep (a value from state can be one) would end in a RecursionError."""
    missing = []
    current = Path(folder)
    while not current.is_dir():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for level in reversed(missing):
        try:
            level.mkdir()
        except FileExistsError:
            if not level.is_dir():
                raise


def write_atomic(path: str | os.PathLike, content: str | bytes, encoding: str = "utf-8") -> None:
    """Write to a temporary file beside `path`, then rename it over `path`."""
    target = Path(path)
    make_folders(target.parent)
    data = content.encode(encoding) if isinstance(content, str) else content
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp makes the file 0600; a plain open() would have given 0666 less the umask.
        os.chmod(tmp, target.stat().st_mode & 0o7777 if target.exists() else new_file_mode())
        os.replace(tmp, target)
        _remove_leftovers(target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def new_file_mode() -> int:
    """The mode `open()` would give a new file (0666 less the umask): mkstemp's 0600 would keep others out."""
    return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask, read without changing it where the kernel shows it (changing it races threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current


def _remove_leftovers(target: Path) -> None:
    """Temporary files of earlier writes to `target` that a killed process never renamed."""
    for leftover in target.parent.glob(f".{glob_escape(target.name)}.*.tmp"):
        try:
            leftover.unlink()
        except OSError:
            pass


def _written_absolute(raw_path) -> bool:
    """True when the workflow spells out an absolute path itself, with nothing computed in it."""
    return isinstance(raw_path, str) and "${" not in raw_path and os.path.isabs(os.path.expanduser(raw_path))


def _inside(path: str, root: str) -> bool:
    return path == root or os.path.commonpath([path, root]) == root


NAME_MAX, PATH_MAX = 255, 4096  # Linux's limits (and near every other system's): past them the OS refuses


def _check_length(shown: str, param: str) -> None:
    from wfexec.errors import ActionFailed

    longest = max(shown.replace("\\", "/").split("/"), key=len)
    if len(longest.encode("utf-8", "surrogateescape")) > NAME_MAX:
        raise ActionFailed(f"`{param}` names a file or folder {len(longest):,} characters long "
                           f"('{longest[:40]}…'); a name may have at most {NAME_MAX} bytes",
                           "shorten the name; a value from state may need trimming first")
    if len(shown.encode("utf-8", "surrogateescape")) > PATH_MAX:
        raise ActionFailed(f"`{param}` is a path of {len(shown):,} characters; a path may have at most "
                           f"{PATH_MAX} bytes", "use a shorter path")


def guarded_path(ctx, params: dict, param: str, verb: str, *, the_link_itself: bool = False) -> Path:
    """The real path a file parameter names, for a consequence about to change it.

    Refused (`Refused`, which ends the run) when it is wfexec's run store, one of its files or anything in
    `.wfexec/`, however spelled, literal absolute paths included (`refuse_run_store`).
    Refused (ActionFailed) when it leaves the working directory through `..` or
    a symbolic link, unless the workflow itself wrote that absolute path: a
    workflow downloaded with a skill must not reach outside the folder it was
    run in by way of a computed value. `the_link_itself`: the action acts on a
    symlink, not its target (delete), so the link's own folder is what counts.
    """
    from wfexec.errors import ActionFailed

    shown = params[param]
    if not isinstance(shown, str):
        raise ActionFailed(f"`{param}` must be a file path (text), not {type(shown).__name__} {shown!r:.80}")
    if "\x00" in shown:
        raise ActionFailed(f"`{param}` holds a NUL character, which no file name can contain: {shown!r:.120}")
    _check_length(shown, param)
    path = ctx.resolve_file(shown)
    if the_link_itself and os.path.islink(path):
        real = os.path.join(os.path.realpath(path.parent), path.name)
    else:
        real = os.path.realpath(path)
    refuse_run_store(real, ctx, shown, verb)
    if _written_absolute(ctx.call.raw.get(param)):
        return Path(real)
    root = os.path.realpath(ctx.cwd)
    if _inside(real, root):
        return Path(real)
    lexical = os.path.normpath(os.path.abspath(path))
    if _inside(lexical, os.path.normpath(os.path.abspath(ctx.cwd))):
        why = "a symbolic link on the way leads out of it"
    elif os.path.isabs(os.path.expanduser(shown)):
        why = "the absolute path comes from a `${...}` template, not written out in the workflow"
    else:
        why = "the path climbs out of it through '..'"
    raise ActionFailed(
        f"refusing to {verb} '{shown}': it resolves to {real}, outside the working directory {root} ({why}); "
        "run wfexec from a folder that contains it, or write that absolute path literally in the workflow",
        "the guard keeps a downloaded workflow inside the folder it is run in")


def refuse_run_store(real: str, ctx, shown: str, verb: str) -> None:
    """Raise `Refused` when changing `real` (symbolic links resolved) would touch wfexec's run store: the run's
    store (`ctx.run.options.store`), the one --store/$WFEXEC_STORE or the default names, their -wal/-shm/-journal
    files, or anything in `.wfexec/`. The one place every file consequence passes (through `guarded_path`)."""
    from wfexec.errors import Refused
    from wfexec.system.run_store import STORE_FOLDER, store_conflict

    options = getattr(getattr(ctx, "run", None), "options", None)
    why = store_conflict(real, ctx.cwd, getattr(options, "store", None))
    if why is not None:
        raise Refused(f"refused to {verb} '{shown}': it {why}; a workflow may not write, move or delete the run "
                      f"store or anything in {STORE_FOLDER}/",
                      "write somewhere else: only wfexec changes its run store (`wfexec runs`, `show`, `cancel`)")
