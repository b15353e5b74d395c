"""Writing files so that a crash never leaves one half-written."""

from __future__ import annotations

import os
import stat
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
    import tempfile  # here: `run` and `states` check their paths with this module and write nothing on a start

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


def new_folder_mode() -> int:
    """The mode `mkdir` would give a new folder (0777 less the umask): mkdtemp's 0700 would keep others out."""
    return 0o777 & ~_umask()


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
    from glob import escape as glob_escape  # here: glob imports contextlib, which a run's start does without

    for leftover in target.parent.glob(f".{glob_escape(target.name)}.*.tmp"):
        try:
            leftover.unlink()
        except OSError:
            pass


# -- paths the command line names ------------------------------------------------------------------------------
# Every file or folder a command writes because its command line said so (-o/--output, --junit, --dir,
# --state-out, --record-case) is checked with `check_writable` before the command's work and written with
# `write_output`/`make_output_folder`: a path that cannot take it is one line naming the path and why (exit 2,
# `CannotWrite`), never a traceback, and nothing of what was there is changed. `check_readable` is the same for
# a path a command reads: a folder this user may not enter is said as such.

def unwritable(path: str | os.PathLike, *, folder: bool = False) -> str | None:
    """Why a file (with `folder`: a folder, made with its missing parents) cannot be written at `path`, as words
    that follow "it" ("is a folder", "is inside /etc/hostname, which is a file"), or None when it can as far as
    can be told before writing (root passes every permission check: the write itself may still fail)."""
    text = os.fspath(path)
    try:
        info: os.stat_result | None = os.stat(text)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        info = None  # missing, under a file, or behind a folder this user may not enter: the walk below says which
    except OSError as exc:  # a loop of symbolic links, a name too long
        return f"cannot be reached ({exc.strerror or exc})"
    if info is not None:
        if folder:
            if not stat.S_ISDIR(info.st_mode):
                return "is a file, not a folder"
            return None if os.access(text, os.W_OK | os.X_OK) else "is a folder this user may not write in"
        if stat.S_ISDIR(info.st_mode):
            return "is a folder"
        if not stat.S_ISREG(info.st_mode):
            return "is not a regular file (a device, pipe or socket)"
    # The nearest folder that exists is where the file (or the first missing folder) would be made.
    above = os.path.dirname(os.path.abspath(text))
    while not os.path.lexists(above) and os.path.dirname(above) != above:
        above = os.path.dirname(above)
    try:
        is_folder = stat.S_ISDIR(os.stat(above).st_mode)
    except PermissionError:
        return f"is inside {os.path.dirname(above)}, which this user may not enter"
    except OSError as exc:
        return f"is inside {above}, which cannot be reached ({exc.strerror or exc})"
    if not is_folder:
        return f"is inside {above}, which is a file"
    if not os.access(above, os.W_OK | os.X_OK):
        return f"is inside {above}, which this user may not write in"
    return None


def _cannot(folder: bool) -> str:
    return "cannot write into" if folder else "cannot write"


def _hint(option: str | None, folder: bool) -> str:
    if option is None:
        return "choose a path in a folder you can write"
    if folder:
        return f"give {option} a folder you can write (missing folders are made)"
    return f"give {option} a file path in a folder you can write (missing folders are made)"


def check_writable(path: str | os.PathLike, *, folder: bool = False, option: str | None = None) -> None:
    """Raise `CannotWrite` (exit 2), naming the path and why, when `unwritable` finds a reason; before a
    command's work, so that work is not done for a result that could not be kept."""
    from wfexec.errors import CannotWrite

    why = unwritable(path, folder=folder)
    if why is not None:
        raise CannotWrite(f"{_cannot(folder)} {os.fspath(path)}: it {why}", _hint(option, folder))


def cannot_write(path: str | os.PathLike, exc: OSError, *, folder: bool = False, option: str | None = None):
    """The `CannotWrite` for an OSError met writing `path`: why, as `unwritable` sees it now, else what the OS
    said (naming the path it said it of, when that is not `path`: a folder on the way, not a temporary file)."""
    from wfexec.errors import CannotWrite

    shown = os.fspath(path)
    why = unwritable(path, folder=folder)
    if why is not None:
        reason = f"it {why}"
    else:
        reason = exc.strerror or str(exc)
        named = os.fspath(exc.filename) if exc.filename is not None else None
        if named is not None and named != shown:
            if os.path.basename(named).startswith(f".{os.path.basename(shown)}.") and named.endswith(".tmp"):
                # write_atomic's temporary file (or convert's folder): its folder is the point
                reason = f"nothing can be made in {os.path.dirname(named) or '.'} ({reason})"
            else:
                reason = f"{named}: {reason}"
    return CannotWrite(f"{_cannot(folder)} {shown}: {reason}", _hint(option, folder))


def write_output(path: str | os.PathLike, content: str | bytes, *, option: str | None = None) -> None:
    """`write_atomic` for a file the command line named: checked first (nothing is made, not even a temporary
    file, where it could not be kept), and an OSError becomes `CannotWrite` naming the path and why."""
    check_writable(path, option=option)
    try:
        write_atomic(path, content)
    except OSError as exc:
        raise cannot_write(path, exc, option=option) from None


def make_output_folder(path: str | os.PathLike, *, option: str | None = None) -> None:
    """`make_folders` for a folder the command line named; `CannotWrite` when it cannot be made or written in."""
    check_writable(path, folder=True, option=option)
    try:
        make_folders(path)
    except OSError as exc:
        raise cannot_write(path, exc, folder=True, option=option) from None


def unreadable(path: str | os.PathLike) -> str | None:
    """Why this user cannot examine `path`, as words that follow "it" ("is inside /srv/x, which this user may not
    enter"), or None: when it can, and when it does not exist (what to say of that is the command's)."""
    text = os.fspath(path)
    try:
        info = os.stat(text)
    except PermissionError:
        closed = _closed_folder(text)
        return (f"is inside {closed}, which this user may not enter" if closed
                else "cannot be examined by this user (permission denied)")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return f"cannot be reached ({exc.strerror or exc})"
    if stat.S_ISDIR(info.st_mode):
        if not os.access(text, os.R_OK | os.X_OK):
            return "is a folder this user may not open (permission denied)"
    elif not os.access(text, os.R_OK):
        return "is a file this user may not read (permission denied)"
    return None


def not_a_readable_file(path: str | os.PathLike) -> str | None:
    """Why `path`, named as a file to read (--answers, --input-file), is none this user can read, as words that
    follow it ("is a folder, not a file"), or None (a missing file included: the reader says so)."""
    why = unreadable(path)
    if why is None and os.path.isdir(path):
        return "is a folder, not a file"
    return why


def _closed_folder(path: str) -> str | None:
    """The first folder on the way to `path` that this user may not enter (search), or None."""
    absolute = os.path.abspath(path)
    parts = absolute.split(os.sep)
    for end in range(2, len(parts)):
        folder = os.sep.join(parts[:end]) or os.sep
        if os.path.isdir(folder) and not os.access(folder, os.X_OK):
            return folder
    return None


def check_readable(path: str | os.PathLike, *, option: str | None = None) -> None:
    """Raise `CannotRead` (exit 2), naming the path and why, when this user cannot examine it."""
    from wfexec.errors import CannotRead

    why = unreadable(path)
    if why is not None:
        raise CannotRead(f"cannot read {os.fspath(path)}: it {why}",
                         "ask the owner for access (chmod), or run wfexec as a user who may read it"
                         + (f"; or give {option} another path" if option else ""))


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
    for folder in ctx.run.options.allowed_folders:  # --allow-write: the person's say, not the workflow's
        if _inside(real, os.path.realpath(os.path.join(ctx.cwd, os.path.expanduser(folder)))):
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
        "run wfexec from a folder that contains it, allow its folder with --allow-write DIR, or write that "
        "absolute path literally in the workflow",
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
