"""`wfexec serve` in a real browser: Debian's Chromium driven by Playwright (never `playwright install`), against
a real server process on a free port of 127.0.0.1 and runs started at the command line or launched from the page.
Every request to another host is refused and counted (the page must need none). A failing test keeps a
screenshot (its path is printed); `WFEXEC_DOCS_SCREENSHOT=1` writes the pictures of docs/guide/serve.md,
docs/serve-inbox.png and docs/serve-run.png (a run page in the middle of its run)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, wfexec_cli  # noqa: E402
from serve_support import start_server, waiting_run, workflows  # noqa: E402

pytestmark = pytest.mark.browser
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
FAILURES = Path(os.environ.get("WFEXEC_BROWSER_FAILURES", ROOT / ".browser-failures"))
WAIT_MS = 30_000  # how long a locator may take to appear: a ceiling for a slow machine, not a measurement
LAUNCH_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run"]


# Per module, not per session: while Playwright's sync API is open it holds an event loop on the main thread,
# and every later test calling asyncio.run() (the MCP and Temporal tests) would fail.
@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install -y --no-install-recommends chromium "
                    "(or set CHROMIUM to its path)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (no browser download)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser, request):
    from playwright.sync_api import expect

    expect.set_options(timeout=WAIT_MS)
    context = browser.new_context(viewport={"width": 1100, "height": 800})
    opened = context.new_page()
    opened.set_default_timeout(WAIT_MS)
    elsewhere: list[str] = []

    def only_this_machine(route):
        # The page must need nothing from another host (no CDN): anything else is refused, and counted.
        if route.request.url.startswith(("http://127.0.0.1:", "data:")):
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    opened.route("**/*", only_this_machine)
    errors: list[str] = []
    opened.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    opened.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
    failed_before = request.session.testsfailed
    yield opened
    if request.session.testsfailed > failed_before:
        FAILURES.mkdir(parents=True, exist_ok=True)
        shot = FAILURES / f"{request.node.name}.png"
        opened.screenshot(path=str(shot), full_page=True)
        print(f"screenshot of the failing page: {shot}; console errors: {errors}")
    context.close()
    assert not elsewhere, f"the page asked another host for {elsewhere}"
    # The page's script threw nothing and the CSP blocked nothing. (A stream cut when its server stops is no
    # error of the page's.)
    assert not [e for e in errors if "ERR_INCOMPLETE_CHUNKED_ENCODING" not in e and "status of 4" not in e], errors


@pytest.fixture
def root(tmp_path):
    return workflows(tmp_path / "workflows")


@pytest.fixture
def server(root, private_run_store):
    live = start_server(private_run_store, "--root", str(root))
    yield live
    live.stop()


def test_answer_a_waiting_run_from_the_inbox_and_see_it_complete_without_a_reload(page, server, root):
    from playwright.sync_api import expect

    run_id = waiting_run(root / "greeter", "who=Ada")
    page.goto(server.start_url)
    assert page.url == f"{server.base}/"  # the token was traded for a cookie and left the address
    card = page.locator(f'.card[data-run="{run_id}"]')
    expect(card.locator(".asks")).to_have_text("Greet Ada how?")
    if os.environ.get("WFEXEC_DOCS_SCREENSHOT"):
        page.screenshot(path=str(ROOT / "docs" / "serve-inbox.png"))
    page.evaluate("window.stillTheSamePage = true")
    page.locator(f'.card[data-run="{run_id}"] button[data-option="warm"]').click()
    done = page.locator(f'[data-section="recent"] .card[data-run="{run_id}"]')
    expect(done).to_have_attribute("data-status", "completed")
    expect(page.locator(f'[data-section="waiting"] .card[data-run="{run_id}"]')).to_have_count(0)
    assert page.evaluate("window.stillTheSamePage") is True  # no reload, no navigation
    assert '"completed"' in wfexec_cli("show", run_id, "--format", "json").stdout
    later = waiting_run(root / "greeter", "who=Lin")  # started at a terminal while the page is open
    expect(page.locator(f'[data-section="waiting"] .card[data-run="{later}"] .asks')).to_have_text("Greet Lin how?")
    assert page.evaluate("window.stillTheSamePage") is True


def test_a_wrong_answer_typed_in_is_refused_in_place(page, server, root, tmp_path):
    """A question that takes no free text shows no text box; one posted anyway (a stale page, a script) is refused
    with the options, and the run keeps waiting."""
    from playwright.sync_api import expect

    run_id = waiting_run(root / "greeter")
    page.goto(server.start_url)
    card = page.locator(f'.card[data-run="{run_id}"]')
    expect(card.locator("input[type=text]")).to_have_count(0)
    refused = page.evaluate("""async ([run]) => {
        const csrf = document.querySelector('meta[name="csrf"]').content;
        const r = await fetch('/api/runs/' + run + '/answer', {method: 'POST', headers: {'X-CSRF-Token': csrf,
            'Content-Type': 'application/json'}, body: JSON.stringify({answer: 'loudly'})});
        return [r.status, (await r.json()).error];
    }""", [run_id])
    assert refused[0] == 422 and "not an option" in refused[1]
    expect(card).to_have_attribute("data-status", "waiting")


def test_launch_from_a_workflow_page_then_answer_on_the_run_page(page, server, root):
    from playwright.sync_api import expect

    page.goto(server.start_url)
    page.get_by_role("link", name="Workflows").click()
    expect(page.locator("tr", has_text="broken").locator(".badge.bad")).to_contain_text("error")
    page.get_by_role("link", name="greeter", exact=True).click()
    page.fill('input[name="input.who"]', "Grace")
    page.locator('button[data-action="launch"]').click()
    page.wait_for_url("**/runs/*")
    expect(page.locator(".asks")).to_have_text("Greet Grace how?")
    expect(page.locator('#graph g.node.current[data-node="ask"]')).to_have_count(1)
    page.locator('button[data-option="plain"]').click()
    expect(page.locator('#summary [data-field="status"]')).to_have_text("completed")
    expect(page.locator("#journal tr")).to_have_count(2)
    expect(page.locator("#state")).to_contain_text("Hello, Grace")
    run_id = page.url.rsplit("/", 1)[1]
    assert '"Hello, Grace"' in wfexec_cli("show", run_id, "--format", "json").stdout


def test_cancel_a_waiting_run_from_its_page(page, server, root):
    from playwright.sync_api import expect

    run_id = waiting_run(root / "greeter")
    page.goto(server.start_url)
    page.locator(f'.card[data-run="{run_id}"] a.run-link').click()
    page.locator('button[data-action="cancel"]').click()
    expect(page.locator('#summary [data-field="status"]')).to_have_text("cancelled")
    expect(page.locator('button[data-action="cancel"]')).to_have_count(0)
    assert '"cancelled"' in wfexec_cli("show", run_id, "--format", "json").stdout


def test_a_card_that_did_not_change_is_not_swapped_under_the_pointer(page, server, root):
    # The inbox's stream first tells of every run that changed lately, this one too, though the page already shows
    # it as it is. The page swapped its card for an identical one, and a click whose press hit the old link and
    # release the new one was lost (the cancel test above failed so once, the page staying on the inbox).
    from playwright.sync_api import expect

    run_id = waiting_run(root / "greeter")
    page.add_init_script("""
        window.removedCards = [];
        new MutationObserver(function (records) {
          records.forEach(function (r) { r.removedNodes.forEach(function (n) {
            if (n.classList && n.classList.contains("card")) window.removedCards.push(n.dataset.run);
          }); });
        }).observe(document, { childList: true, subtree: true });
    """)
    with page.expect_response(lambda response: f"/runs/{run_id}/card" in response.url):
        page.goto(server.start_url)
    # Another run's card coming in afterwards says the page has done with the first one's fragment.
    later = waiting_run(root / "greeter")
    expect(page.locator(f'.card[data-run="{later}"]')).to_have_count(1)
    assert page.evaluate("window.removedCards") == []
    expect(page.locator(f'.card[data-run="{run_id}"]')).to_have_count(1)


def test_read_only_shows_runs_without_a_button(page, root, private_run_store):
    from playwright.sync_api import expect

    run_id = waiting_run(root / "greeter")
    live = start_server(private_run_store, "--root", str(root), "--read-only")
    try:
        page.goto(live.start_url)
        expect(page.locator(".badge.read-only")).to_be_visible()
        expect(page.locator(f'.card[data-run="{run_id}"] .asks')).to_have_text("Greet world how?")
        for path in ("/", f"/runs/{run_id}", "/workflows"):
            page.goto(live.base + path)
            expect(page.locator("main")).to_be_visible()
            assert page.locator("button, form").count() == 0, path
    finally:
        live.stop()


def test_the_html_diagram_of_a_states_folder_shows_the_clicked_state(page, tmp_path):
    """`wfexec graph FOLDER --format html` (`ray diagram --html`): one page, nothing fetched, a click on a state
    shows its file."""
    from playwright.sync_api import expect

    flow = tmp_path / "flow"
    flow.mkdir()
    (flow / "START.sh").write_text("echo '<goto>REVIEW</goto>'\n")
    (flow / "REVIEW.md").write_text("Review it. </script><b>not markup</b>\n<result>ok</result>\n")
    made = wfexec_cli("graph", "flow", "--format", "html", "-o", "diagram.html", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    page.set_content((tmp_path / "diagram.html").read_text())
    page.locator("g.node.state", has_text="REVIEW.md").click()
    expect(page.locator("#state-name")).to_have_text("REVIEW.md")
    expect(page.locator("#state-text")).to_have_text("Review it. </script><b>not markup</b>\n<result>ok</result>\n")
    page.locator("g.node.state", has_text="START.sh").click()
    expect(page.locator("#state-text")).to_have_text("echo '<goto>REVIEW</goto>'\n")
    refused = wfexec_cli("graph", ROOT / "skills" / "release-checklist", "--format", "html", cwd=tmp_path)
    assert refused.returncode == 2 and "--format html draws a states folder" in refused.stderr


def _launch_gated(server, root, gates: Path) -> str:
    """The gated workflow launched through the API, as a script would: its run's id."""
    import httpx

    bearer = {"Authorization": f"Bearer {server.token}"}
    listed = httpx.get(f"{server.base}/api/workflows", headers=bearer, timeout=60).json()["workflows"]
    workflow = next(w["id"] for w in listed if w["shown"] == "gated")
    launched = httpx.post(f"{server.base}/api/launch", headers=bearer, timeout=60,
                          json={"workflow": workflow, "inputs": {"gates": str(gates)}})
    assert launched.status_code == 200, launched.text
    return launched.json()["run_id"]


def test_the_current_node_mark_moves_along_the_drawn_graph_as_the_run_goes(page, server, root, tmp_path):
    from playwright.sync_api import expect

    gates = tmp_path / "gates"
    gates.mkdir()
    page.goto(server.start_url)
    page.get_by_role("link", name="Workflows").click()
    page.get_by_role("link", name="gated", exact=True).click()
    expect(page.locator('#graph g.node[data-node="build"]')).to_have_count(1)  # drawn before any run
    page.fill('input[name="input.gates"]', str(gates))
    page.locator('button[data-action="launch"]').click()
    page.wait_for_url("**/runs/*")
    page.evaluate("window.stillTheSamePage = true")
    node = lambda name: page.locator(f'#graph g.node[data-node="{name}"]')  # noqa: E731
    expect(node("prepare")).to_have_class("node current")
    (gates / "one").touch()
    expect(node("build")).to_have_class("node current")
    expect(node("prepare")).to_have_class("node visited")
    expect(page.locator("#journal tr")).to_have_count(1)
    expect(page.locator("#output")).to_contain_text("two line 40")
    if os.environ.get("WFEXEC_DOCS_SCREENSHOT"):
        page.screenshot(path=str(ROOT / "docs" / "serve-run.png"), full_page=True)
    for gate in ("two", "three", "four"):
        (gates / gate).touch()
    expect(node("check")).to_have_class("node current")
    expect(page.locator(".asks")).to_have_text("Ship it?")
    page.locator('button[data-option="yes"]').click()
    expect(page.locator('#summary [data-field="status"]')).to_have_text("completed")
    expect(node("done")).to_have_class("node visited current")  # the ending it reached
    expect(page.locator("#graph g.node.current")).to_have_count(1)
    assert page.evaluate("window.stillTheSamePage") is True


def test_the_output_of_a_run_started_at_a_terminal_follows_its_end_and_pauses_while_scrolled_up(page, server, root,
                                                                                               tmp_path):
    import subprocess
    import sys

    from playwright.sync_api import expect

    gates = tmp_path / "gates"
    gates.mkdir()
    terminal = subprocess.Popen([sys.executable, "-m", "wfexec", "run", str(root / "gated"), "--non-interactive",
                                 "--input", f"gates={gates}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        run_id = _first_run(server)
        page.goto(server.start_url)
        page.goto(f"{server.base}/runs/{run_id}")
        _follow_and_pause(page, gates)
    finally:
        terminal.kill()
        terminal.wait()


def _first_run(server) -> str:
    """The id of the store's first run, once the process started at the terminal has made it."""
    import time

    import httpx

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        listed = httpx.get(f"{server.base}/api/runs", headers={"Authorization": f"Bearer {server.token}"}, timeout=60)
        if listed.status_code == 200 and listed.json()["runs"]:
            return listed.json()["runs"][0]["id"]
        time.sleep(0.05)
    raise AssertionError("the run started at the terminal never appeared in the store")


def _follow_and_pause(page, gates: Path) -> None:
    from playwright.sync_api import expect

    output = page.locator("#output")
    at_end = "o => o.scrollTop + o.clientHeight >= o.scrollHeight - 4"
    (gates / "one").touch()
    expect(output).to_contain_text("two line 40")
    assert output.evaluate("o => o.scrollHeight > o.clientHeight")  # enough to scroll
    assert output.evaluate(at_end)  # it followed the end
    output.evaluate("o => { o.scrollTop = 0; o.dispatchEvent(new Event('scroll')); }")
    (gates / "two").touch()
    expect(output).to_contain_text("three line 40")
    expect(page.locator("#output-paused")).to_be_visible()
    assert output.evaluate("o => o.scrollTop") == 0  # where the reader left it
    output.evaluate("o => { o.scrollTop = o.scrollHeight; o.dispatchEvent(new Event('scroll')); }")
    expect(page.locator("#output-paused")).to_be_hidden()
    (gates / "three").touch()
    expect(output).to_contain_text("four line 40")
    assert output.evaluate(at_end)  # following again
    (gates / "four").touch()
    expect(page.locator(".asks")).to_have_text("Ship it?")


def test_every_page_works_with_every_request_to_another_host_refused(page, server, root):
    """The `page` fixture refuses and counts any request that leaves 127.0.0.1: each page still gets its style,
    its script and its drawn graph, and asks for nothing elsewhere (the fixture fails the test if it did)."""
    from playwright.sync_api import expect

    run_id = waiting_run(root / "greeter")
    page.goto(server.start_url)
    workflow = page.evaluate("fetch('/api/workflows').then(r => r.json()).then(d => "
                             "d.workflows.find(w => w.shown === 'greeter').id)")
    for path in ("/", "/runs", f"/runs/{run_id}", "/workflows", f"/workflows/{workflow}"):
        page.goto(server.base + path)
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(246, 248, 250)", path
        expect(page.locator("html[data-script='ready']")).to_have_count(1)
        if "/runs/" in path or "/workflows/" in path:
            expect(page.locator("#graph svg.graph-picture")).to_be_visible()
    expect(page.locator('#graph g.node[data-node="ask"]')).to_have_count(1)
