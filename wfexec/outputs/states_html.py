"""`wfexec graph FOLDER --format html`: one self-contained HTML file showing a states folder as `ray diagram --html`
does (the diagram on the left, the clicked state's file on the right).

The diagram is Graphviz's SVG of the same picture `wfexec graph` draws, put in the page, with the state files'
text beside it as data: the page loads nothing from anywhere (`ray` loads Mermaid and marked.js from a CDN), and a
state's text is shown as written, not rendered as Markdown.
"""

from __future__ import annotations

import html
import json

from wfexec.protocol.scopes import StateScope

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<style>
body {{ margin: 0; display: flex; height: 100vh; font-family: system-ui, sans-serif; }}
#diagram {{ flex: 3; overflow: auto; padding: 1em; border-right: 1px solid #ccc; }}
#state {{ flex: 2; overflow: auto; padding: 1em; }}
#state pre {{ white-space: pre-wrap; font-size: 13px; background: #f6f6f6; padding: .8em; }}
g.node.state {{ cursor: pointer; }}
g.node.chosen polygon, g.node.chosen ellipse, g.node.chosen path {{ stroke: #d33; stroke-width: 3; }}
</style></head>
<body><div id="diagram"><h1>{title}</h1>{svg}</div>
<div id="state"><h2 id="state-name">Click a state</h2><pre id="state-text"></pre></div>
<script type="application/json" id="states">{states}</script>
<script>
const states = JSON.parse(document.getElementById("states").textContent);
for (const node of document.querySelectorAll("#diagram g.node")) {{
  const name = node.querySelector("title").textContent;
  if (!(name in states)) continue;
  node.classList.add("state");
  node.addEventListener("click", () => {{
    document.querySelectorAll("g.node.chosen").forEach(n => n.classList.remove("chosen"));
    node.classList.add("chosen");
    document.getElementById("state-name").textContent = name;
    document.getElementById("state-text").textContent = states[name];
  }});
}}
</script></body></html>
"""


def states_html(scope: StateScope, name: str) -> str:
    """The page for `scope`. Raises GraphvizMissing or GraphvizFailed (wfexec.outputs.graph) for the diagram."""
    from wfexec.outputs.graph import dot_of, render
    from wfexec.outputs.states_graph import states_picture
    from wfexec.protocol.lint import state_transitions

    svg = render(dot_of(states_picture(scope, name)), "svg").decode("utf-8")
    svg = svg[svg.find("<svg"):]  # without the XML prologue and doctype
    texts = {state: scope.read_text(state) for state in state_transitions(scope)}
    data = json.dumps(texts, ensure_ascii=False).replace("</", "<\\/")
    return PAGE.format(title=html.escape(name), svg=svg, states=data)
