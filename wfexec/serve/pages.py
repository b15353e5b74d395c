"""The pages, rendered on the server (jinja2): the inbox, the runs, a run, the workflows. The page's script
(static/app.js) only swaps in fragments these routes render, and moves the graph's marks, as the events say
runs moved."""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.routing import Route

from wfexec.durable.outputs import KEEP_BYTES
from wfexec.serve.api import run_filters
from wfexec.serve.command_lines import command_lines
from wfexec.serve.store_view import PAGE, SHOWN_STATUSES

# A run page shows this many steps of its timeline at first (the newest); the rest on asking.
TIMELINE_SHOWN = 500


def when(timestamp) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp)) if timestamp else "-"


def offset(at, started) -> str:
    """When a step ended, counted from the run's start: `+1.25 s`."""
    from datetime import datetime

    if isinstance(at, str):
        try:
            at = datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return at
    if not isinstance(at, (int, float)) or not started:
        return "-"
    return f"+{at - started:.2f} s"


def _state_text(view, run_id: str) -> str:
    return json.dumps(view.state(run_id), indent=2, default=str, ensure_ascii=False)


def routes(server) -> list[Route]:
    view = server.view

    def home(request: Request):
        found = view.inbox()
        cursor = max((r["updated_at"] or 0.0 for key in ("waiting", "running", "recent") for r in found[key]),
                     default=0.0)
        return server.render(request, "inbox.html", title="Waiting for you", cursor=repr(cursor), **found)

    def runs(request: Request):
        filters = run_filters(request)
        found = view.runs_page(limit=PAGE, **filters)
        asked = {"status": filters["status"], "workflow": filters["workflow"], "q": filters["text"]}
        kept = {k: v for k, v in asked.items() if v}
        older = f"/runs?{urlencode({**kept, 'before': found['next']})}" if found["next"] else None
        newest = f"/runs?{urlencode(kept)}" if filters["before"] else None
        return server.render(request, "runs.html", title="Runs", statuses=SHOWN_STATUSES, asked=asked,
                             filtered=bool(kept), older=older, newest=newest, **found)

    def card(request: Request):
        return server.render(request, "_card.html", run=view.one_run(request.path_params["run_id"]))

    def _run_context(record: dict) -> dict:
        return {"run": record, "process": server.processes.ended_of(record["id"], record.get("updated_at")),
                "commands": command_lines(record, server.config.where_runs),
                "again": server.workflows.at(Path(record["workflow_path"])) is not None,
                "backend": view.described()}

    def run(request: Request):
        record = view.with_inputs(view.one_run(request.path_params["run_id"]))
        everything = request.query_params.get("steps") == "all"
        shown = view.journal(record["id"]) if everything else view.journal_tail(record["id"], TIMELINE_SHOWN)
        last_step = shown[-1]["step"] if shown else 0
        return server.render(request, "run.html", title=f"Run {record['id']}", journal=shown,
                             hidden_steps=last_step - len(shown), longest=max((s["duration_ms"] for s in shown),
                                                                              default=0.0),
                             graph=view.graph(record["id"]), last_step=last_step,
                             agents=view.agents(record["id"]), state=_state_text(view, record["id"]),
                             output_kept=KEEP_BYTES // 1024,
                             **_run_context(record))

    def summary(request: Request):
        record = view.with_inputs(view.one_run(request.path_params["run_id"]))
        return server.render(request, "_summary.html", **_run_context(record))

    def run_agents(request: Request):
        return server.render(request, "_agents.html", agents=view.agents(request.path_params["run_id"]))

    def run_state(request: Request):
        return server.render(request, "_state.html", state=_state_text(view, request.path_params["run_id"]))

    def workflows(request: Request):
        listed = [server.workflows.describe(f) for f in server.workflows.found()]
        return server.render(request, "workflows.html", title="Workflows", workflows=listed,
                             roots=server.workflows.roots)

    def workflow(request: Request):
        from wfexec.serve.actions import ActionRefused
        from wfexec.serve.store_view import workflow_graph, workflow_plan

        found = server.workflows.get(request.path_params["workflow_id"])
        if found is None:
            raise ActionRefused(404, f"no workflow '{request.path_params['workflow_id']}' under the folders this "
                                     "server was given (--root)")
        described = server.workflows.describe(found)
        return server.render(request, "workflow.html", title=described["name"], workflow=described,
                             graph=workflow_graph(found.path) if described["valid"] else None,
                             plan=workflow_plan(found.path) if described["valid"] else None)

    return [
        Route("/", home),
        Route("/runs", runs),
        Route("/runs/{run_id}", run),
        Route("/runs/{run_id}/card", card),
        Route("/runs/{run_id}/summary", summary),
        Route("/runs/{run_id}/agents", run_agents),
        Route("/runs/{run_id}/state", run_state),
        Route("/workflows", workflows),
        Route("/workflows/{workflow_id}", workflow),
    ]
