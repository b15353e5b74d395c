"""The language server's re-check after an edit gives what a check from scratch gives: the text parsed in pieces
(wfexec/lsp/pieces.py) is the document `load_text` makes of the whole text (data, positions, diagnostics), and
the nodes kept from earlier checks (wfexec/language/node_reuse.py) are the nodes a fresh compile makes, at the
lines they are at now."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from wfexec.language.compiler import check_document
from wfexec.language.loader import load_text
from wfexec.language.model import Call, Node, Where
from wfexec.language.node_reuse import NodeReuse
from wfexec.lsp.pieces import PieceLoader, split

ROOT = Path(__file__).resolve().parent.parent.parent
WORKFLOWS = sorted([*ROOT.glob("skills/*/workflow.yaml"), *ROOT.glob("tests/workflows/**/*.yaml"),
                    *ROOT.glob("tests/fixtures/**/*.yaml")])

# Texts that must not be read in pieces, or only in some: each must still come out as the whole text's parse.
TRICKY = [
    "nodes:\n  a: &x {type: action}\n  b: *x\n",                     # an alias of an anchor in another piece
    "nodes:\n  a: {type: action}\n  a: {type: action}\n",            # a node written twice
    "nodes:\n  a: 1\nnodes:\n  b: 2\n",                               # a section written twice
    "name: x\nname: y\nnodes: {}\n",                                  # a top-level key written twice
    "description: \"two\nlines: here\"\nnodes:\n  a: 1\n",            # a quoted value over a line at the edge
    "nodes:\n- a\n- b\nendings:\n  done: 1\n",                        # a list at the left edge
    "---\nnodes:\n  a: 1\n...\n",                                     # document markers
    "nodes:\n  a:\n    x: 1\n # a comment, less indented\n  b:\n    x: 2\n",
    "# a comment first\n\nnodes:   # the nodes\n  # before the first\n  a:\n    on_success:\n  b: {}\n",
    "nodes:\n  \"quoted id\": {type: action}\n  'other': {}\nendings:\n  done:\n",
    "nodes:\n    deep: 1\n  shallow: 2\n",                             # entries at two indentations
    "name: x\nnodes:\n  a:\n    next: b\n  b:\n    value: |\n      text\n\n      more\n",  # no newline at the end
    "nodes:\n  a:\n\tb: 1\n",                                         # a tab
    "nodes:\r\n  a: 1\r\n",                                           # other line breaks
    "",
    "# only a comment\n",
    "nodes:\n",
    "? [complex, key]\n: value\nnodes:\n  a: 1\n",
    "nodes:\n  a: {x: [1, 2,\n    3]}\n  b: !!int 3\n  c: !!bool maybe\n",
]


def _same(whole, pieces) -> bool:
    return (whole.data, list(whole.positions.items()), whole.diagnostics) == \
        (pieces.data, list(pieces.positions.items()), pieces.diagnostics)


def _edited(text: str, chance: random.Random) -> str:
    lines = text.split("\n")
    at = chance.randrange(len(lines))
    what = chance.randrange(6)
    if what == 0:
        lines.insert(at, lines[chance.randrange(len(lines))])
    elif what == 1:
        del lines[at]
    elif what == 2 and lines[at]:
        column = chance.randrange(len(lines[at]))
        lines[at] = lines[at][:column] + chance.choice([" ", "x", ":", "#", '"', "- ", "  ", "{", "&a ", "*a"]) + \
            lines[at][column:]
    elif what == 3:
        lines.insert(at, "")
    elif what == 4 and lines[at]:
        lines[at] = lines[at][1:]  # one space less, or the first letter of a key gone
    else:
        lines.insert(at, "  " * chance.randrange(3) + "# a comment")
    return "\n".join(lines)


@pytest.mark.parametrize("text", TRICKY)
def test_tricky_texts_come_out_as_the_whole_texts_parse(text):
    assert _same(load_text(text, "w.yaml"), PieceLoader().load(text, "w.yaml")[0])


def test_a_workflow_is_read_in_pieces_one_per_node():
    text = (ROOT / "tests" / "workflows" / "valid" / "lsp_edits.yaml").read_text()
    pieces = split(text)
    assert pieces is not None
    assert [p.text.split(":")[0].strip() for p in pieces if p.section == "nodes" and not p.header] == \
        ["count", "check", "gate", "ask"]


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: str(p.relative_to(ROOT)))
def test_after_random_edits_the_pieces_are_the_whole_texts_parse(path):
    chance = random.Random(str(path))
    loader = PieceLoader()
    text = path.read_text(encoding="utf-8")
    for _ in range(8):
        assert _same(load_text(text, "w.yaml"), loader.load(text, "w.yaml")[0]), text
        text = _edited(text, chance)


def _places(value, found: list, seen: set) -> list:
    """Every line a `Where` inside the node gives, in order."""
    if id(value) in seen:
        return found
    seen.add(id(value))
    if isinstance(value, Where):
        found.append((value.yaml_path, value.line, value.column))
    elif isinstance(value, Node):
        _places(value.where, found, seen)
        _places(value.spec, found, seen)
    elif isinstance(value, Call):
        _places(value.where, found, seen)
        _places(value.params, found, seen)
    elif isinstance(value, (tuple, list)):
        for item in value:
            _places(item, found, seen)
    elif isinstance(value, dict):
        for item in value.values():
            _places(item, found, seen)
    elif hasattr(value, "__dataclass_fields__") and type(value).__module__.startswith("wfexec.nodes."):
        for name in value.__dataclass_fields__:
            _places(getattr(value, name), found, seen)
    return found


def test_kept_nodes_are_a_fresh_compiles_at_the_lines_they_moved_to(tmp_path):
    text = (ROOT / "tests" / "workflows" / "valid" / "lsp_edits.yaml").read_text()
    path = str(tmp_path / "workflow.yaml")
    loader, reuse = PieceLoader(), NodeReuse()
    insert = "  first:\n    type: action\n    actions: []\n    on_success: count\n    on_failure: failed\n"
    for text in (text, text.replace("nodes:\n", "nodes:\n" + insert), text.replace("nodes:\n", "nodes:\n\n\n"),
                 text.replace("computed.doubled > 2", "computed.doubled >").replace("nodes:\n", "nodes:\n\n"),
                 text.replace("computed.doubled > 2", "computed.doubled >")):
        document, pieces = loader.load(text, path)
        reuse.begin({node: (piece.text, piece.start) for (section, node), piece in pieces.items()
                     if section == "nodes"}, path)
        kept = check_document(document, reuse=reuse)
        fresh = check_document(load_text(text, path))
        assert kept.diagnostics == fresh.diagnostics
        assert kept.targets == fresh.targets
        assert kept.nodes is not None and fresh.nodes is not None
        assert {node: _places(n, [], set()) for node, n in kept.nodes.items()} == \
            {node: _places(n, [], set()) for node, n in fresh.nodes.items()}
    assert reuse.replayed >= 3  # the last checks kept the nodes the edits left alone


def test_the_editors_index_after_edits_is_a_fresh_ones(tmp_path):
    """Definitions, routes and writers kept by the piece they were read from, moved with it, are a fresh index's."""
    from wfexec.lsp.index import Rechecks, analyse

    path = tmp_path / "workflow.yaml"
    text = (ROOT / "tests" / "workflows" / "valid" / "lsp_edits.yaml").read_text()
    rechecks = Rechecks()
    chance = random.Random(7)
    for _ in range(12):
        kept, fresh = analyse(path, text, rechecks), analyse(path, text)
        assert (kept is None) == (fresh is None)
        if kept is not None and fresh is not None:
            assert (kept.definitions, kept.routes, kept.writers, kept.diagnostics) == \
                (fresh.definitions, fresh.routes, fresh.writers, fresh.diagnostics)
        text = _edited(text, chance)


def test_a_diagnostic_past_an_emoji_is_placed_in_utf16_units_as_lsp_counts(tmp_path):
    import wfexec
    from wfexec.lsp.diagnostics import to_lsp

    text = ('name: t\nversion: "1"\nstart_node: a\nnodes:\n  a:\n    type: action\n'
            '    actions: [{type: set_state, x-note: "😀😀", field: computed.x, value: "${nope}"}]\n'
            '    on_success: done\nendings:\n  done: {type: success, message: "ok"}\n')
    (tmp_path / "workflow.yaml").write_text(text, encoding="utf-8")
    [unknown] = [d for d in wfexec.validate(tmp_path / "workflow.yaml") if "nope" in d.message]
    line = text.splitlines()[unknown.line - 1]
    assert "nope" in line[unknown.column - 1:] and "😀" not in line[unknown.column - 1:]  # validate: characters
    [placed] = to_lsp([unknown], text.splitlines())
    units = line.encode("utf-16-le")
    covered = units[2 * placed.range.start.character:2 * placed.range.end.character].decode("utf-16-le")
    assert covered in ('"${nope}"', "nope"), covered  # the LSP counts UTF-16 units, two for each emoji
