"""The pages in Chromium with what a hostile or careless user brings: names too long to wrap,
emoji, a slow or failing network, a second click, a keyboard and no mouse.

The server and the browser are test_browser's (Debian's Chromium through Playwright).
"""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Browser, Page, Route, expect

from tests.test_browser import QUERY, browser, call, served, serving  # noqa: F401 - fixtures

VIEWPORT = {"width": 1280, "height": 800}


def upload(page: Page, base: str, name: str, text: str, level: str = "L1") -> None:
    """Upload ``name`` from the console and wait until its document is indexed."""
    page.goto(base + "/")
    page.select_option("#upload-level", level)
    page.set_input_files("#upload-file", files=[{
        "name": name, "mimeType": "text/markdown", "buffer": text.encode()}])
    page.click("#upload-form button[type=submit]")
    expect(page.locator("#message")).to_contain_text(f"queued {name}")
    expect(page.locator("#sources tr[data-status=INDEXED]", has_text=name)).to_have_count(
        1, timeout=20_000)


def scroll_width(page: Page) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth"))



def _inspected(browser: Browser, base: str) -> Page:
    """A new page of the inspector showing the hits of a search for QUERY."""
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(base + "/inspect")
    page.fill("#query", QUERY)
    page.click("#search-button")
    expect(page.locator("#hits > li").first).to_be_visible()
    return page

def test_a_long_unbroken_name_does_not_push_the_pages_sideways(
    served: tuple[str, Path], browser: Browser  # noqa: F811
) -> None:
    """A name with no space to break at (a 200-character file name, a 3,000-character title)
    was as wide as its text: the console's table grew to thousands of pixels, its Status
    column and the DLQ row's Drop far off screen to the right; the inspector's hit and the
    document page's heading ran past the window, the whole page scrolling sideways."""
    base, _ = served
    page = browser.new_page(viewport=VIEWPORT)
    name = "l" + "o" * 190 + "ng.md"
    upload(page, base, name, "# T" + "i" * 3000 + "tle\n\nThe drum brakes judder when the drums "
                       "are out of round.")
    drop = page.locator("#sources tr[data-status=DLQ] button.drop-job")
    box = drop.bounding_box()
    assert box is not None and box["x"] + box["width"] <= VIEWPORT["width"], box
    assert scroll_width(page) <= VIEWPORT["width"]

    page.goto(base + "/inspect")
    page.fill("#query", "drum brakes judder")
    page.click("#search-button")
    hit = page.locator("#hits > li", has_text="judder")
    expect(hit).to_have_count(1)
    assert scroll_width(page) <= VIEWPORT["width"]

    hit.locator(".doc-link").click()
    expect(page.locator("mark#cited")).to_contain_text("judder")
    assert scroll_width(page) <= VIEWPORT["width"]


def test_the_inspector_marks_the_query_terms_after_an_emoji(
    served: tuple[str, Path], browser: Browser  # noqa: F811
) -> None:
    """The API's offsets count characters (code points); JavaScript's string indices count
    UTF-16 units, two for an emoji: each mark after one was moved, "the r" and " 🚗🚗 gr"
    marked for "rotor" and "grinding"."""
    base, _ = served
    page = browser.new_page(viewport=VIEWPORT)
    upload(page, base, "emoji.md", "# Emoji\n\n🚗🚗🚗🚗 the rotor squeal 🚗🚗 grinding rotor "
                                   "noise, e\u0301 and 👩\u200d👩\u200d👧 too.")
    page.goto(base + "/inspect")
    page.fill("#query", "rotor grinding")
    page.check("#no_gate")
    page.click("#search-button")
    hit = page.locator("#hits > li[data-document='emoji.md']")
    expect(hit.locator("mark")).to_have_text(["rotor", "grinding", "rotor"])
    # the text between the marks whole, the family emoji's joiners too (e\u0301 is NFC now)
    expect(hit.locator("blockquote")).to_contain_text(
        "🚗🚗🚗🚗 the rotor squeal 🚗🚗 grinding rotor noise, \u00e9 and 👩\u200d👩\u200d👧 too.")


def test_a_failed_search_does_not_leave_the_last_ones_results_on_screen(
    served: tuple[str, Path], browser: Browser  # noqa: F811
) -> None:
    """A search that failed (filters that are not JSON) showed its error above the previous
    search's gate and hits, as if they were its answer, and Check citations went on checking
    against them; a new search left the last answer's check beside hits it was not about."""
    page = _inspected(browser, served[0])
    page.fill("#answer", "Personal data are erased without undue delay [1].")
    page.click("#check")
    expect(page.locator(".claim")).to_have_count(1)

    page.fill("#query", "tyres")
    page.click("#search-button")
    expect(page.locator("#hits > li", has_text="tyres").first).to_be_visible()
    expect(page.locator("#claims")).to_be_empty()  # it checked the erasure search's [1]

    page.fill("#filters", "{domain: privacy")
    page.click("#search-button")
    expect(page.locator("#error")).to_contain_text("filters is not valid JSON")
    expect(page.locator("#hits > li")).to_have_count(0)
    expect(page.locator("#gate")).to_be_hidden()
    page.click("#check")
    expect(page.locator("#error")).to_contain_text("run a search first")


def test_a_slow_search_answered_after_a_newer_one_is_not_shown(
    served: tuple[str, Path], browser: Browser  # noqa: F811
) -> None:
    """On a slow network, a search sent again with another query before the first answered:
    the first answer, arriving last, replaced the second's hits under the second's query,
    and Check citations checked against the first search."""
    base, _ = served
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(base + "/inspect")
    held: list[Route] = []
    page.route("**/api/search", lambda route: held.append(route)
               if "tyres" in (route.request.post_data or "") else route.continue_())
    page.fill("#query", "tyres")
    page.click("#search-button")
    for _ in range(100):  # the route sees the request once the page has sent it
        if held:
            break
        page.wait_for_timeout(50)
    assert len(held) == 1
    page.fill("#query", QUERY)
    page.click("#search-button")
    hits = page.locator("#hits > li")
    expect(hits.first).to_have_attribute("data-document", "gdpr-17")
    shown = [hits.nth(i).get_attribute("data-chunk") for i in range(hits.count())]
    with page.expect_response(lambda response: "tyres" in (response.request.post_data or "")):
        held[0].continue_()
    page.wait_for_timeout(300)  # the page has read the tyres answer: shown, it replaced the hits
    expect(hits.first).to_have_attribute("data-document", "gdpr-17")
    assert [hits.nth(i).get_attribute("data-chunk") for i in range(hits.count())] == shown


def test_an_answer_that_is_not_the_apis_json_is_said_so(
    served: tuple[str, Path], browser: Browser  # noqa: F811
) -> None:
    """Behind a proxy whose session ran out, a call is answered 200 with the proxy's login
    page: the console said "purged undefined jobs". A proxy's 502 page said "Bad Gateway", a
    server that is down "Failed to fetch": neither said what to do."""
    base, _ = served
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(base + "/")
    expect(page.locator("#count-DONE")).to_have_text("1")
    message = page.locator("#message")

    page.route("**/api/jobs/purge-done", lambda route: route.fulfill(
        status=200, content_type="text/html", body="<html><h1>Sign in</h1></html>"))
    page.click("#purge-done")
    expect(message).to_contain_text("HTTP 200")
    expect(message).to_contain_text("not the API's JSON (text/html)")
    expect(message).not_to_contain_text("undefined")
    page.unroute("**/api/jobs/purge-done")

    page.route("**/api/jobs/retry-dlq", lambda route: route.fulfill(
        status=502, content_type="text/html", body="<html>Bad gateway</html>"))
    page.click("#retry-dlq")
    expect(message).to_contain_text("HTTP 502")
    expect(message).to_contain_text("not the API's JSON (text/html)")
    page.unroute("**/api/jobs/retry-dlq")

    page.route("**/api/**", lambda route: route.abort("connectionrefused"))
    page.click("#purge-done")
    expect(message).to_contain_text("no answer from the server")
    expect(message).to_contain_text("is `enginelib serve` running?")
    page.unroute("**/api/**")

    page.click("#purge-done")  # the server's own JSON, as before
    expect(message).to_have_text("purged 1 job")
    expect(page.locator("#count-DONE")).to_have_text("0")


def test_an_upload_under_way_says_so_and_is_sent_once(
    served: tuple[str, Path], browser: Browser  # noqa: F811
) -> None:
    """On a slow network an upload showed nothing until it was answered, and Upload, pressed
    again meanwhile, sent the file a second time (two jobs for one file)."""
    base, _ = served
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(base + "/")
    expect(page.locator("#count-DONE")).to_have_text("1")
    held: list[Route] = []
    page.route("**/api/upload", lambda route: held.append(route))
    page.set_input_files("#upload-file", files=[{
        "name": "slow.md", "mimeType": "text/markdown",
        "buffer": b"# Slow\n\nThe handbrake cable stretches over the years."}])
    submit = page.locator("#upload-form button[type=submit]")
    submit.click()
    expect(page.locator("#message")).to_have_text("uploading slow.md…")
    expect(submit).to_be_disabled()
    page.evaluate("document.getElementById('upload-form').requestSubmit()")  # Enter in a field
    page.wait_for_timeout(300)
    assert len(held) == 1
    held[0].continue_()
    expect(page.locator("#message")).to_contain_text("queued slow.md")
    expect(submit).to_be_enabled()
    expect(submit).to_be_focused()  # disabled meanwhile, it had lost the keyboard's focus
    assert len(held) == 1


def test_a_page_opened_with_the_token_drops_it_from_the_address_bar(
    browser: Browser, tmp_path: Path  # noqa: F811
) -> None:
    """`serve --token`: a page opened once with ?token= sets the cookie the pages' calls
    carry. The token stayed in the address bar, so in the history, a bookmark, a screen
    share, and Back to that page sent it again in the URL."""
    token = "Zq8-xT3_pL0vW9mK2rN5"
    with serving(tmp_path, token=token) as base:
        page = browser.new_page(viewport=VIEWPORT)
        sent: list[str] = []
        page.on("request", lambda request: sent.append(request.url))
        page.goto(f"{base}/inspect?token={token}")
        assert page.url == base + "/inspect"
        page.fill("#query", QUERY)
        page.click("#search-button")  # the cookie carries the token
        expect(page.locator("#hits > li").first).to_be_visible()
        page.click("text=Ingestion console")
        expect(page.locator("#count-DONE")).to_have_text("1")
        page.go_back()
        assert page.url == base + "/inspect"
        page.goto(f"{base}/documents/gdpr-17?start=0&token={token}&end=10")
        assert page.url == base + "/documents/gdpr-17?start=0&end=10"
        expect(page.locator("mark#cited")).to_have_text("Article 17")
        assert [url for url in sent if token in url] == [
            f"{base}/inspect?token={token}", f"{base}/documents/gdpr-17?start=0&token={token}&end=10"]


def test_every_control_has_a_name_and_errors_are_announced(
    served: tuple[str, Path], browser: Browser  # noqa: F811
) -> None:
    """To a screen reader the console's file field and truth level, the inspector's query
    and answer had no name, every DLQ row's button was "Drop", and a search's error and
    gate appeared unannounced."""
    base, _ = served
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(base + "/")
    expect(page.get_by_label("File to upload")).to_have_attribute("type", "file")
    expect(page.get_by_label("Truth level")).to_have_value("L2")
    expect(page.get_by_role("button", name=re.compile(r"^Drop job \d+ \(.*empty\.md\)$"))
           ).to_have_count(1)

    page.goto(base + "/inspect")
    page.get_by_label("Query").fill(QUERY)
    expect(page.get_by_role("group", name="Truth levels").get_by_role("checkbox")).to_have_count(4)
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_role("status")).to_contain_text("confidence")
    page.get_by_label("Answer to check").fill("Personal data are erased [1].")
    page.get_by_label("Filters").fill("{domain: privacy")
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_role("alert")).to_contain_text("filters is not valid JSON")


def test_a_refresh_keeps_the_keyboard_on_the_row_button_it_was_on(
    served: tuple[str, Path], browser: Browser  # noqa: F811
) -> None:
    """The Sources table is built anew at each refresh (every 5 s while jobs run): a keyboard
    user who had tabbed to a DLQ row's Drop lost the focus to the page, the next Tab starting
    again from its top."""
    base, _ = served
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(base + "/")
    drop = page.locator("#sources button.drop-job")
    expect(drop).to_have_count(1)
    for _ in range(30):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.classList.contains('drop-job')"):
            break
    expect(drop).to_be_focused()
    page.evaluate("refresh()")  # what the 5 s timer calls
    expect(page.locator("#message")).to_be_empty()
    page.wait_for_timeout(500)
    expect(drop).to_be_focused()
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.keyboard.press("Enter")  # still the row's own button
    expect(drop).to_be_focused()


def test_a_refresh_takes_back_its_error_once_the_server_answers_again(
    served: tuple[str, Path], browser: Browser  # noqa: F811
) -> None:
    """A refresh that got no answer (serve restarting), or that read the worker's own error (a
    full disk), said so; once the server answered again, or the worker recovered, the
    counters moved on under the old error, shown until some button replaced it."""
    base, _ = served
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(base + "/")
    message = page.locator("#message")
    expect(page.locator("#count-DONE")).to_have_text("1")

    page.route("**/api/sources", lambda route: route.abort("connectionrefused"))
    page.evaluate("refresh()")
    expect(message).to_contain_text("no answer from the server")
    page.unroute("**/api/sources")
    page.evaluate("refresh()")
    expect(message).to_be_empty()

    jobs = call(base, "/api/jobs?limit=1")
    page.route("**/api/jobs?limit=1", lambda route: route.fulfill(json={
        **jobs, "worker_error": "disk full: free space on the store's disk"}))
    page.evaluate("refresh()")
    expect(message).to_have_text("worker: disk full: free space on the store's disk (retrying)")
    page.unroute("**/api/jobs?limit=1")
    page.evaluate("refresh()")
    expect(message).to_be_empty()

    page.click("#purge-done")  # a button's own message stays through the refresh after it
    expect(message).to_have_text("purged 1 job")
    page.evaluate("refresh()")
    page.wait_for_timeout(500)
    expect(message).to_have_text("purged 1 job")


def test_a_search_with_no_gate_does_not_say_the_evidence_passed_it(
    served: tuple[str, Path], browser: Browser  # noqa: F811
) -> None:
    """With "no gate" ticked the gate does not run (its answer says "the gate is off"); the
    inspector said "Answerable · evidence passes the gate" all the same."""
    base, _ = served
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(base + "/inspect")
    page.fill("#query", QUERY)
    page.check("#no_gate")
    page.click("#search-button")
    expect(page.locator("#gate-reason")).to_have_text("the gate is off")
    page.uncheck("#no_gate")
    page.click("#search-button")
    expect(page.locator("#gate-reason")).not_to_have_text("the gate is off")


def test_an_answer_check_that_comes_after_a_new_search_is_not_shown(
    served: tuple[str, Path], browser: Browser  # noqa: F811
) -> None:
    """On a slow network, Check citations, then a new search before the check answered: the
    check, answered last, showed its claims (its [1] the erasure search's citation) beside
    the new search's hits."""
    page = _inspected(browser, served[0])
    held: list[Route] = []
    page.route("**/api/check-answer", lambda route: held.append(route))
    page.fill("#answer", "Personal data are erased without undue delay [1].")
    page.click("#check")
    for _ in range(100):
        if held:
            break
        page.wait_for_timeout(50)
    page.fill("#query", "tyres")
    page.click("#search-button")
    expect(page.locator("#hits > li", has_text="tyres").first).to_be_visible()
    with page.expect_response("**/api/check-answer"):
        held[0].continue_()
    page.wait_for_timeout(300)
    expect(page.locator("#claims")).to_be_empty()


def test_a_refresh_answered_after_a_newer_one_does_not_show_its_older_counts(
    served: tuple[str, Path], browser: Browser  # noqa: F811
) -> None:
    """Refreshes overlap (the 5 s timer, a button's own refresh): one answered after a newer
    one put back its older counts and rows, and with them whether jobs are active, which
    could stop the auto-refresh while a job was waiting."""
    base, _ = served
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(base + "/")
    expect(page.locator("#count-DONE")).to_have_text("1")
    before = call(base, "/api/jobs?limit=1")
    held: list[Route] = []
    page.route("**/api/jobs?limit=1", lambda route: route.continue_() if held
               else held.append(route))  # the first one held back
    page.evaluate("() => { refresh(); }")  # the timer's, slow to answer: not awaited
    for _ in range(100):
        if held:
            break
        page.wait_for_timeout(50)
    page.click("#purge-done")
    expect(page.locator("#message")).to_have_text("purged 1 job")
    expect(page.locator("#count-DONE")).to_have_text("0")
    held[0].fulfill(json=before)  # what it read before the purge
    page.wait_for_timeout(500)
    expect(page.locator("#count-DONE")).to_have_text("0")


def test_an_idle_console_shows_a_job_queued_elsewhere_when_it_is_looked_at_again(
    served: tuple[str, Path], browser: Browser  # noqa: F811
) -> None:
    """The console refreshes by itself only while the jobs it last saw were active: a job
    queued elsewhere (another tab, `ingest --queue`) left an idle console on its old counts
    and rows until it was reloaded, however often the user came back to it."""
    base, _ = served
    context = browser.new_context(viewport=VIEWPORT)
    idle, other = context.new_page(), context.new_page()
    idle.goto(base + "/")
    expect(idle.locator("#count-DONE")).to_have_text("1")
    upload(other, base, "elsewhere.md", "# Elsewhere\n\nWheel bearings hum at speed.")
    expect(other.locator("#count-DONE")).to_have_text("2")
    idle.bring_to_front()
    idle.evaluate("window.dispatchEvent(new Event('focus'))")  # the user comes back to it
    expect(idle.locator("#count-DONE")).to_have_text("2")
    expect(idle.locator("#sources tr", has_text="elsewhere.md")).to_have_count(1)
    context.close()
