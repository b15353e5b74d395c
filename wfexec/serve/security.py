"""Who may ask the server what. Every request passes here first (an ASGI middleware), in this order:

1. The Host header must name this server (127.0.0.1:PORT, localhost:PORT, or the --host given): a page of another
   site whose name was made to resolve to 127.0.0.1 (DNS rebinding) gets nothing.
2. `/healthz` and `/static/` answer anyone who got that far: they hold no data.
3. `?token=` on a GET is exchanged for a session cookie (HttpOnly, SameSite=Strict) and a redirect to the same URL
   without it, so the token stays out of the history and of any Referer.
4. Anything else needs that cookie, or the token as `Authorization: Bearer` (scripts, curl).
5. A request that is not GET/HEAD needs an Origin of this server when it carries one, and one at all when it comes
   with the cookie (a browser always sends it on a POST). Its CSRF field is checked where the body is read
   (`posted` below), which every POST route calls.

Every response gets a Content-Security-Policy allowing only this server's own files (no inline script, no
other origin), and no CORS header is ever sent: another origin's script can neither read nor preflight.
"""

from __future__ import annotations

import hmac
import json
import secrets
from typing import Any
from urllib.parse import parse_qsl, urlencode

from wfexec.serve.config import ServeConfig

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
PUBLIC_PREFIXES = ("/static/",)
PUBLIC_PATHS = ("/healthz",)
SAFE_METHODS = ("GET", "HEAD")


class Refused(Exception):
    """A request this server will not serve: its status and why, in words a person can act on."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def cookie_name(config: ServeConfig) -> str:
    # Cookies ignore ports: two servers on one machine must not overwrite each other's session.
    return f"wfexec_session_{config.port}"


class Sessions:
    """The sessions handed out for the token in this process; a restart (a new token) ends them all."""

    def __init__(self) -> None:
        self._ids: set[str] = set()

    def new(self) -> str:
        session = secrets.token_urlsafe(32)
        self._ids.add(session)
        return session

    def valid(self, session: str | None) -> bool:
        if not session:
            return False
        return any(hmac.compare_digest(session, s) for s in self._ids)


def _header(scope: dict, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


def _cookies(scope: dict) -> dict[str, str]:
    found: dict[str, str] = {}
    for key, value in scope.get("headers", ()):
        if key == b"cookie":
            for part in value.decode("latin-1").split(";"):
                name, _, text = part.strip().partition("=")
                found.setdefault(name, text)
    return found


class Guard:
    """The ASGI middleware that applies the rules above to every request."""

    def __init__(self, app, config: ServeConfig, sessions: Sessions):
        self.app = app
        self.config = config
        self.sessions = sessions

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message):
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if not h[0].startswith(b"access-control-")]
                message = {**message, "headers": [*headers, *HEADERS]}
            await send(message)

        try:
            redirect = self._check(scope)
        except Refused as refused:
            await _refuse(scope, with_headers, refused)
            return
        if redirect is not None:
            await with_headers({"type": "http.response.start", "status": 303, "headers": redirect})
            await with_headers({"type": "http.response.body", "body": b""})
            return
        await self.app(scope, receive, with_headers)

    def _check(self, scope) -> list | None:
        """None to go on, or the headers of the redirect that trades the token for a cookie; raises Refused."""
        config = self.config
        host = _header(scope, b"host")
        if host is None or host.lower() not in config.allowed_hosts:
            raise Refused(400, f"this server answers to {', '.join(sorted(config.allowed_hosts))}, not to "
                               f"'{host or ''}'")
        path = scope["path"]
        state = scope.setdefault("state", {})
        if path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES):
            return None
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        token = next((v for k, v in query if k == "token"), None)
        if token is not None and scope["method"] in SAFE_METHODS and not path.startswith("/api/"):
            if not config.token_matches(token):
                raise Refused(401, "this link's token is not the one this server was started with; use the "
                                   "address `wfexec serve` printed")
            fresh = self.sessions.new()
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            cookie = (f"{cookie_name(config)}={fresh}; HttpOnly; SameSite=Strict; Path=/").encode()
            return [(b"location", (path + (f"?{rest}" if rest else "")).encode()), (b"set-cookie", cookie),
                    (b"cache-control", b"no-store")]
        session = _cookies(scope).get(cookie_name(config))
        bearer = _header(scope, b"authorization") or ""
        if self.sessions.valid(session):
            state["auth"], state["session"] = "cookie", session
        elif bearer[:7].lower() == "bearer " and config.token_matches(bearer[7:].strip()):
            state["auth"], state["session"] = "bearer", None
        else:
            raise Refused(401, "not signed in: open the address `wfexec serve` printed (it ends in ?token=…), or "
                               "send the token as `Authorization: Bearer TOKEN`")
        if scope["method"] not in SAFE_METHODS:
            origin = _header(scope, b"origin")
            if origin is not None and origin not in config.allowed_origins:
                raise Refused(403, f"a request from {origin} may not change anything here")
            if origin is None and state["auth"] == "cookie":
                raise Refused(403, "a browser's request that changes something must say where it comes from "
                                   "(Origin)")
        return None


async def _refuse(scope, send, refused: Refused) -> None:
    wants_json = scope["path"].startswith("/api/") or "application/json" in (_header(scope, b"accept") or "")
    if wants_json:
        body = json.dumps({"error": refused.message}).encode()
        kind = b"application/json"
    else:
        from html import escape

        body = (f"<!doctype html><meta charset=utf-8><title>wfexec</title><link rel=stylesheet "
                f"href=/static/style.css><main><h1>{refused.status}</h1><p>{escape(refused.message)}</p></main>"
                ).encode()
        kind = b"text/html; charset=utf-8"
    await send({"type": "http.response.start", "status": refused.status,
                "headers": [(b"content-type", kind), (b"content-length", str(len(body)).encode()),
                            (b"cache-control", b"no-store")]})
    await send({"type": "http.response.body", "body": body})


# The most a POST body may hold: far more than an answer typed or pasted, or a launch's inputs, need.
MAX_BODY_BYTES = 1024 * 1024


async def _capped_body(request) -> bytes:
    """The body, read a chunk at a time, refused (413) as soon as it is larger than MAX_BODY_BYTES: a body is
    never read whole before its size is known to be fit."""
    too_large = Refused(413, f"the body is larger than {MAX_BODY_BYTES:,} bytes, the most a request here may "
                             "carry")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def _not_json(word: str):
    """NaN, Infinity: Python's json reads them, JSON has no such number."""
    raise ValueError(f"{word} is not JSON")


async def _form(request, raw: bytes) -> dict[str, Any]:
    """A form's fields (urlencoded or multipart), parsed from the body already read."""
    from starlette.requests import Request

    async def replay() -> dict[str, Any]:
        return {"type": "http.request", "body": raw, "more_body": False}

    return dict(await Request(request.scope, replay).form())


async def posted(request, config: ServeConfig) -> dict[str, Any]:
    """The body of a POST as a dict (JSON or a form), after its CSRF field is checked: every POST route reads its
    body through here. A browser's request (it came with the session cookie) must carry the field of its
    session, as the form field `csrf` or the header `X-CSRF-Token`; a Bearer request is a script holding the
    token itself, which no other site can forge."""
    kind = request.headers.get("content-type", "")
    raw = await _capped_body(request)
    try:
        if kind.startswith("application/json"):
            data = json.loads(raw or b"{}", parse_constant=_not_json)
            if not isinstance(data, dict):
                raise Refused(400, "the body must be a JSON object")
        else:
            data = await _form(request, raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise Refused(400, "the body is neither JSON nor a form") from None
    if request.scope.get("state", {}).get("auth") == "cookie":
        given = request.headers.get("x-csrf-token") or data.get("csrf") or ""
        expected = config.csrf_for(request.scope["state"]["session"])
        if not isinstance(given, str) or not hmac.compare_digest(given, expected):
            raise Refused(403, "the form's CSRF field is missing or stale; reload the page and try again")
    data.pop("csrf", None)
    return data
