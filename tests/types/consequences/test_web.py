"""web consequences against a real HTTP server on 127.0.0.1 (no other network)."""

from __future__ import annotations

import json
import socket
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import FakeBackend, wfexec_cli
from wfexec.types.registry import consequences

WORKFLOW = """\
name: web-test
version: "1.0"
start_node: act
initial_state:
  base: BASE
nodes:
  act:
    type: action
    actions:
ACTIONS
    on_success: done
    on_failure: failed
endings:
  done:
    type: success
    message: ok
  failed:
    type: failure
    message: "${computed.last_error}"
"""

BIG = 10 * 1024 * 1024 + 1
# A documentation page as sites serve them: most of its bytes are not its text.
DOCS_PAGE = """<!doctype html><html><head><title>Guide</title><style>body { color: #333 }</style>
<script>window.analytics = {track: function () {}};</script></head>
<body><nav><a href="/docs/">All docs</a> <a href="#main">skip</a></nav>
<main id="main"><h2>Install &amp; run</h2>
<p>Run   the
  installer, then read the <a href="config.html">configuration</a> page.</p>
<ul><li>fast</li><li>small</li></ul>
<pre>pip install thing
  thing --help</pre>
<p>Call <code>thing()</code> once.</p></main><script>track("view")</script></body></html>"""


def workflow(actions: str, base: str = "http://127.0.0.1:1") -> str:
    text = WORKFLOW.replace("ACTIONS", textwrap.indent(textwrap.dedent(actions).strip(), " " * 6))
    return text.replace("BASE", base)


class Site(BaseHTTPRequestHandler):
    ROUTES = {
        "/page": (200, "text/html; charset=utf-8", "<h1>Hello ✓</h1>".encode()),
        "/docs/guide.html": (200, "text/html; charset=utf-8", DOCS_PAGE.encode()),
        "/long.html": (200, "text/html", b"<p>words and <b>more</b> words</p><script>x()</script>\n" * 60_000),
        "/latin1": (200, "text/plain; charset=iso-8859-1", "café crème".encode("latin-1")),
        "/no-charset": (200, "text/plain", "naïve".encode()),
        "/odd-charset": (200, "text/plain; charset=x-no-such-charset", "plain".encode()),
        "/missing": (404, "text/plain; charset=utf-8", b"no such page"),
        "/broken": (500, "text/plain; charset=utf-8", b"server fell over"),
        "/long": (200, "text/plain; charset=utf-8", b"x" * 300_000),
    }

    def do_GET(self):
        if self.path in self.ROUTES:
            status, content_type, body = self.ROUTES[self.path]
            self.answer(status, body, content_type)
        elif self.path == "/slow":
            self.server.stop.wait(5)
            self.answer(200, b"late")
        elif self.path == "/trickle":
            self.send_response(200)
            self.send_header("Content-Length", "40")
            self.end_headers()
            for _ in range(40):  # each byte comes well within the timeout; the whole body does not
                self.wfile.write(b"x")
                self.wfile.flush()
                if self.server.stop.wait(0.1):
                    break
        elif self.path == "/agent":
            self.answer(200, self.headers.get("User-Agent", "").encode())
        elif self.path == "/to-page":
            self.redirect("/page")
        elif self.path == "/to-file":
            self.redirect("file:///etc/passwd")
        elif self.path == "/to-ftp":
            self.redirect("ftp://127.0.0.1/file")
        elif self.path == "/big":
            self.send_response(200)
            self.send_header("Content-Length", str(BIG))
            self.end_headers()
            block = b"x" * (1024 * 1024)
            for _ in range(BIG // len(block)):
                self.wfile.write(block)
            self.wfile.write(b"x" * (BIG % len(block)))
        else:
            self.answer(404, b"unknown route")

    def answer(self, status: int, body: bytes, content_type: str = "text/plain; charset=utf-8"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def redirect(self, location: str):
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def site():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    server.stop = threading.Event()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.stop.set()
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture
def closed_port():
    """A local port with nothing listening on it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fetch_yaml(path: str, *extra: str) -> str:
    lines = ["- type: web_fetch", f'  url: "${{base}}{path}"', "  store_as: computed.page", *extra]
    return "\n".join(lines)


# -- web_fetch -------------------------------------------------------------------

def test_web_fetch_stores_status_content_url_and_headers(run_yaml, site):
    result, _ = run_yaml(workflow(fetch_yaml("/page"), site))
    assert result.type == "success", result.message
    page = result.state["computed"]["page"]
    assert page["status"] == 200
    assert page["content"] == "<h1>Hello ✓</h1>"
    assert page["url"] == f"{site}/page"
    assert page["headers"]["content-type"] == "text/html; charset=utf-8"


def test_web_fetch_with_a_prompt_stores_what_the_llm_took_from_the_page(run_yaml, site):
    backend = FakeBackend("# Hello")
    result, _ = run_yaml(workflow(fetch_yaml("/page", '  prompt: "Extract the main article content as markdown"'),
                                  site), backend=backend)
    assert result.type == "success", result.message
    page = result.state["computed"]["page"]
    assert (page["status"], page["content"], page["url"]) == (200, "# Hello", f"{site}/page")
    [prompt] = backend.prompts
    assert prompt.startswith("Extract the main article content as markdown\n")
    assert f"fetched from {site}/page (HTTP 200, text/html; charset=utf-8). Its HTML is given as markdown." in prompt
    assert prompt.endswith("<page>\n# Hello ✓\n</page>\n")


def test_an_html_page_goes_to_the_llm_as_markdown_and_without_prompt_stays_as_served(run_yaml, site):
    """As Claude's WebFetch gives its model a page: the text, headings, list items, code and links (made absolute,
    so a crawl can follow them), not the scripts, styles and markup that fill most of a documentation page."""
    backend = FakeBackend("the install steps")
    result, _ = run_yaml(workflow(fetch_yaml("/docs/guide.html", '  prompt: "List the install steps"'), site),
                         backend=backend)
    assert result.type == "success", result.message
    [prompt] = backend.prompts
    page = prompt.split("<page>\n", 1)[1].removesuffix("\n</page>\n")
    assert page == (f"[All docs]({site}/docs/) skip\n\n## Install & run\n\n"
                    f"Run the installer, then read the [configuration]({site}/docs/config.html) page.\n\n"
                    "- fast\n- small\n\n```\npip install thing\n  thing --help\n```\n\nCall `thing()` once.")
    assert result.state["computed"]["page"]["content"] == "the install steps"
    raw, _ = run_yaml(workflow(fetch_yaml("/docs/guide.html"), site))
    assert raw.state["computed"]["page"]["content"] == DOCS_PAGE  # no prompt: the page as served


def summarised(run_yaml, site, path: str) -> tuple[str, str]:
    """(the prompt the LLM backend was given for a web_fetch of `path` with a prompt, the page inside it), after
    checking the run stored the backend's reply."""
    backend = FakeBackend("the gist")
    result, _ = run_yaml(workflow(fetch_yaml(path, '  prompt: "Summarise it"'), site), backend=backend)
    assert result.type == "success", result.message
    assert result.state["computed"]["page"]["content"] == "the gist"
    [prompt] = backend.prompts
    return prompt, prompt.split("<page>\n", 1)[1].removesuffix("\n</page>\n")


def test_a_long_page_goes_to_the_llm_cut_to_what_a_model_reads_and_says_so(run_yaml, site):
    from wfexec.types.consequences.web import PROMPT_PAGE_CHARS

    prompt, page = summarised(run_yaml, site, "/long")
    assert page == "x" * PROMPT_PAGE_CHARS
    assert f"Only its first {PROMPT_PAGE_CHARS:,} characters of 300,000 are given." in prompt


def test_a_long_html_page_is_read_only_as_far_as_the_text_a_model_is_given(run_yaml, site):
    from wfexec.types.consequences.web import PROMPT_PAGE_CHARS

    prompt, page = summarised(run_yaml, site, "/long.html")
    assert len(page) == PROMPT_PAGE_CHARS and page.startswith("words and more words\n\nwords and more words")
    assert "<script>" not in page and "x()" not in page
    # The page's whole text was not made, so its length is not claimed.
    assert f"Its HTML is given as markdown. Only its first {PROMPT_PAGE_CHARS:,} characters are given." in prompt


def test_markup_without_text_does_not_stop_the_reading_before_the_text_a_model_is_given():
    """Empty elements make line breaks that the text then drops: a page of them followed by its text still gives
    the model its text, not a cut-off nothing."""
    from wfexec.types.consequences.page_text import page_text

    html = "<div></div>" * 20_000 + "<p>the article</p>"
    assert page_text(html, "https://example.org/", most=1_000) == "the article"


def test_web_fetch_with_a_prompt_and_no_backend_stops_the_run_as_every_judgement_step_does(write_workflow, site,
                                                                                            tmp_path):
    path = write_workflow(workflow(fetch_yaml("/page", '  prompt: "Extract the main content"'), site))
    done = wfexec_cli("run", path, "--non-interactive", cwd=tmp_path)
    assert done.returncode == 4, done.stdout + done.stderr
    assert f"web_fetch ({site}/page) needs an LLM backend, and none is configured" in done.stderr
    assert "resume it with --backend" in done.stderr and "Traceback" not in done.stderr


def test_web_fetch_keeps_an_error_response_as_it_came_without_asking_the_llm(run_yaml, site):
    backend = FakeBackend()
    result, _ = run_yaml(workflow(fetch_yaml("/missing", "  allow_failure: true", '  prompt: "Extract it"'), site),
                         backend=backend)
    assert result.type == "success", result.message
    assert result.state["computed"]["page"]["content"] == "no such page"
    assert backend.prompts == []


def test_a_web_fetch_with_a_prompt_is_counted_as_going_to_the_llm(write_workflow):
    counted = {}
    for prompt in ((), ('  prompt: "Extract it"',)):
        checked = wfexec_cli("validate", "--format", "json", write_workflow(workflow(fetch_yaml("/page", *prompt))))
        counted[bool(prompt)] = json.loads(checked.stdout)["files"][0]["summary"]["text"]
    assert counted == {False: "1 node: 1 run as code, 0 ask a person, 0 go to the LLM",
                       True: "1 node: 0 run as code, 0 ask a person, 1 go to the LLM"}


def test_web_fetch_sends_a_wfexec_user_agent(run_yaml, site):
    result, _ = run_yaml(workflow(fetch_yaml("/agent"), site))
    assert result.state["computed"]["page"]["content"].startswith("wfexec")


@pytest.mark.parametrize("path, text", [
    ("/latin1", "café crème"),
    ("/no-charset", "naïve"),          # utf-8 when the server names no charset
    ("/odd-charset", "plain"),         # utf-8 when Python does not know the charset
])
def test_web_fetch_decodes_with_the_response_charset(run_yaml, site, path, text):
    result, _ = run_yaml(workflow(fetch_yaml(path), site))
    assert result.type == "success", result.message
    assert result.state["computed"]["page"]["content"] == text


def test_web_fetch_follows_http_redirects_and_keeps_the_requested_url(run_yaml, site):
    result, _ = run_yaml(workflow(fetch_yaml("/to-page"), site))
    assert result.type == "success", result.message
    page = result.state["computed"]["page"]
    assert page["content"] == "<h1>Hello ✓</h1>"
    assert page["url"] == f"{site}/to-page"


@pytest.mark.parametrize("path, status", [("/missing", 404), ("/broken", 500)])
def test_web_fetch_http_error_fails_the_action(run_yaml, site, path, status):
    result, _ = run_yaml(workflow(fetch_yaml(path), site))
    assert result.type == "failure"
    assert result.state["computed"]["last_error"] == f"web_fetch failed: {site}{path} answered HTTP {status}"
    assert "page" not in result.state["computed"]


def test_web_fetch_http_error_is_data_with_allow_failure(run_yaml, site):
    result, _ = run_yaml(workflow(fetch_yaml("/missing", "  allow_failure: true"), site))
    assert result.type == "success", result.message
    page = result.state["computed"]["page"]
    assert (page["status"], page["content"], page["url"]) == (404, "no such page", f"{site}/missing")


def test_web_fetch_times_out(run_yaml, site):
    started = time.monotonic()
    result, _ = run_yaml(workflow(fetch_yaml("/slow", "  timeout: 0.5"), site))
    assert result.type == "failure"
    assert f"{site}/slow did not answer within 0.5 s" in result.message
    assert time.monotonic() - started < 4


def test_web_fetch_timeout_bounds_the_whole_download(run_yaml, site):
    started = time.monotonic()
    result, _ = run_yaml(workflow(fetch_yaml("/trickle", "  timeout: 1"), site))
    assert result.type == "failure"
    assert f"{site}/trickle did not finish sending within 1 s" in result.message
    assert time.monotonic() - started < 3


def test_web_fetch_timeout_with_allow_failure_stores_status_zero(run_yaml, site):
    result, _ = run_yaml(workflow(fetch_yaml("/slow", "  timeout: 0.5", "  allow_failure: true"), site))
    assert result.type == "success", result.message
    page = result.state["computed"]["page"]
    assert page["status"] == 0 and page["content"] == ""
    assert "did not answer" in page["error"]


def test_web_fetch_connection_refused(run_yaml, closed_port):
    base = f"http://127.0.0.1:{closed_port}"
    result, _ = run_yaml(workflow(fetch_yaml("/page"), base))
    assert result.type == "failure"
    assert f"could not reach {base}/page" in result.message

    result, _ = run_yaml(workflow(fetch_yaml("/page", "  allow_failure: true"), base))
    assert result.type == "success"
    assert result.state["computed"]["page"]["status"] == 0
    assert "could not reach" in result.state["computed"]["page"]["error"]


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://127.0.0.1/x", "not a url"])
def test_web_fetch_refuses_other_schemes(run_yaml, url):
    result, _ = run_yaml(workflow(f"""
        - type: web_fetch
          url: "{url}"
          store_as: computed.page
          allow_failure: true
    """))
    assert result.type == "failure"
    assert "only http and https URLs can be fetched" in result.message
    assert "page" not in result.state["computed"]


@pytest.mark.parametrize("path, target", [("/to-file", "file:///etc/passwd"), ("/to-ftp", "ftp://127.0.0.1/file")])
def test_web_fetch_refuses_a_redirect_off_the_web(run_yaml, site, path, target):
    result, _ = run_yaml(workflow(fetch_yaml(path, "  allow_failure: true"), site))
    assert result.type == "success", result.message
    page = result.state["computed"]["page"]
    assert page["status"] == 0
    assert page["error"] == f"{site}{path} redirects to {target}, which is not an http(s) URL"

    result, _ = run_yaml(workflow(fetch_yaml(path), site))
    assert result.type == "failure"
    assert f"redirects to {target}, which is not an http(s) URL" in result.message


def test_web_fetch_caps_the_body_at_10_mb(run_yaml, site):
    result, _ = run_yaml(workflow(fetch_yaml("/big"), site))
    assert result.type == "failure"
    assert "sent more than 10 MB" in result.message


# -- cache_web_content ------------------------------------------------------------

def test_cache_web_content_writes_the_content_and_stores_the_path(run_yaml, site, tmp_path):
    result, _ = run_yaml(workflow(fetch_yaml("/page") + """
- type: cache_web_content
  from: computed.page
  dest: .cache/web/page.html
  store_path_as: computed.cached""", site))
    assert result.type == "success", result.message
    assert (tmp_path / ".cache" / "web" / "page.html").read_text(encoding="utf-8") == "<h1>Hello ✓</h1>"
    assert result.state["computed"]["cached"] == ".cache/web/page.html"
    assert not [p for p in (tmp_path / ".cache" / "web").iterdir() if p.name.endswith(".tmp")]


def test_cache_web_content_replaces_an_existing_file(run_yaml, tmp_path):
    (tmp_path / "out.md").write_text("old")
    result, _ = run_yaml(workflow("""
        - {type: set_state, field: computed.page, value: {status: 200, content: "new", url: "x"}}
        - {type: cache_web_content, from: computed.page, dest: out.md}
    """))
    assert result.type == "success", result.message
    assert (tmp_path / "out.md").read_text() == "new"


@pytest.mark.parametrize("setup, expected", [
    ("", "nothing at `computed.page` to cache"),
    ('- {type: set_state, field: computed.page, value: {status: 404}}', "has no `content`"),
    ('- {type: set_state, field: computed.page, value: {content: [1, 2]}}', "has list content, not text"),
])
def test_cache_web_content_needs_a_fetch_result(run_yaml, tmp_path, setup, expected):
    result, _ = run_yaml(workflow(setup + "\n- {type: cache_web_content, from: computed.page, dest: out.md}"))
    assert result.type == "failure"
    assert expected in result.state["computed"]["last_error"]
    assert not (tmp_path / "out.md").exists()


CONTENT = '- {type: set_state, field: computed.page, value: {status: 200, content: "secret", url: "x"}}\n'


def test_cache_web_content_refuses_to_leave_the_working_directory(run_yaml, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    result, _ = run_yaml(workflow(CONTENT + "- {type: cache_web_content, from: computed.page, dest: ../escaped.md}"),
                         cwd=work)
    assert result.type == "failure"
    assert "refusing to write '../escaped.md'" in result.message
    assert not (tmp_path / "escaped.md").exists()


def test_cache_web_content_refuses_an_absolute_path_made_by_a_template(run_yaml, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    result, _ = run_yaml(workflow(CONTENT + f"""
- {{type: set_state, field: computed.dir, value: "{tmp_path}"}}
- {{type: cache_web_content, from: computed.page, dest: "${{computed.dir}}/escaped.md"}}"""), cwd=work)
    assert result.type == "failure"
    assert "outside the working directory" in result.message
    assert not (tmp_path / "escaped.md").exists()


def test_cache_web_content_refuses_a_symlink_out_of_the_working_directory(run_yaml, tmp_path):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (work / "link").symlink_to(outside, target_is_directory=True)
    result, _ = run_yaml(workflow(CONTENT + "- {type: cache_web_content, from: computed.page, dest: link/x.md}"),
                         cwd=work)
    assert result.type == "failure"
    assert "outside the working directory" in result.message
    assert not (outside / "x.md").exists()


def test_cache_web_content_writes_through_a_symlink_inside(run_yaml, tmp_path):
    (tmp_path / "real.md").write_text("old")
    (tmp_path / "link.md").symlink_to(tmp_path / "real.md")
    result, _ = run_yaml(workflow(CONTENT + "- {type: cache_web_content, from: computed.page, dest: link.md}"))
    assert result.type == "success", result.message
    assert (tmp_path / "link.md").is_symlink()
    assert (tmp_path / "real.md").read_text() == "secret"


def test_cache_web_content_accepts_an_absolute_path_written_in_the_workflow(run_yaml, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    target = tmp_path / "shared" / "page.md"
    result, _ = run_yaml(workflow(CONTENT + f'- {{type: cache_web_content, from: computed.page, dest: "{target}"}}'),
                         cwd=work)
    assert result.type == "success", result.message
    assert target.read_text() == "secret"


def test_cache_web_content_reports_an_unwritable_destination(run_yaml, tmp_path):
    (tmp_path / "folder").mkdir()
    result, _ = run_yaml(workflow(CONTENT + "- {type: cache_web_content, from: computed.page, dest: folder}"))
    assert result.type == "failure"
    assert "could not write 'folder'" in result.message


# -- web_ops ------------------------------------------------------------------------

def test_web_ops_fetch_then_cache(run_yaml, site, tmp_path):
    backend = FakeBackend("crème")
    result, _ = run_yaml(workflow("""
        - type: web_ops
          operation: fetch
          url: "${base}/latin1"
          prompt: "Extract the main content"
          store_as: computed.page
        - type: web_ops
          operation: cache
          from: computed.page
          dest: cache/latin1.txt
          store_as: computed.cached
    """, site), backend=backend)
    assert result.type == "success", result.message
    assert result.state["computed"]["page"]["status"] == 200
    assert "<page>\ncafé crème\n</page>" in backend.prompts[0]
    # What the model took from the page is what is cached, as the add-source workflows mean it.
    assert (tmp_path / "cache" / "latin1.txt").read_text(encoding="utf-8") == "crème"
    assert result.state["computed"]["cached"] == "cache/latin1.txt"


def test_web_ops_fetch_allow_failure_and_failure(run_yaml, site):
    result, _ = run_yaml(workflow("""
        - {type: web_ops, operation: fetch, url: "${base}/missing", store_as: computed.page, allow_failure: true}
    """, site))
    assert result.type == "success", result.message
    assert result.state["computed"]["page"]["status"] == 404

    result, _ = run_yaml(workflow("""
        - {type: web_ops, operation: fetch, url: "${base}/missing", store_as: computed.page}
    """, site))
    assert result.type == "failure"
    assert "answered HTTP 404" in result.state["computed"]["last_error"]


@pytest.mark.parametrize("action, expected", [
    ("{type: web_ops, operation: fetch, store_as: computed.page}", "web_ops fetch needs `url`"),
    ('{type: web_ops, operation: fetch, url: "http://127.0.0.1:1/"}', "web_ops fetch needs `store_as`"),
    ("{type: web_ops, operation: cache, dest: out.md}", "web_ops cache needs `from`"),
    ("{type: web_ops, operation: cache, from: computed.page}", "web_ops cache needs `dest`"),
])
def test_web_ops_missing_parameters(run_yaml, action, expected):
    result, _ = run_yaml(workflow(f"- {action}"))
    assert result.type == "failure"
    assert result.state["computed"]["last_error"] == f"web_ops failed: {expected}"


def test_web_types_declare_their_effects():
    registry = consequences()
    declared = {name: (set(registry.get(name).effects), registry.get(name).idempotent)
                for name in ("web_fetch", "cache_web_content", "web_ops")}
    assert declared == {
        "web_fetch": ({"network"}, False),
        "cache_web_content": ({"files"}, True),
        "web_ops": ({"network", "files"}, False),
    }
