"""The web page in real headless Chromium (Debian's), driven by Playwright: no browser download.

One browser per module; each test gets a fresh page on a fresh server.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from raf.serve import create_app
from raf.stores import MemoryCheckpointStore
from tests.serve.servers import require, running
from tests.serve.trees import failing_team, newsroom

playwright_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TIMEOUT_MS = 15_000
DOCS_SCREENSHOT = Path(__file__).parents[2] / "docs" / "serving-page.png"


@pytest.fixture(scope="module")
def browser() -> Iterator[playwright_api.Browser]:
    if shutil.which(CHROMIUM) is None:
        require("chromium", "apt-get install -y chromium (Debian's package; no browser download)")
    with playwright_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: playwright_api.Browser) -> Iterator[playwright_api.Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    opened = context.new_page()
    opened.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert errors == []


def test_the_tree_renders_with_kinds_and_descriptions(page: playwright_api.Page) -> None:
    with running(create_app(newsroom(), MemoryCheckpointStore())) as url:
        page.goto(url + "/")
        rows = page.locator(".agent-row")
        rows.first.wait_for()
        assert [rows.nth(i).get_attribute("data-path") for i in range(rows.count())] == [
            "newsroom",
            "newsroom/drafting",
            "newsroom/drafting/researcher",
            "newsroom/drafting/writer",
        ]
        writer = page.locator('.agent-row[data-path="newsroom/drafting/writer"]')
        assert writer.locator(".kind").inner_text() == "react"
        assert writer.locator(".agent-desc").inner_text() == "Writes the piece."
        page.locator('.agent-row[data-path="newsroom/drafting"] .caret').click()
        assert page.locator(".agent-row").count() == 2  # collapsed
        page.locator('.agent-row[data-path="newsroom/drafting"]').click()
        assert page.locator("#target").inner_text() == "newsroom/drafting"


def test_a_run_streams_into_the_tree_and_a_request_is_answered_in_the_page(
    page: playwright_api.Page, tmp_path: Path
) -> None:
    with running(create_app(newsroom(), MemoryCheckpointStore())) as url:
        page.goto(url + "/")
        page.locator(".agent-row").first.wait_for()
        page.fill("#message", "the city library")
        page.press("#message", "Enter")

        request = page.locator(".request:not(.answered)")
        request.wait_for()
        assert request.locator(".ask").inner_text() == "Publish this draft?"
        researcher = page.locator('.node[data-path="newsroom/drafting/researcher"]').first
        assert researcher.locator(":scope > .entries .text").inner_text() == (
            "Founded in 1911, three branches."
        )
        reasoning = researcher.locator(".reasoning").inner_text()
        assert reasoning == "The lookup answered; say it briefly."
        tool = researcher.locator(".tool")
        assert tool.locator(".tool-name").inner_text() == "lookup"
        tool.locator("summary").click()
        assert "founded 1911, 3 branches" in tool.locator(".tool-body").inner_text()
        writer = page.locator('.node[data-path="newsroom/drafting/writer"]').first
        assert writer.locator(".text").inner_text() == "A short piece on the library."
        assert "tokens" in writer.locator(".node-tokens").inner_text()
        assert page.locator(".run-foot .state").first.inner_text() == "Waiting for your answer"
        tool.locator("summary").click()  # closed again: the screenshot shows the summary row
        waiting = tmp_path / "waiting.png"
        page.screenshot(path=str(waiting))
        if os.environ.get("RAF_UPDATE_SCREENSHOT"):  # docs/serving.md shows this one
            DOCS_SCREENSHOT.write_bytes(waiting.read_bytes())

        request.locator("input").fill("approved")
        request.locator("button").click()
        done = page.locator(".run.done")
        done.wait_for()
        assert done.locator(".text").inner_text() == (
            "Published: A short piece on the library. [approved]"
        )
        assert page.locator(".request.answered").count() == 1
        page.locator(".turn").first.scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "answered.png"))
        assert (tmp_path / "answered.png").stat().st_size > 10_000

        # The thread and its transcript survive a reload.
        thread = page.locator("#thread-id").inner_text()
        page.reload()
        page.locator(".run.done").wait_for()
        assert page.locator("#thread-id").inner_text() == thread
        assert page.locator(".turn").count() == 2


def test_the_page_asks_for_the_token(page: playwright_api.Page) -> None:
    with running(create_app(newsroom(), MemoryCheckpointStore(), token="s3cret")) as url:
        page.goto(url + "/")
        page.locator("#auth").wait_for()
        assert page.locator(".agent-row").count() == 0
        page.fill("#token", "s3cret")
        page.click("#auth button")
        page.locator(".agent-row").first.wait_for()
        assert page.locator("#auth").is_hidden()


def test_an_error_shows_under_the_agent_that_failed(page: playwright_api.Page) -> None:
    team = failing_team()
    with running(create_app(team, MemoryCheckpointStore())) as url:
        page.goto(url + "/")
        page.locator(".agent-row").first.wait_for()
        page.fill("#message", "go")
        page.press("#message", "Enter")
        page.locator(".run.error").wait_for()
        failed = page.locator('.node[data-path="team/broken"]')
        assert "the model endpoint is down" in failed.locator(".failure").inner_text()
        assert "error" in (failed.get_attribute("class") or "")
        assert page.locator('.node[data-path="team/ok"] .text').inner_text() == "fine"
        assert page.locator(".run-foot .state").inner_text() == "Failed"
