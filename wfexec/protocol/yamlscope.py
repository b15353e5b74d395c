"""Raymond single-file YAML scopes (reference §2) and the inline `states:` mapping of a node.

A state object is a prompt (`prompt`, plus `allowed_transitions`, `model`,
`effort`, `force_implicit`) or a script (`sh`, and `ps1`/`bat` for other
platforms); both may have `timeout` (seconds without output, 0 = none).
Each becomes a virtual file: `NAME.md` with frontmatter built from its
policy fields (JSON is YAML, so it reads exactly like a prompt file), or
`NAME.sh`. Unknown keys are kept with a warning. An inline mapping may also
give files directly: `START.sh: "echo ..."`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from wfexec.protocol.errors import ScopeError
from wfexec.protocol.scopes import MARKDOWN, SCRIPTS, InlineScope, YamlScope, extension

_STATE_FIELDS = {"prompt", "sh", "ps1", "bat", "allowed_transitions", "model", "effort", "force_implicit", "timeout",
                 "description"}
_POLICY_FIELDS = ("allowed_transitions", "model", "effort", "force_implicit")


def open_yaml(path: Path, label: str) -> YamlScope:
    from wfexec.language.loader import load_file

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
    files, timeouts, warnings = _virtual_states(states, label, objects_only=True, positions=doc.positions)
    scope = YamlScope(label, path.resolve().parent, files, timeouts)
    scope.location = path.resolve()
    scope.warnings = warnings
    scope.manifest = {k: v for k, v in data.items() if k != "states"}  # id, backend, requires_human_input, …
    return scope


def inline_scope(states: dict, label: str, state_dir: Path) -> InlineScope:
    files, timeouts, warnings = _virtual_states(states, label, objects_only=False)
    scope = InlineScope(label, Path(state_dir).resolve(), files, timeouts)
    scope.warnings = warnings
    return scope


def _virtual_states(states: dict, label: str, objects_only: bool, positions: dict | None = None):
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
        where = _placer(positions, ("states", key))
        for file_name, text in _state_object(stem, value, label, warnings, where):
            add(file_name, text)
        timeout = value.get("timeout")
        if timeout is not None:
            for file_name in [n for n in files if os.path.splitext(n)[0] == stem]:
                timeouts[file_name] = (float(timeout), f"`timeout` of state '{stem}' in {label}")
    return files, timeouts, warnings


def _placer(positions: dict | None, prefix: tuple):
    """(line, column) in the YAML file of a path below `prefix`, (0, 0) when not known."""
    def where(path: tuple) -> tuple[int, int]:
        if positions is None:
            return 0, 0
        return positions.get(prefix + path) or positions.get(prefix) or (0, 0)
    return where


def _state_object(name: str, value: dict, label: str, warnings: list, where_in_file=None) -> list[tuple[str, str]]:
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
    _check_policy(front, where, where_in_file)
    if front:
        # JSON is YAML: the frontmatter is built exactly as a prompt file would hold it.
        return [(f"{name}.md", f"---\n{json.dumps(front, ensure_ascii=False, default=str)}\n---\n{prompt}")]
    if prompt.startswith("---"):
        from wfexec.protocol.policy import EMPTY_FRONTMATTER

        # An empty frontmatter, so the prompt's own `---` stays text. `{}`, not nothing: `---` right after `---`
        # would be read with the prompt's first line as YAML (`---\n---\n---\n`), here as by Raymond.
        prompt = EMPTY_FRONTMATTER + prompt
    return [(f"{name}.md", prompt)]


def _check_policy(front: dict, where: str, where_in_file) -> None:
    """Raymond decodes a state's policy fields with the whole file: an entry that is no mapping (`- goto`), a list
    where text goes, a `force_implicit` that is no boolean make the file unreadable, as here."""
    from wfexec.protocol.policy import PolicyError, policy_from_mapping

    try:
        policy_from_mapping(front, where_in_file or (lambda path: (0, 0)))
    except PolicyError as exc:
        at = f" (line {exc.line})" if exc.line else ""
        raise ScopeError(f"{where}{at}: {exc.detail}", exc.hint) from None


def state_unknown_fields(path: Path) -> dict[str, list[str]]:
    """For each state of a Raymond YAML file, the keys it has that no state field is (lint's unknown-field)."""
    from wfexec.language.loader import load_file

    data = load_file(path).data
    states = data.get("states") if isinstance(data, dict) else None
    if not isinstance(states, dict):
        return {}
    return {str(name): [str(k) for k in value if k not in _STATE_FIELDS]
            for name, value in states.items() if isinstance(value, dict) and any(k not in _STATE_FIELDS for k in value)}
