"""`reference`: a sub-workflow run deterministically, or a markdown document
sent to the LLM backend as a judgement step.

A sub-workflow (`workflow:`) runs in its own state (spawn semantics): the
rendered `input` (or `context`) goes in as its inputs, and on a success ending
its `output` is stored at `store_as` and copied by `output_mapping`. A
document (`doc:`, optional `section:`) is rendered with `context` into a
prompt; the backend's reply is stored at `store_as`. Without `store_as`, the
prompt asks for the values the following nodes read and nothing writes, as
one JSON object keyed by state path, and each is set (`Workflow.reply_paths`).
"""

from __future__ import annotations

from typing import Any

from wfexec.language.documents import extract_section
from wfexec.language.paths import get_path
from wfexec.nodes.base import TARGET, NodeType, Outcome
from wfexec.nodes.context import NodeContext
from wfexec.nodes.parts import Checks, Docs, Drawing
from wfexec.records import dataclass
from wfexec.types.registry import ActionFailed

TYPE = "reference"
SCHEMA = {
    "properties": {
        "doc": {"type": "string"},
        "workflow": {"type": "string"},
        "section": {"type": "string"},
        "context": {"type": "object"},
        "input": {"type": "object"},
        "mode": {"enum": ["spawn", "inline"]},
        "store_as": {"type": "string"},
        "output_mapping": {"type": "object", "additionalProperties": {"type": "string"}},
        "error_mapping": {"type": "object", "additionalProperties": TARGET},
        "next_node": TARGET,
        "on_success": TARGET,
        "on_failure": TARGET,
    },
    "oneOf": [{"required": ["doc"]}, {"required": ["workflow"]}],
    "anyOf": [{"required": ["next_node"]}, {"required": ["on_success"]}],
}


@dataclass(frozen=True, slots=True)
class Reference:
    doc: Any                 # Path of the document, or None
    section: Any
    workflow: Any            # compiled sub-Workflow, or None
    inputs: Any              # compiled mapping
    store_as: tuple | None
    output_mapping: dict     # parent path tuple → output path tuple
    error_mapping: dict      # sub-ending id → target
    on_success: Any
    on_failure: Any


def compile(node_id, raw, c):
    inputs = raw.get("input") if raw.get("input") is not None else raw.get("context", {})
    inputs_key = "input" if raw.get("input") is not None else "context"
    store_as = raw.get("store_as")
    output_mapping = {}
    for parent, child in (raw.get("output_mapping") or {}).items():
        parent_path = c.path(parent, ("output_mapping", parent))
        child_path = c.path(child, ("output_mapping", parent))
        if parent_path and child_path:
            output_mapping[parent_path] = child_path
    on_success_key = "on_success" if "on_success" in raw else "next_node"
    doc = c.file(raw["doc"], ("doc",), "document") if "doc" in raw else None
    if doc is not None and isinstance(raw.get("section"), str) and "${" not in raw["section"]:
        try:
            extract_section(doc.read_text(encoding="utf-8"), raw["section"])
        except (LookupError, OSError, UnicodeDecodeError) as missing:
            c.report.warning(c.full(("section",)), "section-missing", f"{missing}: the run sends the whole document",
                             "name one of the document's headings in `section:`")
    return Reference(
        doc=doc,
        section=c.value(raw.get("section"), ("section",)),
        workflow=c.subworkflow(raw["workflow"], ("workflow",)) if "workflow" in raw else None,
        inputs=c.value(inputs or {}, (inputs_key,)),
        store_as=c.path(store_as, ("store_as",)) if store_as else None,
        output_mapping=output_mapping,
        error_mapping={str(k): c.target(v, ("error_mapping", k)) for k, v in (raw.get("error_mapping") or {}).items()},
        on_success=c.target(raw.get(on_success_key), (on_success_key,)),
        on_failure=c.target(raw.get("on_failure"), ("on_failure",)),
    )


def targets(spec):
    edges = [("on_success", spec.on_success), ("on_failure", spec.on_failure)]
    edges += [(f"ending {k}", v) for k, v in spec.error_mapping.items()]
    return edges


def calls(spec):
    return []


def judgement(spec, raw) -> str | None:
    """What goes to the LLM (for `validate`'s summary): a markdown document does; a sub-workflow runs as code."""
    return "markdown reference" if "doc" in raw else None


def execute(node, ctx: NodeContext) -> Outcome:
    spec = node.spec
    inputs = ctx.render(spec.inputs)
    if spec.workflow is not None:
        return _run_subworkflow(node, ctx, inputs)
    expected = () if spec.store_as else ctx.workflow.reply_paths.get(node.id, ())
    try:
        reply = ctx.judge_document(spec.doc, ctx.render(spec.section), inputs, expected)
    except ActionFailed as failure:  # a reply that gives none of the values asked for
        ctx.keep_error(failure.message)
        if spec.on_failure is None:
            ctx.fail(failure.message, failure.hint, node.where)
        return Outcome(spec.on_failure, {"success": False}, "on_failure")
    if spec.store_as:
        ctx.set(spec.store_as, reply)
    return Outcome(spec.on_success, {"success": True}, "on_success")


def replies_into_state(spec) -> bool:
    return spec.doc is not None and spec.store_as is None


def _run_subworkflow(node, ctx: NodeContext, inputs) -> Outcome:
    spec = node.spec
    result = ctx.run_subworkflow(spec.workflow, inputs)
    outcome = {"success": result.type == "success", "ending": result.ending}
    if result.type == "success":
        if spec.store_as:
            ctx.set(spec.store_as, result.output)
        for parent_path, child_path in spec.output_mapping.items():
            ctx.set(parent_path, get_path(result.output or {}, child_path))
        return Outcome(spec.on_success, outcome, "on_success")
    if result.ending in spec.error_mapping:
        return Outcome(spec.error_mapping[result.ending], outcome, f"ending {result.ending}")
    ctx.keep_error(result.message)
    if spec.on_failure is None:
        ctx.fail(f"sub-workflow {spec.workflow.name} ended '{result.ending}' ({result.type}): {result.message}",
                 "add `on_failure:` to handle it", node.where)
    return Outcome(spec.on_failure, outcome, "on_failure")


def effects(spec):
    """A document goes to the LLM; a sub-workflow touches what its own nodes touch."""
    if spec.doc is not None:
        return ("llm",)
    return tuple(spec.workflow.effects()) if spec.workflow is not None else ()


def idempotent(spec) -> bool:
    return spec.doc is None  # an LLM's reply may differ, and may have cost money


def subworkflows(spec):
    return (spec.workflow,) if spec.workflow is not None else ()


NODE_TYPE = NodeType(
    name=TYPE, schema=SCHEMA, compile=compile, execute=execute, targets=targets, calls=calls,
    effects=effects, idempotent=idempotent, skip_edge="on_success", subworkflows=subworkflows,
    replies_into_state=replies_into_state,
    checks=Checks(judgement=judgement),
    drawing=Drawing(shape_name="double-sided box", mermaid_shape=("[[", "]]"), dot_shape="shape=box, peripheries=2"),
    docs=Docs(doc=__doc__, order=50, field_notes={
        "doc": "a markdown document (from the plugin root, else the workflow's folder) for the LLM: a judgement step",
        "workflow": "a sub-workflow file (from the plugin root, else the workflow's folder), run in its own state",
        "section": "one heading of `doc`; default: the whole document",
        "context": "values given to the document or, without `input`, to the sub-workflow",
        "input": "the sub-workflow's inputs (templates rendered)",
        "mode": "`spawn` (the default: the sub-workflow runs in its own state)",
        "store_as": "the state path for the sub-workflow's `output` or the document's reply",
        "output_mapping": "parent state path → path in the sub-workflow's `output`",
        "error_mapping": "sub-workflow ending id → target, for endings that are not success",
        "next_node": "where to go next (the same as `on_success`)",
        "on_success": "where to go when the sub-workflow ended with success or the document replied",
        "on_failure": "where to go when the sub-workflow ended otherwise",
    }, rules="""\
- `doc:` and `workflow:` paths resolve from the plugin root (`$CLAUDE_PLUGIN_ROOT`, else the nearest folder above
  this workflow holding `.claude-plugin/plugin.json`), then from this workflow's folder.
- `workflow: FILE` is a sub-workflow. Run it by these same rules in a fresh
  state of its own, with `input` (or `context`), rendered, as its inputs; it shares the caller's step budget.
  - It ends with a `success` ending: store its rendered `output` at `store_as`, copy each `output_mapping` entry
    (`parent.path: path.in.output`), and go to `on_success` (or `next_node`).
  - It ends otherwise: go to `error_mapping.<its ending id>` when there is one; else set `computed.last_error`
    to its message and go to `on_failure` (none: run error).
- `doc: FILE` (optional `section`: one heading of it) is a judgement step. The document (or that section), with
  `context` rendered as its values, is a prompt: wfexec sends it to the LLM backend; an agent follows it
  itself. Store the reply at `store_as`, then go to `on_success` (or `next_node`). Without `store_as`, when the
  nodes after it read state that nothing in the workflow writes (`computed.scan_result`), the step must produce
  those values: reply with one JSON object of them, keyed by state path, and set each.
"""),
)
