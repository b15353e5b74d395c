"""Preconditions over the run log (blueprint-lib v1/v2 names and v3 `log_state`)."""

from __future__ import annotations

from wfexec.types.consequences.runlog import LEVEL_RANKS, level_enabled
from wfexec.types.registry import ActionFailed, TypeList

TYPES = TypeList()

LEVEL = {"enum": ["trace", "debug", "info", "warn", "error"], "description": "the lowest level that is logged"}
ASPECTS = ("initialized", "finalized", "level_enabled")


@TYPES.precondition("log_initialized")
def log_initialized(params, ctx):
    """True when init_log has run (flags.log_initialized)."""
    return ctx.get("flags.log_initialized") is True


@TYPES.precondition("log_finalized")
def log_finalized(params, ctx):
    """True when finalize_log has run (flags.log_finalized)."""
    return ctx.get("flags.log_finalized") is True


def _level_enabled(level, ctx) -> bool:
    if level not in LEVEL_RANKS:
        raise ActionFailed(f"unknown log level {level!r}", "use one of: trace, debug, info, warn, error")
    return level_enabled(ctx, level)


@TYPES.precondition("log_level_enabled", {"level": LEVEL}, ["level"])
def log_level_enabled(params, ctx):
    """True when records of `level` are kept at the current level (state logging.level, else output.level, else info)."""
    return _level_enabled(params["level"], ctx)


@TYPES.precondition("log_state", {"aspect": {"enum": list(ASPECTS)},
                                  "args": {"type": "object", "properties": {"level": LEVEL},
                                           "additionalProperties": False}},
                    ["aspect"])
def log_state(params, ctx):
    """v3: the log is `initialized`, `finalized`, or records of args.level are kept (`level_enabled`)."""
    aspect = params["aspect"]
    if aspect == "initialized":
        return log_initialized(params, ctx)
    if aspect == "finalized":
        return log_finalized(params, ctx)
    if aspect == "level_enabled":
        level = (params.get("args") or {}).get("level")
        if level is None:
            raise ActionFailed("log_state level_enabled needs args.level", "add args: {level: debug}")
        return _level_enabled(level, ctx)
    raise ActionFailed(f"log_state has no aspect '{aspect}'", f"use one of: {', '.join(ASPECTS)}")
