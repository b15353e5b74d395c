"""Running a prose step: its text and the state values it names go to the LLM; the reply is a JSON value."""

from __future__ import annotations

import json
import re
from typing import Any

from wfexec.language.prose import Prose, fenced_data
from wfexec.language.paths import PathError, get_path, parse_path
from wfexec.errors import ActionFailed

_MISSING = object()
_ENVIRONMENT_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")   # HOME, PWD: never sent to a model
_ANSWERS = {"boolean": "Reply with only a JSON value: true or false.",
            "value": "Reply with only a JSON value: the result of this step (a string in double quotes, a number, "
                     "true, false, null, a list or an object)."}


def named_values(prose: Prose, scope) -> dict[str, Any]:
    """The state values the text names, by the name written; a name nested in one already given is left out."""
    found: dict[str, Any] = {}
    for name in prose.names:
        first, _, rest = name.partition(".")
        first = first.split("[", 1)[0]
        if first == "env" or _ENVIRONMENT_NAME.match(first):
            continue
        if any(name.startswith(given + ".") or name.startswith(given + "[") for given in found):
            continue
        value = _lookup(scope, name)
        if value is not _MISSING:
            found[name] = value
    return found


def _lookup(scope, name: str) -> Any:
    try:
        parts = parse_path(name)
    except PathError:
        return _MISSING
    try:
        head = scope.resolve(parts[0])
    except KeyError:
        return _MISSING
    value = get_path(head, parts[1:], _MISSING) if len(parts) > 1 else head
    return value


def prose_prompt(prose: Prose, values: dict[str, Any], reply_paths: tuple[str, ...] = ()) -> str:
    """The prompt of a prose field; given `reply_paths` (state the text tells the model to write, which the steps
    after it read), the reply is asked to be an object holding the field's `value` and those paths."""
    return _prompt(prose, values, _with_state(prose.answer, reply_paths) if reply_paths else _ANSWERS[prose.answer])


def _prompt(prose: Prose, values: dict[str, Any], ask: str) -> str:
    """The prose, the state it names, then what the reply must be."""
    parts = [prose.text]
    if values:
        parts.append("## State values named above\n\n```json\n"
                     + json.dumps(values, indent=2, ensure_ascii=False, default=str) + "\n```")
    parts.append(ask)
    return "\n\n".join(parts) + "\n"


def _with_state(answer: str, paths: tuple[str, ...]) -> str:
    listed = "\n".join(f"- `{path}`" for path in paths)
    kind = "true or false" if answer == "boolean" else "the result of this step"
    example = json.dumps({VALUE_KEY: "...", **{path: "..." for path in paths[:2]}})
    return (f"The steps after this one also read these state values, which the text above has you write:\n\n"
            f"{listed}\n\nDo the work above, then reply with only one JSON object: `{VALUE_KEY}` is {kind}, and "
            f"the other keys are those paths with their values, e.g. `{example}`.")


VALUE_KEY = "value"


def value_and_state(reply_value: Any, paths: tuple[str, ...]) -> tuple[Any, dict[str, Any]]:
    """A prose field's value and the state its reply gives for `paths`, from the reply's JSON value: an object
    with `value` and at least one of the paths, else (a model that answered with the value alone) all of it."""
    if isinstance(reply_value, dict) and VALUE_KEY in reply_value and any(path in reply_value for path in paths):
        return reply_value[VALUE_KEY], {path: reply_value[path] for path in paths if path in reply_value}
    return reply_value, {}


def effect_prompt(prose: Prose, values: dict[str, Any], reply_paths: tuple[str, ...]) -> str:
    """A node's work written as prose: the text, the state it names, and what to give back."""
    return _prompt(prose, values,
                   reply_request(reply_paths) if reply_paths else "Do the work above, then reply with a short summary.")


def parse_reply(reply: str, purpose: str) -> Any:
    """The JSON value of the reply: all of it, else its first fenced ```json block (after a sentence of the model's,
    say: fenced_data); ActionFailed when it holds no JSON."""
    whole, body = reply.strip(), fenced_data(reply)
    problem = ""
    for text in dict.fromkeys((whole, body)):
        try:
            return json.loads(text)
        except ValueError as exc:
            problem = f" (its fenced block: {exc})" if text != whole else ""
    shown = " ".join(reply.split())
    raise ActionFailed(f"{purpose}: the LLM's reply is not a JSON value: {shown[:120]!r}{problem}",
                       "the prompt asks for a JSON value (alone, or in a ```json block); check the backend, or write "
                       "the step as an expression")


def reply_request(paths: tuple[str, ...]) -> str:
    """What a judgement step with no `store_as` is asked to return: the values the nodes after it will read."""
    listed = "\n".join(f"- `{path}`" for path in paths)
    example = json.dumps({path: "..." for path in paths[:2]})
    return ("## Reply\n\nThe steps after this one read these state values, which nothing else writes:\n\n"
            f"{listed}\n\nDo the work above, then reply with only one JSON object whose keys are those paths and "
            f"whose values are the results, e.g. `{example}`.")


_ASKED_FOR_OBJECT = ("the prompt asks for one JSON object keyed by the state paths the next steps read; or give the "
                     "node a `store_as` and write those values from it")


def state_updates(reply: str, paths: tuple[str, ...], purpose: str) -> dict[str, Any]:
    """The values a reply gives for `paths` (keys it adds beyond them are ignored: the model writes only what the
    workflow reads); ActionFailed when it is not a JSON object naming at least one of them."""
    try:
        value = parse_reply(reply, purpose)
    except ActionFailed as failure:
        raise ActionFailed(failure.message, _ASKED_FOR_OBJECT) from None
    given = {path: value[path] for path in paths if isinstance(value, dict) and path in value}
    if not given:
        raise ActionFailed(f"{purpose}: the LLM's reply gives none of the values asked for ({', '.join(paths)})",
                           _ASKED_FOR_OBJECT)
    return given
