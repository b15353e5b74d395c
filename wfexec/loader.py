"""Reading workflow YAML into plain data plus a map of source positions.

ruamel's C parser composes the node tree (with marks); we construct plain
dicts/lists from it ourselves, which is where the language decisions live:

- mapping keys are always strings (`true:`, `no:`, `1:` are node ids, option
  ids or branch names, never booleans or numbers);
- a duplicate key is a diagnostic, not a silent overwrite;
- every value and key gets a 1-based (line, column) under its YAML path.

Dates stay strings: a workflow's values must survive JSON, and nothing in the
language compares dates as dates.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .diagnostics import Diagnostic, Reporter

_NULL = "tag:yaml.org,2002:null"
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_MERGE = "tag:yaml.org,2002:merge"

# YAML nests deeper than this only in hostile input; Python's recursion limit
# would otherwise turn it into a traceback.
MAX_DEPTH = 200


@dataclass
class Document:
    """One YAML file as plain data, with where each piece came from."""

    path: str
    data: Any
    positions: dict = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def reporter(self) -> Reporter:
        return Reporter(self.path, self.positions)


def display_path(path: str | os.PathLike) -> str:
    """The path as the user should see it: relative to cwd when below it."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


_yaml = None


def _parser():
    global _yaml
    if _yaml is None:
        from ruamel.yaml import YAML

        try:
            _yaml = YAML(typ="safe", pure=False)
        except Exception:  # pragma: no cover - no C extension on this platform
            _yaml = YAML(typ="safe", pure=True)
    return _yaml


def load_text(text: str, path: str = "<string>") -> Document:
    """Parse YAML text into a Document; syntax problems become diagnostics."""
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    doc = Document(path=path, data=None)
    reporter = doc.reporter()
    yaml = _parser()
    try:
        root = yaml.compose(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = exc.problem or exc.context or "invalid YAML"
        if exc.context and exc.problem:
            problem = f"{exc.problem} ({exc.context})"
        doc.positions[()] = (line, col)
        reporter.error((), "yaml-syntax", f"YAML syntax error: {problem}",
                       "check indentation and quoting around this line")
        doc.diagnostics = reporter.diagnostics
        return doc
    except (YAMLError, ValueError, RecursionError) as exc:
        reporter.error((), "yaml-syntax", f"YAML syntax error: {exc}")
        doc.diagnostics = reporter.diagnostics
        return doc
    if root is None:
        doc.positions[()] = (1, 1)
        doc.data = None
        return doc
    builder = _Builder(yaml.constructor, doc.positions, reporter)
    try:
        doc.data = builder.build(root, ())
    except _TooDeep as exc:
        reporter.error(exc.path, "yaml-depth", f"the document nests deeper than {MAX_DEPTH} levels",
                       "flatten the structure")
    except RecursionError:
        reporter.error((), "yaml-depth", "the document nests too deeply or refers to itself",
                       "remove recursive anchors")
    doc.diagnostics = reporter.diagnostics
    return doc


def load_file(path: str | os.PathLike) -> Document:
    shown = display_path(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        return Document(path=shown, data=None, positions={(): (1, 1)}, diagnostics=[
            Diagnostic(shown, 1, 1, "", "error", "file-missing", f"no such file: {shown}", "check the path")])
    except (IsADirectoryError, PermissionError, OSError) as exc:
        return Document(path=shown, data=None, positions={(): (1, 1)}, diagnostics=[
            Diagnostic(shown, 1, 1, "", "error", "file-unreadable", f"cannot read {shown}: {exc.strerror or exc}",
                       "pass a workflow.yaml file or a folder containing one")])
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return Document(path=shown, data=None, positions={(): (line, 1)}, diagnostics=[
            Diagnostic(shown, line, 1, "", "error", "encoding", "the file is not valid UTF-8",
                       "save it as UTF-8")])
    return load_text(text, shown)


class _TooDeep(Exception):
    def __init__(self, path):
        self.path = path


class _Builder:
    def __init__(self, constructor, positions: dict, reporter: Reporter):
        self.constructor = constructor
        self.positions = positions
        self.reporter = reporter
        self.active: set[int] = set()

    def build(self, node, path: tuple) -> Any:
        if len(path) > MAX_DEPTH:
            raise _TooDeep(path)
        mark = node.start_mark
        self.positions[path] = (mark.line + 1, mark.column + 1)
        kind = node.id
        if kind == "scalar":
            return self.scalar(node)
        if id(node) in self.active:  # an alias that contains itself
            self.reporter.error(path, "yaml-recursive", "this anchor refers to itself",
                                "a workflow must be a tree: copy the values instead")
            return None
        self.active.add(id(node))
        try:
            if kind == "sequence":
                return [self.build(item, path + (i,)) for i, item in enumerate(node.value)]
            return self.mapping(node, path)
        finally:
            self.active.discard(id(node))

    def scalar(self, node) -> Any:
        tag = node.tag
        value = node.value
        if tag == _NULL:
            return None
        if tag == _BOOL:
            return value.lower() == "true"
        try:
            if tag == _INT:
                return self.constructor.construct_yaml_int(node)
            if tag == _FLOAT:
                return self.constructor.construct_yaml_float(node)
        except (ValueError, TypeError):
            pass
        return value

    def mapping(self, node, path: tuple) -> dict:
        result: dict[str, Any] = {}
        seen: dict[str, tuple[int, int]] = {}
        merged: list[tuple[Any, tuple]] = []
        for key_node, value_node in node.value:
            kmark = key_node.start_mark
            kpos = (kmark.line + 1, kmark.column + 1)
            if key_node.tag == _MERGE:
                merged.append((value_node, path))
                continue
            if key_node.id != "scalar":
                self.positions[("@key",) + path + ("?",)] = kpos
                self.reporter.error(path + ("?",), "yaml-key", "a mapping key must be a plain name, not a list or mapping",
                                    "quote the key or restructure it", at_key=True)
                continue
            key = key_node.value
            key_path = path + (key,)
            if key in seen:
                self.positions[("@key",) + key_path + ("#dup",)] = kpos
                first = seen[key]
                self.reporter.error(key_path + ("#dup",), "duplicate-key",
                                    f"duplicate key '{key}' (first defined at line {first[0]})",
                                    "remove or rename one of them; YAML keeps only the last", at_key=True)
                continue
            seen[key] = kpos
            self.positions[("@key",) + key_path] = kpos
            result[key] = self.build(value_node, key_path)
        for value_node, mpath in merged:
            sources = value_node.value if value_node.id == "sequence" else [value_node]
            for source in sources:
                if source.id != "mapping":
                    self.reporter.error(mpath, "yaml-merge", "'<<' must merge a mapping or a list of mappings")
                    continue
                data = self.build(source, mpath + ("<<",))
                for key, value in data.items():
                    if key not in result:
                        result[key] = value
                        self.positions.setdefault(mpath + (key,), self.positions[mpath + ("<<", key)])
        return result
