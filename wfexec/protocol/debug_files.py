"""Raymond's debug files (reference §1.20), written where and as `ray` writes them, so its users' tools (a `tail -f`
on a turn's stream, a look at `transitions.log`) keep working on a wfexec run.

In `.raymond/debug/<workflow id>/` (`.raymond` found upwards from the run's folder, as far as `.git`; made at
the project's root when there is none):

- `<agent>_<state stem>_<NNN>.jsonl`: each JSON object of an LLM turn's stream, appended as it arrives (a
  reminder turn gets its own number);
- `<agent>_<state stem>_<NNN>.stdout.txt`, `.stderr.txt` and `.meta.json` (`exit_code`, `execution_time_ms`,
  `env_vars`: the RAYMOND_* variables and fork attributes the script got) for each script run;
- `transitions.log`: one entry per transition, `<time> [agent] FROM -> TO (tag)` (or `-> (result, terminated)`),
  then its details indented, sorted by name.

`NNN` counts the agent's turns and script runs from 001 within one process, as `ray`'s does. A file that cannot
be written is said once on stderr; the run goes on.
"""

from __future__ import annotations

import _thread  # a lock, without importing threading for a lone agent, whose turns come from this thread
import json
import os
from pathlib import Path

from wfexec.protocol.scopes import extension
from wfexec.system.clock import local_now

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable
    from wfexec.protocol.agents import Agent


class DebugFiles:
    def __init__(self, base_cwd: str, workflow_id: Callable[[], str], warn: Callable[[str], None]):
        self._base_cwd = base_cwd
        self._workflow_id = workflow_id   # read when the first file is written: a resumed run's id is known late
        self._warn = warn
        self._folder: Path | None = None
        self._folder_text = ""  # the folder's path as text, once made: every file's path starts with it
        self._steps: dict[str, int] = {}
        self._lock = _thread.allocate_lock()  # turns of concurrent agents stream from threads

    def folder(self) -> Path:
        if self._folder is None:
            from wfexec.protocol.raymond_dir import find_raymond_dir

            raymond = find_raymond_dir(self._base_cwd, create=True)
            assert raymond is not None  # made when missing
            self._folder = raymond / "debug" / self._workflow_id()
            self._folder.mkdir(parents=True, exist_ok=True)
            self._folder_text = str(self._folder)
        return self._folder

    def _path(self, name: str) -> str:
        if self._folder is None:
            self.folder()
        return os.path.join(self._folder_text, name)

    def step_name(self, agent: "Agent") -> str:
        """`<agent>_<state stem>_<NNN>` for the agent's next turn or script run."""
        with self._lock:
            self._steps[agent.id] = number = self._steps.get(agent.id, 0) + 1
        state = agent.state
        stem = state[: -len(extension(state))] if extension(state) else state
        return f"{agent.id}_{stem}_{number:03d}"

    def stream_writer(self, agent: "Agent") -> Callable[[Any], None]:
        """Appends each stream object of one LLM turn to its `.jsonl` file as it arrives."""
        path = self._path(f"{self.step_name(agent)}.jsonl")

        def write(event: Any) -> None:
            self._append(path, json.dumps(event, ensure_ascii=False) + "\n")

        return write

    def script(self, agent: "Agent", env: dict | None, stdout: str, stderr: str, exit_code: int | None,
               seconds: float | None) -> None:
        """The files of one script run; `env` is the environment it ran with."""
        env = raymond_variables(env or {}, agent.fork_attributes)
        base = self._path(self.step_name(agent))
        self._write(base + ".stdout.txt", stdout)
        self._write(base + ".stderr.txt", stderr)
        self._write(base + ".meta.json", _meta_json(exit_code, round((seconds or 0.0) * 1000, 3), env))

    def transition(self, before: "Agent", after: "Agent", workers: list, transitions: list, kind: str) -> None:
        stamp = local_now("%Y-%m-%dT%H:%M:%S.%f")
        details: dict[str, Any] = {"state_type": kind}
        if len(transitions) > 1:
            tag, details["fork_count"] = "multi-fork", len(workers)
        else:
            tag = transitions[0].tag if transitions else "?"
            if tag == "result":
                details["result_payload"] = transitions[0].payload
            if workers:
                details["spawned_agent_id"] = workers[0].id
        line = f"{stamp} [{before.id}] {before.state} -> " + \
            ("(result, terminated)" if after.status == "ended" else f"{after.state} ({tag})")
        text = line + "\n" + "".join(f"  {key}: {details[key]}\n" for key in sorted(details)) + "\n"
        self._append(self._path("transitions.log"), text)

    # Each file written with os.open and os.write: a file object costs a stat, an isatty and a seek more, and a
    # run of a thousand forked agents writes four thousand times.
    def _append(self, path: str, text: str) -> None:
        try:
            with self._lock:
                _write_file(path, os.O_APPEND, 0o666, text)  # 0o666: as open(path, "a") makes it
        except OSError as exc:
            self._warn(f"debug file {path} cannot be written: {exc.strerror or exc}")

    def _write(self, path: str, text: str) -> None:
        try:
            _write_file(path, os.O_TRUNC, 0o600, text)
        except OSError as exc:
            self._warn(f"debug file {path} cannot be written: {exc.strerror or exc}")


def _write_file(path: str, how: int, mode: int, text: str) -> None:
    data = text.encode()  # strict UTF-8, as the text files wrote it
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | how, mode)
    try:
        written = os.write(fd, data)
        while written < len(data):
            written += os.write(fd, data[written:])
    finally:
        os.close(fd)


def _meta_json(exit_code: int | None, milliseconds: float, env_vars: dict[str, str]) -> str:
    """`json.dumps(meta, indent=2, ensure_ascii=False)` of a script run's meta.json: an indented dump runs in
    Python, not in json's C encoder, which dumps each value here."""
    from json.encoder import encode_basestring as quoted  # what ensure_ascii=False writes a string as

    variables = ",\n".join(f"    {quoted(k)}: {quoted(v)}" for k, v in env_vars.items())
    return (f'{{\n  "exit_code": {json.dumps(exit_code)},\n  "execution_time_ms": {json.dumps(milliseconds)},\n'
            '  "env_vars": ' + (f"{{\n{variables}\n  }}" if variables else "{}") + "\n}")


def raymond_variables(env: dict, fork_attributes: dict | None) -> dict:
    """What `ray`'s meta.json lists as a script's env_vars: the RAYMOND_* variables and the fork attributes."""
    names = set(fork_attributes or ()) | {k for k in env if k.startswith("RAYMOND_") and k != "RAYMOND_RESULT"}
    return {k: env[k] for k in sorted(names) if k in env}
