"""The uncatalogued hiivmind-corpus types, registered through wfexec's `wfexec.consequences` entry point.

Meanings come from the types' names, every call in the real workflows, the
prose SKILL.md files they replaced and the later prose rewrites of the same
steps. Checks (`*_check`, `glob_*`) never fail: they store what they found.
"""

from __future__ import annotations

import glob
import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from wfexec.language.expressions import compile_value, to_text
from wfexec.system.files import guarded_path, write_atomic
from wfexec.types import ActionFailed, TypeList
from wfexec.types.consequences.corpus import CONFIG_PATH, STATE_CONFIG, edit_config, update_source_fields
from wfexec.types.consequences.llm import reply_body
from wfexec.types.consequences.process import check_exit, run_shell_text

TYPES = TypeList()

PATH = {"type": "string", "description": "a path, relative to the working directory"}
SET_FLAG = {"type": "string", "description": "the flag to set to the answer (flags.<name>)"}
STORE_AS = {"type": "string", "description": "the state path to store the answer at"}
PATTERN = {"type": "string", "description": "a glob relative to the working directory; ** spans folders, "
                                            "a trailing / matches folders only, * skips dotfiles"}
COMMAND = {"type": "string", "description": "shell text run by bash -c; each ${...} is passed as an environment "
                                            "variable, never as code"}
FILES = ("files",)
CHECK_OPTIONS = {"paths": ("store_as",), "effects": FILES}


def _answer(params, ctx, value: Any) -> None:
    """Store a check's answer at `set_flag` and/or `store_as` (a check needs at least one)."""
    if not params.get("set_flag") and not params.get("store_as"):
        raise ActionFailed(f"{ctx.call.type} needs `set_flag` or `store_as` to keep its answer")
    if params.get("set_flag"):
        ctx.set(("flags",) + ctx.path(params["set_flag"]), value)
    if params.get("store_as"):
        ctx.set(params["store_as"], value)


# -- files and globs --------------------------------------------------------------

@TYPES.consequence("file_exists_check", {"path": PATH, "set_flag": SET_FLAG, "store_as": STORE_AS}, ["path"],
                   **CHECK_OPTIONS)
def file_exists_check(params, ctx):
    """Set `set_flag` (or `store_as`) to whether `path` is an existing file."""
    _answer(params, ctx, ctx.resolve_file(params["path"]).is_file())


@TYPES.consequence("any_file_exists_check", {"paths": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                                             "set_flag": SET_FLAG, "store_as": STORE_AS}, ["paths"],
                   **CHECK_OPTIONS)
def any_file_exists_check(params, ctx):
    """Set `set_flag` (or `store_as`) to whether at least one of `paths` is an existing file."""
    _answer(params, ctx, any(ctx.resolve_file(to_text(p)).is_file() for p in params["paths"]))


@TYPES.consequence("directory_exists_check", {"path": PATH, "store_as": STORE_AS, "set_flag": SET_FLAG}, ["path"],
                   **CHECK_OPTIONS)
def directory_exists_check(params, ctx):
    """Store (at `store_as`, or flag `set_flag`) whether `path` is an existing folder."""
    _answer(params, ctx, ctx.resolve_file(params["path"]).is_dir())


def _matches(pattern: str, ctx, files_only: bool) -> list[str]:
    """Sorted matches of `pattern` as written (relative, POSIX, no trailing slash); folders only after a trailing /."""
    pattern = os.path.expanduser(to_text(pattern))
    folders_only = pattern.endswith("/")
    found = glob.glob(pattern, root_dir=ctx.cwd, recursive=True)
    kept = []
    for match in found:
        full = ctx.resolve_file(match)
        if folders_only and not full.is_dir():
            continue
        if files_only and not folders_only and not full.is_file():
            continue
        kept.append(Path(match.rstrip("/\\")).as_posix())
    return sorted(set(kept))


@TYPES.consequence("glob_check", {"pattern": PATTERN, "set_flag": SET_FLAG, "store_as": STORE_AS}, ["pattern"],
                   **CHECK_OPTIONS)
def glob_check(params, ctx):
    """Set `set_flag` (or `store_as`) to whether the glob `pattern` matches anything."""
    _answer(params, ctx, bool(_matches(params["pattern"], ctx, files_only=False)))


@TYPES.consequence("glob_count", {"pattern": PATTERN, "store_as": STORE_AS}, ["pattern", "store_as"],
                   **CHECK_OPTIONS)
def glob_count(params, ctx):
    """Store how many files the glob `pattern` matches (folders, with a trailing /)."""
    ctx.set(params["store_as"], len(_matches(params["pattern"], ctx, files_only=True)))


@TYPES.consequence("glob_files", {"pattern": PATTERN, "store_as": STORE_AS}, ["pattern", "store_as"],
                   **CHECK_OPTIONS)
def glob_files(params, ctx):
    """Store the sorted list of files the glob `pattern` matches, as paths relative to the working directory."""
    ctx.set(params["store_as"], _matches(params["pattern"], ctx, files_only=True))


@TYPES.consequence("append_to_file", {"path": PATH, "content": {"type": "string"},
                                      "unique": {"type": "boolean", "description": "skip when the file already "
                                                                                  "holds the text (default true)"}},
                   ["path", "content"], effects=FILES)
def append_to_file(params, ctx):
    """Append `content` to a file (created when missing), once: text already there is not added again."""
    target = guarded_path(ctx, params, "path", "write")
    content = to_text(params["content"])
    try:
        existing = target.read_text(encoding="utf-8") if target.is_file() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ActionFailed(f"cannot read '{params['path']}': {exc}") from None
    if params.get("unique", True) and content.lstrip("\n") and content.lstrip("\n") in existing:
        ctx.trace(f"  '{params['path']}' already holds the text")
        return
    try:
        write_atomic(target, existing + content)
    except OSError as exc:
        raise ActionFailed(f"cannot write '{params['path']}': {exc.strerror or exc}") from None


# -- display -------------------------------------------------------------------------

@TYPES.consequence("emit_text", {"content": {"type": "string", "description": "the text to show"}}, ["content"],
                   effects=("display",))
def emit_text(params, ctx):
    """Print `content` as plain text (hiivmind-blueprint-ops' upgrade subflows show their plan with it)."""
    ctx.io.print(to_text(params["content"]))


# -- shell ---------------------------------------------------------------------------

@TYPES.consequence("bash_check", {"command": COMMAND, "set_flag": SET_FLAG, "store_as": STORE_AS,
                                  "timeout": {"type": "number", "exclusiveMinimum": 0,
                                              "description": "seconds (default 30)"}},
                   ["command"], raw=("command",), paths=("store_as",), effects=("process",))
def bash_check(params, ctx):
    """Run a read-only shell probe; `set_flag` (or `store_as`) = it exited 0. Idempotent: the command must only look."""
    try:
        completed = run_shell_text(params["command"], ctx, params.get("timeout", 30))
    except ActionFailed as exc:  # timed out, or no bash: the answer is "no"
        ctx.trace(f"  bash_check: {exc.message}")
        _answer(params, ctx, False)
        return
    _answer(params, ctx, completed.exit_code == 0)


@TYPES.consequence("bash_exec", {"command": COMMAND, "store_as": STORE_AS,
                                 "timeout": {"type": "number", "exclusiveMinimum": 0,
                                             "description": "seconds (default 300)"},
                                 "allow_failure": {"type": "boolean"}},
                   ["command"], raw=("command",), paths=("store_as",), effects=("process",), idempotent=False)
def bash_exec(params, ctx):
    """Run shell text with bash; `store_as` keeps its stdout, trailing whitespace trimmed; non-zero exit fails."""
    completed = run_shell_text(params["command"], ctx, params.get("timeout", 300))
    if params.get("store_as"):
        ctx.set(params["store_as"], completed.stdout.rstrip())
    check_exit(completed, bool(params.get("allow_failure", False)))


# -- sub-agents ----------------------------------------------------------------------

def _agent_brief(agent_type: str, ctx) -> str:
    """The body of agents/<agent_type>.md of the plugin holding the workflow, else a one-line role."""
    folder = ctx.workflow.base_dir.resolve()
    for candidate in (folder, *folder.parents):
        brief = candidate / "agents" / f"{agent_type}.md"
        if brief.is_file():
            text = brief.read_text(encoding="utf-8", errors="replace")
            if text.startswith("---\n") and "\n---" in text[4:]:
                text = text[4:].split("\n---", 1)[1].lstrip("-\n")
            return text.strip()
        if (candidate / ".claude-plugin" / "plugin.json").is_file():
            break
    return f"You are a {agent_type} agent."


def _parsed(reply: str) -> dict:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        data = YAML(typ="safe", pure=True).load(reply_body(reply))
    except YAMLError:
        data = None
    return data if isinstance(data, dict) else {"raw": reply}


@TYPES.consequence("spawn_agents_parallel", {
    "agent_type": {"type": "string", "description": "the sub-agent; its brief is agents/<agent_type>.md when present"},
    "foreach": {"type": ["string", "array"], "description": "a state path holding a list (e.g. sources), or a list"},
    "prompt_template": {"type": "string", "description": "the prompt per item; ${item.x} and ${index} per item"},
    "collect_as": STORE_AS,
    "as": {"type": "string", "description": "the item's name in the template (default item)"},
    "index_as": {"type": "string", "description": "the position's name in the template (default index)"},
}, ["agent_type", "foreach", "prompt_template", "collect_as"], raw=("prompt_template",),
    paths=("collect_as",), effects=("llm",), idempotent=False)
def spawn_agents_parallel(params, ctx):
    """One sub-agent judgement per item; each reply read as YAML (a mapping, else {raw}); the list goes to `collect_as`."""
    items = params["foreach"]
    if isinstance(items, str):
        items = ctx.get(items)
    if not isinstance(items, list):
        raise ActionFailed(f"`foreach` must name a list, got {type(items).__name__}",
                           "give a state path holding a list, e.g. foreach: sources")
    agent_type = to_text(params["agent_type"]).strip()
    brief = _agent_brief(agent_type, ctx)
    template = compile_value(params["prompt_template"])
    item_name, index_name = params.get("as", "item"), params.get("index_as", "index")
    results = []
    for index, item in enumerate(items):
        prompt = f"{brief}\n\n{to_text(ctx.render(template, **{item_name: item, index_name: index}))}"
        results.append(_parsed(ctx.judge(prompt, f"spawn_agents_parallel ({agent_type}) item {index}")))
    ctx.set(params["collect_as"], results)


# -- corpus config and marketplace ----------------------------------------------------

@TYPES.consequence("update_config_index_metadata", {
    "last_updated_at": {"type": ["string", "null"], "description": "default: now"},
    "format": {"type": "string", "description": "default markdown"},
    "path": CONFIG_PATH,
}, [], effects=FILES, writes=(STATE_CONFIG,), example={"last_updated_at": "2025-01-24T10:30:00Z", "format": "markdown"})
def update_config_index_metadata(params, ctx):
    """Set the config's top-level index.last_updated_at and index.format (comments kept; state config mirrored)."""
    stamp = params["last_updated_at"] if "last_updated_at" in params else \
        datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    fmt = params.get("format", "markdown")

    def change(document):
        if not isinstance(document.get("index"), dict):
            document["index"] = {}
        document["index"]["last_updated_at"] = stamp
        document["index"]["format"] = fmt

    edit_config(ctx, params, "path", change, "updated the index metadata")


@TYPES.consequence("update_source_metadata", {"id": {"type": "string"}, "fields": {"type": "object"},
                                              "path": CONFIG_PATH}, ["id", "fields"], effects=FILES,
                   writes=(STATE_CONFIG,))
def update_source_metadata(params, ctx):
    """Set top-level `fields` on the config's source `id`, as update_source does."""
    update_source_fields(params, ctx)


def _deep_assign(target: dict, source: dict) -> None:
    """Write `source` into `target` keeping target's comments: mappings merged key by key, lists item by item."""
    for key, value in source.items():
        current = target.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            _deep_assign(current, value)
        elif isinstance(value, list) and isinstance(current, list) and len(value) == len(current):
            for index, item in enumerate(value):
                if isinstance(item, dict) and isinstance(current[index], dict):
                    _deep_assign(current[index], item)
                else:
                    current[index] = item
        elif current != value or key not in target:
            target[key] = value


@TYPES.consequence("write_config", {"from": {"type": "string", "description": "the state path holding the config "
                                                                              "(default config)"},
                                    "path": CONFIG_PATH}, [], paths=("from",), effects=FILES, writes=(STATE_CONFIG,))
def write_config(params, ctx):
    """Save the config held in state (`from`, default config) to the corpus config file, keeping its comments."""
    source = params.get("from") or "config"
    config = ctx.get(source)
    if not isinstance(config, dict):
        raise ActionFailed(f"nothing to write: state '{source}' holds no config (run read_config first)")
    edit_config(ctx, params, "path", lambda document: _deep_assign(document, config), "saved the config")


@TYPES.consequence("update_marketplace_json", {
    "marketplace_path": {"type": "string", "description": "the marketplace file, e.g. .claude-plugin/marketplace.json"},
    "plugin_name": {"type": "string"},
    "plugin_path": {"type": "string"},
    "entry": {"type": "object", "description": "the whole entry to add instead of {name, path}"},
}, ["marketplace_path", "plugin_name", "plugin_path"], effects=FILES)
def update_marketplace_json(params, ctx):
    """Add {name, path} for a plugin to a marketplace.json's `plugins` (left alone when that name is there)."""
    shown = params["marketplace_path"]
    target = guarded_path(ctx, params, "marketplace_path", "write")
    try:
        data = json.loads(target.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ActionFailed(f"no marketplace file at '{shown}'") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ActionFailed(f"cannot read '{shown}' as JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ActionFailed(f"'{shown}' holds {type(data).__name__}, not a marketplace object")
    plugins = data.get("plugins")
    if plugins is None:
        plugins = data["plugins"] = []
    if not isinstance(plugins, list):
        raise ActionFailed(f"`plugins` in '{shown}' is {type(plugins).__name__}, not a list")
    name = params["plugin_name"]
    if any(isinstance(p, dict) and p.get("name") == name for p in plugins):
        ctx.trace(f"  {name} already registered in {shown}")
        return
    entry = dict(params.get("entry") or {"path": params["plugin_path"]})
    plugins.append({"name": name, **{k: v for k, v in entry.items() if k != "name"}})
    write_atomic(target, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
