"""`{{name}}` substitution in prompt bodies and implicit `input` attributes.

One pass (DESIGN §4): a value that itself contains `{{other}}` is inserted as
written, never substituted again. A name with no value stays as it is, so a
prompt that mentions `{{input}}` before any input exists reads literally.
"""

from __future__ import annotations

import re
from typing import Mapping

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


def render(text: str, values: Mapping[str, str]) -> str:
    if "{{" not in text:
        return text

    def value_of(match: re.Match) -> str:
        value = values.get(match.group(1))
        return match.group(0) if value is None else value

    return _PLACEHOLDER.sub(value_of, text)


def template_values(*, workflow_id: str, agent_id: str, task_folder: str, input: str | None,
                    fork_attributes: Mapping[str, str] | None, ask_id: str | None = None) -> dict[str, str]:
    """The names a state can use: fork attributes first, so they cannot hide the built-ins."""
    values = dict(fork_attributes or {})
    values["workflow_id"] = workflow_id
    values["agent_id"] = agent_id
    values["task_folder"] = task_folder
    if ask_id is not None:  # the state an answer went to, only
        values["ask_id"] = ask_id
    if input is not None:
        values["input"] = input
        values["result"] = input  # the pre-2026 name (seed documents) for the same value
    return values
