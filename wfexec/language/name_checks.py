"""Typo safety: a warning for a name an expression reads that nothing in the workflow ever writes.

In JavaScript a missing value is `undefined`, so `computed.totl || 0` runs and
quietly gives 0. Validation lists what the workflow can write — `initial_state`,
the inputs of `input_schema`, every `store_as`/`field`/`flag`/`set_flag`
parameter, the targets of `output_mapping`, the answers of `user_prompt`
nodes, the values the engine itself writes — and warns about each name read outside that list.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterable, Iterator

from wfexec.language.diagnostics import Reporter, did_you_mean
from wfexec.language.foreign_syntax import assigned_in_script, shell_expanded_names
from wfexec.language.expressions import RUNTIME_NAMES
from wfexec.language.paths import PathError, parse_path

_WRITING_KEYS = ("store_as", "field", "audit_output")
_FLAG_KEYS = ("flag", "set_flag")
_LOCAL_KEYS = ("as", "index_as")
_NAMING_KEYS = frozenset((*_WRITING_KEYS, *_FLAG_KEYS, *_LOCAL_KEYS))  # one set lookup rules out most strings
_ENGINE_WRITES = {("computed", "last_error"), ("computed", "last_error_hint"), ("computed", "validation_errors"),
                  ("computed", "audit_results"), ("computed", "dynamic_target")}
_ALWAYS_THERE = frozenset(("computed", "flags", "user_responses", "history", "checkpoints", "env", *RUNTIME_NAMES))
_NAMESPACES = ("computed", "flags", "user_responses")
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


_SECTIONS = ("nodes", "endings")


def _found_in(key: Any, item: Any) -> "Written":
    """What one entry `key: item` of a mapping writes (the walk of the mapping, one entry at a time)."""
    found = Written._empty()
    found._walk({key: item})
    return found


class WritesMemo:
    """What each node writes, kept while its value stays the same object: an editor's checks of the same file
    (whose unchanged nodes are the same objects from one check to the next), or the several walks of one check.
    Remembers the nodes of the last two checks."""

    def __init__(self) -> None:
        self._now: dict[tuple, tuple[Any, Written]] = {}
        self._before: dict[tuple, tuple[Any, Written]] = {}

    def next_check(self) -> None:
        self._before, self._now = self._now, {}

    def found(self, entry: tuple) -> "Written":
        key = (entry[0], id(entry[1]))
        kept = self._now.get(key) or self._before.get(key)
        if kept is None or kept[0] is not entry[1]:  # the id of a value let go of may be a new value's
            kept = (entry[1], _found_in(*entry))
        self._now[key] = kept
        return kept[1]


_memo: ContextVar[WritesMemo | None] = ContextVar("wfexec_writes_memo", default=None)


@contextmanager
def remembering_writes(memo: WritesMemo) -> Iterator[None]:
    """Within: `Written` reads what each node writes from `memo` (the data must not change meanwhile)."""
    memo.next_check()
    token = _memo.set(memo)
    try:
        yield
    finally:
        _memo.reset(token)


class Written:
    """What a workflow can write: top-level keys, (namespace, key) pairs and local names."""

    def __init__(self, data: dict, fixed_writes: Iterable[str] = ()):
        self.top: set[str] = set()
        self.whole: set[str] = set()  # top-level names a step writes whole (`store_as: config`)
        self.inside: set[tuple[str, str]] = set(_ENGINE_WRITES)
        self.locals: set[str] = {"item", "index"}
        self.inputs: set[str] | None = None
        self.imports: set[str] = set((data.get("imports") or {}) if isinstance(data.get("imports"), dict) else ())
        initial = data.get("initial_state")
        if isinstance(initial, dict):
            for key, value in initial.items():
                self.top.add(str(key))
                if key in _NAMESPACES and isinstance(value, dict):
                    self.inside.update((key, str(k)) for k in value)
        schema = data.get("input_schema")
        if isinstance(schema, dict):
            properties = schema.get("properties")
            names = properties if isinstance(properties, dict) else schema
            self.inputs = {str(k) for k in names}
            self.top.update(self.inputs)
        nodes = data.get("nodes")
        if isinstance(nodes, dict):
            self.inside.update(("user_responses", str(node_id)) for node_id in nodes)
            for node in nodes.values():  # a `states` node keeps its forks' results beside its own
                if isinstance(node, dict) and node.get("type") == "states" and isinstance(node.get("store_as"), str):
                    self._path(node["store_as"] + "_forks")
        memo = _memo.get()
        for key, item in data.items():
            if key in _SECTIONS and type(item) is dict and memo is not None:
                for entry in item.items():  # what each node writes, remembered: several checks ask per check
                    self._add(memo.found(entry))
            else:
                self._add(_found_in(key, item))
        for path in fixed_writes:  # what the types called always write (TypeSpec.writes)
            self._path(path)

    def _add(self, found: "Written") -> None:
        self.top |= found.top
        self.whole |= found.whole
        self.inside |= found.inside
        self.locals |= found.locals

    @classmethod
    def _empty(cls) -> "Written":
        empty = cls.__new__(cls)
        empty.top, empty.whole, empty.inside, empty.locals = set(), set(), set(), set()
        return empty

    def _walk(self, top: Any) -> None:
        # One explicit stack over the containers only: this walk runs over every value of the file, several
        # times per check, and a call per scalar was most of its cost.
        waiting = [top]
        while waiting:
            value = waiting.pop()
            if type(value) is list:
                waiting.extend(value)  # its scalars are dropped when taken, a cheaper test than a generator's
                continue
            if not isinstance(value, dict):
                continue
            for key, item in value.items():
                if isinstance(item, str):
                    if key not in _NAMING_KEYS:
                        continue
                    if key in _WRITING_KEYS:
                        self._path(item)
                    elif key in _FLAG_KEYS:
                        self.inside.add(("flags", item.split(".")[0]))
                    elif key in _LOCAL_KEYS:
                        self.locals.add(item)
                elif isinstance(item, (dict, list)):
                    if key == "output_mapping" and isinstance(item, dict):  # state path -> the child's output key
                        for target in item:
                            self._path(str(target))
                    waiting.append(item)

    def _path(self, text: str) -> None:
        if "${" in text:
            return
        try:
            parts = parse_path(text)
        except PathError:
            return
        if parts and isinstance(parts[0], str):
            self.top.add(parts[0])
            if len(parts) == 1:
                self.whole.add(parts[0])
            if len(parts) > 1 and isinstance(parts[1], str):
                self.inside.add((parts[0], parts[1]))

    def has_bare(self, name: str) -> bool:
        return name in self.locals or name in self.top or any((ns, name) in self.inside for ns in _NAMESPACES) \
            or bool(_ENV_NAME.match(name))

    def known_names(self) -> list[str]:
        return sorted(self.top | self.locals | {key for _ns, key in self.inside})


def check_names(data: dict, expressions: Iterable[tuple[tuple, Any]], report: Reporter,
                bound: Iterable[str] = (), fixed_writes: Iterable[str] = ()) -> None:
    """Warn, at the expression, about each name it reads that nothing writes (`bound`: names node types bind,
    such as each item of a list a question offers; `fixed_writes`: the paths the types called always write)."""
    written = Written(data, fixed_writes)
    written.locals.update(bound)
    hints = _Hints(written)
    for path, expression in expressions:
        for name, keys in expression.reads.items():
            for problem in _problems(written, hints, name, keys):
                report.warning(path, "unwritten-name", problem[0], problem[1])


class _Hints:
    """"Did you mean" for the names nothing writes, at a cost that does not grow with the square of the file.

    Each hint compares the name with every name written; a big file with a typo per node would compare each of
    its thousands of typos with each of its thousands of names. The candidate lists are built once, a name asked
    twice is answered once, and past a budget of comparisons the remaining warnings come without a hint.
    """

    BUDGET = 1_000_000  # about two seconds of difflib

    def __init__(self, written: Written):
        self.written = written
        self.candidates: dict[str, list[str]] = {}
        self.given: dict[tuple[str, str], str] = {}
        self.left = self.BUDGET

    def inside(self, namespace: str, key: str) -> str:
        if namespace not in self.candidates:
            self.candidates[namespace] = [k for ns, k in self.written.inside if ns == namespace]
        return self._hint(namespace, key)

    def bare(self, name: str) -> str:
        if "" not in self.candidates:
            self.candidates[""] = self.written.known_names()
        return self._hint("", name)

    def _hint(self, among: str, word: str) -> str:
        if (among, word) not in self.given:
            candidates = self.candidates[among]
            if self.left < len(candidates):
                return ""
            self.left -= len(candidates)
            self.given[among, word] = did_you_mean(word, candidates)
        return self.given[among, word]


def unwritten_reads(data: dict, expressions: Iterable[tuple[tuple, Any]], bound: Iterable[str] = (),
                    fixed_writes: Iterable[str] = ()) -> dict[str, tuple[str, ...]]:
    """Node (or ending) id → the state paths its expressions read that no node writes, and that `initial_state` leaves
    undeclared or empty (`index: {content: null}`): what hiivmind files leave to the model of a judgement step
    before them to write (`computed.scan_result`, `index.content`)."""
    fixed_writes = tuple(fixed_writes)
    declared = Written(data, fixed_writes)
    by_nodes = Written({key: value for key, value in data.items() if key != "initial_state"}, fixed_writes)
    for written in (declared, by_nodes):
        written.locals.update(bound)
    written_initial = data.get("initial_state")
    initial: dict = written_initial if isinstance(written_initial, dict) else {}

    def placeholder(name: str, key: str | None) -> bool:
        value = initial.get(name)
        if key is not None:
            value = value.get(key) if isinstance(value, dict) else None
        return value is None or value == "" or value == [] or value == {}

    def left_to_model(name: str, key: str | None) -> bool:
        if name in _NAMESPACES:
            if (name, key) in by_nodes.inside:
                return False
            return (name, key) not in declared.inside or placeholder(name, key)
        if key is None:
            if by_nodes.has_bare(name):
                return False
            return not declared.has_bare(name) or placeholder(name, None)
        if name in by_nodes.whole or (name, key) in by_nodes.inside:
            return False
        return placeholder(name, key)

    found: dict[str, dict[str, None]] = {}
    for path, expression in expressions:
        if len(path) < 2 or path[0] not in ("nodes", "endings"):
            continue
        for name, keys in expression.reads.items():
            # `index` is also a loop's default local name: a state key of that name is still state
            if (name in declared.locals and name not in initial) or name in ("input", "imports") or \
                    (name in _ALWAYS_THERE and name not in _NAMESPACES):
                continue
            for key in (keys or (None,)) if name not in _NAMESPACES else (keys or ()):
                if left_to_model(name, key):
                    found.setdefault(str(path[1]), {})[name if key is None else f"{name}.{key}"] = None
    return {node: tuple(paths) for node, paths in found.items()}


def _problems(written: Written, hints: _Hints, name: str, keys: tuple | None):
    if name in written.locals:
        return
    if name in _NAMESPACES:
        for key in keys or ():
            if (name, key) not in written.inside:
                hint = hints.inside(name, key) or \
                    f"nothing in the workflow writes `{name}.{key}` (no store_as, field, flag or initial_state)"
                yield f"`{name}.{key}` is read here but never written, so it is always undefined", hint
        return
    if name == "input":
        if written.inputs is not None:
            for key in keys or ():
                if key not in written.inputs:
                    hint = did_you_mean(key, written.inputs) or "declare it under `input_schema`"
                    yield f"`input.{key}` is not an input of this workflow (input_schema)", hint
        return
    if name == "imports":
        for key in keys or ():
            if key not in written.imports:
                yield f"`imports.{key}` is not imported", did_you_mean(key, written.imports) or \
                    "add it under `imports:`"
        return
    if name in _ALWAYS_THERE or written.has_bare(name):
        return
    hint = hints.bare(name) or \
        "set it first (store_as, field, flag, initial_state or an input), or spell out its namespace"
    yield f"`{name}` is read here but nothing in the workflow writes it, so it is always undefined", hint


_TEMPLATE_NAME = re.compile(r"(?<!\$)\$\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}")


def check_script_names(data: dict, calls: Iterable[tuple[tuple, Any]], report: Reporter) -> None:
    """Warn where a `${…}` in a script can be read two ways: a template `${name}` for a variable the script sets
    itself, or a shell expansion `${name:-x}` (left to the shell) of a name that is also the workflow's state."""
    written: Written | None = None  # built at the first script: most workflows run none
    for path, call in calls:
        if "process" not in call.spec.effects:
            continue
        written = written or Written(data)
        for key, text in _strings(call.raw):
            script_sets = assigned_in_script(text)
            for name in dict.fromkeys(_TEMPLATE_NAME.findall(text)):
                if name in script_sets and not written.has_bare(name):
                    report.warning(path + key, "script-name",
                                   f"`${{{name}}}` is filled in by wfexec from state, where nothing writes `{name}`, "
                                   f"but the script sets `{name}` itself",
                                   f"for the shell's variable write `$${{{name}}}` (or `${name}`); for a value from "
                                   "state, name it by its path (`${computed." + name + "}`)")
            for name in shell_expanded_names(text):
                if written.has_bare(name) and not _ENV_NAME.match(name) and name not in script_sets:
                    report.warning(path + key, "script-name",
                                   f"this `${{{name}…}}` is the shell's own expansion, so the script reads its "
                                   f"variable `${name}`, not the workflow's state `{name}`",
                                   f"for the state value write a template such as `${{{name} ?? ''}}`; to keep the "
                                   "shell's, leave it (or set it in the script first)")


def _strings(value: Any, key: tuple = ()):
    if isinstance(value, str):
        if "${" in value:
            yield key, value
    elif isinstance(value, dict):
        for k, item in value.items():
            yield from _strings(item, key + (k,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, key + (index,))
