"""`.raymond/config.toml`, read as `ray` reads it, for `wfexec states` (and `wfexec run` on a states folder).

The file is found upwards from the working directory, as far as the folder holding `.git`
(`wfexec.protocol.raymond_dir`). Its `[raymond]` table gives defaults that a command-line flag overrides:

| key | flag | wfexec |
|---|---|---|
| `budget` (USD, 0 = none) | `--budget-usd` | the run's budget |
| `model` (opus, sonnet, haiku) | `--model` | `.md` states' model, under their frontmatter |
| `effort` (low, medium, high) | `--effort` | the same, for effort |
| `timeout` (seconds, 0 = none) | `--timeout` | the inactivity timeout |
| `dangerously_skip_permissions` (bool) | `--[no-]dangerously-skip-permissions` | false: Claude Code's acceptEdits, pi's default tools |
| `no_debug`, `no_wait` (bool) | `--no-debug`, `--no-wait` | true turns them on (false cannot turn a flag off) |

`name`, `verbose`, `task_folder_pattern` and the `[raymond.serve]` table are `ray`'s too but do nothing here: each
is a warning naming it, as is a key `ray` does not know. A value of the wrong type, or outside its set, is an error
naming the file and key, as is TOML that does not parse.
"""

from __future__ import annotations

import os
import re
import sys
from wfexec.records import dataclass, field
from pathlib import Path

from wfexec.errors import WfexecError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MODELS = ("opus", "sonnet", "haiku")
EFFORTS = ("low", "medium", "high")
_NUMBERS = ("budget", "timeout")
_FLAGS = ("dangerously_skip_permissions", "no_debug", "no_wait")
# ray's keys wfexec reads nothing from, and why
_IGNORED = {
    "name": "wfexec sets no terminal title",
    "verbose": "`ray` reads nothing from it either; --trace shows each state",
    "task_folder_pattern": "wfexec's task folders are .wfexec/tasks/<workflow id>/<agent>",
}


class ConfigError(WfexecError):
    """`.raymond/config.toml` cannot be used: TOML that does not parse, or a value of the wrong kind."""


@dataclass
class RaymondConfig:
    path: Path | None = None
    values: dict = field(default_factory=dict)     # the keys wfexec uses, checked
    warnings: list = field(default_factory=list)   # one line per key that does nothing here

    def source(self, key: str) -> str:
        """How a message names where `key` was set."""
        return f"config file {self.path}"


def load_config(cwd: str | os.PathLike | None = None) -> RaymondConfig:
    """The `[raymond]` table of the project's `.raymond/config.toml`; an empty config when there is none."""
    from wfexec.protocol.raymond_dir import find_raymond_dir

    folder = find_raymond_dir(cwd)
    path = folder / "config.toml" if folder is not None else None
    if path is None or not path.is_file():
        return RaymondConfig()
    # Only when there is a file to parse: most projects have none, and `wfexec states` starts once per question.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # the same parser, before it joined the standard library
        import tomli as tomllib
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except OSError as exc:
        raise ConfigError(f"cannot be read: {exc.strerror or exc}", where=_Where(str(path))) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        place = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        where = _Where(str(path), int(place.group(1)), int(place.group(2))) if place else _Where(str(path))
        raise ConfigError(f"not valid TOML: {re.sub(r' [(]at line.*', '', str(exc))}",
                          "fix the line, or move the file away", where=where) from None
    section = data.get("raymond")
    config = RaymondConfig(path)

    def at(key: str) -> "_Where":
        """The line that sets `key`, for the error's position."""
        found = re.search(rf"^[ \t]*{re.escape(key)}[ \t]*=", text, re.M)
        return _Where(str(path), text.count("\n", 0, found.start()) + 1, 1) if found else _Where(str(path))
    if section is None:
        if data:
            config.warnings.append(f"{path}: has no [raymond] table; its {', '.join(sorted(data))} "
                                   f"{'is' if len(data) == 1 else 'are'} not read")
        return config
    if not isinstance(section, dict):
        raise ConfigError("`raymond` must be a table ([raymond]), not a value", where=_Where(str(path)))
    for key, value in section.items():
        if key == "serve" and isinstance(value, dict):
            if value:
                config.warnings.append(f"{path}: [raymond.serve] {', '.join(sorted(value))}: `ray serve`'s "
                                       "settings; `wfexec serve` takes its own flags")
        elif key in _IGNORED:
            _check_type(at(key), key, value, str if key != "verbose" else bool)
            config.warnings.append(f"{path}: `{key}` does nothing in wfexec ({_IGNORED[key]})")
        elif key in _NUMBERS:
            number = _check_type(at(key), key, value, float)
            if number != number or number in (float("inf"), float("-inf")):  # TOML's nan and inf
                raise ConfigError(f"`{key}` must be a finite number, not {value}", where=at(key))
            if number < 0:
                meaning = "0 = no budget" if key == "budget" else "0 = no timeout"
                raise ConfigError(f"`{key}` must be 0 or more ({meaning}), not {value}", where=at(key))
            config.values[key] = float(number)
        elif key in _FLAGS:
            config.values[key] = _check_type(at(key), key, value, bool)
        elif key in ("model", "effort"):
            allowed = MODELS if key == "model" else EFFORTS
            word = _check_type(at(key), key, value, str)
            if word not in allowed:
                raise ConfigError(f"`{key}` must be one of {', '.join(allowed)} (lower case), not {word!r}",
                                  where=at(key))
            config.values[key] = word
        else:
            config.warnings.append(f"{path}: `{key}` is not a [raymond] key (known: budget, model, effort, timeout, "
                                   "dangerously_skip_permissions, no_debug, no_wait, name, verbose, "
                                   "task_folder_pattern); ignored")
    return config


def _check_type(where: "_Where", key: str, value: Any, kind: type) -> Any:
    if kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    else:
        ok = isinstance(value, kind)
    if not ok:
        wanted = {float: "a number", bool: "true or false", str: "a string"}[kind]
        raise ConfigError(f"`{key}` must be {wanted}, not {value!r}", where=where)
    return value


@dataclass(frozen=True)
class _Where:
    file: str
    line: int | None = None
    column: int | None = None


@dataclass
class StatesLaunch:
    """What a `wfexec states` run is launched with, each from its flag, else the config file, else the default;
    `timeout_source` says which (a timeout error names it)."""

    budget_usd: float | None = None
    model: str | None = None
    effort: str | None = None
    timeout: float | None = None
    timeout_source: str | None = None
    no_wait: bool = False
    debug: bool = True
    skip_permissions: bool = True


def merge(config: RaymondConfig, *, budget_usd: float | None, model: str | None, effort: str | None,
          timeout: float | None, no_wait: bool, no_debug: bool, skip_permissions: bool | None = None
          ) -> StatesLaunch:
    """The flags over the config file over the defaults (`ray`'s MergeConfig)."""
    values = config.values
    launch = StatesLaunch(
        # ray's `budget = 0` is no budget; a --budget-usd of 0 keeps wfexec's meaning (no LLM call at all)
        budget_usd=budget_usd if budget_usd is not None else (values.get("budget") or None),
        model=model or values.get("model"), effort=effort or values.get("effort"),
        no_wait=no_wait or bool(values.get("no_wait")),
        debug=not (no_debug or bool(values.get("no_debug"))),
        skip_permissions=skip_permissions if skip_permissions is not None else
        values.get("dangerously_skip_permissions", True))
    if timeout is not None:
        launch.timeout, launch.timeout_source = timeout, "the --timeout flag"
    elif "timeout" in values:
        launch.timeout, launch.timeout_source = values["timeout"], config.source("timeout")
    return launch
