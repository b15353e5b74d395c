"""`wfexec convert` (also `wfexec states convert`): a states folder or zip into one Raymond `.yaml` (`ray convert`),
and a Raymond `.yaml` back into a folder.

Folder → YAML, as `ray convert` does: states ordered by distance from the entry point (those it cannot reach
last, by name), `.md` frontmatter fields beside each `prompt` (targets, `return` and `next` without their
extension), scripts as `sh` (`ps1`, `bat`), the `workflow.yaml` manifest's fields kept at the top; `README.md` is
skipped, any other file that is no state is a warning. YAML → folder: each state as its file (a prompt's fields
as its frontmatter), the manifest fields as `workflow.yaml`; a state's `timeout` and `description`, which a
folder has no place for, are warnings. The result is read back before it is written, so a conversion that would
not run the same states is never written.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from wfexec.protocol.errors import ScopeError
from wfexec.protocol.scopes import MARKDOWN, StateScope, YamlScope, extension

SCRIPT_KEYS = ("sh", "ps1", "bat")
# `ray convert`'s order for the manifest's fields; any other key follows
MANIFEST_ORDER = ("id", "name", "description", "default_budget", "requires_human_input", "working_directory",
                  "environment", "input", "backend")
_STATE_EXTENSIONS = (MARKDOWN, *(f".{k}" for k in SCRIPT_KEYS))


def folder_to_yaml(scope: StateScope) -> tuple[str, list[str]]:
    """The Raymond `.yaml` text of a folder or zip scope, and warnings."""
    from wfexec.language.loader import load_text
    from wfexec.protocol.manifest import MANIFEST, scope_manifest
    from wfexec.protocol.policy import split_frontmatter

    if isinstance(scope, YamlScope):
        raise ScopeError(f"{scope.describe()} is already a YAML workflow", "give a folder or a .zip")
    warnings: list[str] = []
    groups: dict[str, dict[str, Any]] = {}
    for name in scope.names():
        ext = extension(name)
        if name.lower() == MANIFEST or name.lower() == "readme.md":
            continue
        if ext not in _STATE_EXTENSIONS:
            warnings.append(f"skipping {name}: not a state")
            continue
        stem = name[: -len(ext)]
        state = groups.setdefault(stem, {})
        text = scope.read_text(name)
        if ext != MARKDOWN:
            state[ext[1:]] = text
            continue
        raw, body = split_frontmatter(text)
        fields = load_text(raw, f"{name} frontmatter").data if raw and raw.strip() else None
        if fields is not None and not isinstance(fields, dict):
            raise ScopeError(f"{name}: its frontmatter is not a mapping, so it cannot become state fields")
        if not body.strip():
            raise ScopeError(f"{name} has no prompt text; a Raymond .yaml state needs one")
        state["prompt"] = body
        for key, value in (fields or {}).items():
            state[str(key)] = _plain_targets(value) if key == "allowed_transitions" else value
    mixed = sorted(stem for stem, state in groups.items() if "prompt" in state and set(state) & set(SCRIPT_KEYS))
    if mixed:
        raise ScopeError(f"state {mixed[0]} is both a prompt and a script in {scope.describe()}",
                         "a .yaml state is one or the other: rename one of the files")
    order = _by_distance(scope, list(groups))
    document: dict[str, Any] = {}
    manifest = scope_manifest(scope) or {}
    for key in sorted(manifest, key=lambda k: (MANIFEST_ORDER.index(k) if k in MANIFEST_ORDER else len(MANIFEST_ORDER),
                                               str(k))):
        if key != "states":
            document[key] = manifest[key]
    document["states"] = {stem: _state_fields(groups[stem]) for stem in order}
    return dump_yaml(document), warnings


def _state_fields(state: dict) -> dict:
    """prompt (or the scripts in the order sh, ps1, bat) first, then the policy fields."""
    first = ["prompt", *SCRIPT_KEYS]
    return {k: state[k] for k in [*(k for k in first if k in state), *(k for k in state if k not in first)]}


def _plain_targets(entries: Any) -> Any:
    """allowed_transitions with `target`, `return` and `next` as state names (a cross-workflow target is a path)."""
    from wfexec.protocol.tags import WORKFLOW_TAGS

    if not isinstance(entries, list):
        return entries
    out = []
    for entry in entries:
        if isinstance(entry, dict):
            entry = dict(entry)
            for key in ("target", "return", "next"):
                value = entry.get(key)
                if isinstance(value, str) and not (key == "target" and entry.get("tag") in WORKFLOW_TAGS):
                    entry[key] = value[: -len(extension(value))] if extension(value) in _STATE_EXTENSIONS else value
        out.append(entry)
    return out


def _by_distance(scope: StateScope, stems: list[str]) -> list[str]:
    """The states by their distance from the entry point (breadth first), the unreachable last; ties by name."""
    from wfexec.protocol.lint import state_transitions
    from wfexec.protocol.scopes import entry_point
    from wfexec.protocol.tags import WORKFLOW_TAGS

    def stem(name: str) -> str:
        return name[: -len(extension(name))] if extension(name) in _STATE_EXTENSIONS else name

    edges: dict[str, list[str]] = {}
    for name, transitions in state_transitions(scope).items():
        for t in transitions:
            targets = [t.target] if t.tag not in WORKFLOW_TAGS and t.tag != "result" else []
            targets += [t.attributes[k] for k in ("return", "next", "timeout_next") if t.attributes.get(k)]
            edges.setdefault(stem(name), []).extend(stem(x) for x in targets)
    distance = {stem(entry_point(scope)): 0}
    frontier = list(distance)
    while frontier:
        following = []
        for here in frontier:
            for there in edges.get(here, []):
                if there not in distance:
                    distance[there] = distance[here] + 1
                    following.append(there)
        frontier = following
    return sorted(stems, key=lambda s: (distance.get(s, len(stems) + 1), s))


def yaml_to_folder(path: Path, into: Path) -> list[str]:
    """Write the states of the Raymond `.yaml` at `path` as files in the new folder `into`; return warnings.
    The files are written into a temporary folder beside `into`, read back (`_same_states`), and only then
    renamed to `into`: a conversion that fails on the way leaves nothing behind."""
    import os
    import shutil
    import tempfile

    from wfexec.language.loader import load_file
    from wfexec.protocol.policy import EMPTY_FRONTMATTER
    from wfexec.protocol.scopes import open_scope
    from wfexec.system.files import cannot_write, make_output_folder, new_folder_mode

    scope = open_scope(path, str(path))  # a malformed file is refused as `wfexec states` would refuse it
    if into.exists() and (not into.is_dir() or any(into.iterdir())):
        raise ScopeError(f"{into} exists and is not an empty folder", "choose a new folder with --output")
    data = load_file(path).data
    warnings: list[str] = []
    files: dict[str, str] = {}
    for name, state in data["states"].items():
        for dropped in ("timeout", "description"):
            if dropped in state:
                warnings.append(f"state {name}: `{dropped}` dropped (a folder's state files have no place for it)")
        scripts = [k for k in SCRIPT_KEYS if k in state]
        if scripts:
            files.update((f"{name}.{k}", state[k]) for k in scripts)
            continue
        front = {k: v for k, v in state.items() if k not in ("prompt", "timeout", "description")}
        prompt = state["prompt"]
        if front:
            files[f"{name}{MARKDOWN}"] = "---\n" + dump_yaml(front) + "---\n" + prompt
        else:
            files[f"{name}{MARKDOWN}"] = (EMPTY_FRONTMATTER if prompt.startswith("---") else "") + prompt
    manifest = {k: v for k, v in data.items() if k != "states"}
    if manifest:
        files["workflow.yaml"] = dump_yaml(manifest)
    parent = into.absolute().parent
    make_output_folder(parent, option="--output")  # CannotWrite: under a file, or not this user's to write in
    try:
        scratch = Path(tempfile.mkdtemp(prefix=f".{into.name}.", suffix=".tmp", dir=parent))
    except OSError as exc:
        raise cannot_write(into, exc, folder=True, option="--output") from None
    try:
        for name, text in files.items():
            (scratch / name).write_text(text, encoding="utf-8")
        os.chmod(scratch, new_folder_mode())  # mkdtemp's 0700 would keep others out of the folder
        _same_states(scope, open_scope(scratch, str(into)))
        os.rename(scratch, into)  # over an empty folder too
    except OSError as exc:
        shutil.rmtree(scratch, ignore_errors=True)
        raise cannot_write(into, exc, folder=True, option="--output") from None
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return warnings



def dump_yaml(data: Any) -> str:
    """Block YAML with multi-line text as `|` blocks and each allowed_transitions entry on one line."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.scalarstring import LiteralScalarString

    def shaped(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            mapping = CommentedMap((k, shaped(v, str(k))) for k, v in value.items())
            return mapping
        if isinstance(value, list):
            items = [shaped(v) for v in value]
            if key == "allowed_transitions":
                for item in items:
                    if isinstance(item, CommentedMap):
                        item.fa.set_flow_style()
            return items
        if isinstance(value, str) and "\n" in value and _literal_safe(value):
            return LiteralScalarString(value)
        return value

    yaml = YAML()
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    out = io.StringIO()
    yaml.dump(shaped(data), out)
    return out.getvalue()


def _literal_safe(text: str) -> bool:
    """Whether a `|` block keeps `text` exactly: no trailing spaces on a line, no tabs or lone CRs at risk."""
    return not any(line != line.rstrip(" \t") for line in text.split("\n")) and "\r" not in text


def convert_command(path: Path, output: Path | None) -> int:
    """`wfexec convert PATH [-o OUT]`: print or write the conversion; exit 2 (with the reason) when it cannot be
    made."""
    import sys
    import tempfile

    from wfexec.errors import CannotRead, CannotWrite
    from wfexec.exit_codes import exit_code_for
    from wfexec.protocol.scopes import open_scope
    from wfexec.system.files import check_readable, check_writable, write_output

    try:
        check_readable(path)  # CannotRead, before open_scope's is_dir raises PermissionError
        scope = open_scope(path, str(path))
        if isinstance(scope, YamlScope):
            into = output or path.with_suffix("")
            warnings = yaml_to_folder(path, into)  # read back before it is renamed into place
            message = f"{path}: written as the folder {into}"
        else:
            if output is not None:
                check_writable(output, option="--output")  # -o names the .yaml to write
            text, warnings = folder_to_yaml(scope)
            with tempfile.TemporaryDirectory(prefix="wfexec-convert-") as scratch:
                check = Path(scratch, "converted.yaml")
                check.write_text(text, encoding="utf-8")
                _same_states(scope, open_scope(check, str(output or check.name)))
            message = f"{path}: written as {output}" if output else ""
    except (ScopeError, CannotRead, CannotWrite) as exc:
        print(exc.format(), file=sys.stderr)
        return exit_code_for(exc)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if not isinstance(scope, YamlScope):
        if output is None:
            sys.stdout.write(text)
        else:
            try:
                write_output(output, text, option="--output")
            except CannotWrite as exc:
                print(exc.format(), file=sys.stderr)
                return exit_code_for(exc)
    if message:
        print(message, file=sys.stderr)
    return 0


def _same_states(before: StateScope, after: StateScope) -> None:
    """Raise ScopeError unless `after` holds the states of `before` with the same prompts and scripts."""
    from wfexec.protocol.policy import parse_frontmatter

    def states(scope: StateScope) -> dict[str, str]:
        found = {}
        for name in scope.names():
            if extension(name) in _STATE_EXTENSIONS and name.lower() != "readme.md":
                text = scope.read_text(name)
                found[name] = parse_frontmatter(text)[1] if extension(name) == MARKDOWN else text
        return found

    old, new = states(before), states(after)
    if old != new:
        differ = sorted(n for n in set(old) | set(new) if old.get(n) != new.get(n))
        raise ScopeError(f"the conversion would change {', '.join(differ[:5])}; nothing was written",
                         "a bug in wfexec convert: please report it with the folder")
