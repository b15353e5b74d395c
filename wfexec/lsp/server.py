"""`wfexec lsp`: the language server, over stdio (pygls). Wiring only: what each request answers is in the
modules beside this one.

Checking a file runs in one worker thread, newest text first: an edit made while a check runs queues one more
check of the newest text (never one per keystroke), and hover, completion and navigation answer meanwhile from
the last check. Each check keeps, for the file's next one, what an edit elsewhere leaves as it is: the parsed
pieces of the text, the compiled nodes, each node's definition and writers (`index.Rechecks`).
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from wfexec.language.gc_pause import collector_paused
from wfexec.lsp import completion, navigation
from wfexec.lsp.diagnostics import quick_fixes, to_lsp
from wfexec.lsp.hover import hover
from wfexec.lsp.index import Rechecks, Span, WorkflowIndex, analyse
from wfexec.version import __version__

_KINDS = {"node": lsp.CompletionItemKind.Function, "ending": lsp.CompletionItemKind.EnumMember,
          "type": lsp.CompletionItemKind.Class, "parameter": lsp.CompletionItemKind.Property,
          "state": lsp.CompletionItemKind.Variable}


@dataclass(frozen=True)
class StateFile:
    """A state file of a states folder, as last checked."""

    path: Path
    folder: Path
    lines: list[str]


def _range(span: Span) -> lsp.Range:
    return lsp.Range(lsp.Position(span.line, span.start), lsp.Position(span.line, span.end))


# The collector waits until the check is over: a check allocates thousands of objects, and each collection they
# set off walks every object the server keeps from the last checks (half the time of an edit that moves lines).
@collector_paused
def _check(uri: str, text: str, rechecks: Rechecks | None = None
           ) -> tuple[list[lsp.Diagnostic], WorkflowIndex | StateFile | None]:
    """What the file at `uri` holds, checked as `wfexec validate` checks it: a workflow, a state file, or neither.
    `rechecks`: what the file's last check kept for this one."""
    from wfexec.lsp import states

    path = Path(to_fs_path(uri) or uri)
    if path.suffix.lower() in (".yaml", ".yml"):
        index = analyse(path, text, rechecks)
        return (to_lsp(index.diagnostics, index.lines), index) if index is not None else ([], None)
    folder = states.state_folder(path)
    if folder is None:
        return [], None
    lines = text.splitlines()
    return to_lsp(states.diagnostics(path, text, folder), lines), StateFile(path, folder, lines)


class Checks:
    """The last check of each open file, and the checks to come."""

    def __init__(self, server: LanguageServer):
        self.server = server
        self.open: set[str] = set()
        self.results: dict[str, WorkflowIndex | StateFile | None] = {}
        self.diagnostics: dict[str, list[lsp.Diagnostic]] = {}
        self.rechecks: dict[str, Rechecks] = {}
        self.running: set[str] = set()
        self.stale: set[str] = set()
        self.tasks: set[asyncio.Task] = set()
        # The checker compiles expressions in one JavaScript engine: one check at a time.
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wfexec-check")

    def changed(self, uri: str) -> None:
        if uri in self.running:
            self.stale.add(uri)
            return
        self.running.add(uri)
        task = asyncio.get_running_loop().create_task(self._run(uri))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _run(self, uri: str) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                self.stale.discard(uri)
                document = self.server.workspace.get_text_document(uri)
                version = document.version
                started = time.perf_counter()
                try:
                    found, result = await loop.run_in_executor(
                        self.executor, _check, uri, document.source, self.rechecks.setdefault(uri, Rechecks()))
                    # The editor's log says how long each check took (bench/bench_lsp.py reads it).
                    self.server.window_log_message(lsp.LogMessageParams(
                        lsp.MessageType.Log, f"checked {uri} version {version} in "
                                             f"{(time.perf_counter() - started) * 1000:.0f} ms"))
                except Exception as exc:  # a bug in a check must not end the session: say it, keep serving
                    self.server.window_log_message(lsp.LogMessageParams(
                        lsp.MessageType.Error, f"wfexec could not check {uri}: {type(exc).__name__}: {exc}"))
                    found, result = [], None
                    self.rechecks.pop(uri, None)  # what it kept may be half updated: the next check starts afresh
                if uri not in self.open:
                    return  # closed meanwhile
                previous = self.results.get(uri)
                if isinstance(result, WorkflowIndex) and not result.definitions and \
                        isinstance(previous, WorkflowIndex):
                    # The text does not parse as it is being typed: navigation keeps the last nodes it knew.
                    result = replace(previous, diagnostics=result.diagnostics)
                self.results[uri] = result
                self.diagnostics[uri] = found
                self.server.text_document_publish_diagnostics(
                    lsp.PublishDiagnosticsParams(uri=uri, diagnostics=found, version=version))
                if uri not in self.stale:
                    return
        finally:
            self.running.discard(uri)

    def opened(self, uri: str) -> None:
        self.open.add(uri)
        self.changed(uri)

    def closed(self, uri: str) -> None:
        self.open.discard(uri)
        self.results.pop(uri, None)
        self.diagnostics.pop(uri, None)
        self.rechecks.pop(uri, None)
        self.server.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def workflow(self, uri: str) -> WorkflowIndex | None:
        result = self.results.get(uri)
        return result if isinstance(result, WorkflowIndex) else None


def make_server() -> LanguageServer:
    server = LanguageServer("wfexec", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
    checks = Checks(server)

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: lsp.DidOpenTextDocumentParams) -> None:
        checks.opened(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: lsp.DidChangeTextDocumentParams) -> None:
        checks.changed(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: lsp.DidSaveTextDocumentParams) -> None:
        checks.changed(params.text_document.uri)  # the files it reads may have changed with it

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: lsp.DidCloseTextDocumentParams) -> None:
        checks.closed(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def on_hover(params: lsp.HoverParams) -> lsp.Hover | None:
        index = checks.workflow(params.text_document.uri)
        text = hover(index, params.position.line, params.position.character) if index else None
        if text is None:
            return None
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text))

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION,
                    lsp.CompletionOptions(trigger_characters=[" ", ".", "{", ":"]))
    def on_completion(params: lsp.CompletionParams) -> lsp.CompletionList | None:
        uri = params.text_document.uri
        index = checks.workflow(uri)
        if index is None:
            return None
        lines = server.workspace.get_text_document(uri).source.splitlines()
        found = completion.offers(index, lines, params.position.line, params.position.character)
        return lsp.CompletionList(is_incomplete=False, items=[
            lsp.CompletionItem(label=o.label, kind=_KINDS[o.kind], detail=o.detail or None) for o in found])

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def on_definition(params: lsp.DefinitionParams) -> lsp.Location | None:
        uri, line, character = params.text_document.uri, params.position.line, params.position.character
        result = checks.results.get(uri)
        if isinstance(result, StateFile):
            return _state_target(result, line, character)
        if not isinstance(result, WorkflowIndex):
            return None
        found = navigation.definition(result, line, character)
        if found is None:
            return None
        path, span = found
        return lsp.Location(uri=uri if path == result.path else from_fs_path(str(path)) or "", range=_range(span))

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    def on_references(params: lsp.ReferenceParams) -> list[lsp.Location]:
        uri = params.text_document.uri
        index = checks.workflow(uri)
        if index is None:
            return []
        spans = navigation.references(index, params.position.line, params.position.character,
                                      params.context.include_declaration)
        return [lsp.Location(uri=uri, range=_range(span)) for span in spans]

    @server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
    def on_prepare_rename(params: lsp.PrepareRenameParams) -> lsp.Range | None:
        index = checks.workflow(params.text_document.uri)
        found = index.at(params.position.line, params.position.character) if index else None
        return _range(found.span) if found is not None else None

    @server.feature(lsp.TEXT_DOCUMENT_RENAME)
    def on_rename(params: lsp.RenameParams) -> lsp.WorkspaceEdit | None:
        uri = params.text_document.uri
        index = checks.workflow(uri)
        if index is None:
            return None
        try:
            spans = navigation.rename_spans(index, params.position.line, params.position.character,
                                            params.new_name)
        except ValueError as refused:
            from pygls.exceptions import JsonRpcInvalidParams

            raise JsonRpcInvalidParams(str(refused)) from None
        return lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(range=_range(s), new_text=params.new_name)
                                                for s in spans]})

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def on_symbols(params: lsp.DocumentSymbolParams) -> list[lsp.DocumentSymbol]:
        index = checks.workflow(params.text_document.uri)
        if index is None:
            return []
        return [lsp.DocumentSymbol(
            name=d.id, detail=f"{d.type} {d.kind}",
            kind=lsp.SymbolKind.Function if d.kind == "node" else lsp.SymbolKind.EnumMember,
            range=lsp.Range(lsp.Position(d.span.line, 0), lsp.Position(d.last_line, len(index.lines[d.last_line]))),
            selection_range=_range(d.span)) for d in index.definitions.values()]

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION,
                    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]))
    def on_code_action(params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        return quick_fixes(params.text_document.uri, params.context.diagnostics)

    return server


def _state_target(state: StateFile, line: int, character: int) -> lsp.Location | None:
    from wfexec.lsp import states

    for span, target in states.targets(state.lines):
        if span.holds(line, character):
            found = states.target_file(state.folder, target)
            if found is not None:
                return lsp.Location(uri=from_fs_path(str(found)) or "", range=_range(Span(0, 0, 0)))
    return None


def serve() -> int:
    """Serve over stdin and stdout until the client says exit."""
    make_server().start_io()
    return 0
