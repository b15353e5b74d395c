"""The command lines that do at a terminal what the run page's buttons do: shown on the page, to copy."""

from __future__ import annotations

import json
import shlex
from typing import Any


def _input_text(value: Any) -> str:
    """An input as `--input KEY=VALUE` gives it back: text as it is (an input declared as text takes the text
    as it is given), anything else as JSON (an input of another type reads its text as YAML, of which JSON is
    a part)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def input_options(inputs: dict[str, Any]) -> dict[str, str]:
    """The run's inputs as `wfexec run` takes them again."""
    return {str(key): _input_text(value) for key, value in inputs.items()}


def command_lines(run: dict[str, Any], where: list[str]) -> dict[str, str]:
    """`again`: a new run with the same inputs; `resume`: how this run goes on, when it can (an answer to give,
    a stopped or interrupted run, with what to do with a step left in flight); `show`: what it did. `where`:
    the option naming where runs are (`--store FILE`, `--temporal HOST:PORT`)."""
    again = ["wfexec", "run", run["workflow_path"]]
    for key, value in input_options(run.get("inputs") or {}).items():
        again += ["--input", f"{key}={value}"]
    lines = {"again": shlex.join(again + where), "show": shlex.join(["wfexec", "show", run["id"], *where])}
    question = run.get("pending_question")
    if run["status"] == "waiting" and question:
        key = question.get("key") or question["node"]
        lines["resume"] = shlex.join(["wfexec", "resume", run["id"], *where, "--answer",
                                      f"{key}={'OPTION' if question.get('options') else 'TEXT'}"])
    elif run["status"] in ("stopped", "interrupted"):
        lines["resume"] = shlex.join(["wfexec", "resume", run["id"], *where,
                                      *(["--rerun"] if run.get("in_flight") else [])])
    return lines
