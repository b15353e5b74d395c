"""Markdown documents as judgement steps: pick a section, add the context, make a prompt."""

from __future__ import annotations

import json
import re
from pathlib import Path

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def extract_section(text: str, section: str) -> str:
    """The heading named `section` and everything under it, up to the next heading of its level or above."""
    wanted = section.strip().lstrip("#").strip().lower()
    lines = text.splitlines()
    start: int | None = None
    level = 0
    for i, line in enumerate(lines):
        match = _HEADING.match(line)
        if not match:
            continue
        if start is None and match.group(2).strip().lower() == wanted:
            start, level = i, len(match.group(1))
        elif start is not None and len(match.group(1)) <= level:
            return "\n".join(lines[start:i]).strip()
    if start is None:
        headings = [m.group(2) for m in map(_HEADING.match, lines) if m]
        raise LookupError(f"no section '{section}' in the document; its headings are: "
                          + (", ".join(headings) if headings else "(none)"))
    return "\n".join(lines[start:]).strip()


def document_prompt(doc: Path, section: str | None, context: dict) -> str:
    text = doc.read_text(encoding="utf-8")
    body = extract_section(text, section) if section else text.strip()
    parts = [body]
    if context:
        parts.append("## Context\n\n```json\n" + json.dumps(context, indent=2, ensure_ascii=False, default=str)
                     + "\n```")
    return "\n\n".join(parts) + "\n"
