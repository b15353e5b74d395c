"""What a node type is, how node types are found, and what nodes and the run exchange.

A node type is one module that declares a `NodeType` (what the engine needs:
schema, compilation, execution, edges, effects and idempotency; beside it the
optional parts for docs, drawing, SKILL.md and checks, `wfexec.nodes.parts`)
and registers it in the entry-point group `wfexec.nodes`. Its nodes run with a
narrow `NodeContext` (`wfexec.nodes.context`), never the engine's run.
Built-in node types register the same way as plugins:

    # pyproject.toml
    [project.entry-points."wfexec.nodes"]
    countdown = "myplugin.countdown:NODE_TYPE"

The compiler, the checks, the engine, the journal and the outputs look node
types up here (`node_type(name)`, or `node.kind` on a compiled node); none of
them imports a concrete node module.
"""

from __future__ import annotations

from wfexec.records import dataclass, field

from wfexec.nodes.parts import NO_CHECKS, NO_DOCS, NO_SKILL, PLAIN_DRAWING, Checks, Docs, Drawing, Skill

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: these layers sit above or beside the node types
    from typing import Any, Callable, Iterable, Iterator, Mapping
    import re

    from wfexec.system.plugins import Point
    from wfexec.interfaces import NodeCompiler as Compiler
    from wfexec.language.expressions import Template
    from wfexec.language.model import Call, Node, Workflow
    from wfexec.nodes.context import AgentSteps, NodeContext

    # A node type's own compiled fields (`node.spec`): each type declares its own frozen dataclass, so the
    # functions of a NodeType take that type; here it can only be Any.
    Spec = Any

ENTRY_POINT_GROUP = "wfexec.nodes"
# The modules of wfexec/nodes/ that are the interface every node type uses, not node types.
INTERFACE_MODULES = frozenset({"base", "parts", "context"})

# Placeholders inside a node type's schema fragment, resolved in the published schema.
TARGET = {"$ref": "#/$defs/target"}
PRECONDITION = {"$ref": "#/$defs/precondition"}
CONSEQUENCE = {"$ref": "#/$defs/consequence"}
CONSEQUENCES = {"type": "array", "items": CONSEQUENCE}


@dataclass(slots=True)
class Outcome:
    """What a node did: where to go next and what history should record.

    Not frozen: one is made per step, and a frozen dataclass's __init__ costs
    several times more."""

    target: str | Template            # a Template: a computed target, rendered by the run
    outcome: dict = field(default_factory=dict)
    label: str = ""                   # the edge taken: on_success, true, an option id…


@dataclass(frozen=True)
class Choice:
    """One option of a question as shown to the person."""

    id: str
    label: str
    description: str = ""
    item: Any = None


@dataclass(frozen=True)
class Question:
    """What a node asks a person through the run (`ctx.ask`); the run may park on it."""

    node: str
    text: str
    header: str
    choices: tuple[Choice, ...]
    allow_other: bool
    dynamic: bool
    asker: str = ""  # who asks, when not the node itself (an agent of a `states` node): the name to answer

    @property
    def key(self) -> str:
        """The name `--answer KEY=…` answers this question by."""
        return self.asker or self.node

    def to_json(self) -> dict[str, Any]:
        """The one JSON form of a question, whichever door shows or keeps it: the journal's `pending_question`,
        `run --format json` and the MCP tools (which add `status`, `run_id` and `answer_key`), the Temporal
        workflow's messages and its `question` query."""
        return {"node": self.node, "key": self.key, "question": self.text, "header": self.header,
                "options": [{"id": c.id, "label": c.label, "description": c.description} for c in self.choices],
                "allow_other": self.allow_other, "dynamic": self.dynamic, "asker": self.asker}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Question":
        """A question from its JSON form, or from the forms kept before there was one: a store's
        `pending_question` without `dynamic` and `asker` (the asker was the key when it was not the node), and a
        Temporal history's `text` and `choices`."""
        node = data["node"]
        key = data.get("key")
        asker = data["asker"] if "asker" in data else (key if key not in (None, node) else "")
        options = data["options"] if "options" in data else data.get("choices")
        return cls(node=node, text=data["question"] if "question" in data else data.get("text") or "",
                   header=data.get("header") or "",
                   choices=tuple(Choice(str(c["id"]), str(c.get("label") or ""), c.get("description") or "")
                                 for c in options or ()),
                   allow_other=bool(data.get("allow_other")), dynamic=bool(data.get("dynamic")),
                   asker=asker or "")


@dataclass(frozen=True)
class Answer:
    """The answer to a `Question`: one of its options, or free text."""

    choice: Choice | None      # None: free text
    text: str | None = None
    source: str = "given"      # given up front, asked at the terminal, …


def _no_calls(spec: Spec) -> tuple[Call, ...]:
    return ()


def _own_id_if_it_asks(node: Node) -> tuple[str, ...]:
    return (node.id,) if node.kind.asks_person else ()


def _no_effects(spec: Spec) -> tuple[str, ...]:
    return ()


def _rerun_safe(spec: Spec) -> bool:
    return True


def _keeps_its_own_results(spec: Spec) -> bool:
    return False


def _no_subworkflows(spec: Spec) -> tuple[Workflow, ...]:
    return ()


@dataclass(frozen=True, eq=False)  # one object per registered type: compared and hashed by identity
class NodeType:
    """What the engine needs of one node type; docs, drawing, SKILL.md and checks are optional parts beside it
    (`wfexec.nodes.parts`). Every consumer asks this, never the type's name."""

    def __reduce__(self):
        # A cached workflow names each node type by its module, so reading it imports the node types it uses.
        return defined_node_type, (getattr(self.execute, "__module__", None), self.name)

    name: str                                   # `type:` in YAML
    schema: Mapping[str, Any]                   # JSON Schema of its own fields: properties, required, oneOf/anyOf
    #                                             (TARGET, PRECONDITION, CONSEQUENCE stand for targets and calls)
    compile: Callable[[str, dict[str, Any], Compiler], Spec]  # (node id, raw mapping, compiler) → its frozen spec
    execute: Callable[[Node, NodeContext], Outcome]  # (node, ctx) → Outcome: run it once. A node that asks
    #                                             (`ctx.ask`) asks before it changes state: a parked step runs
    #                                             again from its start when the run is resumed
    targets: Callable[[Spec], list[tuple[str, str | Template | None]]]  # spec → [(edge label, target or None)]
    # -- what it runs besides its own code
    calls: Callable[[Spec], Iterable[Call]] = _no_calls  # spec → the registry calls it runs (effects, skills)
    subworkflows: Callable[[Spec], Iterable[Workflow]] = _no_subworkflows  # spec → the Workflows it runs
    # -- a judgement step that names no place for its reply: the model is asked for the values the nodes after it
    #    read and nothing writes (`Workflow.reply_paths`), and its reply is stored there
    replies_into_state: Callable[[Spec], bool] = _keeps_its_own_results
    # -- effects and idempotency (durable runs, `wfexec resume`, Temporal's retries)
    effects: Callable[[Spec], Iterable[str]] = _no_effects  # spec → what it touches besides its calls' effects
    idempotent: Callable[[Spec], bool] = _rerun_safe  # spec → whether its own work may run twice (calls aside)
    skip_edge: str | None = None                # the edge `resume --skip` takes as if it succeeded; None: no skip
    # -- questions to a person
    asks_person: bool = False                   # it may put a question to a person (`ctx.ask`)
    # The keys an answer given up front (`--answer KEY=…`) may name to reach its questions: names, or compiled
    # patterns for names made as it runs; an answer naming no key of any node is refused before the run starts.
    # By default the node's id when it asks a person (`asks_person`), as `Question.key` is.
    answer_keys: Callable[[Node], Iterable[str | re.Pattern]] = _own_id_if_it_asks
    # -- a node whose work is agents' states that may each run on another worker (a `states` node): how a runner
    #    that keeps the agents itself goes through it; None: the node runs whole
    agents: AgentSteps | None = None
    # -- the optional parts, each read by one consumer
    docs: Docs = NO_DOCS                        # `wfexec docs`, the schema's descriptions, editors, SKILL.md rules
    drawing: Drawing = PLAIN_DRAWING            # `wfexec graph`, a skill's legend
    skill: Skill = NO_SKILL                     # `wfexec skill`: tools, the table of questions
    checks: Checks = NO_CHECKS                  # `wfexec validate`: rules beyond the schema, lint, summary


# Where each field of the NodeType before its split now lives, for the error an old plugin's declaration meets.
MOVED_TO_PARTS = {**{name: "docs=Docs" for name in ("doc", "field_notes", "rules", "order")},
                  **{name: "drawing=Drawing" for name in ("shape_name", "mermaid_shape", "dot_shape")},
                  **{name: "skill=Skill" for name in ("tools", "questions")},
                  **{name: "checks=Checks" for name in ("check", "lint", "bound_names", "judgement",
                                                        "asks_person_in")}}


class OldNodeTypeShape(TypeError):
    """A NodeType declared with the fields it had before docs, drawing, SKILL.md and checks became parts."""

    def __init__(self, name: object, moved: list[str]):
        parts: dict[str, list[str]] = {}
        for field_name in moved:
            parts.setdefault(MOVED_TO_PARTS[field_name], []).append(field_name)
        where = "; ".join(f"{part}({', '.join(f'{n}=…' for n in names)})" for part, names in parts.items())
        super().__init__(
            f"NodeType {name!r} is declared in the old shape: {', '.join(f'`{n}`' for n in moved)} are no longer "
            f"fields of NodeType. Write {where} (from wfexec.nodes import Docs, Drawing, Skill, Checks); "
            "execute(node, ctx) now gets a NodeContext, not the run. See docs/guide/plugins.md, \"Node types\"")


def _refusing_the_old_shape(init: Callable[..., None]) -> Callable[..., None]:
    def checked(self, *args: Any, **fields: Any) -> None:
        moved = [name for name in fields if name in MOVED_TO_PARTS]
        if moved:
            raise OldNodeTypeShape(fields.get("name", args[0] if args else "?"), moved)
        init(self, *args, **fields)

    checked.__doc__, checked.__wrapped__ = init.__doc__, init  # type: ignore[attr-defined]
    return checked


# Around the dataclass's own __init__ (kept, so type checkers see the real fields): declaring a type happens once.
setattr(NodeType, "__init__", _refusing_the_old_shape(NodeType.__init__))


@dataclass
class NodeTypes:
    """name → NodeType, with why any plugin could not be loaded."""

    types: dict[str, NodeType]
    problems: list[str]

    def __contains__(self, name: object) -> bool:
        return name in self.types

    def __getitem__(self, name: str) -> NodeType:
        return self.types[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.types)

    def names(self) -> list[str]:
        return sorted(self.types)

    def ordered(self) -> list[NodeType]:
        """In the order the docs explain them."""
        return sorted(self.types.values(), key=lambda t: (t.docs.order, t.name))


_loaded: list[NodeTypes] = []


def node_types() -> NodeTypes:
    """Every node type: those registered in `wfexec.nodes` (wfexec's own among them), loaded once."""
    if _loaded:
        return _loaded[0]
    from wfexec.system.plugins import entry_points

    found: dict[str, NodeType] = {}
    problems: list[str] = []
    points = list(entry_points(ENTRY_POINT_GROUP))
    if not any(ep.value.startswith("wfexec.nodes.") for ep in points):
        # wfexec runs from a source tree, or was installed before node types were entry points:
        # its own node types are the modules of this package.
        points = _builtin_points() + points
    for ep in points:
        try:
            loaded = ep.load()
        except Exception as exc:  # a broken plugin must not break every workflow
            problems.append(f"node type plugin '{ep.name}' ({ep.value}) could not be loaded: {exc}")
            continue
        if not isinstance(loaded, NodeType):
            problems.append(f"node type plugin '{ep.name}' ({ep.value}) is not a NodeType")
            continue
        if loaded.name in found and found[loaded.name] is not loaded:
            problems.append(f"node type '{loaded.name}' from {ep.value} replaces another of that name")
        found[loaded.name] = loaded
    _loaded.append(NodeTypes(found, problems))
    return _loaded[0]


def node_type(name: str) -> NodeType:
    return node_types()[name]


def defined_node_type(module: str | None, name: str) -> NodeType:
    """A node type read back from a cached workflow: the one its module defines, else the one registered."""
    import sys

    loaded = sys.modules.get(module) if module else None
    if loaded is None and module:
        from importlib import import_module

        try:
            loaded = import_module(module)
        except ImportError:
            loaded = None
    for value in vars(loaded).values() if loaded is not None else ():
        if isinstance(value, NodeType) and value.name == name:
            return value
    return node_type(name)


def _builtin_points() -> list[Point]:
    import pkgutil

    import wfexec.nodes as package
    from wfexec.system.plugins import Point

    return [Point(ENTRY_POINT_GROUP, info.name, f"{package.__name__}.{info.name}:NODE_TYPE", "wfexec")
            for info in pkgutil.iter_modules(package.__path__) if info.name not in INTERFACE_MODULES]
