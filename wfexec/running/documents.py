"""Markdown documents as judgement steps: pick a section, add the context, make a prompt."""

from __future__ import annotations

import json
from pathlib import Path

from wfexec.language.documents import extract_section

def document_prompt(doc: Path, section: str | None, context: dict) -> str:
    text = doc.read_text(encoding="utf-8")
    try:
        body = extract_section(text, section) if section else text.strip()
    except LookupError as missing:
        # hiivmind's skills read the whole document (`Read ${CLAUDE_PLUGIN_ROOT}/{node.doc}`): a section it
        # lacks is the reader's to find, as validate's warning says; the LLM is told so.
        body = f"(The workflow asks for the section '{section}', but {missing}. The whole document follows.)\n\n" \
            + text.strip()
    parts = [body]
    if context:
        parts.append("## Context\n\n```json\n" + json.dumps(context, indent=2, ensure_ascii=False, default=str)
                     + "\n```")
    return "\n\n".join(parts) + "\n"
