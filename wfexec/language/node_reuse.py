"""Compiled nodes kept from one check of a file to the next, for an editor that checks after every edit.

A node is compiled from its own YAML (its value and the positions under it) and nothing else of the file, unless
it looks for files (documents, scripts, sub-workflows, states folders): those can change without the text
changing. So a node whose text is the same compiles to the same node, with the same diagnostics, targets,
expressions and calls, all moved down by as many lines as the node moved; `replay` hands those back instead of
compiling it again. The checks across nodes (routes, reachability, names read and written) still run over every
node on every check.

The caller says what makes each node's YAML what it is and where it starts (`fingerprints`: node id → (anything
hashable, such as its text; its first line)); a node without a fingerprint is compiled as usual.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from wfexec.records import dataclass, fields, is_record, replace
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterator

from wfexec.language.model import Call, Node, Where
from wfexec.language.name_checks import WritesMemo

if TYPE_CHECKING:
    from wfexec.language.compiler import Compiler


@dataclass(frozen=True)
class _Compiled:
    """What compiling one node added to the compiler."""

    node: Any            # the Node, or None when its fields were wrong
    diagnostics: tuple
    targets: tuple
    expressions: tuple
    calls: tuple
    line: int            # the node's first line when it was compiled


def _moved(compiled: _Compiled, line: int) -> _Compiled:
    """`compiled` as it is for the node moved to start at `line`: diagnostics and places one by one lower."""
    lines = line - compiled.line
    seen: dict[int, Any] = {}  # a call is both in the node and in the calls: one moved copy of it
    return _Compiled(_moved_value(compiled.node, lines, seen),
                     tuple(replace(d, line=d.line + lines) for d in compiled.diagnostics), compiled.targets,
                     compiled.expressions, tuple((path, _moved_value(call, lines, seen)) for path, call in compiled.calls),
                     line)


def _moved_value(value: Any, lines: int, seen: dict[int, Any]) -> Any:
    """`value` with each `Where` inside it `lines` lower (a copy only of what holds one). Goes through nodes, calls
    and what node types compile (`wfexec.nodes.*` dataclasses) and the containers between them; not into a node's
    type, a call's type, raw values or expressions, which hold none."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if id(value) in seen:
        return seen[id(value)]
    moved = value
    if kind is Where:
        moved = Where(value.file, value.line + lines, value.column, value.yaml_path)
    elif kind is Node:
        moved = replace(value, where=_moved_value(value.where, lines, seen),
                        spec=_moved_value(value.spec, lines, seen))
    elif kind is Call:
        # Its parameters hold calls only as nested calls: a call, or a tuple of them.
        params = {name: _moved_value(item, lines, seen) if type(item) in (Call, tuple) else item
                  for name, item in value.params.items()}
        moved = replace(value, where=_moved_value(value.where, lines, seen), params=params)
    elif kind is tuple or kind is list:
        items = [_moved_value(item, lines, seen) for item in value]
        if any(a is not b for a, b in zip(items, value)):
            moved = kind(items)
    elif kind is dict:
        pairs = {key: _moved_value(item, lines, seen) for key, item in value.items()}
        if any(pairs[key] is not item for key, item in value.items()):
            moved = pairs
    elif kind.__module__.startswith("wfexec.nodes.") and not isinstance(value, type):
        # A node type's spec: a record (wfexec.records) or, for a few node types, a standard data class.
        rebuilt: Callable[..., Any] = replace
        names: list[str] = []
        if is_record(value):
            names = [spec.name for spec in fields(value)]
        elif "dataclasses" in sys.modules and sys.modules["dataclasses"].is_dataclass(value):
            import dataclasses

            names, rebuilt = [spec.name for spec in dataclasses.fields(value)], dataclasses.replace
        changes = {}
        for name in names:
            item = getattr(value, name)
            moved_item = _moved_value(item, lines, seen)
            if moved_item is not item:
                changes[name] = moved_item
        moved = rebuilt(value, **changes) if changes else value
    seen[id(value)] = moved
    return moved


_PLAIN = frozenset((str, int, float, bool, type(None)))


class NodeReuse:
    def __init__(self) -> None:
        self.fingerprints: dict[str, tuple[Hashable, int]] = {}
        self.context: Hashable = None  # what every node's compile depends on (the file's path, its era)
        self._kept: dict[tuple, _Compiled] = {}
        self._used: set[tuple] = set()
        self.replayed = 0
        self.writes = WritesMemo()  # what each node writes, for the name checks

    def begin(self, fingerprints: dict[str, tuple[Hashable, int]], context: Hashable) -> None:
        """Before a check: the nodes' fingerprints in the text about to be checked. Only nodes kept or used
        by the previous check are remembered."""
        if self.fingerprints:  # (after a check without any, the one before it is the last to go by)
            self._kept = {key: kept for key, kept in self._kept.items() if key in self._used}
            self._used = set()
        self.fingerprints, self.context, self.replayed = fingerprints, context, 0

    def _key(self, node_id: str) -> tuple | None:
        fingerprint = self.fingerprints.get(node_id)
        return None if fingerprint is None else (node_id, fingerprint[0], self.context)

    def replay(self, node_id: str, c: "Compiler", nodes: dict) -> bool:
        """Add what compiling `node_id` added last time, when its fingerprint is unchanged."""
        key = self._key(node_id)
        kept = self._kept.get(key) if key is not None else None
        if kept is None:
            return False
        line = self.fingerprints[node_id][1]
        if kept.line != line:
            kept = self._kept[key] = _moved(kept, line)  # type: ignore[index]
        self._used.add(key)  # type: ignore[arg-type]
        c.report.diagnostics.extend(kept.diagnostics)
        c.static_targets.extend(kept.targets)
        c.expressions.extend(kept.expressions)
        c.compiled_calls.extend(kept.calls)
        if kept.node is not None:
            nodes[node_id] = kept.node
        self.replayed += 1
        return True

    @contextmanager
    def recording(self, node_id: str, c: "Compiler", nodes: dict) -> Iterator[None]:
        """Around compiling `node_id`: keep what it added, unless it looked for files."""
        from wfexec.language.compiler import recording_lookups

        key = self._key(node_id)
        before = (len(c.report.diagnostics), len(c.static_targets), len(c.expressions), len(c.compiled_calls),
                  len(c.extra_diagnostics), sum(len(found) for found in c.documents.values()))
        with recording_lookups() as looked:
            yield
        if key is None or looked or len(c.extra_diagnostics) != before[4] or \
                sum(len(found) for found in c.documents.values()) != before[5]:
            return
        node = nodes.get(node_id)
        if node is not None and not node.kind.compile.__module__.startswith("wfexec.nodes."):
            return  # a plugin's node type: what its compile reads is not known
        self._kept[key] = _Compiled(node, tuple(c.report.diagnostics[before[0]:]), tuple(c.static_targets[before[1]:]),
                                    tuple(c.expressions[before[2]:]), tuple(c.compiled_calls[before[3]:]),
                                    self.fingerprints[node_id][1])
        self._used.add(key)
