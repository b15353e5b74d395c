"""`wfexec expand`: a workflow as YAML with its v8 composites expanded into the nodes that run, so an expansion
can be read, and compared with blueprint-lib's walker contract."""

from __future__ import annotations

import io
import re
from wfexec.records import replace
from pathlib import Path
from typing import Any

from wfexec.language import composites
from wfexec.language.diagnostics import Diagnostic, Reporter
from wfexec.language.loader import load_file
from wfexec.language.schema import check_against, check_top_level

# Words a YAML 1.1 reader (PyYAML, most editors) takes for booleans or null: quoted, so `"yes"` stays a string.
_AMBIGUOUS = re.compile(r"^(?:y|yes|n|no|on|off|true|false|null|~)$", re.IGNORECASE)


def expanded(path: Path) -> tuple[str | None, list[Diagnostic]]:
    """(the expanded workflow as YAML, or None when it cannot be read; the problems found)."""
    doc = load_file(path)
    if not isinstance(doc.data, dict) or not doc.data:
        if doc.diagnostics:  # it could not be read or parsed
            return None, list(doc.diagnostics)
        # Read, but empty, no mapping or an empty one (`{}`, no workflow and no fragment of nodes either): what
        # `wfexec validate` says of it (and not nothing, with exit 2).
        report = Reporter(doc.path, doc.positions)
        check_top_level(doc.data, report)
        return None, report.diagnostics
    fragment = _is_fragment(doc.data)
    if fragment:  # a file of nodes only, as blueprint-lib's composite fixtures are written
        doc = replace(doc, data={"nodes": doc.data},
                      positions={(("nodes",) + k if k[:1] != ("@key",) else ("@key", "nodes") + k[1:]): v
                                 for k, v in doc.positions.items()})
    if not composites.has_composites(doc.data):
        return _dump(doc.data["nodes"] if fragment else doc.data), list(doc.diagnostics)
    out, problems, _origin = composites.expand(doc, check_against)
    return _dump(out.data["nodes"] if fragment else out.data), list(doc.diagnostics) + problems


def _is_fragment(data: dict) -> bool:
    return "nodes" not in data and bool(data) and all(isinstance(v, dict) and "type" in v for v in data.values())


def _dump(data: Any) -> str:
    from ruamel.yaml import YAML
    from ruamel.yaml.representer import SafeRepresenter

    class Representer(SafeRepresenter):  # a subclass, so the shared SafeRepresenter is left as it was
        pass

    def text(representer, value: str):
        style = '"' if _AMBIGUOUS.match(value) else "|" if "\n" in value else None
        return representer.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Representer.add_representer(str, text)
    yaml = YAML(typ="safe", pure=True)
    yaml.Representer = Representer
    yaml.default_flow_style = False
    yaml.allow_unicode = True
    yaml.width = 4096
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]  # the file's order, then the walker's
    stream = io.StringIO()
    yaml.dump(data, stream)
    return stream.getvalue()
