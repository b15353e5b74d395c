"""Judgement hooks: consequences that hand a prompt to the LLM backend.

Each builds a prompt and sends it with `ctx.judge`, which stops the run
(exit 4) when no backend is configured and only prints the prompt in a dry
run. They are not idempotent: a re-run would ask the model again and may get
another answer.
"""

from __future__ import annotations

import json
from pathlib import Path

from wfexec.language.documents import HOW_DOCUMENTS_RESOLVE, find_document
from wfexec.language.documents import document_prompt
from wfexec.language.expressions import to_text
from wfexec.language.prose import fenced_data
from wfexec.types.registry import ActionFailed, TypeList

TYPES = TypeList()

LLM = {"effects": ("llm",), "idempotent": False}
STORE_AS = {"type": "string", "description": "the state path to store the reply at, e.g. computed.analysis"}


def _store(ctx, params, reply: str) -> None:
    if params.get("store_as"):
        ctx.set(params["store_as"], reply)


@TYPES.consequence("invoke_pattern",
                   {"path": {"type": "string", "description": "a markdown document, from the plugin root, else the workflow's folder"},
                    "section": {"type": "string", "description": "a heading of that file; default: all of it"},
                    "context": {"type": "object", "description": "values given to the model with the text"},
                    "store_as": STORE_AS},
                   ["path"], paths=("store_as",), documents=("path",), **LLM)
def invoke_pattern(params, ctx):
    """Send a markdown pattern (or one section of it) with `context` to the LLM; store the reply."""
    doc = _pattern_file(params["path"], ctx)
    context = params.get("context") or {}
    if not isinstance(context, dict):
        raise ActionFailed(f"`context` must be a mapping, got {type(context).__name__}")
    section = params.get("section") or None
    try:
        prompt = document_prompt(doc, section, context)
    except (OSError, UnicodeDecodeError) as exc:
        raise ActionFailed(f"cannot read pattern '{params['path']}': {exc}") from None
    _store(ctx, params, ctx.judge(prompt, f"invoke_pattern ({doc.name})"))


def _pattern_file(path: str, ctx) -> Path:
    lookup = find_document(to_text(path), ctx.workflow.path)
    if lookup.found is None:
        raise ActionFailed(f"pattern '{path}' does not exist (looked in {lookup.looked_text()})",
                           HOW_DOCUMENTS_RESOLVE)
    return lookup.found


@TYPES.consequence("spawn_agent",
                   {"subagent_type": {"type": "string"}, "prompt": {"type": "string"}, "store_as": STORE_AS,
                    "run_in_background": {"type": "boolean", "description": "ignored: wfexec waits for the reply"}},
                   ["subagent_type", "prompt", "store_as"], paths=("store_as",), **LLM)
def spawn_agent(params, ctx):
    """Give `prompt` to a sub-agent of type `subagent_type` through the LLM backend; store its reply."""
    if params.get("run_in_background"):
        ctx.trace("spawn_agent: run_in_background is ignored; wfexec waits for the agent's reply")
    agent = to_text(params["subagent_type"]).strip()
    prompt = f"You are a {agent} agent.\n\n{to_text(params['prompt'])}"
    _store(ctx, params, ctx.judge(prompt, f"spawn_agent ({agent})"))


@TYPES.consequence("invoke_skill",
                   {"skill": {"type": "string", "description": "the skill's name, e.g. corpus-refresh"},
                    "skill_path": {"type": "string", "description": "the skill's folder (or its SKILL.md), from the "
                                                                    "plugin root, else the workflow's folder"},
                    "args": {"type": "string"}, "store_as": STORE_AS},
                   [], paths=("store_as",), documents=("skill_path",), document_folders=("skill_path",),
                   alternatives=("skill", "skill_path"), **LLM)
def invoke_skill(params, ctx):
    """Ask the agent to run the skill `/skill args` (or the one at `skill_path`); store its reply only when
    `store_as` is given."""
    instructions = _skill_file(params["skill_path"], ctx) if params.get("skill_path") else None
    skill = to_text(params.get("skill") or "").strip().lstrip("/")
    if not skill and instructions is not None:
        skill = _skill_name(instructions)
    if not skill:
        raise ActionFailed("`skill` is empty", "name the skill to run, e.g. skill: corpus-refresh")
    command = f"/{skill} {to_text(params.get('args', ''))}".strip()
    where = f" Its instructions are in {instructions}." if instructions is not None else ""
    prompt = (f"Run the skill `{command}` now, following its instructions, and reply with its result.{where}\n\n"
              f"{command}\n")
    _store(ctx, params, ctx.judge(prompt, f"invoke_skill ({command})"))


def reply_body(reply: str) -> str:
    """The data of a model's reply: its first fenced JSON or YAML block (a sentence around it is the model
    talking), else its first unmarked block, else all of it. Plugins read their agents' replies with it."""
    return fenced_data(reply, ("json", "yaml", "yml"))


_HIDDEN_STATE = ("history", "checkpoints")


@TYPES.consequence("inline", {
    "pseudocode": {"type": "string", "description": "what to do, in the workflow's words (sent as written)"},
    "store_as": STORE_AS,
    "state_reads": {"type": "array", "items": {"type": "string"}, "description": "state paths the step reads "
                                                                               "(default: the whole state)"},
    "state_writes": {"type": "array", "items": {"type": "string"}, "description": "the only state paths the "
                                                                                "reply may set"},
}, ["pseudocode"], raw=("pseudocode",), paths=("store_as",),
    # blueprint-lib: inline(description, pseudocode, ...): the description says what the pseudocode is for.
    rules=({"required": ["description"]},), example={
    "description": "Count the stale sources", "pseudocode": "computed.stale = sources.filter(s => s.stale).length",
    "state_reads": ["sources"], "state_writes": ["computed.stale"]}, **LLM)
def inline(params, ctx):
    """blueprint-lib: hand the call's `description` and `pseudocode` to the LLM; its JSON reply may set `state_writes`."""
    description = ctx.call.raw.get("description")
    if not description:
        raise ActionFailed("inline needs `description:` to say what the pseudocode does")
    reads = params.get("state_reads")
    if reads is None:
        shown = {k: v for k, v in ctx.state.items() if k not in _HIDDEN_STATE}
    else:
        shown = {path: ctx.get(path) for path in reads}
    writes = list(params.get("state_writes") or [])
    prompt = (f"{description}\n\nPseudocode (carry it out on the state below):\n{params['pseudocode']}\n\n"
              f"State:\n{json.dumps(shown, indent=2, ensure_ascii=False, default=str)}\n\n"
              'Reply with one JSON object: {"result": <any value>, "writes": {"<state path>": <value>}}'
              + (f"; writes may only name: {', '.join(writes)}." if writes else "; writes must be empty."))
    reply = ctx.judge(prompt, f"inline ({description})")
    try:
        answer = json.loads(reply_body(reply))
    except ValueError as exc:
        raise ActionFailed(f"inline: the reply is not JSON ({exc})", "the model must answer with one JSON object") \
            from None
    if not isinstance(answer, dict) or not isinstance(answer.get("writes", {}), dict):
        raise ActionFailed('inline: the reply must be a JSON object {"result": ..., "writes": {...}}')
    refused = [path for path in answer.get("writes", {}) if path not in writes]
    if refused:
        raise ActionFailed(f"inline: the reply sets {', '.join(refused)}, which `state_writes` does not list",
                           "list every path the step may change in state_writes; nothing was changed")
    for path, value in answer.get("writes", {}).items():
        ctx.set(path, value)
    if params.get("store_as"):
        ctx.set(params["store_as"], answer.get("result"))


def _skill_file(path: str, ctx) -> Path:
    """The SKILL.md of `skill_path` (a skill's folder, or the file itself), found like every document."""
    lookup = find_document(to_text(path), ctx.workflow.path, folder=True)
    if lookup.found is None:
        raise ActionFailed(f"skill '{path}' does not exist (looked in {lookup.looked_text()})", HOW_DOCUMENTS_RESOLVE)
    found = lookup.found / "SKILL.md" if lookup.found.is_dir() else lookup.found
    if not found.is_file():
        raise ActionFailed(f"skill folder '{path}' has no SKILL.md ({found})", "point skill_path at a skill's folder")
    return found.absolute()


def _skill_name(skill_md: Path) -> str:
    """The `name:` of the SKILL.md frontmatter, else the skill folder's name."""
    text = skill_md.read_text(encoding="utf-8", errors="replace")
    if text.startswith("---"):
        for line in text.splitlines()[1:]:
            if line.strip() == "---":
                break
            key, _, value = line.partition(":")
            if key.strip() == "name" and value.strip():
                return value.strip().strip("'\"")
    return skill_md.parent.name
