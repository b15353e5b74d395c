"""Running a prose step: its text and the state values it names go to the LLM; the reply is a JSON value."""

from __future__ import annotations

import json
import re
from typing import Any

from wfexec.language.prose import Prose
from wfexec.language.paths import PathError, get_path, parse_path
from wfexec.types.registry import ActionFailed

_MISSING = object()
_FENCE = re.compile(r"^```[A-Za-z]*\s*\n(.*?)\n?```$", re.S)
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


def prose_prompt(prose: Prose, values: dict[str, Any]) -> str:
    parts = [prose.text]
    if values:
        parts.append("## State values named above\n\n```json\n"
                     + json.dumps(values, indent=2, ensure_ascii=False, default=str) + "\n```")
    parts.append(_ANSWERS[prose.answer])
    return "\n\n".join(parts) + "\n"


def parse_reply(reply: str, purpose: str) -> Any:
    """The JSON value of the reply (a fenced ```json block is unwrapped); ActionFailed when it is not JSON."""
    text = reply.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        return json.loads(text)
    except ValueError:
        shown = " ".join(reply.split())
        raise ActionFailed(f"{purpose}: the LLM's reply is not a JSON value: {shown[:120]!r}",
                           "the prompt asks for a JSON value only; check the backend, or write the step as an "
                           "expression") from None
