"""The compiled workflow: immutable values built once at load time.

Nothing in here is parsed again while a run executes; templates and
expressions are compiled objects, registry types are resolved specs.
"""

from __future__ import annotations

from pathlib import Path

from wfexec.language.expressions import Template, render_value
from wfexec.records import dataclass, field, field_setters, record_state, set_record_state

TYPE_CHECKING = False
if TYPE_CHECKING:  # the language layer sits below node and registry types: it names their shapes
    from typing import Any, Mapping
    from wfexec.interfaces import CallKind as TypeSpec, NodeKind as NodeType

ENDING_TYPES = ("success", "failure", "error", "cancelled")


def data_digest(data: Any, imports: Mapping[str, Any]) -> str:
    """`Workflow.source_hash` of a workflow's data and imports. A run's journal records it and a Temporal worker
    compares it with its client's: the same data must keep giving the same digest."""
    import json

    from wfexec.system.digest import sha256

    blob = json.dumps({"workflow": data, "imports": imports}, sort_keys=True, default=str).encode()
    return sha256(blob).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Where:
    """Where a piece of a workflow was written."""

    file: str
    line: int
    column: int
    yaml_path: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


# A node and each of its calls hold a Where, kept inside their pickled state as a plain tuple: pickle writes and
# reads a tuple in C, and an object of a class through __reduce_ex__ and __setstate__, about 10,000 instructions
# each way.
def _where_state(where: Where | None) -> tuple | None:
    return None if where is None else record_state(where)


_set_file, _set_line, _set_column, _set_yaml_path = field_setters(Where)


def _where_again(state: tuple | None) -> Where | None:
    if state is None:
        return None
    where = Where.__new__(Where)
    file, line, column, yaml_path = state  # set_record_state written out: there are two per node
    _set_file(where, file)
    _set_line(where, line)
    _set_column(where, column)
    _set_yaml_path(where, yaml_path)
    return where


# A call whose type writes no direct form, or whose parameters need the handler (a computed path, prose).
NO_DIRECT = False


@dataclass(frozen=True, slots=True)
class Call:
    """One precondition or consequence as written in the workflow, compiled."""

    spec: TypeSpec
    params: Mapping[str, Any]   # compiled: Templates, Expressions, nested Calls
    raw: Mapping[str, Any]      # as written, for messages and security decisions
    where: Where
    dynamic: tuple              # the parameters holding a Template somewhere (empty: none)
    # The call's work as a function `(run, scope)` (a consequence's state writes, a precondition's answer), made by
    # its type's `direct` the first time it runs (NO_DIRECT: the handler does the work). Made on first use, not at
    # load: `validate` never needs it, and a closure does not go into the compiled-workflow cache.
    direct: Any = field(default=None, init=False, compare=False, repr=False)

    def __getstate__(self) -> tuple:
        spec, params, raw, where, dynamic, _direct = record_state(self)
        return spec, params, raw, _where_state(where), dynamic  # without `direct`

    def __setstate__(self, state: tuple) -> None:
        spec, params, raw, where, dynamic = state
        set_record_state(self, (spec, params, raw, _where_again(where), dynamic, None))

    def direct_form(self) -> Any:
        """`direct`, made now if this is the call's first run."""
        form = self.direct
        if form is None:
            make = self.spec.direct
            form = (make(self.params) if make is not None else None) or NO_DIRECT
            object.__setattr__(self, "direct", form)
        return form

    def render(self, scope) -> Mapping[str, Any]:
        """The parameters for one call, templates rendered."""
        if not self.dynamic:
            return self.params
        params = dict(self.params)
        for name in self.dynamic:
            params[name] = render_value(params[name], scope)
        return params

    @property
    def type(self) -> str:
        return self.spec.name

    def walk(self):
        """This call and every call nested in its parameters (composites, foreach), depth first."""
        yield self
        for value in self.params.values():
            if isinstance(value, Call):
                yield from value.walk()
            elif isinstance(value, tuple):
                for item in value:
                    if isinstance(item, Call):
                        yield from item.walk()

    def describe(self) -> str:
        shown = {k: v for k, v in self.raw.items() if k not in ("type", "description", "error_message")}
        inner = ", ".join(f"{k}={_brief(v)}" for k, v in shown.items())
        return f"{self.spec.name}({inner})"


def _brief(value: Any, limit: int = 40) -> str:
    text = repr(value) if not isinstance(value, str) else value
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class Node:
    """Fields every node has; each node type's module adds its own compiled fields in `spec`."""

    def __getstate__(self) -> tuple:
        node_id, node_type, description, where, *rest = record_state(self)
        return node_id, node_type, description, _where_state(where), *rest

    def __setstate__(self, state: tuple) -> None:
        node_id, node_type, description, where, *rest = state
        set_record_state(self, (node_id, node_type, description, _where_again(where), *rest))

    id: str
    type: str
    description: str
    where: Where
    spec: Any                       # the node type's own frozen dataclass
    kind: "NodeType"                # what the node type declares: how to run, check, draw and document it
    max_visits: int | None = None
    idempotent: bool | None = None  # None: decided by what the node runs


@dataclass(frozen=True, slots=True)
class Ending:
    id: str

    type: str
    message: Any                    # str | Template
    details: Any = None
    summary: Mapping[str, Any] = field(default_factory=dict)
    recovery: Any = None            # str | {suggestion, related_skill, retry_node}
    output: Any = None              # compiled value returned to a caller
    consequences: tuple = ()        # v8: run when the ending is reached (best effort: a failure is only reported)
    silent: bool = False            # v8 `behavior: {type: silent}`: the message is not printed
    where: Where | None = None
    delegate: Any = None            # v8 `behavior: {type: delegate}`: {skill, args, context}, compiled
    reported_as: str = ""           # the id a result names, when not `id` (a v8 restart ending's last part)
    code: Any = None                # blueprint-lib v3: a code for tools, in the result's JSON


@dataclass(frozen=True, slots=True)
class Workflow:
    name: str

    version: str
    description: str
    start_node: str
    nodes: Mapping[str, Node]
    endings: Mapping[str, Ending]
    entry_preconditions: tuple[Call, ...]
    initial_state: Mapping[str, Any]
    imports: Mapping[str, Any]      # alias → loaded data
    input_schema: Mapping[str, Any] | None
    output_schema: Mapping[str, Any] | None
    path: Path
    raw: Mapping[str, Any] = field(repr=False, default_factory=dict)
    # The files and folders each node (key `nodes.<id>`) names as documents: scripts, states folders, docs.
    documents: Mapping[str, tuple[Path, ...]] = field(repr=False, default_factory=dict)
    # v8: each node a composite expanded into → (the composite's id, its type), for pictures and summaries.
    composite_of: Mapping[str, tuple[str, str]] = field(repr=False, default_factory=dict)
    # A bare name reads the top level of state before `computed`, `flags` and `user_responses` (blueprint-lib v8's
    # lookup; settled at load, like the types' era_params, so nothing at run time asks which era a file is).
    top_level_first: bool = False
    # v8: where a failure no route handles goes (a computed target that names nothing, for one).
    default_error: str | None = None
    # A judgement step whose reply has no `store_as` → the state paths the nodes after it read and nothing
    # writes: the reply is asked for, and applied, as those paths' values.
    reply_paths: Mapping[str, tuple[str, ...]] = field(repr=False, default_factory=dict)
    # What `${CLAUDE_PLUGIN_ROOT}` reads when the environment does not say (only when an expression reads it).
    plugin_root: str = ""
    # `source_hash` once made (None: not yet). "" for an editor's check, which no run uses.
    known_hash: str | None = field(default=None, compare=False, repr=False)

    @property
    def source_hash(self) -> str:
        """A digest of the workflow's data and its imports (`data_digest`), made the first time a run asks: writing
        the whole file as JSON to hash it took about 3% of validating one that no run followed (27 ms of a
        5,000-node file's second)."""
        known = self.known_hash
        if known is None:
            known = data_digest(self.raw, self.imports)
            object.__setattr__(self, "known_hash", known)
        return known

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    def is_target(self, name: str) -> bool:
        return name in self.nodes or name in self.endings

    def node_calls(self, node: Node):
        """Every registry call a node can make, nested ones included."""
        for call in node.kind.calls(node.spec):
            yield from call.walk()

    def effects(self, _seen: frozenset = frozenset()) -> dict[str, set[str]]:
        """effect → the types that have it, over the whole workflow and its sub-workflows (for dry runs,
        resume and skills)."""
        found: dict[str, set[str]] = {}
        calls = [c for node in self.nodes.values() for c in self.node_calls(node)]
        calls += [c for call in self.entry_preconditions for c in call.walk()]
        for call in calls:
            for effect in call.spec.effects:
                found.setdefault(effect, set()).add(call.type)
        seen = _seen | {self.path.resolve()}
        for node in self.nodes.values():
            for child in node.kind.subworkflows(node.spec):
                if child.path.resolve() not in seen:
                    for effect, types in child.effects(seen).items():
                        found.setdefault(effect, set()).update(types)
        return found


# Parameters that say what a call touches, in the order they are worth showing.
_SUBJECTS = ("command", "script", "path", "file", "pattern", "dest", "url", "repo_path", "from", "tool", "operation",
             "strategy", "folder", "message", "content")
_VERBS = {"delete_file": "delete", "create_directory": "create folder", "append_file": "append to",
          "write_file": "write", "write_json": "write", "write_yaml": "write"}


def written(value: Any) -> str:
    """A parameter as the workflow wrote it: templates keep their `${...}`, lists join like a command line."""
    if isinstance(value, Template):
        return value.source
    if isinstance(value, (list, tuple)):
        import shlex  # for a description; a run's start does not need it

        return shlex.join(written(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={written(v)}" for k, v in value.items())
    return str(value)


def describe_call(call: "Call", values: Mapping[str, Any] | None = None) -> str:
    """One line: what this call would do, e.g. `run git tag v${input.version}` or `write release/NOTES.md`.

    `values`: its parameters filled in (a dry run); without them, as written (`wfexec plan`).
    """
    raw = call.raw if values is None else values
    effects = call.spec.effects
    where = f" (in {written(raw.get('cwd') or raw.get('working_directory'))})" \
        if raw.get("cwd") or raw.get("working_directory") else ""
    if "process" in effects and ("command" in raw or "script" in raw):
        return f"run {written(raw.get('command') or raw.get('script'))}{where}"
    if "git" in effects:
        target = raw.get("repo_path") or raw.get("dest") or raw.get("url")
        return f"git {call.type.removeprefix('git_')}" + (f" {written(target)}" if target is not None else "")
    if "files" in effects and "path" in raw:
        return f"{_VERBS.get(call.type, call.type)} {written(raw['path'])}"
    if "network" in effects and "url" in raw:
        return f"fetch {written(raw['url'])}"
    subject = next((name for name in _SUBJECTS if name in raw), None)
    return f"{call.type} {written(raw[subject])}" if subject else call.type
