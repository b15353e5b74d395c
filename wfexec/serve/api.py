"""The JSON API under /api/: the same data and actions the pages use (`store_view`, `actions`)."""

from __future__ import annotations

from typing import Any

from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from wfexec.serve import actions
from wfexec.serve.store_view import PAGE, workflow_graph, workflow_plan


# The largest number a query may give: SQLite's largest integer (a step number, a byte offset, a time).
MAX_NUMBER = 2**63 - 1


def _number(request: Request, name: str, default, kind=int):
    text = request.query_params.get(name)
    if name == "since" and request.headers.get("last-event-id"):
        # A browser's EventSource reconnects to the address it was given, and says where it got to: that wins.
        text = request.headers["last-event-id"]
    if text in (None, ""):
        return default
    try:
        value = kind(text)
    except ValueError:
        raise actions.ActionRefused(400, f"'{name}' must be a number, not '{text}'") from None
    if value != value or value in (float("inf"), float("-inf")):  # NaN, or an infinity: no place in a run
        raise actions.ActionRefused(400, f"'{name}' must be a number, not '{text}'")
    if value < 0:
        raise actions.ActionRefused(400, f"'{name}' cannot be negative")
    if value > MAX_NUMBER:
        raise actions.ActionRefused(400, f"'{name}' is too large (at most {MAX_NUMBER})")
    return value


def run_filters(request: Request) -> dict[str, str | None]:
    """What `/runs` and `/api/runs` filter by, from the address: status, workflow (its name), q (text), and
    before (the page)."""
    given = request.query_params
    return {"status": given.get("status") or None, "workflow": given.get("workflow") or None,
            "text": given.get("q") or None, "before": given.get("before") or None}


def routes(server) -> list[Route]:
    """`server` (wfexec.serve.app.Server) holds the config, the processes and the workflows."""
    view = server.view

    def runs(request: Request):
        return JSONResponse(view.runs_page(**run_filters(request), limit=_number(request, "limit", PAGE)))

    def run(request: Request):
        data = view.one_run(request.path_params["run_id"])
        ended = server.processes.ended_of(data["id"], data.get("updated_at"))
        data["process"] = ended.to_json() if ended is not None else None
        return JSONResponse(data)

    def run_journal(request: Request):
        return JSONResponse({"journal": view.journal(request.path_params["run_id"], _number(request, "since", 0))})

    def run_state(request: Request):
        return JSONResponse({"state": view.state(request.path_params["run_id"])})

    def run_agents(request: Request):
        return JSONResponse({"agents": view.agents(request.path_params["run_id"])})

    def run_output(request: Request):
        return JSONResponse(view.output(request.path_params["run_id"], _number(request, "from", 0)))

    def run_graph(request: Request):
        return JSONResponse(view.graph(request.path_params["run_id"]))

    def run_stream(request: Request):
        view.one_run(request.path_params["run_id"])  # an unknown run is a 404 now, not an empty stream
        return EventSourceResponse(view.run_events(request.path_params["run_id"], _number(request, "since", 0)),
                                   ping=15)

    def all_stream(request: Request):
        return EventSourceResponse(view.all_events(_number(request, "since", None, float)), ping=15)

    def workflows(request: Request):
        return JSONResponse({"roots": [str(r) for r in server.workflows.roots],
                             "workflows": [server.workflows.describe(f) for f in server.workflows.found()]})

    def _workflow(request: Request):
        found = server.workflows.get(request.path_params["workflow_id"])
        if found is None:
            raise actions.ActionRefused(404, f"no workflow '{request.path_params['workflow_id']}' here")
        return found

    def workflow_picture(request: Request):
        return JSONResponse(workflow_graph(_workflow(request).path))

    def workflow_effects(request: Request):
        found = _workflow(request)
        manifest = workflow_plan(found.path)
        if manifest is None:
            raise actions.ActionRefused(422, f"{found.path} does not compile: `wfexec validate` says why")
        return JSONResponse(manifest)

    async def answer(request: Request):
        body = await server.posted(request)
        started = await server.blocking(actions.answer, view, server.processes, request.path_params["run_id"],
                                        body.get("answer"))
        return server.done(request, body, started.to_json())

    async def resume(request: Request):
        body = await server.posted(request)
        started = await server.blocking(actions.resume, view, server.processes, request.path_params["run_id"],
                                        body.get("in_flight"))
        return server.done(request, body, started.to_json())

    async def again(request: Request):
        body = await server.posted(request)
        started = await server.blocking(actions.again, view, server.processes, server.workflows,
                                        request.path_params["run_id"])
        return server.done(request, body, started.to_json(), f"/runs/{started.run_id}")

    async def cancel(request: Request):
        body = await server.posted(request)
        return server.done(request, body, await server.blocking(actions.cancel, view, request.path_params["run_id"]))

    async def launch(request: Request):
        body = await server.posted(request)
        inputs: Any = body.get("inputs")
        # A form's fields named input.NAME are text, as `--input NAME=TEXT`; `inputs` (JSON) are values as given.
        texts = {k[len("input."):]: v for k, v in body.items() if k.startswith("input.")}
        if inputs is not None and not isinstance(inputs, dict):
            raise actions.ActionRefused(400, "'inputs' must map input names to values")
        if inputs and texts:
            raise actions.ActionRefused(400, "give the inputs either as 'inputs' (JSON values) or as 'input.NAME' "
                                             "fields (text), not both")
        started = await server.blocking(actions.launch, server.processes, server.workflows, body.get("workflow"),
                                        inputs, texts)
        return server.done(request, body, started.to_json(), f"/runs/{started.run_id}")

    changing = [
        Route("/api/runs/{run_id}/answer", answer, methods=["POST"]),
        Route("/api/runs/{run_id}/cancel", cancel, methods=["POST"]),
        Route("/api/runs/{run_id}/resume", resume, methods=["POST"]),
        Route("/api/runs/{run_id}/again", again, methods=["POST"]),
        Route("/api/launch", launch, methods=["POST"]),
    ]
    return [
        Route("/api/runs", runs),
        Route("/api/events", all_stream),
        Route("/api/runs/{run_id}", run),
        Route("/api/runs/{run_id}/journal", run_journal),
        Route("/api/runs/{run_id}/state", run_state),
        Route("/api/runs/{run_id}/graph", run_graph),
        Route("/api/runs/{run_id}/agents", run_agents),
        Route("/api/runs/{run_id}/output", run_output),
        Route("/api/runs/{run_id}/events", run_stream),
        Route("/api/workflows", workflows),
        Route("/api/workflows/{workflow_id}/graph", workflow_picture),
        Route("/api/workflows/{workflow_id}/plan", workflow_effects),
        *server.writable(changing),
    ]
