"""Checks of the files a workflow names beside its own: scripts that are not there, and markdown documents whose
`${…}` a reader would take for a template.

- A `script:` of a process step (run_command, run_script, …) written out is looked for where the run looks first
  (the plugin root, then the workflow's folder). The run looks in its working directory last, which validation
  cannot know, so a script found in neither place is a warning (`--strict` makes it an error), not an error.
- A `reference` node's markdown document goes to the model as written: only `context:` passes values. A `${…}`
  in it is left as it is, so a document that reads `${computed.repo_url}` shows the model those characters, not
  the URL. Documents also hold shell snippets (`${CLAUDE_PLUGIN_ROOT}`, `${path%/}`, `${1:-main}`), which must stay
  as they are, so the warning names only what is surely meant as the workflow's state: a plain path (`name`,
  `a.b`, no shell operator) whose first name is state the workflow writes — under `computed`, `flags`,
  `user_responses` or `input`, or a top-level name — and that the document does not set in its own shell
  (`name=…`), nor the node passes in `context:`. Upper-case names are the environment's. One warning per node.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Iterable

from wfexec.language.diagnostics import Reporter
from wfexec.language.documents import HOW_DOCUMENTS_RESOLVE, extract_section, find_document
from wfexec.language.foreign_syntax import assigned_in_script
from wfexec.language.name_checks import Written

_PLAIN_PATH = re.compile(r"\$\{\s*([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*|\[\d+\])*)\s*\}")
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_NAMESPACES = ("computed", "flags", "user_responses")
_SHOWN_NAMES = 4


def check_script_files(calls: Iterable[tuple[tuple, Any]], workflow_path: Path, report: Reporter,
                       looked_at: Callable[[Iterable[Path]], None]) -> None:
    """Warn at each written-out `script:` found neither in the plugin root nor beside the workflow."""
    for path, call in calls:
        script = call.raw.get("script") if isinstance(call.raw, dict) else None
        if "process" not in call.spec.effects or not isinstance(script, str) or "${" in script or "$" in script[:1]:
            continue
        lookup = find_document(script, workflow_path)
        looked_at(lookup.looked)
        if lookup.found is not None:
            continue
        looked = lookup.looked_text() or "nowhere: no plugin root was found"
        report.warning(path + ("script",), "script-missing",
                       f"script '{script}' does not exist (looked in {looked}); the run would look in its working "
                       "directory last, and fail if it is not there either",
                       "put the script beside the workflow (" + HOW_DOCUMENTS_RESOLVE + "), or write its path with "
                       "`${…}` when a step makes it during the run")


def check_document_templates(data: dict, nodes: dict, report: Reporter) -> None:
    """Warn at each reference node whose markdown document holds `${…}` of the workflow's state."""
    written: Written | None = None  # built at the first markdown document: most workflows name none
    raw_nodes: dict = data["nodes"] if isinstance(data.get("nodes"), dict) else {}
    for node_id, node in nodes.items():
        document = getattr(node.spec, "doc", None)
        if not isinstance(document, Path) or document.suffix.lower() not in (".md", ".markdown"):
            continue
        written = written or Written(data)
        raw: dict = raw_nodes[node_id] if isinstance(raw_nodes.get(node_id), dict) else {}
        text = _document_text(document, raw.get("section"))
        if text is None or "${" not in text:
            continue
        given = raw.get("input") if raw.get("input") is not None else raw.get("context")
        passed = set(given) if isinstance(given, dict) else set()
        names = state_templates_in(text, written, passed)
        if not names:
            continue
        shown = ", ".join(f"`${{{n}}}`" for n in names[:_SHOWN_NAMES]) + \
            (f" and {len(names) - _SHOWN_NAMES} more" if len(names) > _SHOWN_NAMES else "")
        report.warning(("nodes", node_id, "doc"), "document-template",
                       f"the document {document.name} holds {shown}, which the model receives as written: a "
                       "markdown document is not filled in from state",
                       "pass the values in the node's `context:` (the model gets them beside the document) and "
                       "name them there, e.g. `context: {repo_url: \"${computed.repo_url}\"}`")


def state_templates_in(text: str, written: Written, passed: set) -> list[str]:
    """The `${…}` paths of `text` that name the workflow's state (see the module's docstring), in order."""
    set_by_shell = assigned_in_script(text)
    found: list[str] = []
    for path in _PLAIN_PATH.findall(text):
        first, _, rest = path.partition(".")
        first = first.split("[")[0]
        if _ENV_NAME.match(first) or first in passed or first in set_by_shell or path in found:
            continue
        key = rest.split(".")[0].split("[")[0]
        if first in _NAMESPACES:
            named = bool(key) and (first, key) in written.inside and key not in passed
        elif first == "input":
            named = bool(key) and written.inputs is not None and key in written.inputs and key not in passed
        else:
            named = first in written.top or any((ns, first) in written.inside for ns in _NAMESPACES)
        if named:
            found.append(path)
    return found


def _document_text(document: Path, section: Any) -> str | None:
    try:
        text = document.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if isinstance(section, str) and "${" not in section:
        try:
            return extract_section(text, section)
        except LookupError:
            return text  # the run sends the whole document (section-missing says so)
    return text
