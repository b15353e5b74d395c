"""The workflow's graph as an SVG picture in the page: `wfexec graph --format svg`'s DOT, drawn by Graphviz's
`dot` on the server (no script draws it in the browser, nothing is fetched), each node's group tagged with its
id (`data-node`) so that the page's style marks the visited nodes and the current one, and its script moves
the marks as the run goes. Without `dot` on PATH there is no picture; the page lists the nodes instead."""

from __future__ import annotations

import html
import re
import threading
from pathlib import Path

from wfexec.outputs.graph import GraphvizFailed, GraphvizMissing, Picture, dot_of, render

# A node's group as dot writes it: `<g id="node3" class="node">` then its `<title>` (the id, XML-escaped).
_NODE = re.compile(r'<g id="(node\d+)" class="node">\s*<title>([^<]*)</title>')
_CACHED = 64

_drawn: dict[tuple[str, int], str | None] = {}
_lock = threading.Lock()


def svg_of(picture: Picture, path: Path) -> str | None:
    """The picture as SVG markup to put in a page (None when `dot` is missing or fails); drawn again only when
    the file changed."""
    try:
        key = (str(path), path.stat().st_mtime_ns)
    except OSError:
        return None
    with _lock:
        if key in _drawn:
            return _drawn[key]
    try:
        drawn: str | None = _tagged(render(dot_of(picture), "svg").decode("utf-8"))
    except (GraphvizMissing, GraphvizFailed):
        drawn = None
    with _lock:
        if len(_drawn) >= _CACHED:
            _drawn.clear()
        _drawn[key] = drawn
    return drawn


def _tagged(svg: str) -> str:
    """The `<svg>` element alone, as HTML holds it (no XML prolog, doctype, comments or namespace addresses),
    each node's group with its id; the page's style shrinks a large one to fit (the viewBox keeps the
    proportions)."""
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<!--.*?-->\n?", "", svg, flags=re.S)
    svg = svg.replace("<svg ", '<svg class="graph-picture" role="img" ', 1)
    svg = re.sub(r'\s+xmlns(:xlink)?="[^"]*"', "", svg)  # an SVG element inside HTML is in its namespace anyway
    return _NODE.sub(lambda m: f'<g id="{m.group(1)}" class="node" data-node="{html.escape(html.unescape(m.group(2)))}">'
                               f"<title>{m.group(2)}</title>", svg)


def marked(svg: str, visited: set[str], current: str | None) -> str:
    """The picture with the nodes a run went through, and the one it stands at, marked for the page's style."""
    def mark(match: re.Match) -> str:
        node = html.unescape(match.group(1))
        classes = ["node", *(["visited"] if node in visited else []), *(["current"] if node == current else [])]
        return f'class="{" ".join(classes)}" data-node="{match.group(1)}"'

    return re.sub(r'class="node" data-node="([^"]*)"', mark, svg)
