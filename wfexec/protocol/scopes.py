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
wrong platform. YAML and inline scopes first drop a recognised extension, so
`REVIEW.md` finds a script state `REVIEW` too. Names never hold `/` or `\\`.

Scripts from anything but a directory are written to a private temporary
directory (mode 0700) and run from there, never through a shell string.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

from .errors import ProtocolError, ScopeError

MARKDOWN = ".md"
if os.name == "nt":  # pragma: no cover - wfexec runs scripts with bash; Windows is listed for the messages
    SCRIPTS, FOREIGN = (".ps1", ".bat"), (".sh",)
    PLATFORM = "Windows"
else:
    SCRIPTS, FOREIGN = (".sh",), (".bat", ".ps1")
    PLATFORM = "Unix"
KNOWN = (MARKDOWN, ".sh", ".bat", ".ps1")
ENTRY_POINTS = ("1_START", "START")
MAX_ZIP_BYTES = 64 * 1024 * 1024
_SHA_RUN = re.compile(r"[0-9a-fA-F]{64,}")


class ResolveError(ProtocolError):
    """A target names no state, or more than one."""


def extension(name: str) -> str:
    """The recognised extension of `name`, lower-cased, or ''."""
    ext = os.path.splitext(name)[1].lower()
    return ext if ext in KNOWN else ""


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

    def has(self, name: str) -> bool:
        return os.path.isfile(os.path.join(self.path, name))

    def names(self) -> list[str]:
        return sorted(n for n in os.listdir(self.path) if os.path.isfile(os.path.join(self.path, n)))

    def read_text(self, name: str) -> str:
        try:
            return (self.path / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ResolveError(f"state file '{name}' is no longer in {self.label}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ProtocolError(f"cannot read state file '{name}' in {self.label}: {exc}") from None

    def script_path(self, name: str, files: "ScriptFiles") -> Path:
        return self.path / name


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
    from ..diagnostics import did_you_mean

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
        try:
            found.append(resolve_state(scope, name))
        except ResolveError as exc:
            if "not found" not in exc.message:
                raise ScopeError(f"entry point: {exc.message}", exc.hint) from None
    if len(found) == 2:
        raise ScopeError(f"ambiguous entry point in {scope.describe()}: both {found[0]} and {found[1]} exist",
                         "keep one of them, or name the first state with `start:`")
    if not found:
        looked = ", ".join(n + e for n in ENTRY_POINTS for e in (MARKDOWN,) + SCRIPTS)
        raise ScopeError(f"no entry point in {scope.describe()} (looked for {looked})",
                         "add START.md or START.sh, or name the first state with `start:`")
    return found[0]


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
        return open_zip(p, shown)
    if suffix in (".yaml", ".yml"):
        return open_yaml(p, shown)
    raise ScopeError(f"'{shown}' is not a states folder", "give a directory, a .zip, or a Raymond .yaml file")


def open_zip(path: Path, label: str) -> ZipScope:
    _check_zip_hash(path, label)
    try:
        with zipfile.ZipFile(path) as archive:
            members = [m for m in archive.infolist() if not m.is_dir()]
            layout = _zip_layout(members, label)
            total = sum(m.file_size for m in members)
            if total > MAX_ZIP_BYTES:
                raise ScopeError(f"{label} unpacks to {total} bytes, more than a states archive may hold "
                                 f"({MAX_ZIP_BYTES})")
            files = {}
            for member in members:
                name = PurePosixPath(member.filename).name
                # Other files (a README, an image) may sit beside the states; only states are read as text.
                files[name] = archive.read(member).decode("utf-8", errors="replace")
    except zipfile.BadZipFile as exc:
        raise ScopeError(f"{label} is not a readable zip archive: {exc}") from None
    return ZipScope(f"{label}{layout}", path.resolve().parent, files)


def _check_zip_hash(path: Path, label: str) -> None:
    runs = _SHA_RUN.findall(path.name)
    if not runs:
        return
    if len(runs) > 1 or len(runs[0]) != 64:
        raise ScopeError(f"the name of {label} holds an ambiguous hash (a SHA-256 is exactly 64 hex digits, once)")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != runs[0].lower():
        raise ScopeError(f"{label} does not match the SHA-256 in its name (its content hashes to {digest})",
                         "the archive changed after it was named; get the published one again")


def _zip_layout(members: list, label: str) -> str:
    """Check member names; return the single top folder ('/name') or '' for a flat archive."""
    if not members:
        raise ScopeError(f"{label} is empty")
    tops = set()
    flat = nested = False
    for member in members:
        raw = member.filename
        if raw.startswith("/") or "\\" in raw or re.match(r"^[A-Za-z]:", raw):
            raise ScopeError(f"{label} holds an absolute or Windows path '{raw}'", "a states archive holds plain files")
        parts = PurePosixPath(raw).parts
        if ".." in parts or "." in parts:
            raise ScopeError(f"{label} holds a path that leaves the archive: '{raw}'")
        if stat.S_ISLNK(member.external_attr >> 16):
            raise ScopeError(f"{label} holds a symbolic link '{raw}'", "a states archive holds plain files only")
        if len(parts) == 1:
            flat = True
        elif len(parts) == 2:
            nested = True
            tops.add(parts[0])
        else:
            raise ScopeError(f"{label} nests '{raw}' too deeply",
                             "put the states at the root, or in one top-level folder")
    if flat and nested:
        raise ScopeError(f"{label} mixes files at its root with a folder", "use one layout: flat, or one folder")
    if len(tops) > 1:
        raise ScopeError(f"{label} has several top-level folders ({', '.join(sorted(tops))})",
                         "keep the states in one folder")
    return f"/{tops.pop()}" if tops else ""


# -- Raymond YAML and inline states ------------------------------------------------

_STATE_FIELDS = {"prompt", "sh", "ps1", "bat", "allowed_transitions", "model", "effort", "force_implicit", "timeout",
                 "description"}
_POLICY_FIELDS = ("allowed_transitions", "model", "effort", "force_implicit")


def open_yaml(path: Path, label: str) -> YamlScope:
    from ..loader import load_file

    doc = load_file(path)
    if doc.diagnostics:
        raise ScopeError(doc.diagnostics[0].format())
    data = doc.data
    if not isinstance(data, dict):
        raise ScopeError(f"{label} must be a mapping with `states:`")
    states = data.get("states")
    if not isinstance(states, dict) or not states:
        hint = "wrap the states in `states:`" if any(
            isinstance(v, dict) and ({"prompt", "sh"} & set(v)) for v in data.values()) else \
            "write `states: {START: {sh: ...}, ...}`"
        raise ScopeError(f"{label} has no states (`states:` must be a non-empty mapping)", hint)
    files, timeouts, warnings = _virtual_states(states, label, objects_only=True)
    scope = YamlScope(label, path.resolve().parent, files, timeouts)
    scope.warnings = warnings
    return scope


def inline_scope(states: dict, label: str, state_dir: Path) -> InlineScope:
    files, timeouts, warnings = _virtual_states(states, label, objects_only=False)
    scope = InlineScope(label, Path(state_dir).resolve(), files, timeouts)
    scope.warnings = warnings
    return scope


def _virtual_states(states: dict, label: str, objects_only: bool):
    files: dict[str, str] = {}
    timeouts: dict[str, tuple[float, str]] = {}
    warnings: list[str] = []

    def add(name: str, text: str) -> None:
        if name in files:
            raise ScopeError(f"{label}: state file '{name}' is defined twice")
        files[name] = text

    for key, value in states.items():
        name = str(key)
        if not name.strip():
            raise ScopeError(f"{label}: a state has an empty name")
        if "/" in name or "\\" in name:
            raise ScopeError(f"{label}: state name '{name}' contains a path separator")
        if isinstance(value, str) and not objects_only:
            if not extension(name):
                raise ScopeError(f"{label}: inline state '{name}' needs an extension ({MARKDOWN} or "
                                 f"{SCRIPTS[0]}) to say how it runs", f"call it {name}{MARKDOWN} or {name}{SCRIPTS[0]}")
            add(name, value)
            continue
        if not isinstance(value, dict):
            raise ScopeError(f"{label}: state '{name}' must be a mapping with `prompt` or `sh`")
        stem = name[: -len(extension(name))] if extension(name) else name
        for file_name, text in _state_object(stem, value, label, warnings):
            add(file_name, text)
        timeout = value.get("timeout")
        if timeout is not None:
            for file_name in [n for n in files if os.path.splitext(n)[0] == stem]:
                timeouts[file_name] = (float(timeout), f"`timeout` of state '{stem}' in {label}")
    return files, timeouts, warnings


def _state_object(name: str, value: dict, label: str, warnings: list) -> list[tuple[str, str]]:
    scripts = [k for k in ("sh", "ps1", "bat") if k in value]
    where = f"{label}: state '{name}'"
    if "prompt" in value and scripts:
        raise ScopeError(f"{where} has both `prompt` and `{scripts[0]}`; a state is either a prompt or a script")
    if "prompt" not in value and not scripts:
        raise ScopeError(f"{where} has neither `prompt` nor `sh`")
    timeout = value.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0):
        raise ScopeError(f"{where}: `timeout` must be a number of seconds ≥ 0 (0 = none), not {timeout!r}")
    unknown = [k for k in value if k not in _STATE_FIELDS]
    if unknown:
        warnings.append(f"{where}: unknown field{'s' if len(unknown) > 1 else ''} {', '.join(map(str, unknown))} "
                        "(ignored)")
    if scripts:
        wrong = [k for k in _POLICY_FIELDS if k in value]
        if wrong:
            raise ScopeError(f"{where} is a script and cannot have `{wrong[0]}`",
                             "only prompt states have a transition policy, model or effort")
        out = []
        for key in scripts:
            if not isinstance(value[key], str) or not value[key].strip():
                raise ScopeError(f"{where}: `{key}` must be the script's text")
            out.append((f"{name}.{key}", value[key]))
        return out
    prompt = value["prompt"]
    if not isinstance(prompt, str) or not prompt.strip():
        raise ScopeError(f"{where}: `prompt` must be non-empty text")
    front = {k: value[k] for k in value if k in _POLICY_FIELDS or k in unknown}
    if front:
        # JSON is YAML: the frontmatter is built exactly as a prompt file would hold it.
        return [(f"{name}.md", f"---\n{json.dumps(front, ensure_ascii=False, default=str)}\n---\n{prompt}")]
    if prompt.startswith("---\n"):
        prompt = "---\n---\n" + prompt  # an empty frontmatter, so the prompt's own `---` stays text
    return [(f"{name}.md", prompt)]


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
            self._dir = Path(tempfile.mkdtemp(prefix="wfexec-states-"))  # mode 0700
        fd, raw = tempfile.mkstemp(prefix="state-", suffix=f"-{name}", dir=self._dir)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(raw, 0o700)
        path = Path(raw)
        self._written[key] = path
        return path

    def cleanup(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
            self._written.clear()


def scope_summary(scope: StateScope) -> dict[str, Any]:
    return {"kind": scope.kind, "label": scope.label, "states": scope.names()}
