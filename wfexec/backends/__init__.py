"""LLM backends (DESIGN §4): `claude`, `pi`, `command`, `replay`, and recording.

`create_backend(spec, record=..., replay=...)` turns the command line into a backend:

| spec | backend |
|---|---|
| `claude` | the Claude Code CLI (`claude -p --output-format json`) |
| `claude:model=opus,effort=high,permission_mode=acceptEdits,executable=/path/claude,timeout=900` | the same, configured |
| `pi` or `pi:provider=anthropic,thinking=low,tools=read+grep` | the pi coding agent (`pi --mode json`) |
| `command:./my-llm --flag` | any program: prompt on stdin, reply on stdout |
| `replay:cassette.yaml` (or `replay=cassette.yaml`) | answers from a recorded cassette |

`record=FILE` wraps the chosen backend and writes every reply to a cassette.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wfexec.backends.base import Backend, BackendError, BackendUnavailable, LLMReply, LLMRequest, invoke_backend, run_sync

__all__ = ["Backend", "BackendError", "BackendUnavailable", "LLMReply", "LLMRequest", "create_backend",
           "invoke_backend", "run_sync"]

SPEC_HELP = "use claude, claude:model=opus, pi, pi:provider=anthropic, command:PROGRAM [ARGS], or replay:CASSETTE.yaml"
_CLAUDE_OPTIONS = {"model", "effort", "permission_mode", "permission", "executable", "timeout"}


def create_backend(spec: str | None, *, record: str | Path | None = None, replay: str | Path | None = None) -> Any:
    """The backend a command line asks for, or None when it asks for none. Raises ValueError for a bad spec."""
    if replay is not None and spec:
        raise ValueError(f"give --backend or --replay, not both (--backend {spec} --replay {replay})")
    if replay is not None and record is not None:
        raise ValueError("--record and --replay cannot be combined: a replay has nothing new to record")
    backend = _replay(replay) if replay is not None else _from_spec(spec)
    if record is not None:
        if backend is None:
            raise ValueError("--record needs a backend to record, e.g. --backend claude")
        if isinstance(backend, _replay_class()):
            raise ValueError("--record and replay:... cannot be combined: a replay has nothing new to record")
        from wfexec.backends.replay import RecordingBackend

        backend = RecordingBackend(backend, record)
    return backend


def _replay_class():
    from wfexec.backends.replay import ReplayBackend

    return ReplayBackend


def _replay(path) -> Any:
    from wfexec.backends.replay import CassetteError, ReplayBackend

    if not Path(path).is_file():
        raise ValueError(f"cassette {path} does not exist")
    try:
        return ReplayBackend(path)
    except CassetteError as exc:
        raise ValueError(str(exc)) from None


def _from_spec(spec: str | None) -> Any:
    if spec is None or not spec.strip():
        return None
    spec = spec.strip()
    name, _, rest = spec.partition(":")
    if name == "claude":
        return _claude(rest)
    if name == "pi":
        return _pi(rest)
    if name == "command":
        from wfexec.backends.command import CommandBackend

        if not rest.strip():
            raise ValueError(f"backend '{spec}' names no program; write command:PROGRAM [ARGS]")
        return CommandBackend.from_text(rest)
    if name == "replay":
        if not rest.strip():
            raise ValueError("backend 'replay:' names no cassette; write replay:FILE.yaml")
        return _replay(rest.strip())
    raise ValueError(f"unknown LLM backend '{spec}'; {SPEC_HELP}")


def _pi(options_text: str) -> Any:
    from wfexec.backends.pi import PiBackend

    return PiBackend.from_options(_options(options_text, "pi"))


def _options(text: str, backend: str) -> dict:
    """`key=value,key=value` (lists joined with +)."""
    options = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"{backend} backend option '{part}': write key=value, separated by commas")
        options[key.strip()] = value.strip()
    return options


def _claude(options_text: str) -> Any:
    from wfexec.backends.claude import ClaudeBackend

    options: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in options_text.split(","))):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in _CLAUDE_OPTIONS:
            raise ValueError(f"claude backend option '{part}' is not one of: {', '.join(sorted(_CLAUDE_OPTIONS))} "
                             "(write key=value, separated by commas)")
        options["permission_mode" if key == "permission" else key] = value.strip()
    if "timeout" in options:
        try:
            options["timeout"] = float(options["timeout"])
        except ValueError:
            raise ValueError(f"claude backend timeout '{options['timeout']}' is not a number of seconds") from None
    return ClaudeBackend(**options)
