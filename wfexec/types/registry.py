"""Registries of precondition and consequence types.

A type is a handler function plus a JSON Schema for its parameters plus a
one-line doc. Built-in types and plugins arrive the same way: through the
entry-point groups `wfexec.preconditions` and `wfexec.consequences`, each entry
naming a module with a `TYPES` list (a `TypeList`), a single `TypeSpec`, or a
list of them. A plugin package needs nothing else:

    # myplugin/types.py
    from wfexec.types import TypeList
    TYPES = TypeList()

    @TYPES.consequence("say_hello", params={"name": {"type": "string"}}, required=["name"])
    def say_hello(params, ctx):
        "Print a greeting."
        ctx.io.print(f"hello {params['name']}")

    # pyproject.toml
    [project.entry-points."wfexec.consequences"]
    myplugin = "myplugin.types"
"""

from __future__ import annotations

from wfexec.records import dataclass, field, fields, replace

from wfexec.errors import ActionFailed, BrokenPlugins, PluginError, WfexecError
from wfexec.interfaces import EFFECTS
from wfexec.language.diagnostics import did_you_mean

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Mapping

PRECONDITION = "precondition"
CONSEQUENCE = "consequence"
ENTRY_POINT_GROUPS = {PRECONDITION: "wfexec.preconditions", CONSEQUENCE: "wfexec.consequences"}
BUILTIN_PACKAGE = "wfexec"

# What a type may touch outside the run state (EFFECTS) is declared in wfexec.interfaces, and the plugin errors in
# wfexec.errors: the journal and the commands use them without importing the registry.

# Parameter slots whose value is a list of calls compiled recursively.
NESTED_PRECONDITIONS = "preconditions"   # list of precondition objects
NESTED_PRECONDITION = "precondition"     # one precondition object
NESTED_CONSEQUENCES = "consequences"     # list of consequence objects


# A call inside a call (composites, foreach) before its own type is known.
LOOSE_CALL = {"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}}}


@dataclass(frozen=True)
class TypeSpec:
    kind: str
    name: str
    handler: Callable[[Mapping[str, Any], Any], Any]
    params: dict = field(default_factory=dict)
    required: tuple = ()
    doc: str = ""
    effects: tuple = ()
    idempotent: bool = True
    expressions: tuple = ()      # params compiled as expressions (`expression:` fields)
    raw: tuple = ()              # params passed as written, never interpolated
    nested: dict = field(default_factory=dict)  # param → NESTED_* kind
    paths: tuple = ()            # params that are state paths, checked at load
    era_params: dict = field(default_factory=dict)  # era ("v8") → parameters a call gets in a file of that era,
                                 # where the era's catalogue says otherwise: the era is settled at load
    writes: tuple = ()           # state paths the handler always writes (`computed.log_file_path`): for the name
                                 # checks, which otherwise know only the paths a call is given
    asks_llm_with: tuple = ()    # params that, when a call gives them, make it ask the LLM (web_fetch's `prompt`):
                                 # that call gains the `llm` effect, as one with a prose parameter does
    documents: tuple = ()        # params that are document paths (plugin root, workflow folder), checked at load
    document_folders: tuple = () # those of `documents` that may name a folder
    alternatives: tuple = ()     # params of which at least one must be given
    rules: tuple = ()            # JSON Schema fragments the call must also satisfy (e.g. if/then: a value an
                                 # operator needs), checked at load like the parameters
    example: dict | None = None
    # A call's compiled parameters -> its whole work as a function `(run, scope)`, or None when that call needs the
    # handler (a computed path, prose): for a consequence, its writes to the run's state (what `Run.apply` runs);
    # for a precondition, its answer, a bool (what `Run.check` returns). Either way instead of the handler, with
    # neither the parameters rendered into a new mapping nor a CallContext. It must do exactly what the handler does.
    direct: Callable[[Mapping[str, Any]], Callable[[Any, Any], Any] | None] | None = None
    source: str = "builtin"
    package: str = BUILTIN_PACKAGE  # the distribution whose entry point registered it

    def __reduce__(self):
        # A cached workflow names each type by the module that defines it (so reading it imports that module,
        # not every type there is), with what the registry or a workflow changed of it (the package a plugin
        # came from; a call that asks the LLM gains the `llm` effect). The cache's key holds the installed
        # plugins, so the module named is still the one the registry would pick.
        module = getattr(self.handler, "__module__", None)
        spec = _spec_in_module(module, self.kind, self.name) if module else None
        if spec is None:
            registered = _registries.get(self.kind)
            spec = registered.get(self.name) if registered is not None else None
            if spec is None:
                return TypeSpec, tuple(getattr(self, f.name) for f in fields(self))
            module = None
        changes = {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) != getattr(spec, f.name)}
        return defined_spec, (module, self.kind, self.name, changes)

    def param_description(self, name: str) -> str:
        """What a parameter means: its schema's description, else PARAM_NOTES' for this type or that name."""
        schema = self.params.get(name)
        if isinstance(schema, dict) and schema.get("description"):
            return schema["description"]
        return PARAM_NOTES.get((self.name, name)) or PARAM_NOTES.get(name) or ""

    def parameter_schema(self) -> dict:
        """The JSON Schema an object of this type must satisfy (including `type`)."""
        properties: dict[str, Any] = {
            "type": {"const": self.name, "description": f"the {self.kind} type: {one_line(self.doc)}"},
            "description": {"type": "string", "description": "what this call is for (documentation only)"}}
        if self.kind == PRECONDITION:
            properties["error_message"] = {"type": "string", "description": "what to say when the check is false"}
        for name, schema in self.params.items():
            if isinstance(schema, dict) and "description" not in schema and self.param_description(name):
                schema = {**schema, "description": self.param_description(name)}
            properties[name] = _allow_template(schema) if name not in self.raw else schema
        schema = {
            "type": "object",
            "description": self.doc,
            "properties": properties,
            "required": ["type", *self.required],
            "patternProperties": {"^x-": {}},
            "additionalProperties": False,
        }
        if self.alternatives:
            schema["anyOf"] = [{"required": [name]} for name in self.alternatives]
        if self.rules:
            schema["allOf"] = list(self.rules)
        return schema


def one_line(doc: str | None) -> str:
    """A docstring's first paragraph on one line (its first blank line ends it, spaces on that line or not)."""
    paragraph: list[str] = []
    for line in (doc or "").split("\n"):
        words = line.split()
        if words:
            paragraph += words
        elif paragraph:
            break
    return " ".join(paragraph)


# What a parameter means where its type does not say (editors show it on hover): by name, or by (type, name).
PARAM_NOTES: dict[Any, str] = {
    "value": "the value (a `${...}` alone keeps its type)",
    "args": "the operation's arguments, as a mapping",
    "message": "the text (templates rendered)",
    "input": "the text to read (templates rendered)",
    "conditions": "the preconditions to combine",
    "operation": "which operation to run",
    "level": "debug, info, warning or error",
    "aspect": "what to check",
    "flag": "a flag name (`flags.<name>`)",
    "name": "the checkpoint's name",
    "content": "what to show or hash",
    "title": "a heading shown above it",
    "format": "how to show it (text, markdown, json, table…)",
    "expression": "a JavaScript expression over the state",
    "timeout": "seconds to wait at most",
    "prompt": "what the agent is asked to do",
    "node": "the node id it is about",
    "source_id": "the corpus source it is about",
    "event_type": "what kind of event (free text)",
    "error_type": "what kind of error (free text)",
    "recoverable": "whether the run can go on after it",
    "context": "more data to keep with it",
    "data": "the event's data",
    "strategy": "how old entries are dropped",
    "outcome": "how the run ended (success, failure…)",
    "check": "what to check about the path",
    "capability": "the capability to look for",
    "module": "a Python module name",
    "operator": "how to compare (equals, not_equals, greater_than, contains…)",
    "min": "the count must be above this",
    "max": "the count must be below this",
    "count": "the count must equal this",
    "subagent_type": "the kind of agent to start",
    "set_flag": "a flag to set to the result (`flags.<name>`)",
    "workflow_version": "the workflow's version, for the log",
    "skill_name": "the skill's name, for the log",
    "plugin_name": "the plugin's name, for the log",
    "entries_added": "how many index entries were added",
    "entries_removed": "how many index entries were removed",
    "keywords_preserved": "whether the index's keywords were kept",
    "indexed_sha": "the commit the index was built from",
    "upstream_sha": "the upstream commit now",
    "indexed_hash": "the content hash the index was built from",
    "current_hash": "the content hash now",
    "commits_behind": "how many commits the index is behind",
    "include_node_history": "whether the log holds every node's step",
    "include_events": "whether the log holds the logged events",
    ("append_state", "value"): "the item to append (a `${...}` alone keeps its type)",
    ("merge_state", "value"): "the mapping to merge in",
    ("set_flag", "value"): "the flag's value (default true)",
    ("display_table", "title"): "a heading above the table",
}


TEMPLATE_PATTERN = r"^\s*\$\{.*\}\s*$"


def _allow_template(schema: dict) -> dict:
    """A parameter of any type may be given as one `${...}` that yields it at run time."""
    if schema.get("type") == "string" and "enum" not in schema:
        return schema
    return {"anyOf": [schema, {"type": "string", "pattern": TEMPLATE_PATTERN}],
            **({"description": schema["description"]} if "description" in schema else {})}


class TypeList(list):
    """A module's list of types, filled by the decorators below."""

    def _add(self, kind: str, name: str, params: dict | None, required: Iterable[str], **options):
        def decorate(fn):
            spec = TypeSpec(kind=kind, name=name, handler=fn, params=dict(params or {}),
                            required=tuple(required), doc=options.pop("doc", None) or one_line(fn.__doc__),
                            source=fn.__module__, **options)
            self.append(spec)
            return fn

        return decorate

    def precondition(self, name: str, params: dict | None = None, required: Iterable[str] = (), **options):
        return self._add(PRECONDITION, name, params, required, **options)

    def consequence(self, name: str, params: dict | None = None, required: Iterable[str] = (), **options):
        return self._add(CONSEQUENCE, name, params, required, **options)


def spec_problems(spec: TypeSpec) -> list[tuple[str, str]]:
    """What is wrong with a type as declared, as (what, how to fix) pairs: effects outside the known
    vocabulary (the journal would take the step for effect-free and re-run it after a crash), a
    parameter schema that is not JSON Schema, a handler that cannot be called as handler(params, ctx)."""
    problems = []
    what = f"{spec.kind} type '{spec.name}'"
    for effect in spec.effects:
        if effect not in EFFECTS:
            problems.append((f"{what} declares the effect '{effect}', which is not one of {', '.join(EFFECTS)}",
                             did_you_mean(effect, EFFECTS) or "use the effects from that list"))
    schema_problem = _schema_problem(spec.params)
    if schema_problem:
        problems.append((f"{what}: {schema_problem}", "fix the schema given to the decorator"))
    missing = [name for name in spec.required if name not in spec.params]
    if missing:
        problems.append((f"{what} requires {', '.join(missing)}, which its parameters do not declare",
                         "add them to the parameter schema, or drop them from `required`"))
    import inspect

    try:
        inspect.signature(spec.handler).bind(None, None)
    except TypeError:
        problems.append((f"{what}: its handler {getattr(spec.handler, '__qualname__', spec.handler)!s}"
                         f"{_signature(spec.handler)} cannot be called as handler(params, ctx)",
                         "declare the handler as `def handler(params, ctx)`"))
    except ValueError:  # no signature to read (a builtin): let it be
        pass
    return problems


def _schema_problem(params: Mapping[str, Any]) -> str:
    """Why a parameter schema is not JSON Schema, or ""."""
    from wfexec.language.jsonschemas import schema_error

    error = schema_error({"type": "object", "properties": params})
    if error is None:
        return ""
    at = "/".join(str(part) for part in list(error.path)[1:]) or "parameters"
    return f"the parameter schema is not valid JSON Schema at {at}: {error.message}"


def _signature(handler) -> str:
    import inspect

    try:
        return str(inspect.signature(handler))
    except (TypeError, ValueError):
        return ""


class Registry:
    """name → TypeSpec for one kind, with parameter validators compiled once."""

    def __init__(self, kind: str, specs: Iterable[TypeSpec] = ()):
        self.kind = kind
        self._specs: dict[str, TypeSpec] = {}
        self._validators: dict[str, Any] = {}
        self.problems: list[str] = []           # warnings: a type replaced by another
        self.broken: list[PluginError] = []     # plugins that cannot be used
        for spec in specs:
            self.register(spec)

    def register(self, spec: TypeSpec) -> None:
        if spec.kind != self.kind:
            raise ValueError(f"{spec.name} is a {spec.kind}, not a {self.kind}")
        if spec.name in self._specs and self._specs[spec.name].source != spec.source:
            self.problems.append(f"{self.kind} type '{spec.name}' from {spec.source} replaces the one from "
                                 f"{self._specs[spec.name].source}")
        self._specs[spec.name] = spec
        self._validators.pop(spec.name, None)

    def get(self, name: str) -> TypeSpec | None:
        return self._specs.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self._specs

    def names(self) -> list[str]:
        return sorted(self._specs)

    def specs(self) -> list[TypeSpec]:
        return [self._specs[n] for n in self.names()]

    def suggest(self, name: str) -> str:
        return did_you_mean(name, self._specs)

    def validator(self, name: str):
        validator = self._validators.get(name)
        if validator is None:
            from wfexec.language.jsonschemas import SchemaCheck, inline_refs

            # Nested calls are checked one by one against their own types, later.
            schema = inline_refs(self._specs[name].parameter_schema(),
                                 {"precondition": LOOSE_CALL, "consequence": LOOSE_CALL})
            validator = SchemaCheck(schema)
            self._validators[name] = validator
        return validator


def _specs_from(obj: Any) -> list[TypeSpec]:
    if isinstance(obj, TypeSpec):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [s for item in obj for s in _specs_from(item)]
    types = getattr(obj, "TYPES", None)
    if types is not None:
        return _specs_from(types)
    raise TypeError(f"{obj!r} is not a TypeSpec, a list of them, or a module with TYPES")


_registries: dict[str, Registry] = {}


def _builtin_modules(kind: str):
    from wfexec.types import consequences, preconditions
    return preconditions if kind == PRECONDITION else consequences


def load_registry(kind: str) -> Registry:
    """The registry of one kind: built-ins, then every installed plugin."""
    registry = _registries.get(kind)
    if registry is not None:
        return registry
    from wfexec.system.plugins import entry_points

    registry = Registry(kind, _specs_from(_builtin_modules(kind)))
    builtin_module = _builtin_modules(kind).__name__
    for ep in entry_points(ENTRY_POINT_GROUPS[kind]):
        if ep.value.split(":")[0] == builtin_module:
            continue  # the built-ins, already loaded above even when wfexec is not installed
        dist = ep.dist or "(unknown distribution)"
        try:
            specs = _specs_from(ep.load())
        except Exception as exc:  # reported as the plugin's fault, not a traceback from wfexec
            registry.broken.append(PluginError(dist, ep.name, f"{ep.value} cannot be loaded: "
                                               f"{type(exc).__name__}: {exc}",
                                               "fix or reinstall the plugin, or uninstall it"))
            continue
        # One module may hold both kinds and be named in both entry-point groups.
        for spec in specs:
            if spec.kind != kind:
                continue
            problems = spec_problems(spec)
            for message, hint in problems:
                registry.broken.append(PluginError(dist, ep.name, message, hint))
            if not problems:
                registry.register(replace(spec, package=dist))
    _registries[kind] = registry
    return registry


def _spec_in_module(module: str, kind: str, name: str) -> TypeSpec | None:
    """The type `name` as the module `module` defines it (in its TYPES), or None."""
    import sys

    loaded = sys.modules.get(module)
    if loaded is None:
        from importlib import import_module

        try:
            loaded = import_module(module)
        except ImportError:
            return None
    try:
        specs = _specs_from(loaded)
    except TypeError:  # no TYPES: the types are listed elsewhere
        return None
    return next((spec for spec in specs if spec.kind == kind and spec.name == name), None)


def defined_spec(module: str | None, kind: str, name: str, changes: dict | None = None) -> TypeSpec:
    """A type read back from a cached workflow: from its module when one is named, else from the registry."""
    spec = _spec_in_module(module, kind, name) if module else None
    if spec is None:
        spec = load_registry(kind).get(name)
    if spec is None:
        raise LookupError(f"no {kind} type '{name}' is registered")
    return replace(spec, **changes) if changes else spec


def preconditions() -> Registry:
    return load_registry(PRECONDITION)


def consequences() -> Registry:
    return load_registry(CONSEQUENCE)


def check_plugins() -> None:
    """Raise BrokenPlugins when an installed plugin cannot be used (a module named in both groups is
    reported once)."""
    errors: dict[str, PluginError] = {}
    for registry in (preconditions(), consequences()):
        for error in registry.broken:
            errors.setdefault(error.format(), error)
    if errors:
        raise BrokenPlugins(list(errors.values()))
