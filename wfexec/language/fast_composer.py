"""The YAML node tree composed by PyYAML's C extension, with YAML 1.2's implicit types.

ruamel.yaml parses in C but composes nodes in Python, which cost three times PyYAML's C composer on a big
workflow. The node trees are alike (`id`, `tag`, `value`, `start_mark` with 0-based `line` and `column`), so the
loader's builder reads either. PyYAML's own resolver is YAML 1.1 (`yes` a boolean, `0o17` a string): resolution
here uses ruamel's YAML 1.2 table instead, so both composers give the same tags.
"""

from __future__ import annotations

from typing import Any, Callable

_STR = "tag:yaml.org,2002:str"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"


def c_composer() -> Callable[[str], Any] | None:
    """text → the root node (None for an empty document), raising PyYAML's YAMLError subclasses; None when
    PyYAML or its C extension is not installed."""
    try:
        from yaml._yaml import CParser
        from yaml.nodes import ScalarNode, SequenceNode
    except ImportError:
        return None
    from ruamel.yaml.resolver import VersionedResolver

    by_first = VersionedResolver(version=(1, 2)).versioned_resolver
    any_first = [(str(tag), regexp) for tag, regexp in by_first.get(None, [])]
    table = {first: [(str(tag), regexp) for tag, regexp in entries] + any_first
             for first, entries in by_first.items() if first is not None}

    def _plain_tag(value: str) -> str:
        for tag, regexp in table.get(value[:1], any_first):
            if regexp.match(value):
                return tag
        return _STR

    class Composer(CParser):
        def __init__(self, text: str):
            super().__init__(text)
            # Each plain scalar's tag, by its text: keys and the words of a workflow repeat on every node.
            self.plain_tags: dict[str, str] = {}

        def resolve(self, kind, value, implicit):
            if kind is ScalarNode:
                if implicit[0]:
                    tag = self.plain_tags.get(value)
                    if tag is None:
                        tag = self.plain_tags[value] = _plain_tag(value)
                    return tag
                return _STR
            return _SEQ if kind is SequenceNode else _MAP

        # The C composer asks for path-dependent resolution around each node; YAML 1.2 has none. Built-ins that
        # take those arguments and keep nothing: a Python method here was two calls per node of the file, a
        # twentieth of loading it.
        descend_resolver = staticmethod(slice)  # (parent, index): a slice, dropped
        ascend_resolver = staticmethod(tuple)  # (): the empty tuple

    def compose(text: str) -> Any:
        composer = Composer(text)
        try:
            return composer.get_single_node()
        finally:
            composer.dispose()

    return compose


def c_refuses_deep_nesting() -> bool:
    """Whether PyYAML's C parser is libyaml 0.2.5 or later, which refuses to nest 1,000 levels deep while it reads
    ("exceeded maximum nesting depth"): its composer, recursive in C, then never goes deeper than that, and the
    builder measures the depth of what it composed."""
    try:
        from yaml._yaml import get_version
    except ImportError:
        return False
    return bool(get_version() >= (0, 2, 5))


def c_too_deep_at(text: str, most: int) -> tuple[int, int] | None:
    """The 0-based (line, column) where `text` first nests deeper than `most`, None when it never does, read from
    PyYAML's C parser's flat event stream (nothing recursive). Raises ImportError without PyYAML's C extension."""
    from yaml import MarkedYAMLError
    from yaml._yaml import CParser
    from yaml.events import CollectionEndEvent, CollectionStartEvent, StreamEndEvent

    parser = CParser(text)
    try:
        depth = 0
        while True:
            try:
                event = parser.get_event()
            except MarkedYAMLError as exc:
                # libyaml ≥ 0.2.5 refuses 1,000 levels itself, while it reads ahead of the events given so far.
                if "maximum nesting depth" in str(exc.problem) and exc.problem_mark is not None:
                    return exc.problem_mark.line, exc.problem_mark.column
                raise
            if isinstance(event, CollectionStartEvent):
                depth += 1
                if depth > most:
                    return event.start_mark.line, event.start_mark.column
            elif isinstance(event, CollectionEndEvent):
                depth -= 1
            elif isinstance(event, StreamEndEvent):
                return None
    finally:
        parser.dispose()
