"""From a loaded document to a compiled `Workflow`, reporting every problem.

Structure is checked first (per top level, node, ending and call), then each
piece that passed is compiled: templates, expressions, state paths, registry
calls, files and sub-workflows. A piece with errors is skipped, not guessed
at, so one bad node does not hide the problems of the others.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from wfexec.language import composites, schema, v8
from wfexec.language.documents import (HOW_DOCUMENTS_RESOLVE, PLUGIN_ROOT_ENV, PLUGIN_ROOT_PREFIXES, find_document,
                                      manifest_places, plugin_root)
from wfexec.language.diagnostics import Diagnostic, Reporter, format_yaml_path, has_errors
from wfexec.language.expressions import (Expression, ExpressionError, Template, compile_value, has_templates,
                                         missing_reads_null)
from wfexec.language.loader import Document, load_file
from wfexec.language.model import Call, Ending, Node, Where, Workflow
from wfexec.language.prose import Prose, is_prose
from wfexec.language.checked import Checked
from wfexec.language.node_reuse import NodeReuse
from wfexec.language.gc_pause import collector_paused
from wfexec.nodes.base import node_type, node_types
from wfexec.records import replace
from wfexec.language.file_checks import check_document_templates, check_script_files
from wfexec.language.name_checks import (WritesMemo, check_names, check_script_names, remembering_writes,
                                          unwritten_reads)
from wfexec.language.scalar_positions import offset_in, position_in_file
from wfexec.types.registry import (CONSEQUENCE, NESTED_CONSEQUENCES, NESTED_PRECONDITION, NESTED_PRECONDITIONS, PRECONDITION,
                       Registry, consequences, preconditions)
from wfexec.language.paths import PathError, parse_path
from wfexec.language.inputs import input_schema_problems

_CALL_META = ("type", "description")

# Every place a compile looked for a file (imports, sub-workflows, documents, states folders), while a
# `recording_lookups()` is open: what the compiled-workflow cache must find unchanged to reuse its result.
# A context variable, not a module global: a worker compiles in many threads at once, and one compile's record
# must neither be ended by another's nor take in the places another looked at.
_lookups: ContextVar[list[Path] | None] = ContextVar("wfexec_compile_lookups", default=None)


@contextmanager
def recording_lookups() -> Iterator[list[Path]]:
    outer = _lookups.get()
    mine: list[Path] = []
    token = _lookups.set(mine)
    try:
        yield mine
    finally:
        _lookups.reset(token)
        if outer is not None:  # a sub-workflow's compile: its places are the including workflow's too
            outer.extend(mine)


def _looked_at(places: Iterable[Path]) -> None:
    recording = _lookups.get()
    if recording is not None:
        recording.extend(places)


class Compiler:
    def __init__(self, doc: Document, base_dir: Path, loading: tuple = ()):
        self.doc = doc
        self.report: Reporter = doc.reporter()
        self.base_dir = base_dir
        self.loading = loading            # sub-workflows being compiled above this one (cycle guard)
        self.prefix: tuple = ()
        self.registries = {PRECONDITION: preconditions(), CONSEQUENCE: consequences()}
        self.static_targets: list[tuple[tuple, str]] = []
        self.documents: dict[str, list[Path]] = {}  # "nodes.<id>" (or a top-level key) → the files it names
        self.extra_diagnostics: list[Diagnostic] = []
        self.expressions: list[tuple[tuple, Expression]] = []  # (YAML path, expression): for name checks
        self.compiled_calls: list[tuple[tuple, Call]] = []  # (YAML path, call), nested ones too: for v8_checks
        self.era = ""  # "v8" for a blueprint-lib v4–v8 file: its calls get their type's era_params

    # -- positions ----------------------------------------------------------
    def full(self, rel: tuple) -> tuple:
        return self.prefix + tuple(rel)

    def where(self, rel: tuple = ()) -> Where:
        path = self.full(rel)
        line, column = self.report.position(path)
        return Where(self.doc.path, line, column, format_yaml_path(path))

    def error(self, rel: tuple, code: str, message: str, hint: str = "", at_key: bool = False):
        self.report.error(self.full(rel), code, message, hint, at_key=at_key)

    # -- values ---------------------------------------------------------------
    def value(self, value: Any, rel: tuple) -> Any:
        try:
            compiled = compile_value(value)
        except ExpressionError as exc:
            self.expression_error(tuple(rel) + exc.path, exc, exc.source)
            return value
        if compiled is not value or isinstance(compiled, Template):
            self._note_templates(compiled, self.full(rel))
        return compiled

    def _note_templates(self, value: Any, path: tuple) -> None:
        if isinstance(value, Template):
            self.expressions.extend((path, e) for e in value.expressions)
        elif isinstance(value, dict):
            for key, item in value.items():
                self._note_templates(item, path + (key,))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                self._note_templates(item, path + (index,))

    def expression(self, value: Any, rel: tuple) -> Expression | None:
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif not isinstance(value, str):
            value = json.dumps(value)
        text = value.strip()
        lead = len(value) - len(value.lstrip())
        if text.startswith("${") and text.endswith("}") and text.count("${") == 1:
            text = text[2:-1]
            lead += 2
        try:
            expression = Expression(text)
        except ExpressionError as exc:
            undoubled = self._undoubled_backslashes(text, rel, value, lead)
            if undoubled is None:
                self.expression_error(rel, exc, value, lead)
                return None
            expression = undoubled
        self.expressions.append((self.full(rel), expression))
        return expression

    def _undoubled_backslashes(self, text: str, rel: tuple, value: str, lead: int) -> Expression | None:
        r"""An expression that is not JavaScript as written but is with each `\\` read as `\`: what its author
        meant. A double-quoted YAML string halves them, so authors write them doubled out of habit, and in a block
        scalar (`|`) they stay doubled (hiivmind-corpus's init: `/^https?:\\/\\//`, a regex that ends too soon).
        Read so, with a warning, rather than refuse a file an LLM reading it would run."""
        if "\\\\" not in text:
            return None
        try:
            expression = Expression(text.replace("\\\\", "\\"))
        except ExpressionError:
            return None
        at = self._inside_value(rel, value, lead + text.index("\\\\"))
        self.report.warning(self.full(rel), "doubled-backslashes",
                            "this expression is not JavaScript as written; it is read with each `\\\\` as one "
                            "`\\`, as a double-quoted YAML string would give it",
                            "write single backslashes in a block scalar (`|`), or double-quote the expression "
                            "(validate --strict refuses it)", at=at)
        return expression

    def expression_error(self, rel: tuple, exc: ExpressionError, value: str, lead: int = 0) -> None:
        """Report `exc` at the character it names inside the YAML string `value` (the expression starts at
        index `lead` of it), or at the value when that cannot be told."""
        at = None
        if exc.line and isinstance(value, str):
            at = self._inside_value(rel, value, lead + offset_in(value[lead:], exc.line, exc.column))
        self.report.error(self.full(rel), "expression", exc.message, exc.hint, at=at)

    def _inside_value(self, rel: tuple, value: str, offset: int) -> tuple[int, int] | None:
        """Where in the file character `offset` of the YAML string `value` at `rel` is, or None when that cannot
        be told."""
        start = self.report.positions.get(self.full(rel))
        return position_in_file(self.doc.text, start, value, offset) if start and self.doc.text else None

    def prose(self, text: str, rel: tuple, spec) -> Prose:
        """A field written as prose: a judgement step for the LLM backend, listed by validate."""
        answer = "boolean" if spec.kind == PRECONDITION or "set_flag" in spec.params else "value"
        where = self.full(rel)
        self.report.warning(where, "prose-step",
                            f"the `{where[-1]}` of {spec.name} is prose, not code: it runs as a judgement step on "
                            "the LLM backend", "write it as an expression to run it as code, for free; keep it and "
                            "the run needs --backend (validate --strict refuses it)")
        return Prose.of(text, answer)

    def path(self, value: Any, rel: tuple) -> tuple | None:
        try:
            return parse_path(value)
        except PathError as exc:
            self.error(rel, "state-path", str(exc), "write a dotted path such as `computed.result` or `items[0].id`")
            return None

    def target(self, value: Any, rel: tuple):
        if value is None:
            return None
        if not isinstance(value, str):
            value = str(value)
        if "${" in value:
            compiled = self.value(value, rel)
            if isinstance(compiled, Template):
                return compiled
            value = compiled
        self.static_targets.append((self.full(rel), value))
        return value

    def file(self, value: Any, rel: tuple, what: str, allow_dir: bool = False) -> Path | None:
        """A document path (see `wfexec.language.documents`): checked now, resolved the way the run resolves it."""
        if not isinstance(value, str):
            return None
        if "${" in value and not value.startswith(PLUGIN_ROOT_PREFIXES):
            self.error(rel, "dynamic-file", f"the {what} path must be written out, not computed",
                       "wfexec checks it exists before the run")
            return None
        lookup = find_document(value, self.doc.path, folder=allow_dir)
        _looked_at(lookup.looked + manifest_places(self.doc.path))
        if lookup.found is not None:
            owner = ".".join(str(part) for part in self.full(rel)[:2])
            self.documents.setdefault(owner, []).append(lookup.found)
            return lookup.found
        folders = [p for p in lookup.looked if _is_dir(p)]
        if folders and not allow_dir:
            self.error(rel, "file-missing", f"{what} '{value}' is a folder, not a file", "name a file inside it")
            return None
        looked = lookup.looked_text() if lookup.looked else "nowhere: no plugin root was found"
        self.error(rel, "file-missing", f"{what} '{value}' does not exist (looked in {looked})",
                   "check the path" if Path(value).is_absolute() else HOW_DOCUMENTS_RESOLVE)
        return None

    def subworkflow(self, value: Any, rel: tuple) -> Workflow | None:
        path = self.file(value, rel, "sub-workflow")
        if path is None:
            return None
        resolved = path.resolve()
        if resolved in self.loading:
            self.error(rel, "workflow-cycle", f"'{value}' includes itself through sub-workflows",
                       "a sub-workflow cannot run the workflow that runs it")
            return None
        doc = load_file(path)
        workflow, diagnostics = compile_document(doc, self.loading + (resolved,))
        if has_errors(diagnostics):
            self.error(rel, "sub-workflow-invalid", f"sub-workflow '{value}' has errors (listed below)")
        self.extra_diagnostics.extend(diagnostics)
        return workflow

    # -- registry calls -------------------------------------------------------
    def call(self, raw: Any, rel: tuple, kind: str) -> Call | None:
        registry: Registry = self.registries[kind]
        raw = self._renamed_store_in(raw, rel, registry)
        if not schema.check_call(raw, self.full(rel), registry, self.report):
            return None
        spec = registry.get(raw["type"])
        assert spec is not None  # check_call reported an unknown type
        params: dict[str, Any] = {}
        for name, value in raw.items():
            if name in _CALL_META or name.startswith("x-"):
                continue
            at = tuple(rel) + (name,)
            nested = spec.nested.get(name)
            if nested == NESTED_PRECONDITIONS:
                params[name] = self.calls(value, at, PRECONDITION)
            elif nested == NESTED_PRECONDITION:
                params[name] = self.call(value, at, PRECONDITION)
            elif nested == NESTED_CONSEQUENCES:
                params[name] = self.calls(value, at, CONSEQUENCE)
            elif name in spec.expressions and is_prose(value):
                params[name] = self.prose(value, at, spec)
            elif name in spec.expressions:
                params[name] = self.expression(value, at)
            elif name in spec.raw:
                params[name] = value
            else:
                params[name] = self.value(value, at)
            if name in spec.paths and isinstance(value, str) and "${" not in value:
                self.path(value, at)
            if name in spec.documents and isinstance(value, str) and "${" not in value:
                self.file(value, at, "document", allow_dir=name in spec.document_folders)
        for name, value in spec.era_params.get(self.era, {}).items():
            params.setdefault(name, value)  # what the era's catalogue says, unless the call says otherwise
        # A loop, not `any` over a generator: this runs for every call of the file.
        asks_llm = not params.keys().isdisjoint(spec.asks_llm_with)
        if not asks_llm:
            for value in params.values():
                if isinstance(value, Prose):
                    asks_llm = True
                    break
        if asks_llm:
            # This call asks the LLM: resume, dry runs and the summary must know it, as for an LLM hook.
            spec = replace(spec, effects=tuple(dict.fromkeys(spec.effects + ("llm",))), idempotent=False)
        call = Call(spec=spec, params=params, raw=raw, where=self.where(rel),
                    dynamic=tuple([k for k, v in params.items() if has_templates(v)]))
        self.compiled_calls.append((self.full(rel), call))
        return call

    def _renamed_store_in(self, raw: Any, rel: tuple, registry: Registry) -> Any:
        """Blueprint v3 files write `store_in:` where the type's definition says `store_as:`: accept it, and
        say to rename it."""
        if not isinstance(raw, dict) or "store_in" not in raw or "store_as" in raw:
            return raw
        type_name = raw.get("type")
        spec = registry.get(type_name) if isinstance(type_name, str) else None
        if spec is None or "store_as" not in spec.params:
            return raw
        self.report.warning(self.full(rel) + ("store_in",), "store-in",
                            "`store_in` is read as `store_as` (a blueprint v3 spelling the type definitions "
                            "never had)", "rename it to `store_as`", at_key=True)
        return {("store_as" if key == "store_in" else key): value for key, value in raw.items()}

    def calls(self, raw: Any, rel: tuple, kind: str) -> tuple:
        if not isinstance(raw, list):
            return ()
        compiled = [self.call(item, tuple(rel) + (i,), kind) for i, item in enumerate(raw)]
        return tuple([call for call in compiled if call is not None])


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def compile_document(doc: Document, loading: tuple = ()) -> tuple[Workflow | None, list[Diagnostic]]:
    """Check and compile one loaded document. Returns (workflow or None, diagnostics)."""
    checked = check_document(doc, loading)
    return checked.workflow, checked.diagnostics


def _check_calls_inside(c: "Compiler", raw: Any) -> None:
    """The preconditions and consequences of a node whose own fields are wrong, checked where its type's schema
    puts them (a field that is a call, a list of calls, or holds them further down)."""
    from wfexec.nodes.base import CONSEQUENCE as CONSEQUENCE_REF, PRECONDITION as PRECONDITION_REF

    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str) or raw["type"] not in node_types():
        return

    def walk(value: Any, fragment: Any, rel: tuple) -> None:
        if not isinstance(fragment, dict):
            return
        if fragment == PRECONDITION_REF or fragment == CONSEQUENCE_REF:
            if isinstance(value, dict):
                c.call(value, rel, PRECONDITION if fragment == PRECONDITION_REF else CONSEQUENCE)
            return
        if isinstance(value, list) and isinstance(fragment.get("items"), dict):
            for index, item in enumerate(value):
                walk(item, fragment["items"], rel + (index,))
        elif isinstance(value, dict):
            for name, item in value.items():
                sub = (fragment.get("properties") or {}).get(name, fragment.get("additionalProperties"))
                walk(item, sub, rel + (name,))

    walk(raw, node_types()[raw["type"]].schema, ())


@collector_paused
def check_document(doc: Document, loading: tuple = (), reuse: NodeReuse | None = None) -> Checked:
    """Check and compile one loaded document, and say how much of it runs as code.

    Every check walks what the file holds; one nested beyond Python's recursion limit (in any check, present or
    future) becomes a diagnostic at the file's start instead of a traceback. `reuse` (an editor checking the same
    file again and again) hands back the nodes whose YAML did not change since its last check; the workflow such a
    check gives is for checking, not running: it has no `source_hash` and no `reply_paths` (which take a walk over
    the whole file and make no diagnostic).
    """
    try:
        return _check_document(doc, loading, reuse)
    except RecursionError:
        reporter = doc.reporter()
        reporter.error((), "too-deep", "the workflow nests too deeply to check (an expression or value with "
                       "thousands of levels)", "split the expression or value into smaller steps")
        return Checked(None, list(doc.diagnostics) + reporter.diagnostics)


def _check_document(doc: Document, loading: tuple, reuse: NodeReuse | None) -> Checked:
    diagnostics = list(doc.diagnostics)
    if doc.data is None and diagnostics:
        return Checked(None, diagnostics)
    v8_problems: list = []
    composite_of: dict = {}
    is_v8 = v8.is_v8(doc.data)
    default_error = doc.data.get("default_error") if is_v8 and isinstance(doc.data, dict) else None
    if is_v8:  # blueprint-lib v4–v8: rewritten into this shape, positions moved along
        if composites.has_composites(doc.data):
            doc, expansion_problems, composite_of = composites.expand(doc, schema.check_against)
            diagnostics += expansion_problems
        doc, v8_problems = v8.normalize(doc)
        reuse = None  # its nodes are rewritten (and renamed) from the file's: nothing ties them to the text
    # The name checks walk every node several times per check: each node's walk is remembered (across checks,
    # for an editor's, whose unchanged nodes are the same objects each time).
    with missing_reads_null(is_v8), remembering_writes(reuse.writes if reuse is not None else WritesMemo()):
        return _compile_document(doc, loading, diagnostics, v8_problems, composite_of, is_v8, default_error, reuse)


def _compile_document(doc: Document, loading: tuple, diagnostics: list, v8_problems: list,
                      composite_of: dict, is_v8: bool, default_error: Any = None,
                      reuse: NodeReuse | None = None) -> Checked:
    from wfexec.language import checks, v8_checks

    path = Path(doc.path)
    c = Compiler(doc, path.parent, loading or (path.resolve(),))
    c.era = "v8" if is_v8 else ""
    for where, code, message, hint in v8_problems:
        c.report.error(where, code, message, hint, at_key=True)
    data = doc.data
    if not schema.check_top_level(data, c.report, v8=is_v8):
        if not isinstance(data, dict):
            return Checked(None, diagnostics + c.report.diagnostics)
    data = data if isinstance(data, dict) else {}

    nodes: dict[str, Node] = {}
    for node_id, raw in (data.get("nodes") or {}).items() if isinstance(data.get("nodes"), dict) else ():
        if reuse is None:
            _compile_node(c, node_id, raw, nodes)
        elif not reuse.replay(node_id, c, nodes):
            with reuse.recording(node_id, c, nodes):
                _compile_node(c, node_id, raw, nodes)
    c.prefix = ()

    endings: dict[str, Ending] = {}
    for ending_id, raw in (data.get("endings") or {}).items() if isinstance(data.get("endings"), dict) else ():
        if not schema.check_ending(ending_id, raw, c.report):
            continue
        c.prefix = ("endings", ending_id)
        recovery = raw.get("recovery")
        if isinstance(recovery, dict) and recovery.get("retry_node"):
            c.target(recovery["retry_node"], ("recovery", "retry_node"))
        endings[ending_id] = Ending(
            id=ending_id, type=raw["type"], message=c.value(raw.get("message", ""), ("message",)),
            details=c.value(raw.get("details"), ("details",)),
            summary={str(k): c.value(v, ("summary", k)) for k, v in (raw.get("summary") or {}).items()},
            recovery=c.value(recovery, ("recovery",)), output=c.value(raw.get("output"), ("output",)),
            consequences=tuple(c.calls(raw.get("consequences"), ("consequences",), CONSEQUENCE))
            if raw.get("consequences") else (),
            silent=isinstance(raw.get("behavior"), dict) and raw["behavior"].get("type") == "silent",
            delegate=_delegate(raw, c), where=c.where(), reported_as=str(raw.get(v8.REPORTED_AS, "")),
            code=raw.get("code"))
    c.prefix = ()

    for node_id in nodes.keys() & endings.keys():
        c.report.error(("endings", node_id), "id-clash", f"'{node_id}' is both a node and an ending",
                       "rename one of them: a target must name exactly one thing", at_key=True)

    entry = c.calls(data.get("entry_preconditions") or [], ("entry_preconditions",), PRECONDITION)
    for where, message in input_schema_problems(data.get("input_schema")):
        c.error(("input_schema",) + where, "input-schema", message,
                "each input of input_schema is a JSON Schema (type, enum, pattern, items, properties, ...) "
                "plus `required: true`")
    imports = _load_imports(data.get("imports"), c)
    launcher_data = _launcher_data(data, c)
    given_initial = data.get("initial_state")
    written_initial: dict = given_initial if isinstance(given_initial, dict) else {}
    as_started = {**data, "initial_state": {**launcher_data, **written_initial}} if launcher_data else data
    start = data.get("start_node")
    if isinstance(start, str):
        c.static_targets.append((("start_node",), start))
    if any(key in data for key in v8.V8_TOP_LEVEL[2:]) or any(call.type == v8_checks.MCP_CALL
                                                              for _, call in c.compiled_calls):
        v8_checks.check(data, c.compiled_calls, nodes, c.report, is_v8)

    diagnostics += c.report.diagnostics
    check_report = doc.reporter()
    checks.check(data, nodes, endings, c.static_targets, check_report, endings_are_nodes=is_v8)
    check_names(as_started, c.expressions, check_report, _bound_names(nodes), _fixed_writes(c))
    check_script_names(data, c.compiled_calls, check_report)
    check_script_files(c.compiled_calls, path, check_report, _looked_at)
    check_document_templates(data, nodes, check_report)
    diagnostics += check_report.diagnostics + c.extra_diagnostics
    workflow = None
    if not has_errors(diagnostics):
        assert isinstance(start, str)  # the schema requires a start_node that names a node
        for_a_run = reuse is None  # an editor's check: what only a run needs is left out (see check_document)
        workflow = Workflow(
            name=str(data.get("name", "")), version=str(data.get("version", "")),
            description=str(data.get("description", "")), start_node=start, nodes=nodes, endings=endings,
            entry_preconditions=entry, initial_state=as_started.get("initial_state") or {},
            imports=imports,
            input_schema=data.get("input_schema"), output_schema=data.get("output_schema"),
            path=path, known_hash=None if for_a_run else "", raw=data,
            documents={owner: tuple(found) for owner, found in c.documents.items()}, composite_of=composite_of,
            top_level_first=is_v8, default_error=default_error if isinstance(default_error, str) else None,
            reply_paths=_reply_paths(nodes, lambda: unwritten_reads(as_started, c.expressions, _bound_names(nodes),
                                                                    _fixed_writes(c))) if for_a_run else {},
            plugin_root=_plugin_root_read(path, c.expressions))
    raw_nodes = data.get("nodes") if isinstance(data.get("nodes"), dict) else {}
    if composite_of:
        diagnostics = [_at_composite(d, composite_of) for d in diagnostics]
    targets = tuple((c.report.position(path), name) for path, name in c.static_targets)
    return Checked(workflow, diagnostics, raw_nodes, nodes, data, composite_of, targets)


def _compile_node(c: Compiler, node_id: str, raw: Any, nodes: dict[str, Node]) -> None:
    if not schema.check_node(node_id, raw, c.report):
        # Its calls are still checked, so one pass reports every error in the file.
        c.prefix = ("nodes", node_id)
        _check_calls_inside(c, raw)
        c.prefix = ()
        return
    c.prefix = ("nodes", node_id)
    kind = node_type(raw["type"])
    spec = kind.compile(node_id, raw, c)
    nodes[node_id] = Node(id=node_id, type=raw["type"], description=raw.get("description", ""),
                          where=c.where(), spec=spec, kind=kind, max_visits=raw.get("max_visits"),
                          idempotent=raw.get("idempotent"))


def _plugin_root_read(path: Path, expressions: list) -> str:
    """The plugin root, when an expression reads `${CLAUDE_PLUGIN_ROOT}`: Claude Code sets it for the plugin; a run
    outside Claude Code has the same root from the nearest `.claude-plugin/plugin.json` (documents resolve from it)."""
    # `names` are the keys of `reads`, without the dict each `reads` builds: this asks it of every expression.
    if not any(PLUGIN_ROOT_ENV in expression.names for _, expression in expressions):
        return ""
    root = plugin_root(path)
    return str(root) if root is not None else ""


def _fixed_writes(c: Compiler) -> list[str]:
    return [path for _, call in c.compiled_calls for path in call.spec.writes]


def _bound_names(nodes: dict) -> set[str]:
    return {name for node in nodes.values() for name in node.kind.checks.bound_names(node.spec)}


def _reply_paths(nodes: dict,
                 read_unwritten: Callable[[], dict[str, tuple[str, ...]]]) -> dict[str, tuple[str, ...]]:
    """For each judgement step that may leave its result in state (`Node.kind.replies_into_state`): the paths
    that the nodes reachable after it, up to the next such step, read and nothing writes, in the order first read. Hiivmind files expect
    the model to write them (build's `scan_single_source` is followed by a read of `computed.scan_result`).

    For a node whose calls hold prose (`compute` written as `#` comments), the paths of those that its prose names:
    856e42a's build says in a comment "Collect results into computed.agent_results array", which the next node
    reads and nothing writes; the model executing the step writes it, so its reply is asked for it too.
    `read_unwritten` gives what each node reads that nothing writes: asked only when there is such a step (a
    walk of every expression against what the whole file writes, most of a check's name checks again)."""
    found = {}
    unwritten: dict[str, tuple[str, ...]] | None = None
    for node_id, node in nodes.items():
        if node.kind.replies_into_state(node.spec):
            named = None
        else:
            named = _prose_names(node)
            if not named:
                continue
        if unwritten is None:
            unwritten = read_unwritten()
        paths = _read_after(node_id, nodes, unwritten)
        if named is not None:
            paths = tuple(path for path in paths if path in named)
        if paths:
            found[node_id] = paths
    return found


def _read_after(node_id: str, nodes: dict, unwritten: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The paths the nodes reachable from `node_id`, up to the next judgement step that replies into state, read
    and nothing writes, in the order first read."""
    paths: dict[str, None] = {}
    seen = {node_id}
    queue = [target for _, target in nodes[node_id].kind.targets(nodes[node_id].spec)]
    while queue:
        target = queue.pop(0)
        if not isinstance(target, str) or target in seen:
            continue
        seen.add(target)
        paths.update(dict.fromkeys(unwritten.get(target, ())))  # an ending's message reads state too
        if target not in nodes or nodes[target].kind.replies_into_state(nodes[target].spec):
            continue  # what is read past the next such step may be that step's to write
        queue.extend(t for _, t in nodes[target].kind.targets(nodes[target].spec))
    return tuple(paths)


def _prose_names(node) -> set[str]:
    """The names the prose fields of a node's calls mention (empty: it has none)."""
    return {name for call in node.kind.calls(node.spec) for value in call.params.values()
            if isinstance(value, Prose) for name in value.names}


def _at_composite(diagnostic: Diagnostic, composite_of: dict) -> Diagnostic:
    """A diagnostic about a node a composite expanded into, named by the composite the author wrote (its line
    and column already are)."""
    parts = diagnostic.yaml_path.split(".", 2)
    if len(parts) < 2 or parts[0] != "nodes" or parts[1] not in composite_of:
        return diagnostic
    composite, kind = composite_of[parts[1]]
    return replace(diagnostic, yaml_path=f"nodes.{composite}",
                   message=f"{diagnostic.message} (in {kind} '{composite}', as its node '{parts[1]}')")


def _delegate(ending: dict, c: Compiler) -> Any:
    """The skill an ending hands over to: v8's `behavior: {type: delegate, skill, args, context}`, or the
    `delegate: {skill, context}` of the older files (hiivmind-corpus init), which mean the same."""
    behavior, field = ending.get("behavior"), "behavior"
    if not (isinstance(behavior, dict) and behavior.get("type") == "delegate"):
        behavior, field = ending.get("delegate"), "delegate"
        if not (isinstance(behavior, dict) and behavior.get("skill")):
            return None
    return {key: c.value(behavior[key], (field, key)) for key in ("skill", "args", "context") if key in behavior}


LAUNCHER_DATA = "intent-mapping.yaml"


def _launcher_data(data: dict, c: Compiler) -> dict:
    """What a v1-era launcher loads into state before the workflow starts: its command's markdown reads the
    `intent-mapping.yaml` beside the workflow, and the workflow reads `${intent_flags}` with no `imports:`.
    Loaded only then (no `imports:`, and a bare name read that is a key of that file and nothing writes)."""
    if "imports" in data:
        return {}
    place = Path(c.doc.path).parent / LAUNCHER_DATA
    _looked_at([place])
    if not place.is_file():
        return {}
    loaded = load_file(place)
    if loaded.diagnostics or not isinstance(loaded.data, dict):
        return {}
    given_initial = data.get("initial_state")
    initial: dict = given_initial if isinstance(given_initial, dict) else {}
    first_read: dict[str, tuple] = {}
    for path, expression in c.expressions:
        for name in expression.names:
            first_read.setdefault(name, path)
    names = [key for key in loaded.data if key in first_read and key not in initial]
    for name in names:
        c.report.warning(first_read[name], "launcher-data",
                         f"`{name}` comes from {LAUNCHER_DATA} beside the workflow, which wfexec loads into state "
                         "as a v1 launcher does, since the workflow has no `imports:`",
                         f"say so in the file: `imports: {{intent_mapping: {LAUNCHER_DATA}}}` and "
                         f"`${{imports.intent_mapping.{name}}}`")
    return {name: loaded.data[name] for name in names}


def _load_imports(imports: Any, c: Compiler) -> dict:
    loaded: dict[str, Any] = {}
    if not isinstance(imports, dict):
        return loaded
    for alias, relative in imports.items():
        path = c.file(relative, ("imports", alias), "import")
        if path is None:
            continue
        doc = load_file(path)
        if doc.diagnostics:
            c.extra_diagnostics.extend(doc.diagnostics)
        loaded[alias] = doc.data
    return loaded
