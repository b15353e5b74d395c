"""`wfexec runs`, `wfexec show RUN`, `wfexec cancel RUN`: reading the run store."""

from __future__ import annotations

import json
import sys
import time

from wfexec.durable.store import FINISHED, StoreError, store_of_run, store_to_list


def _when(timestamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp)) if timestamp else "-"


def _duration(record) -> str:
    end = record.finished_at or record.updated_at
    seconds = max(0.0, end - record.created_at)
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


def list_runs(path, status: str | None, as_json: bool, out=None, limit: int = 50) -> int:
    """The newest `limit` runs (0: all), and, for people reading the table, on stderr how many more there are."""
    out = out or sys.stdout  # not a default argument: that would be the sys.stdout of import time, not the caller's
    store = store_to_list(path)
    total = 0
    if store is None:
        records = []
    else:
        try:
            records = store.list(status, limit=limit or -1)
            # JSON is read by programs: the hint, and the count it needs, are for the table
            total = store.count(status) if limit and len(records) == limit and not as_json else len(records)
        finally:
            store.close()
    if total > len(records):
        sys.stderr.write(f"the newest {len(records):,} of {total:,} runs" + (f" with status {status}" if status else "")
                         + "; --limit N lists more (0: all)\n")
    if as_json:
        out.write(json.dumps([r.to_json() for r in records], indent=2, default=str) + "\n")
        return 0
    if not records:
        out.write("no runs" + (f" with status {status}" if status else "") + "\n")
        return 0
    header = ("id", "workflow", "status", "node", "steps", "started", "duration")
    rows = [(r.id, r.workflow_name, r.shown_status, r.current_node or (f"→ {r.ending}" if r.ending else "-"),
             str(r.steps), _when(r.created_at), _duration(r)) for r in records]
    if out.isatty():
        from rich.console import Console
        from rich.table import Table

        table = Table(box=None, pad_edge=False)
        for column in header:
            table.add_column(column)
        for row in rows:
            table.add_row(*row)
        Console(file=out, soft_wrap=True, highlight=False).print(table)
    else:
        # For a pipe, one line a run and no wrapping, so grep and cut see whole rows (and rich's layout, which
        # costs more than the rest of the command, is skipped).
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
        for row in [header, *rows]:
            out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() + "\n")
    return 0


def show_agent(path, run_id: str, agent: str, *, as_json: bool, out=None) -> int:
    """What one agent of a run's states nodes was sent and got, state by state (Raymond's debug files)."""
    out = out or sys.stdout
    store = store_of_run(path, run_id)
    try:
        record = store.get(run_id)
        records = store.transcript(record.id, agent)
        agents = sorted({r["agent"] for r in store.transcript(record.id)}) if not records else []
    finally:
        store.close()
    if not records:
        known = ", ".join(agents) or "none: it ran no states node, or none that reached an agent's state"
        raise StoreError(f"run {record.id} has no agent '{agent}' (agents: {known})",
                         "`wfexec show RUN --agent NAME` with one of them")
    if as_json:
        out.write(json.dumps({"run_id": record.id, "agent": agent, "states": records}, indent=2, default=str) + "\n")
        return 0
    lines = [f"run {record.id}: agent {agent}, {len(records)} state{'s' if len(records) != 1 else ''}"]
    for number, r in enumerate(records, 1):
        lines.append(f"── {number}. {r['state']} ({r['kind']}, node {r['node']})")
        if r["kind"] == "markdown":
            extra = f", attempt {r['attempt']}" if r.get("attempt", 1) > 1 else ""
            lines += ["sent:", _indented(r.get("prompt", "")),
                      f"received (${r.get('cost_usd') or 0:.4f}, session {r.get('session_id') or '-'}{extra}):",
                      _indented(r.get("reply", ""))]
        else:
            lines.append(f"exit status {r.get('exit_code')}" +
                         (f", {r['seconds']:.1f} s" if isinstance(r.get("seconds"), (int, float)) else ""))
            for stream in ("stdout", "stderr"):
                if r.get(stream):
                    lines += [f"{stream}:", _indented(r[stream])]
    out.write("\n".join(lines) + "\n")
    return 0


def show_output(path, run_id: str, *, as_json: bool, out=None) -> int:
    """What a run's commands and scripts wrote, step by step, as the store keeps it (wfexec.durable.outputs)."""
    from wfexec.durable.outputs import output_text

    out = out or sys.stdout
    store = store_of_run(path, run_id)
    try:
        record = store.get(run_id)
        rows = store.output_rows(record.id)
        size = store.output_size(record.id)
    finally:
        store.close()
    text = output_text(rows, 0, size, limit=None)["text"]
    if as_json:
        out.write(json.dumps({"run_id": record.id, "text": text, "bytes": size}, indent=2) + "\n")
    elif rows:
        out.write(text)
    else:
        out.write(f"run {record.id}: no command or script of it wrote anything\n")
    return 0


def _indented(text: str) -> str:
    return "\n".join("    " + line for line in (text or "").rstrip("\n").splitlines()) or "    (nothing)"


def show_run(path, run_id: str, *, with_state: bool, as_json: bool, out=None) -> int:
    out = out or sys.stdout
    store = store_of_run(path, run_id)
    try:
        record = store.get(run_id)
        journal = store.journal(record.id)
        _, state = store.snapshot(record.id)
    finally:
        store.close()
    if as_json:
        data = {**record.to_json(), "journal": journal}
        if with_state:
            data["state"] = state
        out.write(json.dumps(data, indent=2, default=str) + "\n")
        return 0
    lines = [f"run {record.id}: {record.workflow_name} ({record.workflow_path})",
             f"  status: {record.shown_status}" + (f", ending '{record.ending}' ({record.ending_type})" if record.ending else ""),
             f"  started {_when(record.created_at)}, {record.steps} step{'' if record.steps == 1 else 's'}, "
             f"{_duration(record)}"]
    if record.current_node and record.status not in FINISHED:
        lines.append(f"  current node: {record.current_node}")
    if record.shown_status == "interrupted":
        lines.append(f"  its process ({record.lease}) is gone; continue it with: wfexec resume {record.id}")
    if record.in_flight:
        lines.append(f"  in flight when it stopped: {record.in_flight['node']} (step {record.in_flight['step']})")
    if record.pending_question:
        q = record.pending_question
        options = ", ".join(o["id"] for o in q["options"]) + (" or free text" if q.get("allow_other") else "")
        key = q.get("key") or q["node"]
        lines.append(f"  waiting: '{key}' asks: {q['question']}" + (f" ({options})" if q["options"] else ""))
        lines.append(f"    answer with: wfexec resume {record.id} --answer {key}="
                     f"{'<option id>' if q['options'] else '<text>'}")
    if record.last_error:
        lines.append(f"  last error: {record.last_error}")
    if journal:
        lines.append("  history:")
        for row in journal:
            changed = ", ".join([*(row["changes"] or ()),
                                 *(f"{path} +{len(items)}" for path, items in row.get("appended", {}).items()),
                                 *(f"{path} removed" for path in row.get("removed", ()))])
            lines.append(f"    {row['step']:>4}  {row['node']} ({row['type']}) → {row['target']}"
                         f"  {row['duration_ms']:.1f} ms" + (f"  [{changed}]" if changed else ""))
    out.write("\n".join(lines) + "\n")
    if with_state:
        from wfexec.commands.reporting import state_as_yaml

        out.write(state_as_yaml(state))
    return 0


def cancel_run(path, run_id: str, out=None, take_over: bool = False) -> int:
    out = out or sys.stdout
    store = store_of_run(path, run_id, readonly=False)
    try:
        record = store.get(run_id)
        if record.status in FINISHED:
            raise StoreError(f"run {record.id} has already finished ({record.status})", "nothing to cancel")
        store.acquire(record.id, take_over=take_over)  # refuses while another process drives it
        store.set_status(record.id, "cancelled", pending_question=None, in_flight=None)
        store.release(record.id)
    finally:
        store.close()
    out.write(f"run {record.id} cancelled\n")
    return 0
