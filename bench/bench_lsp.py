"""Diagnostics latency of `wfexec lsp`: from an edit sent by a real LSP client over stdio to the diagnostics
published for it, on a 1,000-node and a 10,000-node workflow (the target: 200 ms at 1,000 nodes).

    python bench/bench_lsp.py [--nodes 1000 10000] [--repeat 7]   (needs '.[lsp]')

Baseline, measured in this process and alternated with the edits: the checker itself (`load_text` +
`check_document` on the same text, what the server runs per edit), so the ratio is what the server adds (the
round trip, the index of nodes and routes, the LSP shapes); the server's own time per check comes from its log.
Medians.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tiny import parse_sized  # noqa: E402
from workloads import large_workflow  # noqa: E402


def check_in_process(text: str, path: Path) -> None:
    from wfexec.language.compiler import check_document
    from wfexec.language.loader import load_text

    check_document(load_text(text, str(path)))


async def measure(nodes: int, repeat: int) -> tuple[float, float]:
    from lsprotocol import types as lsp
    from pygls.lsp.client import LanguageClient

    client = LanguageClient("bench", "1")
    published: asyncio.Queue = asyncio.Queue()

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
        published.put_nowait((time.perf_counter(), params))

    checked_in: list[float] = []  # the server's own time per check, from its log

    @client.feature(lsp.WINDOW_LOG_MESSAGE)
    def on_log(params: lsp.LogMessageParams) -> None:
        if params.message.startswith("checked ") and params.message.endswith(" ms"):
            checked_in.append(float(params.message.split(" in ")[-1][:-3]) / 1000)

    await client.start_io(sys.executable, "-m", "wfexec.cli", "lsp")
    await client.initialize_async(lsp.InitializeParams(capabilities=lsp.ClientCapabilities()))
    client.initialized(lsp.InitializedParams())
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "workflow.yaml"
        text = large_workflow(nodes)
        path.write_text(text)
        uri = path.as_uri()
        client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="yaml", version=1, text=text)))
        _, first = await published.get()
        assert not [d for d in first.diagnostics if d.severity == lsp.DiagnosticSeverity.Error], first.diagnostics[:3]
        check_in_process(text, path)  # warm the baseline's imports and registries
        edits, baseline = [], []
        for version in range(2, repeat + 2):
            # An edit: one description changes (the line keeps its length, so positions stay put).
            line = 2
            new_text = f"description: edit {version:06d} of a synthetic workflow"
            start = time.perf_counter()
            client.text_document_did_change(lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(lsp.Position(line, 0), lsp.Position(line, len(text.splitlines()[line]))),
                    text=new_text)]))
            while True:
                arrived, params = await published.get()
                if params.version == version:
                    break
            edits.append(arrived - start)
            start = time.perf_counter()
            check_in_process(text, path)
            baseline.append(time.perf_counter() - start)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return statistics.median(edits), statistics.median(baseline), statistics.median(checked_in[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=7)
    args = parse_sized(parser, nodes=[20], repeat=1)
    for nodes in args.nodes:
        repeat = args.repeat if nodes <= 2000 else max(min(3, args.repeat), args.repeat // 2)
        edit, check, server_check = asyncio.run(measure(nodes, repeat))
        verdict = "within" if edit <= 0.2 else "over"
        print(f"{nodes:>6,} nodes: edit → diagnostics {edit * 1000:8.0f} ms (median of {repeat}; {verdict} 200 ms)"
              f" | of which the server's check {server_check * 1000:8.0f} ms"
              f" | checker alone, in this process {check * 1000:8.0f} ms | ratio {edit / check:.2f}x")


if __name__ == "__main__":
    main()
