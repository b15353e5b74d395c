"""`wfexec run … --record-case tests/NAME.yaml`: a test case for `wfexec test`, written from a real run.

The run goes as any run goes (answers given up front or typed at the terminal, an LLM backend or none); a
`CaseRecorder` stands in as its backend to hear what a case needs to run the same way again — each answer as it
is used (the engine tells a backend through `record_answer`, as it tells `--record`'s cassette) and each LLM
reply — and passes every LLM call on to the backend the command line chose. A workflow without LLM steps needs
no backend: an LLM call with none stops the run, as without `--record-case`. When the run ends (or parks, or
fails), the case is written: its inputs, `set` values, answers, replies, and what it expects — the ending, its
status, the ending's output, and the final state at the paths `--record-state` names that the run wrote (every
key of the state but `history` and `checkpoints` without one). A file that already holds cases keeps them; a case of the same
name is replaced.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wfexec.backends.base import Backend, BackendUnavailable, LLMReply, LLMRequest, invoke_backend

# Parts of the state a run keeps for itself: timestamps and copies, which no case could expect twice.
_NOT_RECORDED = ("history", "checkpoints")


class CaseRecorder(Backend):
    """The run's backend while it is recorded as a case: hears answers and replies, asks `inner` (if any)."""

    name = "record-case"

    def __init__(self, inner: Any):
        self.inner = inner
        self.answers: dict[str, list] = {}
        self.replies: list[Any] = []

    def describe(self) -> str:
        inner = self.inner.describe() if hasattr(self.inner, "describe") else "no LLM backend"
        return f"{inner}, recorded as a test case"

    def __getattr__(self, name: str) -> Any:
        # What the backend chosen offers besides (a replayed cassette's answers and clock): its own.
        inner = self.__dict__.get("inner")
        if inner is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(inner, name)

    async def invoke(self, request: LLMRequest) -> LLMReply:
        if self.inner is None:
            raise BackendUnavailable("this step needs an LLM backend, and none is configured",
                                     "give one with --backend (or --replay FILE) beside --record-case")
        reply = await invoke_backend(self.inner, request)
        if request.agent_id or request.state:
            self.replies.append({"reply": reply.text, **({"agent": request.agent_id} if request.agent_id else {}),
                                 **({"state": request.state} if request.state else {})})
        else:
            self.replies.append(reply.text)
        return reply

    def record_answer(self, node: str, answer: Any) -> None:
        self.answers.setdefault(node, []).append(answer)
        passed_on = getattr(self.inner, "record_answer", None)
        if passed_on is not None:  # --record beside it keeps its cassette whole
            passed_on(node, answer)

    def record_clock(self, node: str, ms: int) -> None:
        passed_on = getattr(self.inner, "record_clock", None)
        if passed_on is not None:
            passed_on(node, ms)


def case_from(recorder: CaseRecorder, *, inputs: dict, overrides: dict, status: str, ending: str | None,
              output: Any, state: dict | None, state_paths: list[str]) -> dict:
    """The case: what the run was given and what it came to."""
    answers = {node: values[0] if len(values) == 1 else values for node, values in recorder.answers.items()}
    case: dict[str, Any] = {"name": case_name(answers, inputs, ending or status)}
    if inputs:
        case["inputs"] = inputs
    if overrides:
        case["set"] = overrides
    if answers:
        case["answers"] = answers
    if recorder.replies:
        case["replies"] = list(recorder.replies)
    expect: dict[str, Any] = {}
    if ending is not None:
        expect["ending"] = ending
    expect["status"] = status
    if output is not None:
        expect["output"] = output
    recorded_state = _state_at(state, state_paths)
    if recorded_state:
        expect["state"] = recorded_state
    case["expect"] = expect
    return case


def case_name(answers: dict, inputs: dict, outcome: str) -> str:
    """`small, no → done`: the answers (else the inputs) that led to the outcome."""
    given = [str(v) for values in answers.values() for v in (values if isinstance(values, list) else [values])]
    given = given or [f"{key}={value}" for key, value in inputs.items()]
    return (", ".join(given) + " → " if given else "") + outcome


def _state_at(state: dict | None, paths: list[str]) -> dict:
    from wfexec.language.paths import get_path, parse_path

    if not isinstance(state, dict):
        return {}
    if not paths:
        return {key: value for key, value in state.items() if key not in _NOT_RECORDED and value not in ({}, [], None)}
    found = {}
    missing = object()
    for path in paths:
        value = get_path(state, parse_path(path), missing)
        if value is not missing:  # a path the run never wrote: no case could say what it expects there
            found[path] = value
    return found


# Words YAML 1.1 tools (PyYAML, many editors) read as booleans or null: quoted, so an answer `no` stays a string.
_YAML11_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}


def _string(representer, text: str):
    style = "'" if text.lower() in _YAML11_WORDS else None
    return representer.represent_scalar("tag:yaml.org,2002:str", text, style=style)


def _yaml():
    from ruamel.yaml import YAML

    yaml = YAML()  # round trip: the file's comments and layout stay
    yaml.width = 110
    yaml.representer.add_representer(str, _string)
    return yaml


def _cases_of(file: Path, yaml) -> Any:
    """The test file's data (`cases:` a list), {"cases": []} when there is no file; ValueError saying why the
    file cannot take a case (not YAML, not a test file, unreadable)."""
    from ruamel.yaml.error import YAMLError

    from wfexec.system.files import unwritable

    why = unwritable(file)
    if why is not None:
        raise ValueError(f"{file} {why}; name a file in a folder you can write")
    if not file.exists():
        return {"cases": []}
    try:
        data = yaml.load(file.read_text(encoding="utf-8")) or {"cases": []}
    except YAMLError as exc:
        raise ValueError(f"{file} is not YAML ({str(exc).splitlines()[0]}); name another file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{file} cannot be read ({getattr(exc, 'strerror', None) or exc}); name another file") \
            from None
    if not isinstance(data, dict) or not isinstance(data.get("cases", []), list):
        raise ValueError(f"{file} is not a test file (a mapping with `cases:`); name another file")
    data.setdefault("cases", [])
    return data


def case_file_problem(file: Path) -> str | None:
    """Why `--record-case FILE` could not take a case (checked before the run, so its work is not done for a case
    that would be lost), or None."""
    try:
        _cases_of(file, _yaml())
    except ValueError as exc:
        return str(exc)
    return None


def write_case(file: Path, case: dict) -> str:
    """Add `case` to the test file (made if missing; a case of the same name replaced; its comments kept); what
    was done, to say. ValueError (an OSError when the write itself fails) says why it was not written."""
    import io

    from wfexec.system.files import write_atomic

    yaml = _yaml()
    data = _cases_of(file, yaml)
    cases = data["cases"]
    same = [i for i, c in enumerate(cases) if isinstance(c, dict) and c.get("name") == case["name"]]
    for index in reversed(same):
        del cases[index]
    cases.append(case)
    text = io.StringIO()
    yaml.dump(data, text)
    write_atomic(file, text.getvalue())
    return f"{file}: case '{case['name']}' {'replaced' if same else 'written'}"
