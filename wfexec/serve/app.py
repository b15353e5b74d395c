"""The Starlette application: the routes of `api` and `pages` behind the `security.Guard`."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from wfexec.durable.store import StoreError
from wfexec.serve import api, pages
from wfexec.serve.actions import ActionRefused
from wfexec.serve.config import ServeConfig
from wfexec.serve.cluster_view import ClusterView
from wfexec.serve.views import StoreView
from wfexec.serve.processes import Processes
from wfexec.serve.security import Guard, Refused, Sessions, posted
from wfexec.serve.workflows import Workflows

HERE = Path(__file__).parent


class Server:
    """What the routes share: the config, the runs started, the workflows found, the page templates."""

    def __init__(self, config: ServeConfig):
        import jinja2

        self.config = config
        self.processes = Processes(config.store, config.wfexec_command, config.temporal)
        self.workflows = Workflows(config.roots)
        self.sessions = Sessions()
        self.view = ClusterView(config.temporal) if config.temporal else StoreView(config.store)
        self.templates = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                                            undefined=jinja2.StrictUndefined)
        self.templates.filters["when"] = pages.when
        self.templates.filters["offset"] = pages.offset

    async def posted(self, request: Request) -> dict[str, Any]:
        return await posted(request, self.config)

    async def blocking(self, fn, *args):
        """A call that reads the store or waits for a process, off the event loop."""
        return await anyio.to_thread.run_sync(functools.partial(fn, *args))

    def writable(self, routes: list[Route]) -> list[Route]:
        """The routes that change runs; with --read-only, each refuses (403) instead."""
        if not self.config.read_only:
            return routes

        def refuse(request: Request):
            raise Refused(403, "this server was started with --read-only: it shows runs and changes none")

        return [Route(route.path, refuse, methods=["POST"]) for route in routes]

    def done(self, request: Request, body: dict, data: dict, default_next: str | None = None) -> Response:
        """JSON for a script (or the page's own script); a redirect back for a plain form."""
        if _wants_json(request):
            return JSONResponse(data)
        return RedirectResponse(_local(body.get("next")) or default_next or "/", status_code=303)

    def render(self, request: Request, name: str, status: int = 200, **context) -> HTMLResponse:
        state = request.scope.get("state", {})
        session = state.get("session")
        csrf = self.config.csrf_for(session) if session else ""
        html = self.templates.get_template(name).render(read_only=self.config.read_only, csrf=csrf,
                                                        path=request.url.path, **context)
        return HTMLResponse(html, status_code=status, headers={"cache-control": "no-store"})


def _wants_json(request: Request) -> bool:
    return "application/json" in request.headers.get("accept", "") or \
        request.headers.get("content-type", "").startswith("application/json") or request.url.path.startswith(
            "/api/") and "text/html" not in request.headers.get("accept", "")


def _local(target: Any) -> str | None:
    """A path on this server to go back to, never an address elsewhere (`//evil.example`, `https:`)."""
    if isinstance(target, str) and target.startswith("/") and not target.startswith(("//", "/\\")):
        return target
    return None


def create_app(config: ServeConfig) -> Starlette:
    server = Server(config)

    def failure(request: Request, status: int, data: dict) -> Response:
        if _wants_json(request):
            return JSONResponse(data, status_code=status)
        return server.render(request, "message.html", status=status, title="Not done", message=data["error"],
                             hint=data.get("hint", ""), details=data.get("errors") or [])

    async def refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, Refused)
        return failure(request, exc.status, {"error": exc.message})

    async def action_refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ActionRefused)
        return failure(request, exc.status, exc.to_json())

    async def store_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StoreError)
        status = 404 if exc.message.startswith("no run") else 400
        return failure(request, status, {"error": exc.message, **({"hint": exc.hint} if exc.hint else {})})

    async def not_found(request: Request, exc: Exception) -> Response:
        return failure(request, getattr(exc, "status_code", 404),
                       {"error": getattr(exc, "detail", None) or "nothing here"})

    def healthz(request: Request) -> Response:
        return Response("ok\n", media_type="text/plain")

    routes = [
        Route("/healthz", healthz),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        *api.routes(server),
        *pages.routes(server),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(Guard, config=config, sessions=server.sessions)],
                    exception_handlers={Refused: refused, ActionRefused: action_refused, StoreError: store_error,
                                        404: not_found, 405: not_found})
    app.state.server = server
    return app
