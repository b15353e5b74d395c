"""`wfexec serve` is safe by default: one test per rule of wfexec/serve/security.py, through Starlette's
TestClient against the real app and a real store."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("starlette")

from serve_support import client, config, origin, signed_in, waiting_run, workflows  # noqa: E402


@pytest.fixture
def waiting(tmp_path, private_run_store):
    root = workflows(tmp_path / "workflows")
    return root, waiting_run(root / "greeter")


def test_the_token_is_traded_once_for_an_httponly_strict_cookie_and_leaves_the_address(private_run_store):
    cfg = config(private_run_store)
    with client(cfg) as c:
        traded = c.get(f"/runs/x?token={cfg.token}&keep=1")
        assert traded.status_code == 303
        assert traded.headers["location"] == "/runs/x?keep=1"  # the token is gone from the address
        cookie = traded.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
        assert cfg.token not in cookie  # the cookie is a session of its own, not the token
        assert c.get("/").status_code == 200


def test_without_the_token_nothing_is_shown(private_run_store):
    cfg = config(private_run_store)
    with client(cfg) as c:
        assert c.get("/?token=not-the-token").status_code == 401
        page = c.get("/")
        assert page.status_code == 401 and "?token=" in page.text
        api = c.get("/api/runs")
        assert api.status_code == 401 and "Authorization: Bearer" in api.json()["error"]
        assert c.get("/api/runs", headers={"Authorization": "Bearer nope"}).status_code == 401
        assert c.get("/api/runs", headers={"Authorization": f"Bearer {cfg.token}"}).status_code == 200


def test_another_host_name_is_refused_even_with_the_token(private_run_store):
    """DNS rebinding: a page of evil.example, whose name now resolves to 127.0.0.1, reaches the port."""
    cfg = config(private_run_store)
    bearer = {"Authorization": f"Bearer {cfg.token}"}
    with client(cfg) as c:
        refused = c.get("/api/runs", headers={**bearer, "Host": "evil.example:8765"})
        assert refused.status_code == 400 and "127.0.0.1:8765" in refused.json()["error"]
        assert c.get("/healthz", headers={"Host": "evil.example:8765"}).status_code == 400
        assert c.get("/api/runs", headers={**bearer, "Host": "127.0.0.1:9999"}).status_code == 400
        assert c.get("/api/runs", headers={**bearer, "Host": "localhost:8765"}).status_code == 200


def test_every_post_needs_this_origin_and_the_session_csrf_field(waiting, private_run_store):
    root, run_id = waiting
    cfg = config(private_run_store, roots=[root])
    with client(cfg) as c:
        csrf = signed_in(c, cfg)
        posts = sorted(r.path.replace("{run_id}", run_id) for r in c.app.routes
                       if "POST" in (getattr(r, "methods", None) or ()))
        assert posts == sorted([*(f"/api/runs/{run_id}/{a}" for a in ("answer", "cancel", "resume", "again")),
                               "/api/launch"])
        for path in posts:
            assert c.post(path, data={"answer": "warm"}, headers={"Origin": origin(cfg)}).status_code == 403, path
            assert c.post(path, data={"answer": "warm", "csrf": "0" * 64},
                          headers={"Origin": origin(cfg)}).status_code == 403, path
            assert c.post(path, data={"answer": "warm", "csrf": csrf},
                          headers={"Origin": "http://evil.example"}).status_code == 403, path
            assert c.post(path, data={"answer": "warm", "csrf": csrf}).status_code == 403, path  # no Origin
        shown = c.get(f"/api/runs/{run_id}").json()
        assert shown["status"] == "waiting"  # none of them touched the run
        cancelled = c.post(f"/api/runs/{run_id}/cancel", data={"csrf": csrf},
                           headers={"Origin": origin(cfg), "Accept": "application/json"})
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"


def test_a_script_with_the_token_needs_no_cookie_nor_csrf_but_a_foreign_origin_is_refused(waiting,
                                                                                           private_run_store):
    root, run_id = waiting
    cfg = config(private_run_store)
    bearer = {"Authorization": f"Bearer {cfg.token}"}
    with client(cfg) as c:
        refused = c.post(f"/api/runs/{run_id}/cancel", json={}, headers={**bearer, "Origin": "http://evil.example"})
        assert refused.status_code == 403
        assert c.post(f"/api/runs/{run_id}/cancel", json={}, headers=bearer).json()["status"] == "cancelled"


def test_no_cors_header_is_ever_sent(private_run_store):
    cfg = config(private_run_store)
    with client(cfg) as c:
        preflight = c.options("/api/runs", headers={"Origin": "http://evil.example",
                                                    "Access-Control-Request-Method": "POST",
                                                    "Authorization": f"Bearer {cfg.token}"})
        assert preflight.status_code >= 400
        read = c.get("/api/runs", headers={"Origin": "http://evil.example", "Authorization": f"Bearer {cfg.token}"})
        for answer in (preflight, read, c.get("/healthz")):
            assert not [h for h in answer.headers if h.lower().startswith("access-control-")]


def test_every_page_has_a_strict_csp_and_no_inline_script_or_style(waiting, private_run_store):
    from wfexec.serve.security import CSP

    root, run_id = waiting
    cfg = config(private_run_store, roots=[root])
    with client(cfg) as c:
        signed_in(c, cfg)
        workflow_id = c.get("/api/workflows").json()["workflows"][0]["id"]
        for path in ("/", "/runs", f"/runs/{run_id}", "/workflows", f"/workflows/{workflow_id}", "/nowhere"):
            page = c.get(path)
            assert page.headers["content-security-policy"] == CSP, path
            assert page.headers["x-frame-options"] == "DENY" and page.headers["referrer-policy"] == "no-referrer"
            html = page.text
            assert all('src="/static/' in tag for tag in re.findall(r"<script[^>]*>", html)), path
            assert not re.search(r"\son\w+\s*=", html) and " style=" not in html and "<style" not in html, path
            assert "http://" not in html.replace(cfg.token, "") or path == "/nowhere", path  # nothing from elsewhere
    assert "script-src 'self'" in CSP and "'unsafe-inline'" not in CSP and "default-src 'none'" in CSP


def test_read_only_hides_and_refuses_every_change(waiting, private_run_store):
    root, run_id = waiting
    cfg = config(private_run_store, roots=[root], read_only=True)
    with client(cfg) as c:
        csrf = signed_in(c, cfg)
        for path in ("/", f"/runs/{run_id}"):
            html = c.get(path).text
            assert "Greet world how?" in html and "<form" not in html and "<button" not in html, path
        workflow_id = c.get("/api/workflows").json()["workflows"][0]["id"]
        assert "<form" not in c.get(f"/workflows/{workflow_id}").text
        headers = {"Origin": origin(cfg), "Accept": "application/json"}
        for path, data in ((f"/api/runs/{run_id}/answer", {"answer": "warm"}), (f"/api/runs/{run_id}/cancel", {}),
                           (f"/api/runs/{run_id}/resume", {}), (f"/api/runs/{run_id}/again", {}),
                           ("/api/launch", {"workflow": workflow_id})):
            refused = c.post(path, data={**data, "csrf": csrf}, headers=headers)
            assert refused.status_code == 403 and "--read-only" in refused.json()["error"], path
        assert c.get(f"/api/runs/{run_id}").json()["status"] == "waiting"


def test_healthz_needs_no_token_and_says_nothing(waiting, private_run_store):
    cfg = config(private_run_store)
    with client(cfg) as c:
        answer = c.get("/healthz")
        assert answer.status_code == 200 and answer.text == "ok\n" and "set-cookie" not in answer.headers


def test_a_form_post_that_goes_elsewhere_is_kept_on_this_server(waiting, private_run_store):
    """A plain form comes back to its `next` page: only a path of this server, never another site."""
    root, run_id = waiting
    cfg = config(private_run_store)
    with client(cfg) as c:
        csrf = signed_in(c, cfg)
        back = c.post(f"/api/runs/{run_id}/cancel", data={"csrf": csrf, "next": "//evil.example/x"},
                      headers={"Origin": origin(cfg), "Accept": "text/html"})
        assert back.status_code == 303 and back.headers["location"] == "/"


def test_a_body_larger_than_the_cap_is_refused_before_it_is_read_whole(waiting, private_run_store):
    from wfexec.serve.security import MAX_BODY_BYTES

    root, run_id = waiting
    cfg = config(private_run_store, roots=[root])
    bearer = {"Authorization": f"Bearer {cfg.token}", "Content-Type": "application/json"}
    big = b'{"answer": "' + b"x" * MAX_BODY_BYTES + b'"}'
    with client(cfg) as c:
        for sent in (big, iter([big])):  # with its Content-Length, and without one (chunked)
            refused = c.post(f"/api/runs/{run_id}/answer", content=sent, headers=bearer)
            assert refused.status_code == 413 and f"{MAX_BODY_BYTES:,} bytes" in refused.json()["error"]
        form = c.post(f"/api/runs/{run_id}/answer", data={"answer": "x" * MAX_BODY_BYTES},
                      headers={"Authorization": f"Bearer {cfg.token}", "Accept": "application/json"})
        assert form.status_code == 413
        deep = c.post(f"/api/runs/{run_id}/answer", content=b"[" * 200_000 + b"]" * 200_000, headers=bearer)
        assert deep.status_code == 400 and "neither JSON nor a form" in deep.json()["error"]
        assert c.get(f"/api/runs/{run_id}", headers=bearer).json()["status"] == "waiting"
        # Under the cap a long answer is read as it was: here refused by the question's own check (no such option).
        long = c.post(f"/api/runs/{run_id}/answer", json={"answer": "y" * (MAX_BODY_BYTES // 2)}, headers=bearer)
        assert long.status_code == 422 and "is not an option" in long.json()["error"]
        assert c.post(f"/api/runs/{run_id}/answer", data={"answer": "warm"},
                      headers={"Authorization": f"Bearer {cfg.token}", "Accept": "application/json"}
                      ).status_code == 200  # a form's fields still read


def test_a_body_is_read_no_further_than_the_cap(waiting, private_run_store):
    """Straight through ASGI, as a server hands the body over: 64 KiB at a time, of a 16 MiB body sent without a
    Content-Length; the app stops asking for more once it has passed the cap."""
    import anyio

    from wfexec.serve.app import create_app
    from wfexec.serve.security import MAX_BODY_BYTES

    root, run_id = waiting
    cfg = config(private_run_store, roots=[root])
    app = create_app(cfg)
    chunk = 64 * 1024
    asked: list[int] = []
    said: list[dict] = []

    async def receive():
        asked.append(1)
        return {"type": "http.request", "body": b"x" * chunk, "more_body": len(asked) < 256}

    async def send(message):
        said.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": f"/api/runs/{run_id}/answer", "raw_path": b"", "root_path": "", "query_string": b"",
             "server": ("127.0.0.1", cfg.port), "client": ("127.0.0.1", 50000),
             "headers": [(b"host", f"127.0.0.1:{cfg.port}".encode()), (b"content-type", b"application/json"),
                         (b"authorization", f"Bearer {cfg.token}".encode())]}
    anyio.run(app, scope, receive, send)
    assert said[0]["status"] == 413
    assert len(asked) <= MAX_BODY_BYTES // chunk + 1
