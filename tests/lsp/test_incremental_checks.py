"""`wfexec lsp` after a run of small edits, through a real LSP client over stdio (pytest-lsp): the server checks
again only the nodes an edit changed (wfexec/lsp/pieces.py, wfexec/language/node_reuse.py), and what it publishes
after each edit is still what `wfexec validate` gives for the same text: same lines, columns, codes and messages,
the checks across nodes (missing targets, unreachable nodes, names nothing writes) included."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="needs wfexec[lsp] (pip install -e '.[test]')")
pytest_lsp = pytest.importorskip("pytest_lsp", reason="needs pytest-lsp (pip install -e '.[test]')")

from lsprotocol import types as lsp  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

WORKFLOW = Path(__file__).resolve().parent.parent / "workflows" / "valid" / "lsp_edits.yaml"
DIAGNOSTICS = "textDocument/publishDiagnostics"
SEVERITY = {"error": lsp.DiagnosticSeverity.Error, "warning": lsp.DiagnosticSeverity.Warning}

ASK = """\
  ask:
    type: user_prompt
    prompt:
      question: "Go on with ${computed.doubled}?"
      header: Continue
      options: [{id: go, label: Go, description: next}, {id: stop, label: Stop, description: end}]
    on_response:
      go: {next_node: done}
      stop: {next_node: failed}
"""
INTRO = """\
  intro:
    type: action
    description: a node put above the others, so that they all move down
    actions:
      - {type: set_state, field: computed.intro, value: "${computed.nothing_writes_this}"}
    on_success: count
    on_failure: failed

"""

# (what the edit does, the text it replaces, what it writes instead): applied one after the other.
EDITS = [
    ("a route to a node that does not exist", "on_valid: ask", "on_valid: asc"),
    ("the route fixed", "on_valid: asc", "on_valid: ask"),
    ("a node renamed, so the routes into it break", "  gate:\n", "  gates:\n"),
    ("the routes renamed with it", "      on_true: gate\n", "      on_true: gates\n"),
    ("an expression that does not parse", '"computed.doubled > 2"', '"computed.doubled >"'),
    ("a node added above the others, moving them (and that error) down", "  count:\n", INTRO + "  count:\n"),
    ("the start moved to the new node", "start_node: count", "start_node: intro"),
    ("the expression reading a name nothing writes", '"computed.doubled >"', '"computed.doubld > 2"'),
    ("a node deleted, so a route names nothing", ASK, ""),
    ("the node's lines put back", "endings:\n", ASK + "endings:\n"),
    ("the YAML broken", "    on_failure: failed\n\n  check:", "    on_failure: [failed\n\n  check:"),
    ("the YAML fixed", "    on_failure: [failed\n\n  check:", "    on_failure: failed\n\n  check:"),
    ("a duplicate node id", "  gates:\n", "  check:\n"),
    ("the id back", "  check:\n    type: validation_gate", "  gates:\n    type: validation_gate"),
    ("an expression that does not parse again", '"computed.doubld > 2"', '"computed.doubld >"'),
    ("the new node taken out again, moving the others (and that error) up", INTRO, ""),
]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "wfexec", "lsp"]))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(lsp.InitializeParams(capabilities=lsp.ClientCapabilities()))
    yield
    await lsp_client.shutdown_session()


async def _published(client: LanguageClient, send) -> lsp.PublishDiagnosticsParams:
    """The diagnostics the server publishes after `send()` (waiting is set up before sending: no race)."""
    waiting = client.protocol.wait_for_notification_async(DIAGNOSTICS)
    send()
    return await asyncio.wait_for(waiting, 120)


def _position(text: str, offset: int) -> lsp.Position:
    before = text[:offset]
    return lsp.Position(before.count("\n"), offset - (before.rfind("\n") + 1))


def _validated(folder: Path, text: str) -> list[tuple]:
    """`wfexec validate --format json` of `text`, as the server shows it: (line, column, code, severity, message)."""
    path = folder / "validated.yaml"
    path.write_text(text)
    done = subprocess.run([sys.executable, "-m", "wfexec", "validate", "--format", "json", str(path)],
                          capture_output=True, text=True, cwd=folder)
    return [(d["line"], d["column"], d["code"], SEVERITY[d["severity"]],
             f"{d['message']} — {d['hint']}" if d["hint"] else d["message"])
            for d in json.loads(done.stdout)["diagnostics"]]


def _shown(published: lsp.PublishDiagnosticsParams) -> list[tuple]:
    return [(d.range.start.line + 1, d.range.start.character + 1, d.code, d.severity, d.message)
            for d in published.diagnostics]


@pytest.mark.asyncio
async def test_after_each_of_a_run_of_edits_the_diagnostics_are_validates_of_the_same_text(client, tmp_path):
    path = tmp_path / "workflow.yaml"
    text = WORKFLOW.read_text()
    path.write_text(text)
    uri = path.as_uri()
    opened = await _published(client, lambda: client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=uri, language_id="yaml", version=1, text=text))))
    assert _shown(opened) == _validated(tmp_path, text) == []
    codes_seen = set()
    for version, (edit, old, new) in enumerate(EDITS, start=2):
        at = text.index(old)
        change = lsp.TextDocumentContentChangePartial(
            range=lsp.Range(_position(text, at), _position(text, at + len(old))), text=new)
        text = text[:at] + new + text[at + len(old):]
        published = await _published(client, lambda: client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[change])))
        assert published.version == version, edit
        assert _shown(published) == _validated(tmp_path, text), f"after the edit: {edit}"
        codes_seen.update(d.code for d in published.diagnostics)
    # The edits made each kind of problem they are meant to (else the comparisons above compared little).
    assert {"unknown-target", "unreachable-node", "expression", "unwritten-name", "yaml-syntax",
            "duplicate-key"} <= codes_seen, codes_seen
    assert path.read_text() == WORKFLOW.read_text()  # nothing was saved
