"""The run log: every log_* type, init_log, finalize_log, write_log, retention and the CI summary.

Three shapes of log exist, and one lookup (`active_log`) tells them apart:

- blueprint-lib's, made by `init_log workflow_name: ...`: a mapping at state
  `log` with metadata, parameters, execution, node_history, events, warnings,
  errors and summary;
- the hiivmind-corpus seed's, made by `init_log store_as: computed.log`: a
  mapping at `computed.log` with sources, changes and index_updates as well
  (the other seed types look only there);
- no log made: `log_entry`, `log_event` and the appenders (log_node,
  log_warning, log_error, log_source_*, log_index_update) add entries to a
  list at state `log`, so a workflow that logs without `init_log` still runs;
  in a blueprint-lib v8 file (whose catalogue has no init_log) they write
  v8's runtime log instead, a mapping at `log`: `log_node` appends
  `{node, timestamp, outcome, details}` to `node_history`, `log_entry`
  `{level, message, timestamp, node, context}` to `entries`, and the others
  their record to `entries`.

`finalize_log`, `write_log`, `log_session_snapshot` and `output_ci_summary`
need a log mapping and fail without one. A record is kept only when the log
level allows it: state `logging.level` (error, warn, info, debug, trace),
else `output.level` (silent, quiet, normal, verbose, debug), else info.
Times are UTC with milliseconds (`2025-01-24T10:30:00.123Z`).
"""

from __future__ import annotations

import copy
import json
import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wfexec.language.expressions import to_text
from wfexec.system.files import guarded_path, write_atomic
from wfexec.types.registry import ActionFailed, TypeList

if TYPE_CHECKING:  # datetime is imported where a log is written: most runs have none
    from datetime import datetime

TYPES = TypeList()

LOG_PATH = "log"
SEED_LOG_PATH = "computed.log"
V8_HISTORY, V8_ENTRIES = "node_history", "entries"  # blueprint-lib v8's runtime log (schema/runtime/logging.json)
BL, SEED = "blueprint-lib", "seed"
LEVEL_RANKS = {"error": 0, "warn": 1, "warning": 1, "info": 2, "debug": 3, "trace": 4}
OUTPUT_LEVELS = {"silent": "error", "quiet": "error", "normal": "info", "verbose": "debug", "debug": "trace"}
DEFAULT_LEVEL = "info"
ENTRY_LEVELS = ["debug", "info", "warning", "error"]
EVENT_LEVELS = ["debug", "info", "warn", "error"]
OUTCOMES = ("success", "partial", "error", "cancelled")
FORMATS = {"yaml": ".yaml", "json": ".json", "markdown": ".md", "md": ".md"}
CI_FORMATS = ("github", "plain", "json", "none")
DEFAULT_LOG_DIRS = {SEED: "data/logs/", BL: ".logs/"}
SEED_LOG_PATTERNS = ["refresh-*.yaml", "refresh-*.json", "refresh-*.md"]
BL_LOG_PATTERN = "*.yaml"
SESSION_FILE = ".logs/.session-state.yaml"
NO_LOG = ("no run log: init_log has not run", "add an init_log action before this one")

STORE_AS = {"type": "string", "description": "the state path to keep the log at (seed shape: computed.log)"}
NODE = {"type": "string", "description": "a node id (default: the node running this)"}
CONTEXT = {"type": "object", "description": "extra values kept with the record"}
NULLABLE_INT = {"type": ["integer", "null"]}
DIRECTORY = {"type": "string", "description": "the log folder (default data/logs/ for a seed log, .logs/ otherwise)"}


# -- finding the log ------------------------------------------------------------

def now() -> str:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _parse_time(text: Any) -> datetime | None:
    from datetime import datetime

    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None


def active_log(ctx) -> tuple[str, str] | None:
    """(state path, shape) of the log mapping init_log made, or None (then entries go to the list at `log`)."""
    for path, shape in ((LOG_PATH, BL), (SEED_LOG_PATH, SEED)):
        value = ctx.get(path)
        if isinstance(value, dict) and "node_history" in value and V8_ENTRIES not in value:
            return path, shape
    return None


def required_log(ctx) -> tuple[str, str, dict]:
    found = active_log(ctx)
    if found is None:
        raise ActionFailed(*NO_LOG)
    return found[0], found[1], copy.deepcopy(ctx.get(found[0]))


def current_level(ctx) -> str:
    level = ctx.get("logging.level")
    if level in LEVEL_RANKS:
        return level
    output = ctx.get("output.level")
    if output in OUTPUT_LEVELS:
        return OUTPUT_LEVELS[output]
    return DEFAULT_LEVEL


def level_enabled(ctx, level: str) -> bool:
    """True when records of `level` are kept at the current log level."""
    return LEVEL_RANKS.get(level, LEVEL_RANKS[DEFAULT_LEVEL]) <= LEVEL_RANKS[current_level(ctx)]


def _node_id(params, ctx) -> str | None:
    return params.get("node") or (ctx.node.id if ctx.node is not None else None)


def _append_to_list(ctx, entry: dict) -> None:
    """The log without init_log: a list of entries at state `log`."""
    current = ctx.get(LOG_PATH)
    if current is None:
        current = []
    elif not isinstance(current, list):
        raise ActionFailed(f"state `log` holds {type(current).__name__}, not a list of log entries",
                           "leave the top-level `log` key to the log types, or rename your own key")
    ctx.set(LOG_PATH, current + [entry])


def _push(ctx, path: str, key: str, record: Any) -> None:
    """Append `record` to the list `key` of the log at `path` (a copy is set, so the change is recorded)."""
    log = dict(ctx.get(path))
    log[key] = list(log.get(key) or []) + [record]
    ctx.set(path, log)


def _append_to_v8_log(ctx, key: str, record: dict) -> None:
    """blueprint-lib v8's runtime log: `{node_history: [...], entries: [...]}` at state `log`."""
    current = ctx.get(LOG_PATH)
    if current is None:
        current = {V8_HISTORY: [], V8_ENTRIES: []}
    elif not isinstance(current, dict):
        raise ActionFailed(f"state `log` holds {type(current).__name__}, not the run log (a mapping with "
                           f"{V8_HISTORY} and {V8_ENTRIES})",
                           "leave the top-level `log` key to the log types, or rename your own key")
    log = dict(current)
    log[key] = list(log.get(key) or []) + [record]
    ctx.set(LOG_PATH, log)


# In a v8 file a log call with no log started keeps its record in v8's log mapping (its catalogue's shape).
IN_V8 = {"v8": {"without_log": "v8"}}


def _record(ctx, level: str, fallback: dict, seed, bl, v8: tuple[str, dict] | None = None) -> None:
    """Keep one record: `seed(path)` / `bl(path)` on a log mapping (when the level allows), else `fallback` in the
    list — in a v8 file, `v8` = (key, record) (default: `fallback` in `entries`) in v8's log mapping."""
    found = active_log(ctx)
    if found is None:
        if ctx.call.params.get("without_log") == "v8":
            _append_to_v8_log(ctx, *(v8 or (V8_ENTRIES, fallback)))
        else:
            _append_to_list(ctx, fallback)
        return
    if not level_enabled(ctx, level):
        return
    path, shape = found
    (seed if shape == SEED else bl)(path)


def _event(ctx, path: str, event_type: str, data: dict) -> None:
    _push(ctx, path, "events", {"type": event_type, "timestamp": now(), "data": data})


def _one_of(value: Any, allowed, name: str) -> str:
    if value not in allowed:
        raise ActionFailed(f"`{name}` is {to_text(value)!r}; it must be one of {', '.join(allowed)}")
    return value


# -- log_entry and log_event (v3 and blueprint-lib v2) ------------------------------

_ENTRY_EXTRAS = ("context", "event_type", "error_type", "recoverable")


@TYPES.consequence("log_entry", {"level": {"enum": ENTRY_LEVELS}, "message": {"type": "string"},
                                 "context": {"type": "object"}, "event_type": {"type": "string"},
                                 "error_type": {"type": "string"}, "recoverable": {"type": "boolean"},
                                 "node": {"type": "string"}},
                   ["level", "message"], era_params=IN_V8)
def log_entry(params, ctx):
    """v3: record a message in the run log (errors, warnings or events of an init_log log; else the list at `log`)."""
    level = _one_of(params["level"], ENTRY_LEVELS, "level")
    message = to_text(params["message"])
    node = _node_id(params, ctx)
    entry = {"level": level, "message": message, "at": now(), "node": node}
    entry.update((key, params[key]) for key in _ENTRY_EXTRAS if key in params)
    extras = {key: params[key] for key in _ENTRY_EXTRAS if key in params}

    def on_log(path):
        record = {"message": message, "timestamp": entry["at"], "node": node, **extras}
        if level == "error":
            _push(ctx, path, "errors", record)
        elif level == "warning":
            _push(ctx, path, "warnings", record)
        else:
            _event(ctx, path, extras.get("event_type") or level, {"message": message, "node": node, **extras})

    v8_record = {"level": level, "message": message, "timestamp": entry["at"], "node": node,
                 **({"context": params["context"]} if "context" in params else {})}
    _record(ctx, level, entry, on_log, on_log, (V8_ENTRIES, v8_record))
    ctx.trace(f"Log [{level}]: {message}")


@TYPES.consequence("log_event", {"event_type": {"type": "string"}, "data": {},
                                 "level": {"enum": EVENT_LEVELS, "description": "kept only when the log level "
                                                                                "allows it (default info)"}},
                   ["event_type"], era_params=IN_V8)
def log_event(params, ctx):
    """Record `{event_type, data}` in the run log (events of an init_log log; else the list at `log`)."""
    level = _one_of(params.get("level", "info"), EVENT_LEVELS, "level")
    entry = {"event_type": params["event_type"], "data": params.get("data"), "at": now(), "node": _node_id({}, ctx)}
    if "level" in params:
        entry["level"] = level
    on_log = lambda path: _event(ctx, path, params["event_type"], params.get("data"))  # noqa: E731
    _record(ctx, level, entry, on_log, on_log)
    ctx.trace(f"Log event: {entry['event_type']}")


# -- init_log --------------------------------------------------------------------

def _flag(ctx, name: str, default: Any) -> Any:
    value = ctx.get(("flags", name))
    return default if value is None else value


def _seed_log(params, ctx) -> dict:
    return {
        "metadata": dict(params.get("metadata") or {}),
        "parameters": {"auto_approve": _flag(ctx, "auto_approve", False), "status_only": _flag(ctx, "status_only", False),
                       "log_format": _flag(ctx, "log_format", "yaml"), "ci_output": _flag(ctx, "ci_output", "none")},
        "execution": {"start_time": now(), "end_time": None, "duration_seconds": None, "mode": None,
                      "outcome": "in_progress", "ending_node": None},
        "sources": {"checked": 0, "updated": 0, "details": []},
        "changes": [],
        "index_updates": {"files_modified": [], "entries_added": 0, "entries_removed": 0,
                          "keywords_preserved": False},
        "node_history": [], "errors": [], "warnings": [], "summary": None,
    }


def _session(ctx, skill: str | None, start: str) -> dict:
    """blueprint-lib's session record; its session file is kept only when BLUEPRINT_SESSION_ID is set."""
    session_id = os.environ.get("BLUEPRINT_SESSION_ID")
    session: dict[str, Any] = {"id": session_id, "transcript_path": os.environ.get("BLUEPRINT_TRANSCRIPT_PATH"),
               "invocation_index": 1, "snapshot_points": []}
    if not session_id:
        return session
    from wfexec.language.loader import load_text
    from wfexec.types.consequences.files import _yaml_text

    target = guarded_path(ctx, {"path": SESSION_FILE}, "path", "write")
    kept = load_text(target.read_text(encoding="utf-8"), SESSION_FILE).data if target.is_file() else None
    current = (kept or {}).get("current_session") if isinstance(kept, dict) else None
    if not isinstance(current, dict) or current.get("id") != session_id:
        current = {"id": session_id, "invocation_count": 0, "invocations": []}
    count = int(current.get("invocation_count") or 0) + 1
    current = {"id": session_id, "invocation_count": count,
               "invocations": list(current.get("invocations") or []) + [
                   {"index": count, "skill": skill, "log_path": None, "timestamp": start}]}
    write_atomic(target, _yaml_text({"current_session": current}))
    session["invocation_index"] = count
    return session


def _bl_log(params, ctx) -> dict:
    start = now()
    initial_flags = (ctx.workflow.initial_state or {}).get("flags") if ctx.workflow is not None else None
    flags = initial_flags if isinstance(initial_flags, dict) else (ctx.get("flags") or {})
    earlier = ctx.get(LOG_PATH)
    return {
        "metadata": {"workflow_name": params["workflow_name"], "workflow_version": params.get("workflow_version", "1.0"),
                     "skill_name": params.get("skill_name"), "plugin_name": params.get("plugin_name"),
                     "execution_path": params.get("execution_path") or str(ctx.cwd),
                     "session": _session(ctx, params.get("skill_name"), start)},
        "parameters": copy.deepcopy(flags),
        "execution": {"start_time": start, "end_time": None, "duration_seconds": None, "outcome": None,
                      "ending_node": None},
        "node_history": [],
        # Entries log_event/log_entry kept before the log existed move into it.
        "events": list(earlier) if isinstance(earlier, list) else [],
        "warnings": [], "errors": [], "summary": None,
    }


@TYPES.consequence("init_log", {
    "store_as": STORE_AS,
    "metadata": {"type": "object", "description": "seed shape: kept as the log's metadata"},
    "workflow_name": {"type": "string", "description": "blueprint-lib shape: the workflow's name"},
    "workflow_version": {"type": "string"},
    "skill_name": {"type": "string"},
    "plugin_name": {"type": "string"},
    "execution_path": {"type": "string", "description": "default: the working directory"},
}, [], paths=("store_as",), effects=("files",),
   writes=("computed.expected_log_path", LOG_PATH, "flags.log_initialized"),
   example={"workflow_name": "hiivmind-corpus-refresh", "skill_name": "refresh"})
def init_log(params, ctx):
    """Start the run log: `store_as` (+ metadata) makes the seed log there; `workflow_name` makes blueprint-lib's at `log`."""
    if params.get("store_as"):
        if params["store_as"] != SEED_LOG_PATH:
            ctx.trace(f"  warning: the seed log types look only at {SEED_LOG_PATH}, not {params['store_as']}")
        ctx.set(params["store_as"], _seed_log(params, ctx))
    elif params.get("workflow_name"):
        log = _bl_log(params, ctx)
        ctx.set(LOG_PATH, log)
        ctx.set("computed.expected_log_path", str(_default_target(log, BL, "yaml")))
    else:
        raise ActionFailed("init_log needs `store_as` (the seed log) or `workflow_name` (blueprint-lib's log)",
                           "add workflow_name: <your workflow>, or store_as: computed.log")
    ctx.set("flags.log_initialized", True)


# -- records -------------------------------------------------------------------------

@TYPES.consequence("log_node", {"node": {"type": "string"}, "outcome": {"type": "string", "description":
                                "free text: success, error, skipped, blocked, response:<id>, branch:true..."},
                                "details": CONTEXT},
                   ["node", "outcome"], era_params=IN_V8)
def log_node(params, ctx):
    """Record that a node ran and how it came out, in the log's node_history."""
    record = {"node": params["node"], "timestamp": now(), "outcome": params["outcome"],
              "details": params.get("details") or {}}
    fallback = {"kind": "node", "node": params["node"], "outcome": params["outcome"],
                "details": params.get("details") or {}, "at": record["timestamp"]}
    on_log = lambda path: _push(ctx, path, "node_history", record)  # noqa: E731
    _record(ctx, "info", fallback, on_log, on_log, (V8_HISTORY, record))


@TYPES.consequence("log_warning", {"message": {"type": "string"}, "context": CONTEXT, "node": NODE}, ["message"], era_params=IN_V8)
def log_warning(params, ctx):
    """Record a warning in the run log (a seed log keeps the message text only)."""
    message, node, stamp = to_text(params["message"]), _node_id(params, ctx), now()
    _record(ctx, "warn", {"kind": "warning", "message": message, "at": stamp, "node": node},
            lambda path: _push(ctx, path, "warnings", message),
            lambda path: _push(ctx, path, "warnings", {"message": message, "timestamp": stamp, "node": node,
                                                        "context": params.get("context") or {}}))


@TYPES.consequence("log_error", {"message": {"type": "string"}, "details": {"description": "seed: what went wrong"},
                                 "error_type": {"type": "string"}, "context": CONTEXT, "node": NODE,
                                 "recoverable": {"type": "boolean"}},
                   ["message"], era_params=IN_V8)
def log_error(params, ctx):
    """Record an error in the run log (it only records: the action does not fail)."""
    message, node, stamp = to_text(params["message"]), _node_id(params, ctx), now()
    fallback = {"kind": "error", "message": message, "at": stamp, "node": node}
    if "details" in params:
        fallback["details"] = params["details"]
    _record(ctx, "error", fallback,
            lambda path: _push(ctx, path, "errors", {"message": message, "details": params.get("details"),
                                                      "timestamp": stamp}),
            lambda path: _push(ctx, path, "errors", {
                "message": message, "error_type": params.get("error_type", "unknown"), "timestamp": stamp,
                "node": node, "context": params.get("context") or params.get("details") or {},
                "recoverable": bool(params.get("recoverable", False))}))


_STATUS_EXTRAS = ("indexed_sha", "upstream_sha", "indexed_hash", "current_hash", "commits_behind")


@TYPES.consequence("log_source_status", {
    "source_id": {"type": "string"}, "source_type": {"type": "string", "description": "the source's type "
                                                     "(the catalogue's `type`, which a call cannot hold twice)"},
    "status": {"type": "string", "description": "current, stale, unknown, check_manually, cache_check..."},
    "indexed_sha": {"type": ["string", "null"]}, "upstream_sha": {"type": ["string", "null"]},
    "indexed_hash": {"type": ["string", "null"]}, "current_hash": {"type": ["string", "null"]},
    "commits_behind": NULLABLE_INT, "action": {"type": "string", "description": "default pending"},
}, ["source_id", "source_type", "status"], era_params=IN_V8)
def log_source_status(params, ctx):
    """Record a source's freshness (seed: sources.details, counted as checked; else a source_status event)."""
    given = {key: params[key] for key in _STATUS_EXTRAS if key in params}
    data = {"source_id": params["source_id"], "source_type": params["source_type"], "status": params["status"],
            **given}

    def seed(path):
        log = copy.deepcopy(ctx.get(path))
        sources = log.setdefault("sources", {"checked": 0, "updated": 0, "details": []})
        sources["checked"] = int(sources.get("checked") or 0) + 1
        sources.setdefault("details", []).append({"source_id": params["source_id"], "type": params["source_type"],
                                                  "status": params["status"], **given,
                                                  "action": params.get("action", "pending")})
        ctx.set(path, log)

    _record(ctx, "info", {"kind": "source_status", **data, "at": now()}, seed,
            lambda path: _event(ctx, path, "source_status", data))


def _change_lists(changes: Any) -> dict:
    if isinstance(changes, list):  # the catalogue leaves a bare list open: taken as the modified files
        changes = {"modified": changes}
    if not isinstance(changes, dict):
        raise ActionFailed(f"`changes` must be a mapping of added/modified/deleted lists, got {type(changes).__name__}")
    return {f"{key}_files": list(changes.get(key) or []) for key in ("added", "modified", "deleted")}


@TYPES.consequence("log_source_changes", {
    "source_id": {"type": "string"},
    "changes": {"type": ["object", "array"], "description": "{added: [...], modified: [...], deleted: [...]}, "
                                                            "or a list (taken as modified)"},
}, ["source_id", "changes"], era_params=IN_V8)
def log_source_changes(params, ctx):
    """Record the files a source update changed (seed: marks the source updated, with computed.new_sha)."""
    data = {"source_id": params["source_id"], **_change_lists(params["changes"])}

    def seed(path):
        log = copy.deepcopy(ctx.get(path))
        sources = log.setdefault("sources", {"checked": 0, "updated": 0, "details": []})
        detail = next((d for d in sources.get("details") or [] if d.get("source_id") == params["source_id"]), None)
        if detail is not None:
            detail["action"] = "updated"
            detail["new_sha"] = ctx.get("computed.new_sha")
            sources["updated"] = int(sources.get("updated") or 0) + 1
        log["changes"] = list(log.get("changes") or []) + [data]
        ctx.set(path, log)

    _record(ctx, "info", {"kind": "source_changes", **data, "at": now()}, seed,
            lambda path: _event(ctx, path, "source_changes", data))


@TYPES.consequence("log_index_update", {
    "files": {"type": "array", "items": {"type": "string"}, "description": "the index files written"},
    "entries_added": NULLABLE_INT, "entries_removed": NULLABLE_INT, "keywords_preserved": {"type": "boolean"},
}, ["files"], era_params=IN_V8)
def log_index_update(params, ctx):
    """Record an index update: files written, entries added and removed, keywords kept."""
    counts = {"entries_added": params.get("entries_added") or 0, "entries_removed": params.get("entries_removed") or 0,
              "keywords_preserved": bool(params.get("keywords_preserved", False))}

    def seed(path):
        log = dict(ctx.get(path))
        log["index_updates"] = {"files_modified": list(params["files"]), **counts}
        ctx.set(path, log)

    _record(ctx, "info", {"kind": "index_update", "files": list(params["files"]), **counts, "at": now()}, seed,
            lambda path: _event(ctx, path, "index_update", {"files": list(params["files"]), **counts}))


# -- finishing, writing, keeping ------------------------------------------------------

@TYPES.consequence("finalize_log", {"outcome": {"enum": list(OUTCOMES)}, "ending_node": NODE,
                                    "summary": {"type": "string", "description": "default: made from the counts"}},
                   ["outcome"])
def finalize_log(params, ctx):
    """Close the run log: end time, duration, outcome, ending node and summary; sets flags.log_finalized."""
    path, shape, log = required_log(ctx)
    outcome = _one_of(params["outcome"], OUTCOMES, "outcome")
    ending = params.get("ending_node") or (ctx.node.id if ctx.node is not None else None)
    end = now()
    execution = log.setdefault("execution", {})
    execution["end_time"] = end
    start, finish = _parse_time(execution.get("start_time")), _parse_time(end)
    execution["duration_seconds"] = round((finish - start).total_seconds(), 3) if start and finish else None
    execution["outcome"] = outcome
    execution["ending_node"] = ending
    if shape == SEED:
        execution["mode"] = ctx.get("command_mode")
    log["summary"] = params.get("summary") or (
        f"{outcome} at {ending}: {len(log.get('node_history') or [])} nodes, "
        f"{len(log.get('warnings') or [])} warnings, {len(log.get('errors') or [])} errors")
    ctx.set(path, log)
    ctx.set("flags.log_finalized", True)


def _log_name(log: dict, shape: str) -> str:
    metadata = log.get("metadata") or {}
    return str(metadata.get("skill_name") or metadata.get("workflow_name") or "refresh")


def _stamp(log: dict, shape: str) -> str:
    """The log's start time as a file name part; the same on every re-run, so a rewrite hits the same file."""
    from datetime import datetime, timezone

    start = _parse_time((log.get("execution") or {}).get("start_time")) or datetime.now(timezone.utc)
    return start.strftime("%Y-%m-%d-%H%M%S" if shape == SEED else "%Y-%m-%d_%H-%M-%S")


def _default_target(log: dict, shape: str, fmt: str, folder: str | None = None) -> str:
    folder = folder or DEFAULT_LOG_DIRS[shape]
    return str(Path(folder) / f"{_log_name(log, shape)}-{_stamp(log, shape)}{FORMATS[fmt]}")


def _title(log: dict) -> str:
    metadata = log.get("metadata") or {}
    if "corpus_name" in metadata or "sources" in log and not metadata.get("workflow_name"):
        return "Refresh"
    name = metadata.get("skill_name") or metadata.get("workflow_name") or "Workflow"
    return str(name)[:1].upper() + str(name)[1:]


def _cell(value: Any) -> str:
    return to_text(value).replace("|", "\\|").replace("\n", " ")


def summary_markdown(log: dict) -> list[str]:
    metadata, execution = log.get("metadata") or {}, log.get("execution") or {}
    rows = [("Corpus", metadata.get("corpus_name") or metadata.get("workflow_name")), ("Mode", execution.get("mode")),
            ("Outcome", execution.get("outcome")),
            ("Duration", f"{execution['duration_seconds']}s" if execution.get("duration_seconds") is not None else None)]
    if isinstance(log.get("sources"), dict):
        rows += [("Sources Checked", log["sources"].get("checked")), ("Sources Updated", log["sources"].get("updated"))]
    lines = ["## Summary", "", "| Field | Value |", "|---|---|"]
    lines += [f"| {name} | {_cell(value)} |" for name, value in rows if value is not None]
    return lines + [""]


def log_markdown(log: dict) -> str:
    metadata, execution = log.get("metadata") or {}, log.get("execution") or {}
    start = _parse_time(execution.get("start_time"))
    lines = [f"# {_title(log)} Log: {start.strftime('%Y-%m-%d %H:%M:%S') if start else ''}".rstrip(), ""]
    lines += summary_markdown(log)
    details = (log.get("sources") or {}).get("details") if isinstance(log.get("sources"), dict) else None
    if details:
        lines += ["## Sources", ""]
        changes = {c.get("source_id"): c for c in log.get("changes") or [] if isinstance(c, dict)}
        for detail in details:
            lines += [f"### {detail.get('source_id')} ({detail.get('type')})", "", "| Field | Value |", "|---|---|"]
            for name, key in (("Status", "status"), ("Indexed SHA", "indexed_sha"), ("Upstream SHA", "upstream_sha"),
                              ("Commits Behind", "commits_behind")):
                if detail.get(key) is not None:
                    lines.append(f"| {name} | {_cell(detail[key])} |")
            change = changes.get(detail.get("source_id"))
            if change:
                lines += ["", "**Changes:**"]
                lines += [f"- {label}: {', '.join(map(str, change.get(key) or [])) or 'none'}"
                          for label, key in (("Added", "added_files"), ("Modified", "modified_files"),
                                             ("Deleted", "deleted_files"))]
            lines.append("")
    updates = log.get("index_updates")
    if isinstance(updates, dict) and updates.get("files_modified"):
        lines += ["## Index Updates", "", f"- Files: {', '.join(map(str, updates['files_modified']))}",
                  f"- Entries Added: {updates.get('entries_added', 0)}",
                  f"- Entries Removed: {updates.get('entries_removed', 0)}",
                  f"- Keywords Preserved: {'yes' if updates.get('keywords_preserved') else 'no'}", ""]
    if log.get("events"):
        lines += ["## Events", "", "| Time | Type | Data |", "|---|---|---|"]
        lines += [f"| {_cell(e.get('timestamp') or e.get('at'))} | {_cell(e.get('type') or e.get('event_type'))} | "
                  f"{_cell(e.get('data'))} |" for e in log["events"] if isinstance(e, dict)]
        lines.append("")
    for title, key in (("Warnings", "warnings"), ("Errors", "errors")):
        if log.get(key):
            lines += [f"## {title}", ""]
            lines += [f"- {_cell(item.get('message') if isinstance(item, dict) else item)}" for item in log[key]]
            lines.append("")
    if log.get("node_history"):
        lines += ["## Execution Path", "", "| # | Node | Time | Outcome |", "|---|---|---|---|"]
        lines += [f"| {i} | {_cell(h.get('node'))} | {_cell(h.get('timestamp'))} | {_cell(h.get('outcome'))} |"
                  for i, h in enumerate(log["node_history"], 1)]
        lines.append("")
    version = metadata.get("workflow_version")
    lines.append(f"*Generated by {metadata.get('skill_name') or metadata.get('workflow_name') or 'wfexec'}"
                 + (f" v{version}*" if version else "*"))
    return "\n".join(lines) + "\n"


def log_text(log: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(log, indent=2, ensure_ascii=False, default=str) + "\n"
    if fmt in ("markdown", "md"):
        return log_markdown(log)
    from wfexec.types.consequences.files import _yaml_text

    return f"# {_title(log)} Log\n# Generated: {now()}\n" + _yaml_text(log)


def _write_log_file(ctx, target: str, text: str, raw_param: str) -> Path:
    path = guarded_path(ctx, {raw_param: target}, raw_param, "write")
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise ActionFailed(f"cannot write the log to '{target}': {exc.strerror or exc}") from None
    ctx.trace(f"  wrote the run log to {path}")
    return path


@TYPES.consequence("write_log", {
    "format": {"enum": list(FORMATS), "description": "yaml (default), json or markdown"},
    "path": {"type": "string", "description": "the file to write (wins over location and filename)"},
    "location": DIRECTORY,
    "filename": {"type": "string", "description": "default <skill or workflow>-<start time>.<ext>"},
    "include_node_history": {"type": "boolean"}, "include_events": {"type": "boolean"},
}, [], effects=("files",), writes=("computed.log_file_path", "computed.log_path"))
def write_log(params, ctx):
    """Write the run log to a file (yaml, json or markdown); its path goes to computed.log_file_path and computed.log_path."""
    _, shape, log = required_log(ctx)
    fmt = _one_of(params.get("format") or "yaml", FORMATS, "format")
    if params.get("include_node_history") is False:
        log.pop("node_history", None)
    if params.get("include_events") is False:
        log.pop("events", None)
    if params.get("path"):
        target, param = str(params["path"]), "path"
    else:
        folder = params.get("location") or DEFAULT_LOG_DIRS[shape]
        target = str(Path(folder) / params["filename"]) if params.get("filename") else \
            _default_target(log, shape, fmt, folder)
        param = "location"
    _write_log_file(ctx, target, log_text(log, fmt), param)
    ctx.set("computed.log_file_path", target)
    ctx.set("computed.log_path", target)


@TYPES.consequence("apply_log_retention", {
    "strategy": {"enum": ["none", "days", "count"]},
    "days": {"type": ["number", "null"], "description": "days: delete logs older than this"},
    "count": NULLABLE_INT | {"description": "count: keep this many of the newest logs"},
    "path": DIRECTORY, "location": DIRECTORY,
    "pattern": {"type": ["string", "array"], "items": {"type": "string"},
                "description": "file names to consider (default *.yaml; seed: refresh-*.yaml/json/md)"},
}, ["strategy"], effects=("files",), writes=("computed.logs_deleted",))
def apply_log_retention(params, ctx):
    """Delete old log files by age (`days`) or number (`count`); computed.logs_deleted says how many."""
    import time

    strategy = _one_of(params["strategy"], ("none", "days", "count"), "strategy")
    if strategy == "none":
        ctx.set("computed.logs_deleted", 0)
        return
    limit = params.get(strategy)
    if limit is None or isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit < 0:
        raise ActionFailed(f"strategy {strategy} needs `{strategy}:` (a number of 0 or more), got {limit!r}")
    found = active_log(ctx)
    shape = found[1] if found else (SEED if "location" in params else BL)
    param = "path" if params.get("path") else "location"
    folder_text = params.get(param) or DEFAULT_LOG_DIRS[shape]
    folder = ctx.resolve_file(folder_text)
    pattern = params.get("pattern") or (SEED_LOG_PATTERNS if "location" in params or shape == SEED else BL_LOG_PATTERN)
    patterns = [pattern] if isinstance(pattern, str) else list(pattern)
    if not folder.is_dir():
        ctx.set("computed.logs_deleted", 0)
        return
    files = {p for pat in patterns for p in folder.glob(pat) if p.is_file() and not p.name.startswith(".")}
    newest_first = sorted(files, key=lambda p: (-p.stat().st_mtime, p.name))
    if strategy == "count":
        doomed = newest_first[int(limit):]
    else:
        oldest_kept = time.time() - float(limit) * 86400
        doomed = [p for p in newest_first if p.stat().st_mtime < oldest_kept]
    for doomed_file in doomed:
        shown = str(Path(folder_text) / doomed_file.name)
        guarded_path(ctx, {param: shown}, param, "delete", the_link_itself=True).unlink(missing_ok=True)
        ctx.trace(f"  deleted old log {shown}")
    ctx.set("computed.logs_deleted", len(doomed))


def _ci_counts(log: dict) -> tuple[Any, Any]:
    if isinstance(log.get("sources"), dict):
        return log["sources"].get("checked"), log["sources"].get("updated")
    events = [e for e in log.get("events") or [] if isinstance(e, dict)]
    return (sum(1 for e in events if e.get("type") == "source_status"),
            sum(1 for e in events if e.get("type") == "source_changes"))


@TYPES.consequence("output_ci_summary", {
    "format": {"enum": [*CI_FORMATS, "", None], "description": "github, plain (KEY=VALUE), json, or none"},
    "annotations": {"type": "boolean", "description": "github: ::warning/::error lines (default true)"},
    "output_file": {"type": "string", "description": "github: append a markdown summary here "
                                                     "(default $GITHUB_STEP_SUMMARY when set)"},
}, [], effects=("display", "files"), idempotent=False)
def output_ci_summary(params, ctx):
    """Print the run's outcome for CI: GitHub Actions groups and annotations, shell KEY=VALUE lines, or one JSON line."""
    fmt = params.get("format") or "none"
    fmt = _one_of(fmt, CI_FORMATS, "format")
    if fmt == "none":
        return
    _, shape, log = required_log(ctx)
    metadata, execution = log.get("metadata") or {}, log.get("execution") or {}
    checked, updated = _ci_counts(log)
    duration = execution.get("duration_seconds")
    log_file = ctx.get("computed.log_file_path")
    if fmt == "json":
        ctx.io.print(json.dumps({"outcome": execution.get("outcome"), "mode": execution.get("mode"),
                                 "sources_checked": checked, "sources_updated": updated,
                                 "duration_seconds": duration, "log_file": log_file}, ensure_ascii=False))
        return
    if fmt == "plain":
        prefix = "REFRESH" if shape == SEED else str(metadata.get("skill_name") or "WORKFLOW").upper().replace("-", "_")
        values = [("OUTCOME", execution.get("outcome")), ("MODE", execution.get("mode"))]
        if shape == SEED:
            values += [("SOURCES_CHECKED", checked), ("SOURCES_UPDATED", updated)]
        values += [("DURATION", int(duration) if duration is not None else None), ("LOG", log_file)]
        for key, value in values:
            ctx.io.print(f"{prefix}_{key}={shlex.quote(to_text(value))}")
        return
    title = _title(log)
    ctx.io.print(f"::group::{title} Summary")
    ctx.io.print(f"Corpus: {to_text(metadata.get('corpus_name') or metadata.get('workflow_name'))}")
    ctx.io.print(f"Mode: {to_text(execution.get('mode'))}")
    if shape == SEED:
        ctx.io.print(f"Sources: {checked} checked, {updated} updated")
    ctx.io.print(f"Outcome: {to_text(execution.get('outcome'))}")
    ctx.io.print(f"Duration: {to_text(duration)}s")
    ctx.io.print("::endgroup::")
    if params.get("annotations", True):
        updates = log.get("index_updates")
        updates = updates if isinstance(updates, dict) else {}
        if (updates.get("entries_added") or 0) > 0:
            index_file = (updates.get("files_modified") or ["index.md"])[0]
            ctx.io.print(f"::notice file={index_file}::Index updated with {updates['entries_added']} new entries")
        for key, command in (("warnings", "warning"), ("errors", "error")):
            for item in log.get(key) or []:
                message = item.get("message") if isinstance(item, dict) else item
                context = (item.get("context") or {}) if isinstance(item, dict) else {}
                place = (f" file={context['file']},line={context['line']}"
                         if isinstance(context, dict) and context.get("file") and context.get("line") else "")
                ctx.io.print(f"::{command}{place}::{to_text(message)}")
    summary_file = params.get("output_file") or os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_file:
        target = guarded_path(ctx, {"output_file": summary_file}, "output_file", "write") \
            if params.get("output_file") else Path(summary_file)
        existing = target.read_text(encoding="utf-8") if target.is_file() else ""
        write_atomic(target, existing + f"# {title} Summary\n\n" + "\n".join(summary_markdown(log)[2:]) + "\n")


def call_description(ctx) -> str:
    """A call's own `description:` (every call may have one, so a type cannot declare it): rendered text."""
    from wfexec.language.expressions import compile_value

    written = ctx.call.raw.get("description")
    return to_text(ctx.render(compile_value(written))) if written is not None else ""


@TYPES.consequence("log_session_snapshot", {
    "write_intermediate": {"type": "boolean", "description": "also write the log so far to a file"},
    "node": NODE,
}, [], effects=("files",), example={"description": "after the sources were checked"})
def log_session_snapshot(params, ctx):
    """Mark a point of the session, named by the call's `description`, in metadata.session.snapshot_points."""
    description = call_description(ctx)
    if not description:
        raise ActionFailed("log_session_snapshot needs `description:` to say what this point of the session is")
    path, shape, log = required_log(ctx)
    session = log.setdefault("metadata", {}).setdefault("session", {})
    points = session.setdefault("snapshot_points", [])
    snapshot = {"timestamp": now(), "node": _node_id(params, ctx), "description": description,
                "log_path": None}
    if params.get("write_intermediate"):
        target = str(Path(DEFAULT_LOG_DIRS[shape]) /
                     f"{_log_name(log, shape)}-{_stamp(log, shape)}-snapshot-{len(points) + 1}.yaml")
        _write_log_file(ctx, target, log_text(log, "yaml"), "path")
        snapshot["log_path"] = target
    points.append(snapshot)
    ctx.set(path, log)
