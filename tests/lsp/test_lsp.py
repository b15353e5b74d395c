"""`wfexec lsp` through a real LSP client over stdio (pytest-lsp): diagnostics as `wfexec validate` gives them,
following unsaved edits; hover, completion, definition, references, symbols, rename and quick fixes; state files."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="needs wfexec[lsp] (pip install -e '.[test]')")
pytest_lsp = pytest.importorskip("pytest_lsp", reason="needs pytest-lsp (pip install -e '.[test]')")

from lsprotocol import types as lsp  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

BROKEN = textwrap.dedent("""\
    name: greet
    version: "1.0.0"
    start_node: count_letters
    initial_state:
      name: world
    nodes:
      count_letters:
        type: action
        description: counts the letters of the name
        actions:
          - type: set_state
            field: computed.greeting
            value: "Hello, ${name}"
        on_success: pick_styl
        on_failure: failed
      pick_style:
        type: conditional
        condition: {type: evaluate_expression, expression: "computed.greeting.length > 5"}
        branches:
          on_true: done
          on_false: done
    endings:
      done:
        type: success
        message: "${computed.greeting}"
      failed:
        type: error
        message: could not greet
    """)

# Line and character (0-based) of names in BROKEN.
NODE_ID = (6, 4)          # count_letters:
ROUTE_TYPO = (13, 20)     # on_success: pick_styl
DONE_ROUTE = (19, 16)     # on_true: done
SET_STATE = (10, 18)      # - type: set_state
GREETING_READ = (24, 20)  # message: "${computed.greeting}"

DIAGNOSTICS = "textDocument/publishDiagnostics"


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


async def _open(client: LanguageClient, path: Path, text: str | None = None) -> lsp.PublishDiagnosticsParams:
    text = path.read_text() if text is None else text
    return await _published(client, lambda: client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=path.as_uri(), language_id="yaml", version=1, text=text))))


def _validate_json(path: Path) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "wfexec", "validate", "--format", "json", str(path)],
                          capture_output=True, text=True, cwd=path.parent)
    return json.loads(done.stdout)["diagnostics"]


def _at(path: Path, line: int, character: int) -> dict:
    return {"text_document": lsp.TextDocumentIdentifier(uri=path.as_uri()), "position": lsp.Position(line, character)}


@pytest.fixture
def broken(tmp_path) -> Path:
    folder = tmp_path / "my skills"  # a space: the URI quotes it, the server must not lose the file for it
    folder.mkdir()
    path = folder / "workflow.yaml"
    path.write_text(BROKEN)
    return path


@pytest.mark.asyncio
async def test_diagnostics_are_validates_at_the_same_lines_and_follow_unsaved_edits(client, broken):
    published = await _open(client, broken)
    expected = _validate_json(broken)
    assert expected, "the workflow must be broken for this test to mean anything"
    got = [(d.range.start.line + 1, d.range.start.character + 1, d.code, d.severity) for d in published.diagnostics]
    assert got == [(d["line"], d["column"], d["code"],
                    lsp.DiagnosticSeverity.Error if d["severity"] == "error" else lsp.DiagnosticSeverity.Warning)
                   for d in expected]
    typo = next(d for d in published.diagnostics if d.code == "unknown-target")
    assert (typo.range.start.line, typo.range.start.character, typo.range.end.character) == (13, 16, 25)
    assert "did you mean 'pick_style'?" in typo.message

    fixed = BROKEN.replace("on_success: pick_styl", "on_success: pick_style")
    edit = lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=broken.as_uri(), version=2),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=fixed)])
    after = await _published(client, lambda: client.text_document_did_change(edit))
    assert after.version == 2
    assert [d for d in after.diagnostics if d.severity == lsp.DiagnosticSeverity.Error] == []
    assert broken.read_text() == BROKEN  # nothing was saved


@pytest.mark.asyncio
async def test_yaml_that_is_no_workflow_gets_no_diagnostics(client, tmp_path):
    compose = tmp_path / "compose.yaml"
    compose.write_text("services:\n  web:\n    image: nginx\n    ports: [80]\n")
    assert list((await _open(client, compose)).diagnostics) == []


@pytest.mark.asyncio
async def test_hover_names_types_endings_and_who_writes_a_name(client, broken):
    await _open(client, broken)
    node = await client.text_document_hover_async(lsp.HoverParams(**_at(broken, *NODE_ID)))
    assert "**count_letters**: `action` node" in node.contents.value
    assert "counts the letters of the name" in node.contents.value
    ending = await client.text_document_hover_async(lsp.HoverParams(**_at(broken, *DONE_ROUTE)))
    assert "`success` ending" in ending.contents.value and "exit code 0" in ending.contents.value
    call = await client.text_document_hover_async(lsp.HoverParams(**_at(broken, *SET_STATE)))
    assert "`set_state` consequence" in call.contents.value and "`field`" in call.contents.value
    name = await client.text_document_hover_async(lsp.HoverParams(**_at(broken, *GREETING_READ)))
    assert "`computed.greeting` — count_letters (line 12)" in name.contents.value


@pytest.mark.asyncio
async def test_completion_offers_ids_in_targets_types_and_written_paths(client, tmp_path):
    path = tmp_path / "workflow.yaml"
    text = BROKEN.replace("        on_failure: failed\n", "        on_failure: \n", 1)  # line 14
    await _open(client, path, text)
    targets = await client.text_document_completion_async(lsp.CompletionParams(**_at(path, 14, 20)))
    assert {"count_letters", "pick_style", "done", "failed"} <= {item.label for item in targets.items}
    types = await client.text_document_completion_async(lsp.CompletionParams(**_at(path, 10, 18)))
    assert "set_state" in {item.label for item in types.items}
    assert "flag_set" not in {item.label for item in types.items}  # a precondition, not a consequence
    condition = await client.text_document_completion_async(lsp.CompletionParams(**_at(path, 17, 25)))
    assert "evaluate_expression" in {item.label for item in condition.items}
    paths = await client.text_document_completion_async(lsp.CompletionParams(**_at(path, 24, 20)))
    assert "computed.greeting" in {item.label for item in paths.items}


@pytest.mark.asyncio
async def test_definition_references_symbols_and_rename(client, broken):
    await _open(client, broken)
    to_node = await client.text_document_definition_async(lsp.DefinitionParams(**_at(broken, *DONE_ROUTE)))
    assert (to_node.uri, to_node.range.start.line, to_node.range.start.character) == (broken.as_uri(), 22, 2)

    routes = await client.text_document_references_async(lsp.ReferenceParams(
        **_at(broken, 22, 3), context=lsp.ReferenceContext(include_declaration=False)))
    assert sorted(r.range.start.line for r in routes) == [19, 20]

    symbols = await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(
        lsp.TextDocumentIdentifier(uri=broken.as_uri())))
    assert [(s.name, s.detail) for s in symbols] == [
        ("count_letters", "action node"), ("pick_style", "conditional node"), ("done", "success ending"),
        ("failed", "error ending")]

    edit = await client.text_document_rename_async(lsp.RenameParams(**_at(broken, 22, 3), new_name="greeted"))
    changes = edit.changes[broken.as_uri()]
    assert sorted((c.range.start.line, c.range.start.character, c.new_text) for c in changes) == [
        (19, 15, "greeted"), (20, 16, "greeted"), (22, 2, "greeted")]


@pytest.mark.asyncio
async def test_a_did_you_mean_becomes_a_quick_fix(client, broken):
    published = await _open(client, broken)
    typo = next(d for d in published.diagnostics if d.code == "unknown-target")
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=broken.as_uri()), range=typo.range,
        context=lsp.CodeActionContext(diagnostics=[typo])))
    assert [a.title for a in actions] == ["Change to 'pick_style'"]
    (change,) = actions[0].edit.changes[broken.as_uri()]
    assert (change.range.start.character, change.range.end.character, change.new_text) == (16, 25, "pick_style")


@pytest.mark.asyncio
async def test_a_doc_path_goes_to_the_file_and_a_states_folder_to_its_first_state(client, tmp_path):
    (tmp_path / "guide.md").write_text("# Guide\n")
    (tmp_path / "review").mkdir()
    (tmp_path / "review" / "START.md").write_text("Review.\n\n<result>ok</result>\n")
    path = tmp_path / "workflow.yaml"
    path.write_text(textwrap.dedent("""\
        name: r
        version: "1"
        start_node: read
        nodes:
          read:
            type: reference
            doc: guide.md
            next_node: review
          review:
            type: states
            folder: review
            on_success: done
            on_failure: done
        endings:
          done: {type: success}
        """))
    await _open(client, path)
    found = await client.text_document_definition_async(lsp.DefinitionParams(**_at(path, 6, 10)))
    assert found.uri == (tmp_path / "guide.md").as_uri()
    found = await client.text_document_definition_async(lsp.DefinitionParams(**_at(path, 10, 14)))
    assert found.uri == (tmp_path / "review" / "START.md").as_uri()


@pytest.mark.asyncio
async def test_a_v8_file_is_checked_and_navigated_as_written(client):
    path = Path(__file__).resolve().parents[2] / "skills" / "project-setup" / "workflow.yaml"
    published = await _open(client, path)
    assert [d.message for d in published.diagnostics if d.severity == lsp.DiagnosticSeverity.Error] == []
    lines = path.read_text().splitlines()
    line = next(i for i, text in enumerate(lines) if text.strip() == "on_false: pick_layout")
    found = await client.text_document_definition_async(lsp.DefinitionParams(**_at(path, line, 16)))
    assert lines[found.range.start.line].strip() == "pick_layout:"
    # A route into a composite is one into the composite as written, though it is expanded into several nodes.
    composite = next(i for i, text in enumerate(lines) if text.strip() == "confirm_write:")
    routes = await client.text_document_references_async(lsp.ReferenceParams(
        **_at(path, composite, 4), context=lsp.ReferenceContext(include_declaration=False)))
    assert [lines[r.range.start.line].strip() for r in routes] == ["next_node: confirm_write"] * 2
    kind = await client.text_document_hover_async(lsp.HoverParams(**_at(path, composite + 1, 12)))
    assert "composite: ask yes/no" in kind.contents.value


@pytest.mark.asyncio
async def test_a_state_file_gets_its_folders_lint_and_goes_to_its_targets(client, tmp_path):
    folder = tmp_path / "review"
    folder.mkdir()
    (folder / "START.md").write_text("Write the plan.\n\n<goto>REVIEW</goto>\n")
    (folder / "REVIEW.md").write_text("Review it.\n\n<result>ok</result>\n")
    start = folder / "START.md"
    assert list((await _open(client, start)).diagnostics) == []
    found = await client.text_document_definition_async(lsp.DefinitionParams(**_at(start, 2, 8)))
    assert found.uri == (folder / "REVIEW.md").as_uri()

    edit = lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=start.as_uri(), version=2),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text="Write the plan.\n\n<goto>REVEIW</goto>\n")])
    after = await _published(client, lambda: client.text_document_did_change(edit))
    assert [(d.range.start.line, d.severity) for d in after.diagnostics] == [(2, lsp.DiagnosticSeverity.Error)]
    assert "REVEIW" in after.diagnostics[0].message


@pytest.mark.asyncio
async def test_a_new_line_in_a_call_offers_its_parameters_and_hover_explains_one(client, tmp_path):
    path = tmp_path / "workflow.yaml"
    lines = BROKEN.splitlines()
    lines[13:13] = ["      - type: compute", "        expression: \"name.length\"", "        "]
    await _open(client, path, "\n".join(lines) + "\n")
    offered = await client.text_document_completion_async(lsp.CompletionParams(**_at(path, 15, 8)))
    labels = {item.label for item in offered.items}
    assert "store_as" in labels and "expression" not in labels  # written already
    field = await client.text_document_hover_async(lsp.HoverParams(**_at(path, 11, 10)))
    assert field.contents.value.startswith("`field` of `set_state`:")


@pytest.mark.asyncio
async def test_while_the_text_does_not_parse_the_error_shows_and_navigation_keeps_the_last_nodes(client, broken):
    await _open(client, broken)
    half_typed = BROKEN.replace("\nendings:\n", "\nendings: [\n")
    edit = lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=broken.as_uri(), version=2),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=half_typed)])
    after = await _published(client, lambda: client.text_document_did_change(edit))
    assert [d.code for d in after.diagnostics] == ["yaml-syntax"]
    to_node = await client.text_document_definition_async(lsp.DefinitionParams(**_at(broken, *DONE_ROUTE)))
    assert to_node.range.start.line == 22


@pytest.mark.asyncio
async def test_a_rename_onto_an_existing_id_is_refused(client, broken):
    await _open(client, broken)
    with pytest.raises(Exception, match="already a node or ending"):
        await client.text_document_rename_async(lsp.RenameParams(**_at(broken, *NODE_ID), new_name="failed"))


@pytest.mark.asyncio
async def test_markdown_that_is_no_state_file_gets_no_diagnostics(client, tmp_path):
    (tmp_path / "notes.md").write_text("Notes.\n\n<goto>NOWHERE</goto>\n")
    readme = tmp_path / "README.md"
    readme.write_text("# Read me\n\n<goto>NOWHERE</goto>\n")
    assert list((await _open(client, readme)).diagnostics) == []


@pytest.mark.asyncio
async def test_a_misspelt_name_inside_a_template_is_fixed_in_place(client, tmp_path):
    path = tmp_path / "workflow.yaml"
    text = BROKEN.replace('message: "${computed.greeting}"', 'message: "${computed.greting}"')
    published = await _open(client, path, text)
    unwritten = next(d for d in published.diagnostics if d.code == "unwritten-name")
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=path.as_uri()), range=unwritten.range,
        context=lsp.CodeActionContext(diagnostics=[unwritten])))
    (change,) = actions[0].edit.changes[path.as_uri()]
    line = text.splitlines()[change.range.start.line]
    fixed = line[:change.range.start.character] + change.new_text + line[change.range.end.character:]
    assert fixed == '    message: "${computed.greeting}"'
