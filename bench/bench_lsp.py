"""Diagnostics latency of `wfexec lsp`: from an edit sent by a real LSP client over stdio to the diagnostics
published for it, on a 1,000-node and a 10,000-node workflow (the target: 200 ms at 1,000 nodes).

    python bench/bench_lsp.py [--nodes 1000 10000] [--repeat 9] [--against /path/to/other/checkout]
    (needs '.[lsp]')

Two kinds of edit, each in the middle of the file: a value changes on its line (`value`), and a line is added to a
node, or taken out again, so every node below it moves (`line`). Each edit's diagnostics are checked to be
the ones a fresh check of the same text gives.

Baseline, measured in this process and alternated with the edits: PyYAML's C loader (`yaml.load`, CSafeLoader)
reading the same text, the least any check that parses the whole file again pays; the ratio is the edit's time
over it. `--against CHECKOUT` runs a second server from another checkout of wfexec (`git worktree add --detach`),
sent the same edits, alternating with this one: before and after on the same machine at the same time. The
server's own time per check comes from its log. Medians.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tiny import parse_sized  # noqa: E402
from workloads import large_workflow  # noqa: E402

HERE = Path(__file__).resolve().parent.parent


def yaml_floor(text: str) -> None:
    import yaml

    yaml.load(text, Loader=yaml.CSafeLoader)


def edits(text: str, repeat: int) -> list[tuple[str, str]]:
    """(kind, new text) in turn: a value changed on its line; a line added to a node, then taken out again."""
    lines = text.split("\n")
    middle = next(n for n in range(len(lines) // 2, len(lines)) if lines[n].startswith("    description:"))
    made, added = [], False
    for number in range(repeat):
        changed = list(lines)
        changed[middle] = f"    description: edited {number:06d}"
        if added:
            changed.insert(middle + 1, "    max_visits: 5")
        made.append(("value", "\n".join(changed)))
        added = not added
        if added:
            changed.insert(middle + 1, "    max_visits: 5")
        else:
            del changed[middle + 1]
        made.append(("line", "\n".join(changed)))
    return made


class Server:
    """One `wfexec lsp` process (from `checkout`), with the file open, and what it published and logged."""

    def __init__(self, name: str, checkout: Path):
        self.name, self.checkout = name, checkout
        self.published: asyncio.Queue = asyncio.Queue()
        self.checked_in: list[float] = []  # the server's own time per check, from its log
        self.times: dict[str, list[float]] = {"value": [], "line": []}
        self.version = 1

    async def start(self, path: Path, text: str) -> None:
        from lsprotocol import types as lsp
        from pygls.lsp.client import LanguageClient

        self.client = client = LanguageClient("bench", "1")

        @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
            self.published.put_nowait((time.perf_counter(), params))

        @client.feature(lsp.WINDOW_LOG_MESSAGE)
        def on_log(params: lsp.LogMessageParams) -> None:
            if params.message.startswith("checked ") and params.message.endswith(" ms"):
                self.checked_in.append(float(params.message.split(" in ")[-1][:-3]) / 1000)

        environment = {**os.environ, "PYTHONPATH": str(self.checkout)}
        await client.start_io(sys.executable, "-m", "wfexec.cli", "lsp", env=environment, cwd=str(path.parent))
        await client.initialize_async(lsp.InitializeParams(capabilities=lsp.ClientCapabilities()))
        client.initialized(lsp.InitializedParams())
        self.uri, self.text = path.as_uri(), text
        client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=self.uri, language_id="yaml", version=1, text=text)))
        _, first = await self.published.get()
        errors = [d for d in first.diagnostics if d.severity == lsp.DiagnosticSeverity.Error]
        assert not errors, errors[:3]

    async def edit(self, kind: str, text: str) -> list:
        """Sends the change from the text it has to `text` as the one range that differs; the diagnostics."""
        from lsprotocol import types as lsp

        old, new = self.text.split("\n"), text.split("\n")
        first = next(n for n, (a, b) in enumerate(zip(old, new)) if a != b)
        old_end, new_end = len(old), len(new)
        while old_end > first and new_end > first and old[old_end - 1] == new[new_end - 1]:
            old_end, new_end = old_end - 1, new_end - 1
        replaced = "".join(line + "\n" for line in new[first:new_end])
        self.version += 1
        start = time.perf_counter()
        self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
            content_changes=[lsp.TextDocumentContentChangePartial(
                range=lsp.Range(lsp.Position(first, 0), lsp.Position(old_end, 0)), text=replaced)]))
        while True:
            arrived, params = await self.published.get()
            if params.version == self.version:
                break
        self.times[kind].append(arrived - start)
        self.text = text
        return params.diagnostics

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


def fresh_check(path: Path, text: str) -> list[tuple]:
    """What a new server would publish for `text`: the check without anything kept from earlier checks."""
    from wfexec.lsp.server import _check

    found, _ = _check(path.as_uri(), text)
    return [(d.range.start.line, d.range.start.character, d.range.end.character, d.code, d.message)
            for d in found]


async def measure(nodes: int, repeat: int, against: Path | None) -> tuple[list[Server], list[float]]:
    servers = [Server("this checkout", HERE)] + ([Server(f"--against {against}", against)] if against else [])
    floor = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "workflow.yaml"
        text = large_workflow(nodes)
        path.write_text(text)
        for server in servers:
            await server.start(path, text)
        yaml_floor(text)
        for number, (kind, new_text) in enumerate(edits(text, repeat)):
            order = servers if number % 2 == 0 else servers[::-1]
            for server in order:
                got = await server.edit(kind, new_text)
                if server is servers[0] and number < 2:  # the first of each kind: the same as a fresh check
                    published = [(d.range.start.line, d.range.start.character, d.range.end.character, d.code,
                                  d.message) for d in got]
                    assert published == fresh_check(path, new_text), f"{kind} edit: not what a fresh check gives"
            start = time.perf_counter()
            yaml_floor(new_text)
            floor.append(time.perf_counter() - start)
        for server in servers:
            await server.stop()
    return servers, floor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=9, help="edits of each kind")
    parser.add_argument("--against", type=Path, help="another checkout of wfexec, its server measured alongside")
    args = parse_sized(parser, nodes=[20], repeat=1)
    for nodes in args.nodes:
        repeat = args.repeat if nodes <= 2000 else max(min(3, args.repeat), args.repeat // 2)
        servers, floor = asyncio.run(measure(nodes, repeat, args.against))
        yaml_ms = statistics.median(floor) * 1000
        print(f"{nodes:>6,} nodes, {repeat} edits of each kind, medians; PyYAML C loader on the same text "
              f"{yaml_ms:.0f} ms")
        for server in servers:
            for kind, label in (("value", "a value changes"), ("line", "a line added/removed")):
                edit = statistics.median(server.times[kind]) * 1000
                verdict = "within" if edit <= 200 else "over"
                print(f"  {server.name:<28} {label:<22} edit → diagnostics {edit:7.0f} ms ({verdict} 200 ms) "
                      f"| {edit / yaml_ms:5.2f}x PyYAML's load")
            print(f"  {server.name:<28} {'':<22} the server's own check, median {statistics.median(server.checked_in[1:]) * 1000:7.0f} ms")


if __name__ == "__main__":
    main()
