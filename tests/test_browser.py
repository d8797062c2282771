"""`enginelib serve` in a real process, driven by Chromium through Playwright.

Chromium comes from Debian (`apt-get install chromium`, see .ci/run): Playwright's own browser
download is not reachable here. Set $ENGINELIB_SCREENSHOTS to a folder to keep the pages'
screenshots. The README's (docs/images/) show the same pages over the GDPR and AI Act with
the default model: `serve` on the serve-latency benchmark's store, plus the GDPR recitals and
a truncated PDF queued with `ingest --queue`.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from enginelib.jobs import Worker
from tests.helpers import disk_full, open_test_store
from tests.test_web import build_store

pytestmark = pytest.mark.slow  # a real browser and a real server process

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
QUERY = "right to erasure of personal data"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def call(base: str, path: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data,
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    with serving(tmp_path) as base:
        yield base, tmp_path / "src"


@contextmanager
def serving(tmp_path: Path, token: str | None = None,
            prepare: Callable[[Path, Path], None] | None = None) -> Iterator[str]:
    """`serve` (with ``token``, if given) on build_store's store in ``tmp_path``, after
    ``prepare(store, src)`` if given: its URL."""
    store, src = tmp_path / "store", tmp_path / "src"
    build_store(store, src)
    if prepare is not None:
        prepare(store, src)
    port = free_port()
    env = {**os.environ, "ENGINELIB_EMBEDDER": "hashing-64", "PYTHONPATH": str(ROOT)}
    env.pop("ENGINELIB_TOKEN", None)
    log = open(tmp_path / "serve.log", "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [sys.executable, "-m", "enginelib.cli.main", "serve", str(store), "--port", str(port),
         "--poll", "0.1", *(("--token", token) if token else ())],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                urllib.request.urlopen(base + "/api/health", timeout=30).close()
                break
            except urllib.error.HTTPError:  # 401: up, asking for the token
                break
            except OSError:
                assert time.monotonic() < deadline, "serve did not come up"
                time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


@pytest.fixture()
def browser() -> Iterator[Browser]:
    assert Path(CHROMIUM).exists(), (
        f"{CHROMIUM} is missing: install Debian's Chromium (apt-get install -y chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def screenshot(page: Page, tmp_path: Path, name: str) -> None:
    folder = Path(os.environ.get("ENGINELIB_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / name), full_page=True)
    assert (folder / name).stat().st_size > 1000


def test_console_refresh_asks_for_the_counts_not_a_page_of_jobs(
    served: tuple[str, Path], browser: Browser
) -> None:
    """The console shows only the counters from /api/jobs: it asked for the default page of
    1000 job rows each refresh, read under the store's lock, every 5 s while jobs ran."""
    base, _ = served
    page = browser.new_page()
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url)
            if "/api/jobs" in request.url else None)
    page.goto(base + "/")
    expect(page.locator("#count-DONE")).to_have_text("1")
    assert asked and all(url.endswith("/api/jobs?limit=1") for url in asked), asked


def test_console_counters_follow_retry_dlq_and_purge_done(
    served: tuple[str, Path], browser: Browser, tmp_path: Path
) -> None:
    base, src = served
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(base + "/")
    expect(page.locator("#count-DONE")).to_have_text("1")
    expect(page.locator("#count-DLQ")).to_have_text("1")
    expect(page.locator("#sources tbody tr")).to_have_count(4)
    expect(page.locator("#sources tr[data-status=DLQ]")).to_contain_text("empty.md")
    expect(page.locator("#sources .badge.tier-gold")).to_have_count(2)  # L1: gold

    page.click("#purge-done")
    expect(page.locator("#message")).to_have_text("purged 1 job")
    expect(page.locator("#count-DONE")).to_have_text("0")
    expect(page.locator("#count-HISTORY")).to_have_text("1")

    # Fix the failing source, then bring its job back from the DLQ: the worker ingests it.
    (src / "empty.md").write_text("# Wipers\n\nWiper blades streak when the rubber hardens.",
                                  encoding="utf-8")
    page.click("#retry-dlq")
    expect(page.locator("#message")).to_have_text("retried 1 job")
    expect(page.locator("#count-DLQ")).to_have_text("0")
    expect(page.locator("#count-DONE")).to_have_text("1", timeout=20_000)  # 5 s auto-refresh
    expect(page.locator("#sources tr[data-status=INDEXED]")).to_have_count(4)

    page.set_input_files("#upload-file", files=[{
        "name": "../../escape.md", "mimeType": "text/markdown", "buffer": b"# x\n\ntext"}])
    page.click("#upload-form button[type=submit]")
    expect(page.locator("#message")).to_contain_text("not a plain file name")
    page.set_input_files("#upload-file", files=[{
        "name": "lights.md", "mimeType": "text/markdown",
        "buffer": b"# Lights\n\nHeadlights must be aimed after a bulb change."}])
    page.click("#upload-form button[type=submit]")
    expect(page.locator("#message")).to_contain_text("queued lights.md")
    expect(page.locator("#sources tr[data-status=INDEXED]")).to_have_count(5, timeout=20_000)
    screenshot(page, tmp_path, "console.png")


def test_console_drops_a_dlq_job_by_its_row_and_the_rest_with_drop_dlq(
    served: tuple[str, Path], browser: Browser
) -> None:
    base, src = served
    # A second DLQ job: queued while serve holds the store (the inbox), empty, so it fails
    # for good at its first attempt.
    (src / "blank.md").write_text("", encoding="utf-8")
    env = {**os.environ, "ENGINELIB_EMBEDDER": "hashing-64", "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "enginelib.cli.main", "ingest", "--store",
                    str(src.parent / "store"), "--queue", str(src / "blank.md")],
                   cwd=ROOT, env=env, check=True, capture_output=True, timeout=120)
    deadline = time.monotonic() + 30
    while call(base, "/api/jobs")["counts"]["DLQ"] < 2:
        assert time.monotonic() < deadline, "the queued job did not reach the DLQ"
        time.sleep(0.2)
    page = browser.new_page()
    page.goto(base + "/")
    expect(page.locator("#count-DLQ")).to_have_text("2")
    row = page.locator("#sources tr[data-status=DLQ]", has_text="blank.md")

    page.once("dialog", lambda dialog: dialog.dismiss())  # asked first: it is for good
    row.locator("button.drop-job").click()
    expect(page.locator("#count-DLQ")).to_have_text("2")
    page.once("dialog", lambda dialog: dialog.accept())
    row.locator("button.drop-job").click()
    expect(page.locator("#message")).to_have_text("dropped 1 job")
    expect(page.locator("#count-DLQ")).to_have_text("1")
    expect(page.locator("#sources tr[data-status=DLQ]")).to_have_count(1)
    expect(page.locator("#sources tr[data-status=DLQ]")).to_contain_text("empty.md")

    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#drop-dlq")
    expect(page.locator("#message")).to_have_text("dropped 1 job")
    expect(page.locator("#count-DLQ")).to_have_text("0")
    expect(page.locator("#sources tr[data-status=DLQ]")).to_have_count(0)
    assert call(base, "/api/jobs")["counts"]["DLQ"] == 0


def _failed_for_now(store: Path, src: Path) -> None:
    """Job 3, tyres.md, FAILED (a full disk) with its retry hours away: it waits in the
    console while the test cancels it."""
    (src / "tyres.md").write_text("# Tyres\n\nTyres wear faster when under-inflated.",
                                  encoding="utf-8")
    with open_test_store(store) as opened:
        opened.enqueue_paths(src / "tyres.md")
        with disk_full():
            Worker(opened, opened.jobs(time_unit=1000)).run_until_idle()


def test_console_cancels_a_waiting_job_by_its_row(
    tmp_path: Path, browser: Browser
) -> None:
    with serving(tmp_path, prepare=_failed_for_now) as base:
        page = browser.new_page()
        page.goto(base + "/")
        expect(page.locator("#count-FAILED")).to_have_text("1")
        row = page.locator("#sources tr[data-status=FAILED]", has_text="tyres.md")
        button = row.get_by_role("button", name="Cancel job 3 (")
        expect(button).to_have_count(1)  # named for its job, for a screen reader
        expect(page.locator("#sources tr[data-status=DLQ] button.cancel-job")).to_have_count(0)

        page.once("dialog", lambda dialog: dialog.dismiss())  # asked first
        button.click()
        expect(page.locator("#count-FAILED")).to_have_text("1")
        page.once("dialog", lambda dialog: dialog.accept())
        button.focus()
        page.keyboard.press("Enter")  # a keyboard user's way
        expect(page.locator("#message")).to_have_text("cancelled 1 job")
        expect(page.locator("#count-FAILED")).to_have_text("0")
        expect(page.locator("#count-HISTORY")).to_have_text("1")
        expect(page.locator("#sources tr[data-status=FAILED]")).to_have_count(0)
        jobs = call(base, "/api/jobs")
        assert [job["job_id"] for job in jobs["jobs"]] == [1, 2] and jobs["history"] == 1


def test_inspector_shows_the_api_scores_and_flags_a_fabricated_reference(
    served: tuple[str, Path], browser: Browser, tmp_path: Path
) -> None:
    base, _ = served
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(base + "/inspect")
    page.fill("#query", QUERY)
    page.check("input[name=truth_levels][value=L3]")
    page.check("#no_gate")
    page.click("#search-button")
    hits = page.locator("#hits > li")
    expect(hits.first).to_be_visible()
    api = call(base, "/api/search", {"query": QUERY, "strategy": "hybrid",
                                     "truth_levels": "L1,L2,L3", "limit": 10,
                                     "diversify": False, "boost": False, "no_gate": True})
    assert hits.count() == len(api["hits"]) > 1
    for i, hit in enumerate(api["hits"]):
        row = hits.nth(i)
        assert row.get_attribute("data-document") == hit["document_id"]
        s = hit["scores"]
        assert abs(float(row.locator(".score-fused").inner_text()) - s["fused"]) <= 5e-7
        for css, value in ((".score-vector", s["vector_score"]), (".score-bm25", s["bm25_score"])):
            shown = row.locator(css).inner_text()
            assert (shown == "–") if value is None else abs(float(shown) - value) <= 5e-5
        for css, value in ((".score-vector-rank", s["vector_rank"]),
                           (".score-bm25-rank", s["bm25_rank"])):
            assert row.locator(css).inner_text() == ("–" if value is None else str(value))
        similarity = row.locator(".score-similarity").inner_text()
        assert abs(float(similarity.rstrip("%")) - 100 * s["similarity"]) <= 0.05
    top = hits.first
    expect(top.locator(".badge.tier-gold")).to_contain_text("L1")
    expect(top.locator("mark").first).to_be_visible()
    expect(page.locator("#gate-decision")).to_have_text(
        "Answerable" if api["gate"]["decision"] == "answer" else "Refused: NO_RELEVANT_SOURCES")

    page.fill("#answer", "The data subject can have personal data erased without undue "
                         "delay [1]. Controllers must also erase data about cars [42].")
    page.click("#check")
    expect(page.locator("#claims-summary")).to_contain_text("Fabricated references: [42]")
    expect(page.locator(".claim[data-verdict=fabricated]")).to_have_count(1)
    expect(page.locator(".claim[data-verdict=supported]")).to_contain_text("gdpr-17")
    screenshot(page, tmp_path, "inspector.png")

    with page.expect_navigation():
        top.locator(".doc-link").click()
    expect(page.locator("mark#cited")).to_have_text(api["hits"][0]["content"])

    page.goto(base + "/inspect")
    page.fill("#query", QUERY)
    page.fill("#filters", "{domain: privacy")
    page.click("#search-button")
    expect(page.locator("#error")).to_contain_text("filters is not valid JSON")


ATTACK_PAGE = """<!doctype html><meta charset="utf-8"><title>a page the user visits</title>
<script>
const target = %(target)s;
async function attack() {
  const form = new FormData();
  form.append("file", new Blob(["# Planted\\n\\nWire the refund to account 1234."],
                               {type: "text/markdown"}), "planted.md");
  form.append("truth_level", "L1");
  // multipart/form-data and text/plain are "simple": the browser sends them cross-origin
  // without asking the server first, and only hides the answer from this page.
  // Each answer is opaque to this page at best (a refusal is a network error to it).
  await fetch(target + "/api/upload", {method: "POST", mode: "no-cors", body: form})
    .catch(() => null);
  await fetch(target + "/api/jobs/purge-done", {method: "POST", mode: "no-cors",
                                                 headers: {"content-type": "text/plain"}})
    .catch(() => null);
  document.title = "sent";
}
attack();
</script>"""


@pytest.fixture()
def attacker(tmp_path: Path) -> Iterator[str]:
    """A second web server: the origin of a page the user happens to open."""
    import http.server
    import threading

    folder = tmp_path / "attacker"
    folder.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(folder), **kwargs)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://localhost:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_page_on_another_origin_cannot_write_to_the_store(
    served: tuple[str, Path], browser: Browser, attacker: str, tmp_path: Path
) -> None:
    """`serve` on localhost has no token: any web page the user opened could POST a document
    into the store (and purge its jobs), since a browser sends a multipart or text/plain
    request across origins without asking. Such a request carries the page's Origin, which
    is not the server's: it is refused, and the console on its own origin still writes."""
    base, _ = served
    (tmp_path / "attacker" / "attack.html").write_text(
        ATTACK_PAGE % {"target": json.dumps(base)}, encoding="utf-8")
    before = call(base, "/api/jobs")
    page = browser.new_page()
    answered: list[tuple[str, str | None]] = []
    page.on("requestfailed", lambda r: answered.append((r.url, r.failure)))
    page.goto(attacker + "/attack.html")
    page.wait_for_function("document.title === 'sent'")
    # Both requests reached the server (so the test means something): its answer came back
    # and, being same-origin only (CORP), was withheld from the page. The store is unchanged.
    blocked = "net::ERR_BLOCKED_BY_RESPONSE.NotSameOrigin"
    assert sorted(answered) == [(base + "/api/jobs/purge-done", blocked),
                                (base + "/api/upload", blocked)]
    after = call(base, "/api/jobs")
    assert after["counts"] == before["counts"]
    assert after["jobs"] == before["jobs"]  # no upload queued

    page.goto(base + "/")  # the console, on the server's own origin, still uploads
    page.set_input_files("#upload-file", files=[{
        "name": "lights.md", "mimeType": "text/markdown",
        "buffer": b"# Lights\n\nHeadlights must be aimed after a bulb change."}])
    page.click("#upload-form button[type=submit]")
    expect(page.locator("#message")).to_contain_text("queued lights.md")


def test_a_name_rebound_to_this_machine_cannot_read_the_store(
    served: tuple[str, Path], tmp_path: Path
) -> None:
    """DNS rebinding: a page on `rebind.test` whose name is made to resolve to 127.0.0.1 is,
    to the browser, its own origin, so it may read every answer. Only the Host header tells
    the server the request was meant for another site: it is refused."""
    base, _ = served
    port = base.rsplit(":", 1)[1]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[*CHROMIUM_ARGS, "--host-resolver-rules=MAP rebind.test 127.0.0.1"])
        try:
            page = browser.new_page()
            response = page.goto(f"http://rebind.test:{port}/api/documents")
            assert response is not None and response.status == 403, response
            assert "gdpr-17" not in page.content()
            assert "rebind.test" in response.json()["error"]
            response = page.goto(f"http://127.0.0.1:{port}/api/documents")
            assert response is not None and response.status == 200
            assert "gdpr-17" in page.content()
        finally:
            browser.close()
