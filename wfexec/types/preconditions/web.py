"""Preconditions over fetched web content and the network."""

from __future__ import annotations

from urllib.parse import urlparse

from wfexec.types.registry import TypeList

TYPES = TypeList()

FROM = {"type": "string", "description": "the state path where web_fetch stored its result"}


def _status(value) -> int | None:
    if isinstance(value, dict):
        status = value.get("status")
        return status if isinstance(status, int) else None
    return None


@TYPES.precondition("fetch_succeeded", {"from": FROM}, ["from"], paths=("from",))
def fetch_succeeded(params, ctx):
    """True when the fetch result at `from` has a 2xx status."""
    status = _status(ctx.get(params["from"]))
    return status is not None and 200 <= status < 300


@TYPES.precondition("fetch_returned_content", {"from": FROM}, ["from"], paths=("from",))
def fetch_returned_content(params, ctx):
    """True when the fetch result at `from` has non-empty content."""
    value = ctx.get(params["from"])
    return isinstance(value, dict) and bool(value.get("content"))


@TYPES.precondition("fetch_check", {"from": FROM, "aspect": {"enum": ["succeeded", "has_content"]}},
                    ["from"], paths=("from",))
def fetch_check(params, ctx):
    """v3: the fetch result at `from` succeeded (default) or has content."""
    if params.get("aspect", "succeeded") == "has_content":
        return fetch_returned_content(params, ctx)
    return fetch_succeeded(params, ctx)


@TYPES.precondition("network_available", {"target": {"type": "string", "description": "a URL or host:port"},
                                          "timeout": {"type": "number", "exclusiveMinimum": 0}},
                    effects=("network",))
def network_available(params, ctx):
    """True when a TCP connection to `target` (default https://github.com) opens within `timeout` (5 s)."""
    target = params.get("target", "https://github.com")
    parsed = urlparse(target if "://" in target else f"tcp://{target}")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    import socket

    try:
        with socket.create_connection((parsed.hostname or "", port), timeout=params.get("timeout", 5)):
            return True
    except OSError:
        return False
