"""The pages, rendered on the server (jinja2): the inbox, a run, the workflows. The page's script
(static/app.js) only swaps in fragments these routes render, as the events say runs moved."""

from __future__ import annotations

import json
import time

from starlette.requests import Request
from starlette.routing import Route

from wfexec.serve.store_view import graph, inbox, journal, one_run, state


def when(timestamp) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp)) if timestamp else "-"


def routes(server) -> list[Route]:
    store = server.config.store

    def home(request: Request):
        found = inbox(store)
        cursor = max((r["updated_at"] for group in found.values() for r in group), default=0.0)
        return server.render(request, "inbox.html", title="Waiting for you", cursor=repr(cursor), **found)

    def card(request: Request):
        return server.render(request, "_card.html", run=one_run(store, request.path_params["run_id"]))

    def run(request: Request):
        record = one_run(store, request.path_params["run_id"])
        steps = journal(store, record["id"])
        return server.render(request, "run.html", title=f"Run {record['id']}", run=record, journal=steps,
                             graph=graph(store, record["id"]), last_step=steps[-1]["step"] if steps else 0,
                             state=json.dumps(state(store, record["id"]), indent=2, default=str,
                                              ensure_ascii=False),
                             process=server.processes.ended.get(record["id"]))

    def summary(request: Request):
        record = one_run(store, request.path_params["run_id"])
        return server.render(request, "_summary.html", run=record, graph=graph(store, record["id"]),
                             process=server.processes.ended.get(record["id"]))

    def run_state(request: Request):
        text = json.dumps(state(store, request.path_params["run_id"]), indent=2, default=str, ensure_ascii=False)
        return server.render(request, "_state.html", state=text)

    def workflows(request: Request):
        listed = [server.workflows.describe(f) for f in server.workflows.found()]
        return server.render(request, "workflows.html", title="Workflows", workflows=listed,
                             roots=server.workflows.roots)

    def workflow(request: Request):
        from wfexec.serve.actions import ActionRefused
        from wfexec.serve.store_view import workflow_graph

        found = server.workflows.get(request.path_params["workflow_id"])
        if found is None:
            raise ActionRefused(404, f"no workflow '{request.path_params['workflow_id']}' under the folders this "
                                     "server was given (--root)")
        described = server.workflows.describe(found)
        return server.render(request, "workflow.html", title=described["name"], workflow=described,
                             graph=workflow_graph(found.path) if described["valid"] else None)

    return [
        Route("/", home),
        Route("/runs/{run_id}", run),
        Route("/runs/{run_id}/card", card),
        Route("/runs/{run_id}/summary", summary),
        Route("/runs/{run_id}/state", run_state),
        Route("/workflows", workflows),
        Route("/workflows/{workflow_id}", workflow),
    ]
