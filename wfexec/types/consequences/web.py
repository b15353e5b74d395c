"""Consequences that fetch web pages and keep them (seed names and v3 `web_ops`).

Fetching uses the standard library only (urllib), http and https only, with a
`timeout` (default 30 s) and a 10 MB cap on the body.
"""

from __future__ import annotations

import time
from functools import lru_cache
from urllib.parse import urljoin, urlparse

from wfexec.language.expressions import to_text
from wfexec.types.consequences.page_text import is_html, page_text
from wfexec.version import __version__
from wfexec.system.files import guarded_path, write_atomic
from wfexec.types.registry import ActionFailed, TypeList

TYPES = TypeList()

DEFAULT_TIMEOUT = 30
MAX_BYTES = 10 * 1024 * 1024
USER_AGENT = f"wfexec/{__version__}"
ALLOWED_SCHEMES = ("http", "https")

URL = {"type": "string", "description": "an http or https URL"}
STORE_AS = {"type": "string", "description": "the state path for {status, content, url, headers}, e.g. computed.page"}
ALLOW_FAILURE = {"type": "boolean", "description": "keep HTTP errors (and network errors, as status 0) as data "
                                                   "instead of failing"}
PROMPT = {"type": "string", "description": "what to take from the page: the page and this go to the LLM, whose reply "
                                           "is stored as `content` (a judgement step, as in the WebFetch tool)"}
TIMEOUT = {"type": "number", "exclusiveMinimum": 0, "description": f"seconds to wait (default {DEFAULT_TIMEOUT})"}
FROM = {"type": "string", "description": "the state path of a web_fetch result (or of a text)"}
DEST = {"type": "string", "description": "the file to write, relative to the working directory"}
STORE_PATH_AS = {"type": "string", "description": "the state path to store `dest` at"}


class _FetchError(Exception):
    """No usable HTTP response: refused, unreachable, timed out, too large."""


# -- fetching -------------------------------------------------------------------

@lru_cache(maxsize=None)
def _opener():
    """urllib's opener, built on the first fetch: urllib.request costs more to import than a cached run."""
    import urllib.request

    class HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
        # urllib follows redirects to ftp:// and answers one to file:// with a 302 "response";
        # a page must not lead the fetch off the web, and that must read as a refusal.
        def http_error_302(self, req, fp, code, msg, headers):
            location = headers.get("location") or headers.get("uri")
            if location:
                target = urljoin(req.full_url, location)
                if urlparse(target).scheme.lower() not in ALLOWED_SCHEMES:
                    fp.close()
                    raise _FetchError(f"{req.full_url} redirects to {target}, which is not an http(s) URL")
            return super().http_error_302(req, fp, code, msg, headers)

        http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302

    return urllib.request.build_opener(HttpOnlyRedirects)


def _check_url(url: str) -> None:
    scheme = urlparse(url).scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        raise ActionFailed(f"only http and https URLs can be fetched, not '{url}'",
                           "read local files with read_file" if scheme == "file" else "")


def _read_body(response, url: str, timeout: float, deadline: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        # read1: what has arrived so far, so that a trickling body still meets the deadline below.
        chunk = response.read1(64 * 1024)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_BYTES:
            raise _FetchError(f"{url} sent more than {MAX_BYTES // (1024 * 1024)} MB; wfexec keeps at most that")
        if time.monotonic() > deadline:
            # The socket timeout bounds each wait; this bounds a body that trickles in.
            raise _FetchError(f"{url} did not finish sending within {timeout:g} s")
        chunks.append(chunk)


def _decode(body: bytes, headers) -> str:
    charset = headers.get_content_charset() or "utf-8"
    try:
        return body.decode(charset, errors="replace")
    except LookupError:  # a charset Python does not know
        return body.decode("utf-8", errors="replace")


def _header_map(headers) -> dict:
    merged: dict[str, str] = {}
    for name, value in headers.items():
        key = name.lower()
        merged[key] = f"{merged[key]}, {value}" if key in merged else value
    return merged


def _response_data(response, status: int, url: str, timeout: float, deadline: float) -> dict:
    body = _read_body(response, url, timeout, deadline)
    return {"status": status, "content": _decode(body, response.headers), "url": url,
            "headers": _header_map(response.headers)}


def fetch(url: str, timeout: float) -> dict:
    """GET `url`: {status, content, url, headers}, whatever the status; _FetchError without a response."""
    import socket
    import urllib.error
    import urllib.request
    from http.client import HTTPException

    _check_url(url)
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    deadline = time.monotonic() + timeout
    try:
        try:
            with _opener().open(request, timeout=timeout) as response:
                return _response_data(response, response.status, url, timeout, deadline)
        except urllib.error.HTTPError as error:  # an answer all the same: 4xx, 5xx
            with error:
                return _response_data(error, error.code, url, timeout, deadline)
    except _FetchError:
        raise
    except (TimeoutError, socket.timeout):
        raise _FetchError(f"{url} did not answer within {timeout:g} s") from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, (TimeoutError, socket.timeout)):
            raise _FetchError(f"{url} did not answer within {timeout:g} s") from None
        raise _FetchError(f"could not reach {url}: {exc.reason}") from None
    except (HTTPException, OSError, ValueError) as exc:
        raise _FetchError(f"could not fetch {url}: {str(exc) or type(exc).__name__}") from None


@TYPES.consequence("web_fetch", {"url": URL, "store_as": STORE_AS, "allow_failure": ALLOW_FAILURE, "prompt": PROMPT,
                                 "timeout": TIMEOUT},
                   ["url", "store_as"], paths=("store_as",), effects=("network",), idempotent=False,
                   asks_llm_with=("prompt",))
def web_fetch(params, ctx):
    """GET `url` and store {status, content, url, headers}; status >= 400 fails unless allow_failure. With `prompt`,
    `content` is the LLM's reply to the prompt about the page.

    hiivmind's web_fetch is Claude's WebFetch tool: `result = WebFetch(url, prompt)`, whose content is what the
    model took from the page as the prompt asked. So the prompt and the page go to the LLM backend like any
    judgement step (no backend: the run stops, exit 4); an HTML page goes as markdown, as WebFetch gives it to its
    model (`page_text`), while `content` without a prompt stays the page as served. An error response kept by
    allow_failure is not sent: it is not the page the prompt asks about, and the workflow routes on its status.
    """
    url, allow_failure = params["url"], bool(params.get("allow_failure", False))
    try:
        result = fetch(url, params.get("timeout", DEFAULT_TIMEOUT))
    except _FetchError as exc:
        if not allow_failure:
            raise ActionFailed(str(exc), "check the URL and the network, or set allow_failure: true") from None
        result = {"status": 0, "content": "", "url": url, "headers": {}, "error": str(exc)}
    ctx.trace(f"  GET {url} → {result['status']} ({len(result['content'])} characters)")
    if result["status"] >= 400 and not allow_failure:
        raise ActionFailed(f"{url} answered HTTP {result['status']}",
                           "set allow_failure: true to keep error responses as data")
    prompt = params.get("prompt")
    if prompt and "error" not in result and result["status"] < 400:
        result["content"] = ctx.judge(_extraction_prompt(to_text(prompt), result), f"web_fetch ({url})")
    ctx.set(params["store_as"], result)


# What of a page goes to the model with a web_fetch prompt, as Claude's WebFetch tool cuts a long page: a page may
# be 10 MB (MAX_BYTES), far past what a model reads at once, and a backend would fail on the whole of it.
PROMPT_PAGE_CHARS = 100_000


def _extraction_prompt(prompt: str, page: dict) -> str:
    # The page is data, not instructions: fenced off after the request, so text in it reads as part of the page.
    content = page["content"]
    content_type = page["headers"].get("content-type")
    given_as = ""
    if is_html(content_type):
        # As WebFetch gives its model the page: markdown, not markup (which would fill the budget below). Read only
        # as far as the budget: past it, how long the page's whole text is stays unknown.
        content, given_as = page_text(content, page["url"], most=PROMPT_PAGE_CHARS), " Its HTML is given as markdown."
    cut = ""
    if len(content) > PROMPT_PAGE_CHARS:
        of_whole = "" if given_as else f" of {len(content):,}"
        cut = f" Only its first {PROMPT_PAGE_CHARS:,} characters{of_whole} are given."
        content = content[:PROMPT_PAGE_CHARS]
    return (f"{prompt}\n\nDo this with the web page below, fetched from {page['url']} (HTTP {page['status']}, "
            f"{content_type or 'no content type'}).{given_as}{cut} Reply with the result only.\n\n"
            f"<page>\n{content}\n</page>\n")


# -- caching --------------------------------------------------------------------

def _content_at(source: str, ctx) -> str:
    value = ctx.get(source)
    if value is None:
        raise ActionFailed(f"nothing at `{source}` to cache", "run web_fetch with store_as first")
    content = value.get("content") if isinstance(value, dict) else value
    if not isinstance(content, str):
        what = "no `content`" if content is None else f"{type(content).__name__} content, not text"
        raise ActionFailed(f"the value at `{source}` has {what}; cache_web_content expects a web_fetch result")
    return content


def _cache(params, source: str, dest_param: str, store_path_as: str | None, ctx) -> None:
    content = _content_at(source, ctx)
    target = guarded_path(ctx, params, dest_param, "write")
    dest = params[dest_param]
    try:
        write_atomic(target, content)
    except OSError as exc:
        raise ActionFailed(f"could not write '{dest}': {exc.strerror or exc}") from None
    if store_path_as:
        ctx.set(store_path_as, dest)


@TYPES.consequence("cache_web_content", {"from": FROM, "dest": DEST, "store_path_as": STORE_PATH_AS},
                   ["from", "dest"], paths=("from", "store_path_as"), effects=("files",))
def cache_web_content(params, ctx):
    """Write `content` of the fetch result at `from` to the file `dest` (inside the working directory)."""
    _cache(params, params["from"], "dest", params.get("store_path_as"), ctx)


# -- v3 -------------------------------------------------------------------------

def _ops_fetch(params, ctx):
    for name in ("url", "store_as"):
        if not params.get(name):
            raise ActionFailed(f"web_ops fetch needs `{name}`")
    web_fetch(params, ctx)


def _ops_cache(params, ctx):
    for name in ("from", "dest"):
        if not params.get(name):
            raise ActionFailed(f"web_ops cache needs `{name}`")
    # v3 names one `store_as` for both operations; for cache it keeps the written path.
    _cache(params, params["from"], "dest", params.get("store_path_as") or params.get("store_as"), ctx)


_OPERATIONS = {"fetch": _ops_fetch, "cache": _ops_cache}


@TYPES.consequence("web_ops", {"operation": {"enum": list(_OPERATIONS)}, "url": URL, "prompt": PROMPT,
                               "allow_failure": ALLOW_FAILURE, "from": FROM, "dest": DEST, "store_as": STORE_AS,
                               "store_path_as": STORE_PATH_AS, "timeout": TIMEOUT},
                   ["operation"], paths=("store_as", "from", "store_path_as"), effects=("network", "files"),
                   idempotent=False, asks_llm_with=("prompt",))
def web_ops(params, ctx):
    """v3: fetch (url → store_as, like web_fetch) or cache (from → dest, like cache_web_content)."""
    _OPERATIONS[params["operation"]](params, ctx)
