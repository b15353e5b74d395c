"""Preconditions over command-line tools: on PATH, new enough, logged in, their daemon running.

A check that runs the tool gets an argument list (no shell) and a timeout;
a tool that cannot answer (times out, cannot start) makes the check false.
A tool that prints no version number counts as new enough ("available,
version unknown"), as blueprint-lib defines `tool_version_gte`.
"""

from __future__ import annotations

import re
import shutil

from wfexec.types.registry import ActionFailed, TypeList

TYPES = TypeList()

TOOL = {"type": "string", "description": "a command name looked up on PATH, e.g. git"}
TOOL_NAME = {"type": "string", "pattern": r"^[a-zA-Z0-9_-]+$", "description": "a command name looked up on PATH, e.g. gh"}
MIN_VERSION = {"type": "string", "pattern": r"^\d+(\.\d+)*$", "description": "the lowest acceptable version, e.g. 2.40"}
VERSION_TIMEOUT = 10
CHECK_TIMEOUT = 15

# How to ask a tool whether it is logged in, or whether its daemon answers (exit status 0 = yes).
# A tool missing here has no such check, so it only needs to be on PATH.
AUTH_CHECKS = {
    "gh": ["auth", "status"],
    "aws": ["sts", "get-caller-identity"],
    "gcloud": ["auth", "print-access-token"],  # `gcloud auth list` exits 0 even with no account
    "az": ["account", "show"],
}
DAEMON_CHECKS = {"docker": ["info"]}
CAPABILITIES = ("available", "version_gte", "authenticated", "daemon_ready")


def version_tuple(text: str) -> tuple:
    """The first dotted number in `text` as a tuple of ints; () when there is none."""
    match = re.search(r"(\d+(?:\.\d+)*)", text or "")
    return tuple(int(p) for p in match.group(1).split(".")) if match else ()


def _padded(version: tuple, length: int) -> tuple:
    return version + (0,) * (length - len(version))


def _version_at_least(path: str, min_version: str) -> bool:
    import subprocess

    wanted = version_tuple(min_version)
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, errors="replace",
                              timeout=VERSION_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    found = version_tuple(done.stdout + done.stderr)
    if not found:
        return True  # available, version unknown: assumed fine, as blueprint-lib does
    length = max(len(found), len(wanted))
    return _padded(found, length) >= _padded(wanted, length)


def _answers(path: str, args: list[str] | None) -> bool:
    if args is None:
        return True
    import subprocess

    try:
        return subprocess.run([path, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=CHECK_TIMEOUT).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def tool_has(tool: str, capability: str, min_version: str | None = None) -> bool:
    """Whether `tool` is on PATH and has `capability` (one of CAPABILITIES)."""
    path = shutil.which(tool)
    if path is None:
        return False
    if capability == "available":
        return True
    if capability == "version_gte":
        return not min_version or _version_at_least(path, min_version)
    if capability == "authenticated":
        return _answers(path, AUTH_CHECKS.get(tool))
    if capability == "daemon_ready":
        return _answers(path, DAEMON_CHECKS.get(tool))
    raise ActionFailed(f"tool_check has no capability '{capability}'", f"use one of: {', '.join(CAPABILITIES)}")


# Looks the tool up on PATH (directory reads): no process starts, so a dry run checks it for real.
@TYPES.precondition("tool_available", {"tool": TOOL}, ["tool"], effects=("files",))
def tool_available(params, ctx):
    """True when `tool` is on PATH."""
    return shutil.which(params["tool"]) is not None


@TYPES.precondition("tool_check", {
    "tool": TOOL,
    "capability": {"enum": list(CAPABILITIES)},
    "args": {"type": "object", "properties": {"min_version": {"type": "string",
                                                            "description": "the lowest version accepted, e.g. 2.30"}},
             "additionalProperties": False},
}, ["tool"], effects=("process", "network"))
def tool_check(params, ctx):
    """v3: `tool` is available, its --version is at least args.min_version, it is authenticated, or its daemon is ready."""
    return tool_has(params["tool"], params.get("capability", "available"), (params.get("args") or {}).get("min_version"))


@TYPES.precondition("tool_version_gte", {"tool": TOOL_NAME, "min_version": MIN_VERSION}, ["tool", "min_version"],
                    effects=("process",))
def tool_version_gte(params, ctx):
    """True when `tool --version` prints at least `min_version` (true when it prints no version)."""
    return tool_has(params["tool"], "version_gte", params["min_version"])


@TYPES.precondition("tool_authenticated", {"tool": TOOL_NAME}, ["tool"], effects=("process", "network"))
def tool_authenticated(params, ctx):
    """True when `tool` is logged in (gh auth status, aws sts get-caller-identity, gcloud, az); other tools: on PATH."""
    return tool_has(params["tool"], "authenticated")


@TYPES.precondition("tool_daemon_ready", {"tool": TOOL_NAME}, ["tool"], effects=("process",))
def tool_daemon_ready(params, ctx):
    """True when `tool`'s daemon answers (docker info); other tools: on PATH."""
    return tool_has(params["tool"], "daemon_ready")
