"""The language reference in `lib/workflow/`, generated from the schema and the registries.

`wfexec docs` prints it at the terminal (a table of contents, a page, or the sections a word names);
`wfexec docs --output lib/` writes `workflow/schema.md`, `preconditions.md`,
`consequences.md` and `execution.md` through the jinja2 templates in
`wfexec/templates/`. Nothing here is written by hand twice: the fields come
from the JSON Schema, the types from the registries, and the execution rules
from one template that SKILL.md files include too.
"""

from __future__ import annotations

import difflib
import inspect
import re
from pathlib import Path
from typing import Any

from wfexec import exit_codes
from wfexec.nodes.base import node_types

TEMPLATES = Path(__file__).resolve().parent / "templates"
DOCS = ("workflow/schema.md", "workflow/preconditions.md", "workflow/consequences.md", "workflow/execution.md")

EXIT_CODES = (
    (exit_codes.OK, "the run reached a `success` ending"),
    (exit_codes.ENDING_FAILED, "a `failure`, `error` or `cancelled` ending, a failed entry precondition, or a run-time error"),
    (exit_codes.INVALID, "the workflow is invalid, or the command line is wrong"),
    (exit_codes.WAITING, "waiting for an answer to a question (the run is parked; resume it)"),
    (exit_codes.STOPPED, "stopped: step budget or `max_visits` exceeded, interrupted, or an LLM step with no backend"),
)

# What a field is for, where the schema says only its type (node types declare their own `field_notes`).
FIELD_NOTES = {
    ("top", "$schema"): "accepted and ignored (editors read the `# yaml-language-server` comment)",
    ("ending", "type"): "`success` (exit code 0), `failure`, `error` or `cancelled` (exit code 1)",
    ("ending", "message"): "the line shown when the run ends (templates rendered with the final state)",
    ("ending", "details"): "more text shown under the message",
    ("ending", "category"): "a free label for tools (e.g. the kind of failure)",
    ("ending", "summary"): "label → value, shown one per line under the message",
    ("ending", "recovery"): "what to do next: a sentence, a skill name, or `{suggestion, related_skill, retry_node}`",
    ("ending", "output"): "values returned to a calling workflow and printed by `--format json`",
    ("ending", "delegate"): "the skill to hand over to, `{skill, context}` (older files' form of v8's "
                            "`behavior: {type: delegate}`)",
    ("ending", "description"): "what the ending means (documentation only)",
}


# --------------------------------------------------------------------------- #
# Templates (shared with skillgen and scaffold)

def environment():
    """The jinja2 environment of wfexec's own templates: strict, no autoescape, stable whitespace."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters.update(cell=cell, code=code, type_of=type_of, yaml_block=yaml_block)
    env.globals.update(EXIT_CODES=EXIT_CODES)
    return env


def render(template: str, **context: Any) -> str:
    text = environment().get_template(template).render(**context)
    # Templates are free to leave blank lines around blocks; the output has at most one in a row.
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.rstrip("\n") + "\n"


def cell(value: Any) -> str:
    """A value inside a Markdown table cell: one line, pipes escaped."""
    text = " ".join(str("" if value is None else value).split())
    return text.replace("|", "\\|")


def code(value: Any) -> str:
    """Inline code, fenced with enough backticks for what it holds."""
    text = " ".join(str(value).split())
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def yaml_block(value: Any) -> str:
    """Block-style YAML for a value, deterministic (keys in the order given)."""
    import io

    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]  # ruamel declares it None; it takes a bool
    yaml.width = 100
    yaml.allow_unicode = True
    out = io.StringIO()
    yaml.dump(value, out)
    return out.getvalue().rstrip("\n")


_REFS = {"#/$defs/target": "target", "#/$defs/precondition": "precondition",
         "#/$defs/consequence": "consequence", "#/$defs/node": "node", "#/$defs/ending": "ending"}


def type_of(schema: Any) -> str:
    """A JSON Schema told in a few words: `list of precondition`, `one of a, b`, `string or number`."""
    if not isinstance(schema, dict) or not schema:
        return "any"
    if "$ref" in schema:
        return _REFS.get(schema["$ref"], schema["$ref"].rsplit("/", 1)[-1])
    if "const" in schema:
        return f"`{schema['const']}`"
    if "enum" in schema:
        return "one of " + ", ".join(f"`{_scalar(v)}`" for v in schema["enum"])
    for key in ("oneOf", "anyOf"):
        if key in schema and "type" not in schema:
            alternatives = list(dict.fromkeys(type_of(s) for s in schema[key]))
            return " or ".join(alternatives)
    kinds = schema.get("type")
    if isinstance(kinds, list):
        return " or ".join(type_of({**schema, "type": k}) for k in kinds)
    if kinds == "array":
        items = schema.get("items")
        return f"list of {type_of(items)}" if items else "list"
    if kinds == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            return f"mapping of {type_of(extra)}"
        return "mapping"
    if kinds == "integer":
        return "integer"
    return str(kinds) if kinds else "any"


def _scalar(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


# --------------------------------------------------------------------------- #
# What the templates are given

def _first_paragraph(text: str | None) -> str:
    if not text:
        return ""
    return " ".join(inspect.cleandoc(text).split("\n\n")[0].split())


def _fields(schema: dict, notes: dict) -> list[dict]:
    required = set(schema.get("required", []))
    rows = []
    for name, sub in schema.get("properties", {}).items():
        description = (sub.get("description") if isinstance(sub, dict) else "") or notes.get(name, "")
        rows.append({"name": name, "type": type_of(sub), "required": name in required, "description": description})
    return rows


def _alternatives(schema: dict) -> list[str]:
    """`oneOf`/`anyOf` of required field sets, told as sentences."""
    out = []
    for key, word in (("oneOf", "exactly one of"), ("anyOf", "at least one of")):
        choices = [c.get("required", []) for c in schema.get(key, []) if isinstance(c, dict)]
        if choices and all(len(c) == 1 for c in choices):
            out.append(f"Needs {word} " + ", ".join(f"`{c[0]}`" for c in choices) + ".")
    return out


def documented_node_types(include_plugins: bool) -> list:
    """The node types the reference explains, in its order: wfexec's own, plus plugins' when asked."""
    return [kind for kind in node_types().ordered() if include_plugins or _is_builtin_node_type(kind)]


def schema_context(include_plugins: bool = False) -> dict:
    from wfexec.language.schema import ENDING, TOP_LEVEL, common_node_properties

    kinds = documented_node_types(include_plugins)
    described = []
    for kind in kinds:
        summary = _first_paragraph(kind.docs.doc)
        summary = re.sub(rf"^`{re.escape(kind.name)}`:\s*", "", summary)
        summary = re.sub(r"\s*\(DESIGN §\d+\)", "", summary)
        described.append({"name": kind.name, "summary": summary[:1].upper() + summary[1:],
                          "fields": _fields(kind.schema, kind.docs.field_notes), "alternatives": _alternatives(kind.schema)})
    common = [{"name": n, "type": type_of(s), "required": n == "type",
               "description": s.get("description", "") or ("the node type" if n == "type" else "what the node is for")}
              for n, s in common_node_properties(kind.name for kind in kinds).items()]
    return {"top_level": _fields(TOP_LEVEL, _notes("top")), "common": common, "node_types": described,
            "ending": _fields(ENDING, _notes("ending"))}


def _notes(owner: str) -> dict:
    return {field: note for (who, field), note in FIELD_NOTES.items() if who == owner}


def _registries(include_plugins: bool):
    from wfexec.types.registry import consequences, preconditions

    result = []
    for registry in (preconditions(), consequences()):
        specs = [s for s in registry.specs() if include_plugins or _is_builtin(s)]
        result.append((registry.kind, specs))
    return result


def _is_builtin(spec) -> bool:
    return spec.source == "builtin" or spec.source.startswith("wfexec.")


def _is_builtin_node_type(kind) -> bool:
    return kind.execute.__module__.startswith("wfexec.")


def type_context(kind: str, specs: list) -> dict:
    entries = []
    for spec in specs:
        params = []
        for name, schema in spec.params.items():
            kind_note = _param_kind(spec, name)
            params.append({"name": name, "type": type_of(schema) + (f" ({kind_note})" if kind_note else ""),
                           "required": name in spec.required,
                           "description": spec.param_description(name)})
        entries.append({"name": spec.name, "doc": spec.doc, "params": params, "effects": list(spec.effects),
                        "idempotent": spec.idempotent, "source": None if _is_builtin(spec) else spec.source,
                        "example": [example_for(spec)]})
    return {"kind": kind, "types": entries}


def _param_kind(spec, name: str) -> str:
    if name in spec.paths:
        return "state path"
    if name in spec.expressions:
        return "expression"
    if name in spec.raw and name not in spec.nested:
        return "as written"
    return ""


# --------------------------------------------------------------------------- #
# Examples made from a type's parameter schema

# Values that read well for parameters of these names (each fits its built-in schema).
NAMED_EXAMPLES: dict[str, Any] = {
    "path": "notes/summary.md",
    "dest": "downloads/page.html",
    "url": "https://example.com/docs/index.html",
    "repo_path": ".",
    "flag": "ready",
    "name": "before_changes",
    "message": "Hello, ${name}",
    "expression": "len(computed.items) > 0",
    "content": "Release notes for ${input.version}\n",
    "command": ["git", "status", "--short"],
    "script": "scripts/check.sh",
    "module": "yaml",
    "target": "https://github.com",
    "input": "${input.request}",
    "skill": "summarize",
    "subagent_type": "general-purpose",
    "prompt": "Summarize ${computed.text}",
    "event_type": "release_tagged",
    "items": "${computed.files}",
    "headers": ["file", "lines"],
    "rows": [["README.md", 120]],
    "rules": "${imports.rules.intent_rules}",
    "flags": "${computed.intent_flags}",
    "flag_definitions": {"urgent": {"keywords": ["urgent", "asap"], "negative_keywords": ["not urgent"]}},
    "keyword_sets": {"bug": ["crash", "error"], "question": ["how do i"]},
    "from": "computed.page",
    "value": "done",
    "min": 0,
    "max": 10,
    "count": 1,
    "section": "Summary",
    "title": "Files",
}

# For built-in types whose generic example would say little: "type.parameter" → value. Each parameter named
# here is shown even when optional.
TYPE_EXAMPLES: dict[str, Any] = {
    "directory_exists.path": "notes",
    "create_directory.path": "notes",
    "path_check.check": "is_file",
    "state_check.value": "done",
    "tool_check.capability": "version_gte",
    "tool_check.args": {"min_version": "2.30"},
    "clone_repo.url": "https://github.com/pallets/jinja.git",
    "clone_repo.dest": "vendor/jinja",
    "compute.expression": "len(computed.items)",
    "compute.store_as": "computed.count",
    "compute_hash.store_as": "computed.hash",
    "set_timestamp.store_as": "computed.date",
    "set_timestamp.format": "YYYY-MM-DD-HHmmss",
    "display.content": "${computed.summary}",
    "display.format": "markdown",
    "dynamic_route.action": "publish",
    "evaluate.set_flag": "has_items",
    "git_ops_local.repo_path": "vendor/jinja",
    "git_ops_local.operation": "pull",
    "invoke_pattern.path": "patterns/review.md",
    "invoke_pattern.store_as": "computed.review",
    "invoke_skill.skill": "release-notes",
    "invoke_skill.args": "--since v1.2.0",
    "local_file_ops.store_as": "computed.text",
    "log_entry.level": "info",
    "mutate_state.value": "done",
    "read_json.path": "package.json",
    "read_yaml.path": "config.yaml",
    "run_bash.script": "scripts/check.sh",
    "run_command.store_as": "computed.status",
    "run_python.script": "scripts/check.py",
    "run_script.script": "scripts/check.py",
    "web_ops.url": "https://example.com/docs/index.html",
    "web_ops.store_as": "computed.page",
}

# A nested list of calls gets one small, valid call of the right kind.
NESTED_EXAMPLES = {
    "preconditions": [{"type": "flag_set", "flag": "ready"},
                      {"type": "file_exists", "path": "CHANGELOG.md"}],
    "precondition": {"type": "flag_set", "flag": "ready"},
    "consequences": [{"type": "display_message", "message": "${item}"}],
}

_EG = re.compile(r"\be\.g\.\s+([^\s,;()]+)")


def example_for(spec) -> dict:
    """A YAML-ready example call of a type: its own `example`, else one made from its parameter schema."""
    if spec.example:
        own = dict(spec.example)
        own.setdefault("type", spec.name)
        return {"type": own.pop("type"), **own}
    chosen = list(spec.required) + [p for p in spec.params if f"{spec.name}.{p}" in TYPE_EXAMPLES]
    if not [p for p in chosen if p not in spec.paths] and spec.params:
        # Only paths are required (or nothing): add the first parameter that says what to work on.
        first = next((p for p in spec.params if p not in spec.paths and p not in chosen), None)
        if first is not None:
            chosen.insert(0, first)
    example: dict[str, Any] = {"type": spec.name}
    for name in spec.params:
        if name in chosen:
            example[name] = _example_value(spec, name, spec.params[name])
    return example


def _example_value(spec, name: str, schema: dict) -> Any:
    if f"{spec.name}.{name}" in TYPE_EXAMPLES:
        return TYPE_EXAMPLES[f"{spec.name}.{name}"]
    if name in spec.nested:
        return NESTED_EXAMPLES[spec.nested[name]]
    if "default" in schema:
        return schema["default"]
    if "enum" in schema:
        return schema["enum"][0]
    if name in NAMED_EXAMPLES and _fits(schema, NAMED_EXAMPLES[name]):
        return NAMED_EXAMPLES[name]
    said = _EG.search(schema.get("description", "") or "")
    if said and _fits_type(schema, "string"):
        return said.group(1).rstrip(".")
    if name in spec.paths:
        return f"computed.{name.removesuffix('_as').removeprefix('store_') or 'result'}"
    return _value_of_type(schema)


_JSON_TYPES: dict[str, type | tuple[type, ...]] = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "array": list, "object": dict}


def _fits(schema: dict, value: Any) -> bool:
    """Whether `value` has a JSON type the schema allows (a `${...}` string fits anything)."""
    declared = schema.get("type")
    if declared is None or (isinstance(value, str) and value.startswith("${")):
        return True
    kinds = declared if isinstance(declared, list) else [declared]
    return any(isinstance(value, _JSON_TYPES[k]) and not (k in ("integer", "number") and isinstance(value, bool))
               for k in kinds if k in _JSON_TYPES)


def _fits_type(schema: dict, kind: str) -> bool:
    declared = schema.get("type")
    return declared is None or declared == kind or (isinstance(declared, list) and kind in declared)


def _value_of_type(schema: dict) -> Any:
    declared = schema.get("type")
    kind = declared[0] if isinstance(declared, list) else declared
    if kind == "integer":
        return max(1, schema.get("minimum", 1))
    if kind == "number":
        return 10
    if kind == "boolean":
        return True
    if kind == "array":
        item = schema.get("items") or {}
        return [_value_of_type(item) if item.get("type") else "item"]
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: _value_of_type(v) for k, v in list(props.items())[:1]} or {"status": "done"}
    return "text"


# --------------------------------------------------------------------------- #
# Writing and checking

def generate(include_plugins: bool = False) -> dict[str, str]:
    """relative path → Markdown text, for every file of the reference."""
    kinds = dict(_registries(include_plugins))
    return {
        "workflow/schema.md": render("schema.md.j2", **schema_context(include_plugins)),
        "workflow/preconditions.md": render("types.md.j2", **type_context("precondition", kinds["precondition"])),
        "workflow/consequences.md": render("types.md.j2", **type_context("consequence", kinds["consequence"])),
        "workflow/execution.md": render("execution.md.j2", node_types=documented_node_types(include_plugins)),
    }


def write(output: Path, include_plugins: bool = False) -> list[tuple[Path, bool]]:
    """Write every file of the reference that differs; (file, whether it was written) for each."""
    from wfexec.system.files import write_output

    done = []
    for relative, text in generate(include_plugins).items():
        target = Path(output) / relative
        changed = not target.is_file() or target.read_text(encoding="utf-8") != text
        if changed:
            write_output(target, text)  # CannotWrite, naming the file and why, when it cannot be
        done.append((target, changed))
    return done


def stale(output: Path, include_plugins: bool = False) -> list[tuple[Path, str]]:
    """(file, short unified diff) for every generated file that differs from what is on disk."""
    found = []
    for relative, text in generate(include_plugins).items():
        target = Path(output) / relative
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if current != text:
            found.append((target, short_diff(current, text, str(target))))
    return found


def short_diff(old: str, new: str, name: str, limit: int = 40) -> str:
    lines = list(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                      fromfile=f"{name} (on disk)", tofile=f"{name} (generated)", n=1))
    shown = "".join(lines[:limit])
    if len(lines) > limit:
        shown += f"... ({len(lines) - limit} more diff lines)\n"
    return shown


# --------------------------------------------------------------------------- #
# Reading at the terminal (`wfexec docs [TOPIC]`)

class UnknownTopic(LookupError):
    """A topic that names no page and no heading of the reference."""


def topics(include_plugins: bool = False) -> list[tuple[str, str]]:
    """(topic, the page's title) for every page of the reference, in reading order."""
    found = []
    for relative, text in generate(include_plugins).items():
        title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), relative)
        found.append((Path(relative).stem, title))
    return found


def contents(include_plugins: bool = False) -> str:
    """What `wfexec docs` prints without a topic: the pages, and how to read one or build them all."""
    lines = ["The workflow language reference. Read a page, or every section whose heading holds a word:", ""]
    width = max(len(name) for name, _ in topics(include_plugins))
    lines += [f"  wfexec docs {name:<{width}}   {title}" for name, title in topics(include_plugins)]
    lines += [f"  wfexec docs {'WORD':<{width}}   a word of a heading: user_prompt, append_state, exit codes", "",
              "Build them as Markdown files into a folder: wfexec docs --output DIR"]
    return "\n".join(lines) + "\n"


def topic_text(topic: str, include_plugins: bool = False) -> str:
    """A whole page (`schema`, `preconditions`, `consequences`, `execution`), else every section whose heading
    holds `topic` (case ignored), each under its page's name; UnknownTopic names the pages when none does."""
    from wfexec.language.documents import extract_section

    pages = {Path(relative).stem: text for relative, text in generate(include_plugins).items()}
    wanted = topic.strip().lower()
    if wanted in pages:
        return _without_banner(pages[wanted])
    found = []
    for name, text in pages.items():
        for heading in _headings_holding(text, wanted):
            found.append(f"<!-- {name} -->\n" + extract_section(text, heading).strip("\n") + "\n")
    if not found:
        from wfexec.language.diagnostics import did_you_mean

        headings = [h.strip("`") for text in pages.values() for h in re.findall(r"^#{2,3} (.+)$", text, flags=re.M)]
        raise UnknownTopic(did_you_mean(topic, dict.fromkeys(list(pages) + headings)) or
                           "pages: " + ", ".join(pages))
    return "\n".join(found)


def _without_banner(text: str) -> str:
    return re.sub(r"\A<!--.*?-->\n+", "", text)


def _headings_holding(text: str, wanted: str) -> list[str]:
    """The `##`/`###` headings of `text` holding `wanted`; a heading inside one already found is left out."""
    found, inside = [], 0
    for line in text.splitlines():
        match = re.match(r"^(#{2,3}) (.+)$", line)
        if not match:
            continue
        level = len(match.group(1))
        if inside and level > inside:
            continue
        inside = 0
        if wanted in match.group(2).lower():
            found.append(match.group(2))
            inside = level
    return found
