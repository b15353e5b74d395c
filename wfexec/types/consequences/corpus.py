"""Consequences over a hiivmind corpus: its config file, its sources, and the corpora installed on the machine.

The corpus config is `data/config.yaml` (the catalogues' path and the only
one before the data-only layout), else `config.yaml` at the working
directory (data-only corpora); every type takes an optional `path` that wins
over both. Edits keep the file's comments and key order (a round-trip YAML
edit), are written atomically, and are mirrored into state `config` when the
workflow holds the config there (`read_config store_as: config`), so a later
`write_config` of that state cannot undo them.
"""

from __future__ import annotations

import copy
import io
import os
import re
from pathlib import Path
from typing import Any, Callable

from wfexec.system.files import guarded_path, write_atomic
from wfexec.system.patterns import lazy
from wfexec.types.registry import ActionFailed, TypeList

TYPES = TypeList()

CONFIG_CANDIDATES = ("data/config.yaml", "config.yaml")
# Where a workflow keeps the corpus config (`read_config store_as: config`): the types that edit the file change it
# there too (edit_config), so each declares it (`writes=`), as a dry run and the name checks must know.
STATE_CONFIG = "config"
PLACEHOLDER_MARK = "Run hiivmind-corpus-build"
SOURCE_ID = lazy(r"^[A-Za-z0-9_-]+$")

CONFIG_PATH = {"type": "string", "description": "the corpus config file (default: data/config.yaml, else config.yaml)"}
STORE_AS = {"type": "string", "description": "the state path to store the result at, e.g. config"}
FILES = ("files",)


# -- finding and reading the config -------------------------------------------

def corpus_config_path(ctx, explicit: str | None = None) -> Path | None:
    """The corpus config file: `explicit` if given, else data/config.yaml, else config.yaml; None when none is a file."""
    if explicit:
        path = ctx.resolve_file(explicit)
        return path if path.is_file() else None
    for candidate in CONFIG_CANDIDATES:
        path = ctx.resolve_file(candidate)
        if path.is_file():
            return path
    return None


def corpus_data_dir(ctx, explicit: str | None = None) -> Path:
    """The folder holding the index: the config's folder, else data/ when it holds an index, else the working directory."""
    if explicit:
        return ctx.resolve_file(explicit).parent
    config = corpus_config_path(ctx, explicit)
    if config is not None:
        return config.parent
    data = ctx.resolve_file("data")
    return data if (data / "index.md").is_file() else Path(ctx.cwd)


def _shown(ctx, path: Path) -> str:
    try:
        return str(path.relative_to(ctx.cwd))
    except ValueError:
        return str(path)


def _missing_config(ctx, explicit: str | None) -> ActionFailed:
    if explicit:
        return ActionFailed(f"no corpus config at '{explicit}'", "check `path:`")
    return ActionFailed(f"no corpus config: neither data/config.yaml nor config.yaml exists in {ctx.cwd}",
                        "run hiivmind-corpus-init first, or pass path:")


_SEQUENCE_UNDER_KEY = lazy(r"^( *)[^\s#-][^\n]*:[ \t]*(?:#[^\n]*)?\n( *)- ", re.MULTILINE)


def _round_trip_yaml(text: str = ""):
    """A round-trip YAML that writes lists indented as `text` indents them (init's template: 4, dash at 2)."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # never fold a long URL or description onto two lines
    found = _SEQUENCE_UNDER_KEY.search(text)
    offset = len(found.group(2)) - len(found.group(1)) if found else 2
    yaml.indent(mapping=2, sequence=offset + 2, offset=offset)
    # `created_at: null` stays null rather than becoming an empty value.
    yaml.representer.add_representer(type(None), lambda representer, _: representer.represent_scalar(
        "tag:yaml.org,2002:null", "null"))
    return yaml


def load_config_document(ctx, explicit: str | None = None) -> tuple[Path, Any, str]:
    """The config file, its round-trip document (comments kept) and its text; ActionFailed when missing or not a mapping."""
    from ruamel.yaml.error import YAMLError

    path = corpus_config_path(ctx, explicit)
    if path is None:
        raise _missing_config(ctx, explicit)
    try:
        text = path.read_text(encoding="utf-8-sig")
        document = _round_trip_yaml().load(text)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ActionFailed(f"'{_shown(ctx, path)}' is not valid YAML{where}: {getattr(exc, 'problem', None) or exc}",
                           "fix the file by hand; it is the corpus config") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ActionFailed(f"cannot read '{_shown(ctx, path)}': {exc}") from None
    if document is None:
        document = _round_trip_yaml().load("{}")
    if not isinstance(document, dict):
        raise ActionFailed(f"'{_shown(ctx, path)}' holds {type(document).__name__}, not a mapping of settings")
    return path, document, text


def _take_trailing_comment(node: Any):
    """Remove and return the comment block that follows the last entry of `node` (found at its deepest last entry).

    ruamel keeps a comment block that follows a section (the template's
    commented examples after `sources: []`) on the last key read before it;
    an entry added after that key would land below the comment.
    """
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    while isinstance(node, (CommentedMap, CommentedSeq)) and node:
        key, slot = (next(reversed(node)), 2) if isinstance(node, dict) else (len(node) - 1, 0)
        entry = node.ca.items.get(key)
        if entry and entry[slot] is not None:
            token, entry[slot] = entry[slot], None
            return token
        node = node[key]
    return None


def _give_trailing_comment(node: Any, token) -> bool:
    """Put a comment block taken by `_take_trailing_comment` after the (new) last entry of `node`."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    while isinstance(node, (CommentedMap, CommentedSeq)) and node:
        key, slot = (next(reversed(node)), 2) if isinstance(node, dict) else (len(node) - 1, 0)
        last = node[key]
        if isinstance(last, (dict, list)) and last:
            if not isinstance(last, (CommentedMap, CommentedSeq)):
                last = node[key] = CommentedMap(last) if isinstance(last, dict) else CommentedSeq(last)
            node = last
            continue
        node.ca.items.setdefault(key, [None, None, None, None])[slot] = token
        return True
    return False


def plain(value: Any) -> Any:
    """Plain Python data from a round-trip YAML node (state never holds ruamel objects)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return str(value)  # dates and times, as the workflows compare them: text


def edit_config(ctx, params: dict, param: str, change: Callable[[dict], bool | None], what: str) -> None:
    """Apply `change` to the config file (round-trip, atomic) and to state `config` when it holds the config.

    `change` gets a mapping (the file's document, then the state's copy) and
    changes it with plain dict and list operations; it returns False when
    there is nothing to change, and then nothing is written.
    """
    explicit = params.get(param)
    path, document, text = load_config_document(ctx, explicit)
    trailing = {key: _take_trailing_comment(value) for key, value in document.items()}
    if change(document) is False:
        return
    for key, token in trailing.items():
        if token is not None and key in document and not _give_trailing_comment(document[key], token):
            document.ca.items.setdefault(key, [None, None, None, None])[2] = token
    # The guard sees the path the way the workflow named it (or the default it fell back to).
    target = guarded_path(ctx, {param: explicit or _shown(ctx, path)}, param, "write")
    stream = io.StringIO()
    _round_trip_yaml(text).dump(document, stream)
    try:
        write_atomic(target, stream.getvalue())
    except OSError as exc:
        raise ActionFailed(f"cannot write '{_shown(ctx, path)}': {exc.strerror or exc}") from None
    mirrored = ctx.get(STATE_CONFIG)
    if isinstance(mirrored, dict):
        mirrored = copy.deepcopy(mirrored)
        try:
            change(mirrored)
        except ActionFailed:  # state had drifted from the file: the file, just written, is the truth
            mirrored = document
        ctx.set(STATE_CONFIG, plain(mirrored))
    ctx.trace(f"  {what} in {_shown(ctx, path)}")


def sources_of(document: dict, ctx, path_shown: str = "the config") -> list:
    sources = document.get("sources")
    if sources is None:
        document["sources"] = sources = []
    if not isinstance(sources, list):
        raise ActionFailed(f"`sources` in {path_shown} is {type(sources).__name__}, not a list")
    if not sources and hasattr(sources, "fa"):
        sources.fa.set_block_style()  # init writes `sources: []`; entries read best one block each
    return sources


def find_source(sources: list, source_id: str) -> dict | None:
    return next((s for s in sources if isinstance(s, dict) and s.get("id") == source_id), None)


# -- the types ------------------------------------------------------------------

@TYPES.consequence("read_config", {"store_as": STORE_AS, "path": CONFIG_PATH}, ["store_as"],
                   paths=("store_as",), effects=FILES)
def read_config(params, ctx):
    """Parse the corpus config (data/config.yaml, else config.yaml) into state at `store_as`."""
    from wfexec.language.loader import load_text

    path = corpus_config_path(ctx, params.get("path"))
    if path is None:
        raise _missing_config(ctx, params.get("path"))
    shown = _shown(ctx, path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ActionFailed(f"cannot read '{shown}': {exc}") from None
    document = load_text(text, shown)
    errors = [d for d in document.diagnostics if d.severity == "error"]
    if errors:
        raise ActionFailed(f"cannot read YAML from '{shown}': {errors[0].message} (line {errors[0].line})",
                           errors[0].hint)
    if not isinstance(document.data, dict):
        raise ActionFailed(f"'{shown}' holds {type(document.data).__name__}, not a mapping of settings")
    ctx.set(params["store_as"], document.data)


SPEC = {"type": "object", "required": ["id", "type"],
        "properties": {"id": {"type": "string", "description": "the source's id, unique in the corpus"},
                       "type": {"type": "string", "description": "git, local, web, llms-txt or generated-docs"}},
        "description": "the new sources[] entry: id, type (git, local, web, llms-txt, generated-docs) and its fields"}


@TYPES.consequence("add_source", {"spec": SPEC, "path": CONFIG_PATH}, ["spec"], effects=FILES, writes=(STATE_CONFIG,),
                   example={"spec": {"id": "polars", "type": "git", "repo_url": "https://github.com/pola-rs/polars",
                                     "branch": "main", "docs_root": "docs", "last_commit_sha": None}})
def add_source(params, ctx):
    """Append `spec` to the config's sources (an identical entry is left alone; another with its id fails)."""
    spec = params["spec"]
    if not isinstance(spec, dict) or not spec.get("id"):
        raise ActionFailed("`spec` must be a mapping with an `id` and a `type`")
    source_id = spec["id"]

    def change(document):
        sources = sources_of(document, ctx)
        existing = find_source(sources, source_id)
        if existing is None:
            sources.append(copy.deepcopy(spec))
            return True
        if plain(existing) != plain(spec):
            raise ActionFailed(f"source '{source_id}' already exists in the corpus config with other settings",
                               "use update_source to change it")
        ctx.trace(f"  source '{source_id}' already present")
        return False

    edit_config(ctx, params, "path", change, f"added source '{source_id}'")


FIELDS = {"type": "object", "description": "top-level keys of the source to set (each replaces the old value whole)"}
ID = {"type": "string", "description": "the source's id"}


def update_source_fields(params, ctx) -> None:
    """Shallow-assign `fields` into the source with `id` (Object.assign: nested values are replaced, not merged)."""
    source_id, fields = params["id"], params["fields"]
    if not isinstance(fields, dict):
        raise ActionFailed(f"`fields` must be a mapping, got {type(fields).__name__}")

    def change(document):
        source = find_source(sources_of(document, ctx), source_id)
        if source is None:
            raise ActionFailed(f"no source '{source_id}' in the corpus config", "add it first with add_source")
        for key, value in fields.items():
            source[key] = copy.deepcopy(value)

    edit_config(ctx, params, "path", change, f"updated source '{source_id}'")


@TYPES.consequence("update_source", {"id": ID, "fields": FIELDS, "path": CONFIG_PATH}, ["id", "fields"],
                   effects=FILES, writes=(STATE_CONFIG,))
def update_source(params, ctx):
    """Set top-level `fields` on the config's source `id` (shallow: each key replaced whole)."""
    update_source_fields(params, ctx)


# A yq path as the catalogue writes them: name, a.b.c, sources[0].branch, sources[] | select(.id == "x").field
_PATH_STEP = lazy(r"""\s*(?:
      (?P<select>\[\]\s*\|\s*select\(\s*\.(?P<skey>[A-Za-z_][\w-]*)\s*==\s*(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)')\s*\))
    | \[(?P<index>\d+)\]
    | \.?(?P<key>[A-Za-z_][\w-]*)
    )""", re.VERBOSE)
UNSUPPORTED_PATH = ('use a.b, a[0].b or sources[] | select(.id == "x").field')


def parse_yq_path(text: str) -> list[tuple]:
    """Steps ("key", k), ("index", i), ("select", key, value) of a yq-style path; ActionFailed on anything else."""
    steps: list[tuple] = []
    position = 0
    text = text.strip()
    if text.startswith("."):
        position = 1
    while position < len(text):
        match = _PATH_STEP.match(text, position)
        if match is None or match.end() == position:
            raise ActionFailed(f"unsupported path syntax: '{text}'", UNSUPPORTED_PATH)
        if match.group("select"):
            value = match.group("dq") if match.group("dq") is not None else match.group("sq")
            steps.append(("select", match.group("skey"), value))
        elif match.group("index") is not None:
            steps.append(("index", int(match.group("index"))))
        else:
            if steps and not text[match.start():match.end()].strip().startswith("."):
                raise ActionFailed(f"unsupported path syntax: '{text}'", UNSUPPORTED_PATH)
            steps.append(("key", match.group("key")))
        position = match.end()
    if not steps:
        raise ActionFailed(f"unsupported path syntax: '{text}'", UNSUPPORTED_PATH)
    return steps


def _set_at(containers: list, steps: list[tuple], value: Any, shown: str) -> None:
    for number, step in enumerate(steps):
        last = number == len(steps) - 1
        following = []
        for container in containers:
            if step[0] == "key":
                if not isinstance(container, dict):
                    raise ActionFailed(f"'{shown}': `{step[1]}` is looked up in a {type(container).__name__}")
                if last:
                    container[step[1]] = copy.deepcopy(value)
                else:
                    if container.get(step[1]) is None:
                        container[step[1]] = {} if steps[number + 1][0] == "key" else []
                    following.append(container[step[1]])
            elif step[0] == "index":
                if not isinstance(container, list) or step[1] >= len(container):
                    raise ActionFailed(f"'{shown}': index [{step[1]}] is out of range")
                if last:
                    container[step[1]] = copy.deepcopy(value)
                else:
                    following.append(container[step[1]])
            else:
                if not isinstance(container, list):
                    raise ActionFailed(f"'{shown}': select() needs a list")
                matched = [item for item in container if isinstance(item, dict)
                           and str(item.get(step[1])) == step[2]]
                if not matched:
                    raise ActionFailed(f"'{shown}': no item has {step[1]} == {step[2]!r}")
                if last:
                    raise ActionFailed(f"unsupported path syntax: '{shown}' (select() must be followed by a field)",
                                       UNSUPPORTED_PATH)
                following.extend(matched)
        containers = following


@TYPES.consequence("write_config_entry", {"path": {"type": "string", "description": "a yq-style path: a.b, "
                                                   "sources[0].branch, sources[] | select(.id == \"x\").field"},
                                          "value": {}, "config_path": CONFIG_PATH},
                   ["path", "value"], effects=FILES, writes=(STATE_CONFIG,))
def write_config_entry(params, ctx):
    """Set one value in the corpus config at a yq-style `path` (creating missing keys), keeping comments."""
    shown = params["path"]
    steps = parse_yq_path(shown)
    edit_config(ctx, params, "config_path", lambda document: _set_at([document], steps, params["value"], shown),
                f"set {shown}")


# -- installed corpora ------------------------------------------------------------

LOCATIONS = ("current", "repo-local", "user-level", "marketplace", "marketplace-single", "plugin-cache")
CORPUS_PREFIX = "hiivmind-corpus-"
PLUGIN_CACHE_DEPTH = 4


def _candidates(location: str, cwd: Path, home: Path) -> list[Path]:
    pattern = f"{CORPUS_PREFIX}*"
    if location == "current":
        return [cwd]
    if location == "repo-local":
        return sorted((cwd / ".claude-plugin" / "skills").glob(pattern))
    if location == "user-level":
        return sorted((home / ".claude" / "skills").glob(pattern))
    marketplaces = home / ".claude" / "plugins" / "marketplaces"
    if location == "marketplace":
        return sorted(marketplaces.glob(f"*/{pattern}"))
    if location == "marketplace-single":
        # A marketplace that holds several corpora is found by `marketplace`, not as a corpus itself.
        return [p for p in sorted(marketplaces.glob(pattern)) if not any(p.glob(f"{pattern}/"))]
    found = []
    cache = home / ".claude" / "plugins" / "cache"
    for depth in range(1, PLUGIN_CACHE_DEPTH + 1):
        found.extend(sorted(cache.glob("/".join(["*"] * (depth - 1) + [pattern]))))
    return found


def _read_corpus(folder: Path, location: str, ctx) -> dict | None:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    for candidate in CONFIG_CANDIDATES:
        config_file = folder / candidate
        if config_file.is_file():
            break
    else:
        return None
    try:
        config = YAML(typ="safe", pure=True).load(config_file.read_text(encoding="utf-8-sig"))
    except (YAMLError, OSError, UnicodeDecodeError) as exc:
        ctx.trace(f"  skipped {config_file}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
        return None
    if not isinstance(config, dict):
        ctx.trace(f"  skipped {config_file}: not a mapping")
        return None
    corpus = config.get("corpus")
    corpus = corpus if isinstance(corpus, dict) else {}
    name = str(corpus.get("name") or folder.name.removeprefix(CORPUS_PREFIX))
    display_name = corpus.get("display_name") or name
    return {"name": name, "display_name": display_name,
            "description": corpus.get("description") or display_name or "",
            "keywords": corpus.get("keywords") or [name], "status": _index_status(config_file.parent / "index.md"),
            "path": os.path.abspath(folder).rstrip(os.sep), "location": location}


def _index_status(index: Path) -> str:
    """`built`, or `placeholder` for an index not built yet, missing or init's stub alike: hiivmind's consequence
    catalogue names only built | stale | placeholder (placeholder: "config.yaml exists but index not built"), and
    the gateway shows the status to the user as is. The `no-index` of its bash status pattern is not one of them.
    `stale` needs the upstream's commits, which a scan of local folders does not fetch."""
    if index.is_file() and PLACEHOLDER_MARK not in index.read_text(encoding="utf-8", errors="replace"):
        return "built"
    return "placeholder"


@TYPES.consequence("discover_installed_corpora", {
    "store_as": STORE_AS,
    "locations": {"type": "array", "items": {"enum": list(LOCATIONS)},
                  "description": "scan only these places (default: all, in this order: " + ", ".join(LOCATIONS) + ")"},
}, ["store_as"], paths=("store_as",), effects=FILES, example={"store_as": "computed.available_corpora"})
def discover_installed_corpora(params, ctx):
    """Store the hiivmind corpora found here and under ~/.claude ({name, display_name, description, keywords, status: built|placeholder, path, location}), by name."""
    wanted = params.get("locations") or LOCATIONS
    home = Path(os.path.expanduser("~"))
    found: dict[str, dict] = {}
    for location in LOCATIONS:  # precedence order: repo-local before user-level, and so on
        if location not in wanted:
            continue
        for folder in _candidates(location, Path(ctx.cwd), home):
            if not folder.is_dir():
                continue
            corpus = _read_corpus(folder, location, ctx)
            if corpus is not None and corpus["name"] not in found:
                found[corpus["name"]] = corpus
    ctx.set(params["store_as"], [found[name] for name in sorted(found)])
