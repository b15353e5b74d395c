"""Where a document path written in a workflow points: the plugin root first, then the workflow's folder.

hiivmind writes document paths (a reference node's `doc:` or `workflow:`, an
`invoke_pattern` path, an import, a script) from the plugin root, the folder
Claude Code calls `${CLAUDE_PLUGIN_ROOT}`: `doc: lib/corpus/patterns/git.md`
in `skills/add-source/workflow.yaml` means `<plugin>/lib/corpus/patterns/git.md`.
The plugin root is `$CLAUDE_PLUGIN_ROOT` when set, else the nearest folder
above the workflow holding `.claude-plugin/plugin.json`. A workflow outside
any plugin resolves from its own folder. Data paths (files a workflow reads
and writes as data) are not documents: they stay relative to the working
directory.

Validation and the run both resolve through `find_document`, so a path that
validates is the path that runs.
"""

from __future__ import annotations

import json
import os
from wfexec.records import dataclass
from pathlib import Path
from wfexec.system.patterns import lazy

PLUGIN_MANIFEST = Path(".claude-plugin") / "plugin.json"
PLUGIN_ROOT_ENV = "CLAUDE_PLUGIN_ROOT"
PLUGIN_ROOT_PREFIXES = ("${CLAUDE_PLUGIN_ROOT}/", "$CLAUDE_PLUGIN_ROOT/")
HOW_DOCUMENTS_RESOLVE = ("document paths resolve from the plugin root ($CLAUDE_PLUGIN_ROOT, else the nearest folder "
                         "above the workflow with .claude-plugin/plugin.json), then from the workflow's folder")


def plugin_root(workflow_path: str | Path) -> Path | None:
    """`$CLAUDE_PLUGIN_ROOT`, else the nearest ancestor of the workflow file holding `.claude-plugin/plugin.json`."""
    given = os.environ.get(PLUGIN_ROOT_ENV)
    if given:
        return Path(given).expanduser()
    for manifest in manifest_places(workflow_path):
        if manifest.is_file():
            return manifest.parent.parent
    return None


def manifest_places(workflow_path: str | Path) -> tuple[Path, ...]:
    """Where a plugin manifest would make a plugin root of, nearest first: one made there changes where
    documents resolve."""
    return tuple(folder / PLUGIN_MANIFEST for folder in Path(os.path.abspath(workflow_path)).parents)


@dataclass(frozen=True)
class DocumentLookup:
    """The document found (None: none), and every place looked, in order."""

    found: Path | None
    looked: tuple[Path, ...]

    def looked_text(self) -> str:
        from wfexec.language.loader import display_path

        return ", then ".join(display_path(p) or str(p) for p in self.looked)


def document_places(value: str, workflow_path: str | Path) -> tuple[Path, ...]:
    """Where `value` may be, in the order looked: the plugin root, then the workflow's folder."""
    for prefix in PLUGIN_ROOT_PREFIXES:
        if value.startswith(prefix):
            root = plugin_root(workflow_path)
            return (root / value[len(prefix):],) if root else ()
    given = Path(value).expanduser()
    if given.is_absolute():
        return (given,)
    folder = Path(workflow_path).parent
    root = plugin_root(workflow_path)
    places = [root / given] if root is not None else []
    places.append(folder / given)
    return _unique(places)


def _unique(places: list[Path]) -> tuple[Path, ...]:
    """A workflow at the plugin root would be looked for twice in the same folder."""
    seen: dict[str, Path] = {}
    for place in places:
        seen.setdefault(os.path.normpath(os.path.abspath(place)), place)
    return tuple(seen.values())


def find_document(value: str, workflow_path: str | Path, folder: bool = False) -> DocumentLookup:
    """The first of `document_places` that is a file (or, with `folder`, a file or a folder)."""
    places = document_places(value, workflow_path)
    for place in places:
        try:
            if place.is_file() or (folder and place.exists()):
                return DocumentLookup(place, places)
        except (OSError, ValueError):  # a name too long for the file system, and the like
            continue
    return DocumentLookup(None, places)


_HEADING = lazy(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _headings(lines: list[str]):
    """(line index, level, title) of each markdown heading; a `#` line inside a fenced code block is code."""
    fence = None
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            marker = stripped[:3]
            fence = None if fence == marker else (fence or marker)
            continue
        match = None if fence else _HEADING.match(line)
        if match:
            yield i, len(match.group(1)), match.group(2)


def extract_section(text: str, section: str) -> str:
    """The heading named `section` and everything under it, up to the next heading of its level or above."""
    wanted = section.strip().lstrip("#").strip().lower()
    lines = text.splitlines()
    start = level = None
    headings = list(_headings(lines))
    for i, depth, title in headings:
        if start is None and title.strip().lower() == wanted:
            start, level = i, depth
        elif start is not None and depth <= level:
            return "\n".join(lines[start:i]).strip()
    if start is None:
        raise LookupError(f"the document has no section '{section}' (its headings: "
                          + (", ".join(title for _i, _d, title in headings) or "(none)") + ")")
    return "\n".join(lines[start:]).strip()


def document_prompt(doc: Path, section: str | None, context: dict) -> str:
    """A markdown document (or one section of it) as a judgement step's prompt, with its context as JSON."""
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
