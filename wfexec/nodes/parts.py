"""The optional parts of a node type, beside what the engine needs (`wfexec.nodes.base.NodeType`).

Each part serves one consumer, which reads it and nothing else of the type:
- `Docs`: the reference (`wfexec docs`), the published schema's descriptions, the editor's hover and completion;
- `Drawing`: pictures (`wfexec graph`) and the shapes' legend of a skill;
- `Skill`: what a SKILL.md needs beyond the rules (the Claude Code tools, the table of questions);
- `Checks`: what `wfexec validate` says beyond the schema (rules, lint, names bound, what goes to the LLM).

A node type leaves out the parts it has nothing for: each has a default that documents, draws and checks
nothing special.
"""

from __future__ import annotations

from wfexec.records import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: these layers sit beside or above the node types
    from typing import Any, Callable, Iterable, Mapping
    from wfexec.language.diagnostics import Reporter
    from wfexec.language.model import Node

    # A node type's own compiled fields (`node.spec`): each type declares its own frozen dataclass.
    Spec = Any


@dataclass(frozen=True)
class Docs:
    """How the type is explained: in the reference, in SKILL.md's rules, in editors."""

    doc: str = ""                               # first paragraph: the summary under its heading in schema.md
    field_notes: Mapping[str, str] = field(default_factory=dict)  # field → what it is for (schema gives the type)
    rules: str = ""                             # Markdown: how to execute it, for execution.md and SKILL.md
    order: int = 1000                           # place in the docs and rules; ties by name


@dataclass(frozen=True)
class Drawing:
    """How a node of the type is drawn."""

    shape_name: str = "rectangle"               # how a picture's legend names its shape
    mermaid_shape: tuple[str, str] = ("[", "]")
    dot_shape: str = "shape=box"


@dataclass(frozen=True)
class Skill:
    """What a SKILL.md needs of the type besides its rules."""

    tools: frozenset[str] = frozenset()         # Claude Code tools an agent needs to follow its rules
    # (node, raw mapping) → what it asks, for the table of answers (and `wfexec plan`); None: it asks nothing
    questions: Callable[[Node, dict[str, Any]], dict[str, Any] | None] | None = None


def _no_names(spec: Spec) -> tuple[str, ...]:
    return ()


@dataclass(frozen=True)
class Checks:
    """What `wfexec validate` says about a node of the type beyond its schema."""

    # (node, raw mapping, reporter) → None, reporting at ("nodes", id, ...)
    check: Callable[[Node, dict[str, Any], Reporter], None] | None = None
    # What the node reads besides the workflow file (a states folder): node → diagnostics, at that file's line.
    # `wfexec validate` reports them and every run refuses to start on their errors; never cached with the
    # compiled workflow, since those files change on their own.
    lint: Callable[[Node], list] | None = None
    # spec → names its templates may read besides the state's (for the check that warns about unwritten names),
    # e.g. each item of a list
    bound_names: Callable[[Spec], Iterable[str]] = _no_names
    # (spec or None, raw mapping) → what of it goes to the LLM, for `validate`'s summary and `wfexec plan`
    judgement: Callable[[Spec | None, dict[str, Any]], str | None] | None = None
    # spec → whether it asks a person, when that depends on what it runs (`NodeType.asks_person` says it always
    # may), for `validate`'s summary
    asks_person_in: Callable[[Spec], bool] | None = None


NO_DOCS = Docs()
PLAIN_DRAWING = Drawing()
NO_SKILL = Skill()
NO_CHECKS = Checks()
