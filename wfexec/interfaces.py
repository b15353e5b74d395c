"""The shapes the lower layers name but do not own: what the compiled workflow (`wfexec.language.model`) keeps of a
node type and of a precondition or consequence type, what a node type is handed to compile and to run a node, and
what a run prints through.

The language sits below the node types and the registry, and the node types below the engine (DESIGN §1,
`.importlinter`), so a lower module cannot import the class it holds, not even for an annotation: that made an
import circle across `language/`, `nodes/` and `running/`. They name these protocols instead; the real classes
(`wfexec.nodes.base.NodeType`, `wfexec.types.registry.TypeSpec`, `wfexec.language.compiler.Compiler`,
`wfexec.running.engine.Run`) satisfy them, which mypy checks where they are handed over. Imports nothing of wfexec.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Protocol
else:  # protocols speak to mypy only: at run time they are plain classes, and typing is not imported
    Protocol = object


# What a type may touch outside the run state (a type's `effects`). A dry run and a side-effect report are
# computed from these without running anything. `mcp`: it calls a tool of an MCP server (starts the server's
# program; the tool may do anything), governed per server by a v8 workflow's `declared_effects`.
EFFECTS = ("files", "process", "network", "git", "llm", "display", "mcp")


class NodeKind(Protocol):
    """A node type as the compiled workflow and its readers see it (`wfexec.nodes.base.NodeType`)."""

    @property
    def name(self) -> str: ...
    @property
    def execute(self) -> Callable[..., Any]: ...
    @property
    def targets(self) -> Callable[[Any], Iterable[Any]]: ...
    @property
    def calls(self) -> Callable[[Any], Iterable[Any]]: ...
    @property
    def subworkflows(self) -> Callable[[Any], Iterable[Any]]: ...
    @property
    def answer_keys(self) -> Callable[..., Any] | None: ...
    @property
    def skip_edge(self) -> str | None: ...
    @property
    def agents(self) -> Any: ...
    @property
    def effects(self) -> Callable[[Any], Iterable[str]]: ...
    @property
    def idempotent(self) -> Callable[[Any], bool]: ...
    @property
    def asks_person(self) -> bool: ...
    @property
    def replies_into_state(self) -> Callable[[Any], bool]: ...
    # the optional parts (`wfexec.nodes.parts`), opaque here
    @property
    def docs(self) -> Any: ...
    @property
    def drawing(self) -> Any: ...
    @property
    def skill(self) -> Any: ...
    @property
    def checks(self) -> Any: ...


class CallKind(Protocol):
    """A precondition or consequence type as a compiled call holds it (`wfexec.types.registry.TypeSpec`)."""

    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def handler(self) -> Callable[..., Any]: ...
    @property
    def effects(self) -> tuple: ...
    @property
    def idempotent(self) -> bool: ...
    @property
    def doc(self) -> str: ...
    @property
    def writes(self) -> tuple: ...
    @property
    def paths(self) -> tuple: ...
    @property
    def direct(self) -> Callable[[Any], Callable[[Any, Any], None] | None] | None: ...


class StateWrites(Protocol):
    """How a type's direct form (`TypeSpec.direct`) writes the run's state (`wfexec.running.engine.Run`): as the
    handler's `ctx.set` and `ctx.append` do, each raising PathError where the path cannot be written."""

    def write(self, path: tuple, value: Any) -> None: ...
    def append(self, path: tuple, value: Any) -> None: ...


class Output(Protocol):
    """What a run prints (`wfexec.running.io.Io` adds prompts and tables): the md/sh protocol's agents, below the
    engine, print through this."""

    tracing: bool  # whether `trace` shows anything (the loop skips building trace text otherwise)

    def print(self, text: str = "") -> None:
        """A message for the person running the workflow."""

    def error(self, text: str) -> None:
        """A warning or error, apart from the run's output."""

    def trace(self, text: str) -> None:
        """One line of the `--trace` log (nothing when not tracing)."""


class SubRunResult(Protocol):
    """How a sub-workflow a node ran ended (`wfexec.running.engine.Result`), as the node reads it."""

    @property
    def ending(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def output(self) -> Any: ...


class NodeCompiler(Protocol):
    """What a node type's `compile` is handed: the compiler of the workflow (`wfexec.language.compiler.Compiler`),
    opaque here; node types call it as they need."""


class StepRun(Protocol):
    """What a node type's `execute` is handed: the run the node is a step of (`wfexec.running.engine.Run`),
    opaque here."""
