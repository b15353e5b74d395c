"""Reading workflow YAML into plain data plus a map of source positions.

PyYAML's C composer (fast_composer, YAML 1.2 types; ruamel's where PyYAML's C
extension is missing) composes the node tree (with marks); we construct plain
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
import sys
import stat
from wfexec.records import dataclass, field
from pathlib import Path

from wfexec.language.diagnostics import Diagnostic, Reporter
from wfexec.language.gc_pause import collector_paused
from wfexec.language.limits import FILE_BYTES_VARIABLE, limit, max_file_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_NULL = "tag:yaml.org,2002:null"
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_MERGE = "tag:yaml.org,2002:merge"

# An explicit `!!bool` takes the YAML 1.1 words too; implicit booleans are only true/false (YAML 1.2).
_TRUE = ("true", "yes", "on", "y")
_FALSE = ("false", "no", "off", "n")

# YAML nests deeper than this only in hostile input; Python's recursion limit
# would otherwise turn it into a traceback. Not adjustable: the C composers
# crashes the process a few thousand levels down.
MAX_DEPTH = 200
_TOO_DEEP = f"the document nests deeper than {MAX_DEPTH} levels (a fixed limit: the YAML parser would crash deeper down)"
# Aliases let a few hundred bytes stand for billions of values (an "alias
# bomb"); building more values than this *by repeating what aliases name* is
# refused. Values written out in the file do not count: their number grows
# with the file's size, which MAX_FILE_BYTES (wfexec.language.limits) bounds.
MAX_ALIAS_VALUES = 500_000
ALIAS_VALUES_VARIABLE = "WFEXEC_MAX_ALIAS_VALUES"


@dataclass
class Document:
    """One YAML file as plain data, with where each piece came from."""

    path: str
    data: Any
    positions: dict = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    text: str = ""  # the source, to point inside a string value (scalar_positions)

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
        _yaml.Resolver = _resolver_class()
    return _yaml


_compose: list = []


def _composer():
    """text → root node: PyYAML's C composer when installed, else ruamel's (a third of the speed)."""
    if not _compose:
        from wfexec.language.fast_composer import c_composer

        _compose.append(c_composer() or _parser().compose)
    return _compose[0]


def _error_classes() -> tuple[tuple, tuple]:
    """(the errors with a position, every other YAML error) of both YAML libraries."""
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        import yaml
    except ImportError:
        return (MarkedYAMLError,), (YAMLError,)
    return (MarkedYAMLError, yaml.MarkedYAMLError), (YAMLError, yaml.YAMLError)


def _resolver_class():
    """ruamel's resolver, with its YAML 1.2 table looked up once instead of per scalar.

    The C parser calls back into the resolver for every scalar; ruamel rebuilds
    the version lookup each time, which costs more than the parse itself.
    """
    from ruamel.yaml.nodes import ScalarNode, SequenceNode
    from ruamel.yaml.resolver import VersionedResolver
    from ruamel.yaml.tag import Tag

    class FastResolver(VersionedResolver):
        _table: dict | None = None
        _any_first: list = []

        def _build_table(self):
            by_first = self.versioned_resolver
            any_first = [(Tag(suffix=tag), regexp) for tag, regexp in by_first.get(None, [])]
            table = {first: [(Tag(suffix=tag), regexp) for tag, regexp in entries] + any_first
                     for first, entries in by_first.items() if first is not None}
            FastResolver._any_first = any_first
            FastResolver._table = table
            return table

        def resolve(self, kind, value, implicit):
            if kind is ScalarNode:
                if implicit[0]:
                    table = FastResolver._table or self._build_table()
                    for tag, regexp in table.get(value[:1], FastResolver._any_first):
                        if regexp.match(value):
                            return tag
                return self.DEFAULT_SCALAR_TAG
            if kind is SequenceNode:
                return self.DEFAULT_SEQUENCE_TAG
            return self.DEFAULT_MAPPING_TAG

    return FastResolver


@collector_paused
def load_text(text: str, path: str = "<string>") -> Document:
    """Parse YAML text into a Document; syntax problems become diagnostics."""
    marked_errors, other_errors = _error_classes()
    doc = Document(path=path, data=None, text=text)
    reporter = doc.reporter()
    yaml = _parser()
    try:
        too_deep = _too_deep_at(yaml, text)
        if too_deep is not None:
            doc.positions[()] = too_deep
            reporter.error((), "yaml-depth", _TOO_DEEP,
                           "flatten the structure")
            doc.diagnostics = reporter.diagnostics
            return doc
        root = _composer()(text)
    except marked_errors as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = _inside(_last_line(text), (mark.line + 1, mark.column + 1) if mark else (1, 1))
        doc.positions[()] = (line, col)
        if "maximum nesting depth" in str(exc.problem):  # libyaml's own limit, far past ours
            reporter.error((), "yaml-depth", _TOO_DEEP, "flatten the structure")
            doc.diagnostics = reporter.diagnostics
            return doc
        problem = _syntax_problem(exc)
        reporter.error((), "yaml-syntax", f"YAML syntax error: {problem}", _syntax_hint(text, mark, problem))
        doc.diagnostics = reporter.diagnostics
        return doc
    except (*other_errors, ValueError, RecursionError) as exc:
        reporter.error((), "yaml-syntax", f"YAML syntax error: {exc}")
        doc.diagnostics = reporter.diagnostics
        return doc
    if root is None:
        doc.positions[()] = (1, 1)
        doc.data = None
        return doc
    builder = _Builder(yaml.constructor, doc.positions, reporter, _last_line(text))
    try:
        doc.data = builder.build(root, ())
    except _TooDeep as exc:
        reporter.error(exc.path, "yaml-depth", _TOO_DEEP,
                       "flatten the structure")
    except _TooMany as exc:
        reporter.error(exc.path, "yaml-size",
                       f"the document expands to more than {exc.limit:,} values through aliases (the limit "
                       f"{ALIAS_VALUES_VARIABLE}={exc.limit}: values that aliases repeat, not values written out)",
                       f"copy values instead of nesting aliases of aliases, or raise the limit: "
                       f"{ALIAS_VALUES_VARIABLE}=<number of values>")
    except RecursionError:
        reporter.error((), "yaml-depth", "the document nests too deeply or refers to itself",
                       "remove recursive anchors")
    doc.diagnostics = reporter.diagnostics
    return doc


def _too_deep_at(yaml, text: str) -> tuple[int, int] | None:
    """Where the text first nests deeper than MAX_DEPTH, found before anything recursive runs.

    The C composers recurse on the C stack and crash the process on
    a few thousand levels, so depth is measured on the parser's flat event
    stream first, unless the parser is libyaml 0.2.5 or later, which stops at
    1,000 levels itself (a whole extra parse saved; the builder then refuses
    what nests deeper than MAX_DEPTH). Each level needs a `[`, `{`, `-`, `?` or
    `:`; a text with few of them cannot be deep and skips the scan.
    """
    from wfexec.language.fast_composer import c_refuses_deep_nesting, c_too_deep_at

    if c_refuses_deep_nesting():
        return None  # its composer is the one used, and nothing deeper than 1,000 levels reaches it
    if sum(text.count(c) for c in "[{-?:") <= MAX_DEPTH:
        return None

    try:
        found = c_too_deep_at(text, MAX_DEPTH + 1)  # PyYAML's events cost a third of ruamel's
        return None if found is None else (found[0] + 1, found[1] + 1)
    except ImportError:
        pass
    from ruamel.yaml.events import CollectionEndEvent, CollectionStartEvent

    depth = 0
    for event in yaml.parse(text):
        if isinstance(event, CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH + 1:
                return event.start_mark.line + 1, event.start_mark.column + 1
        elif isinstance(event, CollectionEndEvent):
            depth -= 1
    return None


_LINE_BREAKS = {ord(c): "\n" for c in "\r\x85\u2028\u2029"}


def _last_line(text: str) -> tuple[int, int]:
    """(how many lines the parser counts in `text`, the length of the last one): all `_inside` needs."""
    if "\r" in text or "\x85" in text or "\u2028" in text or "\u2029" in text:
        # Translating every character is what a file written with "\n" alone need not pay.
        text = text.replace("\r\n", "\n").translate(_LINE_BREAKS)
    return text.count("\n") + 1, len(text) - text.rfind("\n") - 1


def _inside(last_line: tuple[int, int], position: tuple[int, int]) -> tuple[int, int]:
    """The position, moved back onto the last line when the parser points past the end of the file."""
    lines, last_length = last_line
    if position[0] <= lines:
        return position
    return lines, last_length + 1


def _syntax_problem(exc) -> str:
    """ruamel's problem, plus where the construct it was reading began when that is elsewhere."""
    problem = exc.problem or exc.context or "invalid YAML"
    if "another document" in problem:
        return "a second YAML document starts here (`---`); a workflow file holds exactly one"
    context, start, mark = exc.context, exc.context_mark, exc.problem_mark
    if context and exc.problem:
        if start is not None and mark is not None and (start.line, start.column) != (mark.line, mark.column):
            context = f"{context} that starts at line {start.line + 1}, column {start.column + 1}"
        problem = f"{problem} ({context})"
    return problem


def _syntax_hint(text: str, mark, problem: str) -> str:
    lines = text.splitlines()
    if mark is not None and mark.line < len(lines) and "\t" in lines[mark.line][: mark.column + 1]:
        return "YAML indents with spaces, not tabs: replace the tab characters on this line"
    if "undefined alias" in problem:
        return "an alias `*name` needs an anchor `&name` defined above it"
    if "second YAML document" in problem:
        return "remove the `---` line, or move the second document to its own file"
    return "check indentation and quoting around this line"


def load_file(path: str | os.PathLike) -> Document:
    shown = display_path(path)
    try:
        refused = _not_a_workflow_file(path)
        if refused:
            return Document(path=shown, data=None, positions={(): (1, 1)}, diagnostics=[
                Diagnostic(shown, 1, 1, "", "error", "file-unreadable", f"refusing to read {shown}: {refused}",
                           "pass a workflow.yaml file or a folder containing one")])
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        return Document(path=shown, data=None, positions={(): (1, 1)}, diagnostics=[
            Diagnostic(shown, 1, 1, "", "error", "file-missing", f"no such file: {shown}", "check the path")])
    except (IsADirectoryError, PermissionError, OSError) as exc:
        hint = ("ask the owner for access (chmod), or run wfexec as a user who may read it"
                if isinstance(exc, PermissionError) else "pass a workflow.yaml file or a folder containing one")
        return Document(path=shown, data=None, positions={(): (1, 1)}, diagnostics=[
            Diagnostic(shown, 1, 1, "", "error", "file-unreadable", f"cannot read {shown}: {exc.strerror or exc}",
                       hint)])
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return Document(path=shown, data=None, positions={(): (line, 1)}, diagnostics=[
            Diagnostic(shown, line, 1, "", "error", "encoding", "the file is not valid UTF-8",
                       "save it as UTF-8")])
    return load_text(text, shown)


def _not_a_workflow_file(path) -> str | None:
    """Why `path` is no file to read whole (a FIFO would block, /dev/zero never ends), or None."""
    info = os.stat(path)
    if stat.S_ISDIR(info.st_mode):
        return None  # read_bytes reports it as a folder
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file (a pipe, device or socket)"
    most = max_file_bytes()
    if info.st_size > most:
        return (f"it is {info.st_size:,} bytes, more than the {most:,} a workflow file may have (the limit "
                f"{FILE_BYTES_VARIABLE}={most}; raise it by setting {FILE_BYTES_VARIABLE}=<bytes>)")
    return None


class _TooDeep(Exception):
    def __init__(self, path):
        self.path = path


class _TooMany(Exception):
    def __init__(self, path, limit: int):
        self.path = path
        self.limit = limit


# Keys and short values (node types, targets, state paths) are the same few strings on every node: one object each,
# so the compiled-workflow cache writes each once and refers back to it (pickle remembers objects, not values).
_intern = sys.intern
_SHORT = 24


class _Builder:
    def __init__(self, constructor, positions: dict, reporter: Reporter, last_line: tuple[int, int]):
        self.constructor = constructor
        self.last_line = last_line
        self.lines = last_line[0]
        self.positions = positions
        self.reporter = reporter
        self.active: set[int] = set()
        self.built: set[int] = set()  # collections built once: building one again repeats it (an alias)
        self.repeating = 0  # how many aliases deep the build is
        self.repeated = 0
        self.max_repeated = limit(ALIAS_VALUES_VARIABLE, MAX_ALIAS_VALUES)

    def build(self, node, path: tuple) -> Any:
        if len(path) > MAX_DEPTH:
            raise _TooDeep(path)
        if self.repeating:
            self.repeated += 1
            if self.repeated > self.max_repeated:
                raise _TooMany(path, self.max_repeated)
        self.positions[path] = self.where(node)
        kind = node.id
        if kind == "scalar":
            return self.scalar(node, path)
        if id(node) in self.active:  # an alias that contains itself
            self.reporter.error(path, "yaml-recursive", "this anchor refers to itself",
                                "a workflow must be a tree: copy the values instead")
            return None
        repeat = id(node) in self.built
        self.built.add(id(node))
        self.active.add(id(node))
        self.repeating += repeat
        try:
            if kind == "sequence":
                return [self.build(item, path + (i,)) for i, item in enumerate(node.value)]
            return self.mapping(node, path)
        finally:
            self.active.discard(id(node))
            self.repeating -= repeat

    def where(self, node) -> tuple[int, int]:
        """1-based (line, column) of a node; an empty value at the very end of the file sits on the last line."""
        mark = node.start_mark
        line = mark.line + 1
        if line <= self.lines:  # _inside's test, written out: this runs for every key and value of the file
            return line, mark.column + 1
        return _inside(self.last_line, (line, mark.column + 1))

    def scalar(self, node, path: tuple) -> Any:
        tag = node.tag
        value = node.value
        if tag == _NULL:
            return None
        if tag == _BOOL:
            word = value.lower()
            if word in _TRUE or word in _FALSE:
                return word in _TRUE
            return self._bad_tag(path, value, "!!bool", "true or false")
        try:
            if tag == _INT or tag == _FLOAT:
                from ruamel.yaml.nodes import ScalarNode  # ruamel's constructor reads only its own nodes

                number = ScalarNode(tag, value)
                if tag == _INT:
                    return self.constructor.construct_yaml_int(number)
                return self.constructor.construct_yaml_float(number)
        except Exception:  # ruamel raises assorted errors on odd text under an explicit tag
            return self._bad_tag(path, value, "!!int" if tag == _INT else "!!float", "a number")
        return _intern(value) if len(value) <= _SHORT else value

    def _bad_tag(self, path: tuple, value: str, tag: str, wanted: str) -> str:
        self.reporter.error(path, "yaml-tag", f"{value!r} is tagged {tag} but is not {wanted}",
                            f"remove the {tag} tag, or write {wanted}")
        return value

    def mapping(self, node, path: tuple) -> dict:
        result: dict[str, Any] = {}
        seen: dict[str, tuple[int, int]] = {}
        merged: list[tuple[Any, tuple]] = []
        for key_node, value_node in node.value:
            kpos = self.where(key_node)
            if key_node.tag == _MERGE:
                merged.append((value_node, path))
                continue
            if key_node.id != "scalar":
                self.reporter.error(path, "yaml-key", "a mapping key must be a plain name, not a list or mapping",
                                    "quote the key or restructure it", at=kpos)
                continue
            key = _intern(key_node.value)
            key_path = path + (key,)
            if key in seen:
                first = seen[key]
                self.reporter.error(key_path, "duplicate-key",
                                    f"duplicate key '{key}': already defined at line {first[0]}, "
                                    f"column {first[1]}",
                                    "remove or rename one of them: wfexec refuses to guess which one you meant",
                                    at=kpos)
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
                if not isinstance(data, dict):  # a mapping merging itself: already reported
                    continue
                for key, value in data.items():
                    if key not in result:
                        result[key] = value
                        merged_at = self.positions.get(mpath + ("<<", key))
                        if merged_at:
                            self.positions.setdefault(mpath + (key,), merged_at)
        return result
