"""Where states live, and how a state name becomes a file (reference §1.7–§1.9, §2).

Four kinds of scope hold the same thing, a flat set of state files:
- a directory (files read when a state runs, so edits apply to the next state);
- a `.zip` (flat, or one top-level folder; absolute paths, `..` and symlinks are
  refused; when its file name holds a 64-hex SHA-256 the bytes must match it);
- a Raymond single-file `.yaml`/`.yml` (`states: {NAME: {prompt | sh, …}}`);
- the `states:` mapping written inside a workflow node: either file name →
  content (`START.sh: "echo '<result>ok</result>'"`), or name → a Raymond-style
  state object.

Resolution (Unix): a name with `.md`/`.sh` must exist as written; a bare name
finds `NAME.md` or `NAME.sh`; both is ambiguous; only `.bat`/`.ps1` is the
wrong platform. In a folder or a zip, as in Raymond, any dot suffix counts as
an extension: `my.state` (or `v1.2`) is looked up as written, never as
`my.state.md`. YAML and inline scopes first drop a recognised extension, so
`REVIEW.md` finds a script state `REVIEW` too, and `my.state` is state
`my.state` of whatever kind. Names never hold `/` or `\\`.

Scripts from anything but a directory are written to a private temporary
directory (mode 0700) and run from there, never through a shell string.
Zip archives are read by `archives`, YAML files and inline states by `yamlscope`.
"""

from __future__ import annotations

import os
from pathlib import Path

from wfexec.protocol.errors import ProtocolError, ScopeError

MARKDOWN = ".md"
SCRIPTS: tuple[str, ...]
FOREIGN: tuple[str, ...]
if os.name == "nt":  # pragma: no cover - wfexec runs scripts with bash; Windows is listed for the messages
    SCRIPTS, FOREIGN = (".ps1", ".bat"), (".sh",)
    PLATFORM = "Windows"
else:
    SCRIPTS, FOREIGN = (".sh",), (".bat", ".ps1")
    PLATFORM = "Unix"
KNOWN = (MARKDOWN, ".sh", ".bat", ".ps1")
ENTRY_POINTS = ("1_START", "START")


class ResolveError(ProtocolError):
    """A target names no state, or more than one."""


def extension(name: str) -> str:
    """The recognised extension of `name`, lower-cased, or ''."""
    ext = os.path.splitext(name)[1].lower()
    return ext if ext in KNOWN else ""


def dot_suffix(name: str) -> str:
    """What Go's filepath.Ext calls the extension of a file name, which Raymond's resolution goes by: from its last
    dot on (`.state` of `my.state`, `.hidden` of `.hidden`, `.` of `name.`), or ''."""
    dot = name.rfind(".")
    return name[dot:] if dot >= 0 else ""


def state_kind(name: str) -> str:
    """'markdown' or 'script'; raises for anything else."""
    ext = extension(name)
    if ext == MARKDOWN:
        return "markdown"
    if ext in SCRIPTS:
        return "script"
    if ext in FOREIGN:
        raise ResolveError(f"'{name}' is a {ext} script, which does not run on {PLATFORM}",
                           f"this platform runs {MARKDOWN} prompts and {', '.join(SCRIPTS)} scripts")
    raise ResolveError(f"'{name}' is not a state: a state is a {MARKDOWN} prompt or a {'/'.join(SCRIPTS)} script")


class StateScope:
    """A flat set of state files. Subclasses say how to list, read and run them."""

    kind = "scope"
    strips_extensions = False

    def __init__(self, label: str, state_dir: Path):
        self.label = label
        self.state_dir = state_dir
        self.warnings: list[str] = []
        # The path that names the scope (its folder, .zip or .yaml): what agents in it are said to be in, and
        # what a cross-workflow tag's relative path starts from (`wfexec.protocol.workflows`).
        self.location: Path = state_dir

    def has(self, name: str) -> bool:
        raise NotImplementedError

    def names(self) -> list[str]:
        raise NotImplementedError

    def read_text(self, name: str) -> str:
        raise NotImplementedError

    def timeout(self, name: str) -> tuple[float | None, str] | None:
        """A per-state inactivity timeout (seconds, 0 = none) and where it was written, or None."""
        return None

    def script_path(self, name: str, files: "ScriptFiles") -> Path:
        """A file bash can run for script state `name`."""
        return files.write(name, self.read_text(name))

    def describe(self) -> str:
        return f"{self.kind} {self.label}"


class DirectoryScope(StateScope):
    kind = "folder"

    def __init__(self, path: Path, label: str | None = None):
        path = Path(path).resolve()
        super().__init__(label or str(path), path)
        self.path = path
        if path.is_dir():  # refused before anything runs, not when the run reaches the state
            for name in os.listdir(path):
                self._inside(name)

    def has(self, name: str) -> bool:
        return os.path.isfile(os.path.join(self.path, name))

    def names(self) -> list[str]:
        return sorted(n for n in os.listdir(self.path) if os.path.isfile(os.path.join(self.path, n)))

    def _inside(self, name: str) -> Path:
        """The state file `name`, refused when a symbolic link takes it out of the folder (as a zip's would be)."""
        real = os.path.realpath(self.path / name)
        if os.path.commonpath([real, str(self.path)]) != str(self.path):
            raise ScopeError(f"state file '{name}' in {self.label} is a symbolic link to {real}, outside the folder",
                             "a states folder runs only its own files: copy the file in instead of linking it")
        return self.path / name

    def read_text(self, name: str) -> str:
        try:
            return self._inside(name).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ResolveError(f"state file '{name}' is no longer in {self.label}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ProtocolError(f"cannot read state file '{name}' in {self.label}: {exc}") from None

    def script_path(self, name: str, files: "ScriptFiles") -> Path:
        return self._inside(name)


class EditedScope(DirectoryScope):
    """A folder some of whose files an editor holds unsaved: those are read as the editor has them."""

    def __init__(self, path: Path, label: str, edits: dict[str, str]):
        super().__init__(path, label)
        self.edits = edits

    def read_text(self, name: str) -> str:
        if name in self.edits:
            return self.edits[name]
        return super().read_text(name)


class _VirtualScope(StateScope):
    """States held in memory: zip members, YAML states, inline states."""

    def __init__(self, label: str, state_dir: Path, files: dict[str, str],
                 timeouts: dict[str, tuple[float, str]] | None = None):
        super().__init__(label, state_dir)
        self.files = files
        self.timeouts = timeouts or {}

    def has(self, name: str) -> bool:
        return name in self.files

    def names(self) -> list[str]:
        return list(self.files)

    def read_text(self, name: str) -> str:
        try:
            return self.files[name]
        except KeyError:
            raise ResolveError(f"state file '{name}' is not in {self.label}") from None

    def timeout(self, name: str):
        return self.timeouts.get(name)


class ZipScope(_VirtualScope):
    kind = "zip"


class YamlScope(_VirtualScope):
    kind = "YAML file"
    strips_extensions = True
    manifest: dict | None = None  # the file's keys besides `states:` (Raymond's manifest fields)


class InlineScope(_VirtualScope):
    kind = "inline states"
    strips_extensions = True

    def describe(self) -> str:
        return self.label


# -- resolution ------------------------------------------------------------------

def check_name(name: str, scope: StateScope) -> None:
    if not name or not name.strip():
        raise ResolveError(f"an empty state name cannot be resolved in {scope.label}")
    if "/" in name or "\\" in name or name in (".", ".."):
        raise ResolveError(f"'{name}' is a path; a state is named by its file name inside {scope.label}")


def resolve_state(scope: StateScope, name: str) -> str:
    """The file a state name stands for in `scope`. Raises ResolveError."""
    check_name(name, scope)
    ext = extension(name)
    if ext and scope.strips_extensions:
        name, ext = name[: -len(ext)], ""
    if ext:
        if ext in FOREIGN:
            state_kind(name)  # raises the wrong-platform error
        if not scope.has(name):
            raise ResolveError(f"state file '{name}' not found in {scope.describe()}",
                               _near_miss_hint(scope, name))
        return name
    if not scope.strips_extensions and dot_suffix(name):
        # Raymond (prompts.ResolveState): in a folder or a zip, a name with a dot has an extension already, so
        # `my.state` is the file `my.state`, never `my.state.md`.
        if scope.has(name):
            raise ResolveError(f"'{name}' in {scope.describe()} is not a state (no {MARKDOWN} or {SCRIPTS[0]} "
                               "extension)", f"rename it {name}{MARKDOWN} or {name}{SCRIPTS[0]}")
        written = [name + e for e in (MARKDOWN,) + SCRIPTS if scope.has(name + e)]
        raise ResolveError(f"state file '{name}' not found in {scope.describe()} (a name with a dot is looked up as "
                           "written, as in Raymond)",
                           f"write the whole file name, {written[0]}" if written else _near_miss_hint(scope, name))
    found = [name + e for e in (MARKDOWN,) + SCRIPTS if scope.has(name + e)]
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        raise ResolveError(f"state '{name}' is ambiguous in {scope.describe()}: {' and '.join(found)} both exist",
                           f"write the extension, e.g. {found[-1]}")
    foreign = [name + e for e in FOREIGN if scope.has(name + e)]
    if foreign:
        raise ResolveError(f"state '{name}' exists only as {' and '.join(foreign)}, which does not run on {PLATFORM}",
                           f"add {name}{SCRIPTS[0]} or {name}{MARKDOWN}")
    looked = ", ".join(name + e for e in (MARKDOWN,) + SCRIPTS)
    if scope.has(name):
        raise ResolveError(f"'{name}' in {scope.describe()} is not a state (no {MARKDOWN} or {SCRIPTS[0]} extension)",
                           f"rename it {name}{MARKDOWN} or {name}{SCRIPTS[0]}")
    raise ResolveError(f"state '{name}' not found in {scope.describe()} (looked for {looked})",
                       _near_miss_hint(scope, name))


def _near_miss_hint(scope: StateScope, name: str) -> str:
    from wfexec.language.diagnostics import did_you_mean

    try:
        names = scope.names()
    except OSError:
        return ""
    stems = {os.path.splitext(n)[0]: n for n in names}
    return did_you_mean(os.path.splitext(name)[0], list(stems)) or ""


def entry_point(scope: StateScope) -> str:
    """`1_START`, else `START` (any extension); both is an error, and so is neither."""
    found = []
    for name in ENTRY_POINTS:
        if not scope.has(name) and not any(scope.has(name + e) for e in (MARKDOWN,) + SCRIPTS + FOREIGN):
            continue  # not there: no need for resolve_state's error, nor its did-you-mean
        try:
            found.append(resolve_state(scope, name))
        except ResolveError as exc:
            if "not found" not in exc.message:
                raise ScopeError(f"entry point: {exc.message}", exc.hint) from None
    if len(found) == 2:
        raise ScopeError(f"ambiguous entry point in {scope.describe()}: both {found[0]} and {found[1]} exist",
                         "keep one of them, or name the first state with `start:`")
    if not found:
        found = _entry_point_any_case(scope)
    if not found:
        looked = ", ".join(n + e for n in ENTRY_POINTS for e in (MARKDOWN,) + SCRIPTS)
        raise ScopeError(f"no entry point in {scope.describe()} (looked for {looked})",
                         "add START.md or START.sh, or name the first state with `start:`")
    return found[0]


def _entry_point_any_case(scope: StateScope) -> list[str]:
    """wfexec's extension: with no exact `1_START`/`START`, a `start.md` (any letter case) is the entry point."""
    try:
        names = scope.names()
    except OSError:
        return []
    for wanted in ENTRY_POINTS:
        matches = [n for n in names if extension(n) in (MARKDOWN,) + SCRIPTS
                   and os.path.splitext(n)[0].lower() == wanted.lower()]
        if len(matches) > 1:
            raise ScopeError(f"ambiguous entry point in {scope.describe()}: {' and '.join(sorted(matches))} all "
                             f"stand for {wanted}", "keep one of them, or name the first state with `start:`")
        if matches:
            return matches
    return []


# -- opening scopes --------------------------------------------------------------

def open_scope(path: str | os.PathLike, label: str | None = None) -> StateScope:
    """A directory, a .zip or a Raymond .yaml/.yml file."""
    p = Path(path)
    shown = label or str(path)
    if p.is_dir():
        return DirectoryScope(p, shown)
    if not p.exists():
        raise ScopeError(f"states folder '{shown}' does not exist")
    suffix = p.suffix.lower()
    if suffix == ".zip":
        from wfexec.protocol.archives import open_zip

        return open_zip(p, shown)
    if suffix in (".yaml", ".yml"):
        from wfexec.protocol.yamlscope import open_yaml

        return open_yaml(p, shown)
    raise ScopeError(f"'{shown}' is not a states folder", "give a directory, a .zip, or a Raymond .yaml file")


# -- running scripts from virtual scopes -----------------------------------------------

class ScriptFiles:
    """A private temporary directory holding the scripts of virtual scopes for one run."""

    def __init__(self):
        self._dir: Path | None = None
        self._written: dict[tuple[str, str], Path] = {}

    def write(self, name: str, text: str) -> Path:
        key = (name, text)
        path = self._written.get(key)
        if path is not None:
            return path
        if self._dir is None:
            import tempfile  # a virtual scope's script runs from a file: only then

            self._dir = Path(tempfile.mkdtemp(prefix="wfexec-states-"))  # mode 0700
        import tempfile

        fd, raw = tempfile.mkstemp(prefix="state-", suffix=f"-{name}", dir=self._dir)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(raw, 0o700)
        path = Path(raw)
        self._written[key] = path
        return path

    def cleanup(self) -> None:
        if self._dir is not None:
            import shutil

            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
            self._written.clear()
