"""`wfexec gc`: remove the blobs no live run of a Temporal cluster refers to (wfexec.temporal.blob_lifecycle).

What it removes: the blobs of every run the server says is closed (completed, failed, cancelled, …) longer than
`--retention` ago (0 by default: closed is enough), and of runs the server does not know whose newest blob is
older than `--grace` (a run being started right now is not known yet). The blobs of open runs are never removed.
"""

from __future__ import annotations

import json

from wfexec.commands.temporal_runs import _guarded


def gc(temporal: str, retention_seconds: float, grace_seconds: float, dry_run: bool, format: str,
       debug: bool) -> int:
    async def body() -> int:
        from wfexec.temporal.blob_lifecycle import sweep
        from wfexec.temporal.blob_stores import configured_store
        from wfexec.temporal.client import connect

        store = configured_store()
        client = await connect(temporal)
        done = await sweep(store, client, retention=retention_seconds, grace=grace_seconds, dry_run=dry_run)
        _print(done, store.where(), dry_run, format)
        return 0

    return _guarded(temporal, body, debug)


def duration_option(text: str, option: str) -> float:
    """A duration option's seconds, or a usage error (exit 2) saying how to write one."""
    from wfexec.commands.entrypoints import CommandLineError
    from wfexec.system.durations import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise CommandLineError(str(exc), param_hint=option) from None


def _print(done, where: str, dry_run: bool, format: str) -> None:
    def row(stored) -> dict:
        return {"run": stored.run_id, "bytes": stored.bytes, "blobs": stored.blobs}

    if format == "json":
        print(json.dumps({"store": where, "dry_run": dry_run, "freed_bytes": done.freed,
                          "removed": [row(s) for s in done.removed],
                          "kept": [{**row(s), "why": why} for s, why in done.kept]}, indent=2))
        return
    verb = "would remove" if dry_run else "removed"
    print(f"{where}: {verb} the blobs of {len(done.removed)} run(s), {done.freed:,} bytes; "
          f"kept those of {len(done.kept)}")
    for stored in done.removed:
        print(f"  {verb} {stored.run_id or '(no run)'}  {stored.bytes:,} bytes")
    for stored, why in done.kept:
        print(f"  kept {stored.run_id or '(no run)'}  {stored.bytes:,} bytes  ({why})")
