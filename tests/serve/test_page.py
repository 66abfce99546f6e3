"""The web page in real headless Chromium (Debian's), driven by Playwright: no browser download.

The worker's one browser (tests/serve/browser.py); each test gets a fresh page (the `page`
fixture of tests/serve/conftest.py) on a fresh server. tests/serve/test_studio_page.py has the
studio's panels; these are the tree, runs, questions and errors.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from raf.serve import create_app
from raf.stores import MemoryCheckpointStore
from tests.serve.servers import running
from tests.serve.studio_trees import INJECTION, chat, two_questions
from tests.serve.trees import Stalling, failing_team, newsroom

if TYPE_CHECKING:
    from playwright.sync_api import Page  # loaded by the browser fixture, on first use


DOCS_SCREENSHOT = Path(__file__).parents[2] / "docs" / "serving-page.png"


def test_the_tree_renders_with_kinds_and_descriptions(page: Page) -> None:
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


def test_every_agent_row_is_reached_and_operated_by_keyboard(page: Page) -> None:
    with running(create_app(newsroom(), MemoryCheckpointStore())) as url:
        page.goto(url + "/")
        page.locator(".agent-row").first.wait_for()
        focused = lambda: page.evaluate("document.activeElement.dataset.path")  # noqa: E731
        presses = 0
        while focused() is None and presses < 5:  # past the header's buttons
            page.keyboard.press("Tab")
            presses += 1
        assert focused() == "newsroom"
        assert page.locator('.agent-row[tabindex="0"]').count() == 1  # one tab stop for the tree
        seen = [focused()]
        for _ in range(3):
            page.keyboard.press("ArrowDown")
            seen.append(focused())
        assert seen == [
            "newsroom",
            "newsroom/drafting",
            "newsroom/drafting/researcher",
            "newsroom/drafting/writer",
        ]
        page.keyboard.press("Enter")
        assert page.locator("#target").inner_text() == "newsroom/drafting/writer"
        assert focused() == "newsroom/drafting/writer"  # picking keeps the place in the tree
        page.keyboard.press("ArrowLeft")  # a leaf: to its parent
        assert focused() == "newsroom/drafting"
        page.keyboard.press("ArrowLeft")  # open: closes it
        assert page.locator(".agent-row").count() == 2
        assert (
            page.locator('.agent-row[data-path="newsroom/drafting"]').get_attribute("aria-expanded")
            == "false"
        )
        page.keyboard.press("ArrowRight")
        assert page.locator(".agent-row").count() == 4
        page.keyboard.press("Home")
        page.keyboard.press(" ")
        assert page.locator("#target").inner_text() == "newsroom"


def test_a_run_streams_into_the_tree_and_a_request_is_answered_in_the_page(
    page: Page, tmp_path: Path
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
        states = page.locator(".run-foot .state")
        assert [states.nth(i).inner_text() for i in range(2)] == ["Answered", "Completed"]
        page.locator(".turn").first.scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "answered.png"))
        assert (tmp_path / "answered.png").stat().st_size > 10_000

        # The thread and its transcript survive a reload.
        thread = page.locator("#thread-id").inner_text()
        page.reload()
        page.locator(".run.done").wait_for()
        assert page.locator("#thread-id").inner_text() == thread
        assert page.locator(".turn").count() == 2


def test_the_page_asks_for_the_token_says_when_it_is_wrong_and_keeps_the_text(
    page: Page,
) -> None:
    with running(create_app(newsroom(), MemoryCheckpointStore(), token="s3cret")) as url:
        page.goto(url + "/")
        page.locator("#auth").wait_for()
        assert page.locator(".agent-row").count() == 0
        assert page.locator("#auth-refused").is_hidden()  # no token given yet: nothing refused
        page.fill("#message", "typed before connecting")
        page.press("#message", "Enter")
        assert (
            page.locator("#error-text").inner_text() == "Not connected yet: your message is kept."
        )
        assert page.input_value("#message") == "typed before connecting"
        page.fill("#token", "wrong")
        page.click("#auth button")
        page.locator("#auth-refused").wait_for()
        assert "refused that token" in page.locator("#auth-refused").inner_text()
        page.fill("#token", "s3cret")
        page.click("#auth button")
        page.locator(".agent-row").first.wait_for()
        assert page.locator("#auth").is_hidden()
        assert page.input_value("#message") == "typed before connecting"
        page.reload()  # a draft survives a reload too
        page.locator(".agent-row").first.wait_for()
        assert page.input_value("#message") == "typed before connecting"


def test_an_error_shows_under_the_agent_that_failed(page: Page) -> None:
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
        assert page.locator(".failure").count() == 1  # one error box, where it happened
        assert page.locator('.node[data-path="team"]').get_attribute("class") == "node error"


def test_a_stopped_run_says_stopped(page: Page) -> None:
    stalling = Stalling()
    with running(create_app(stalling.agent, MemoryCheckpointStore())) as url:
        page.goto(url + "/")
        page.locator(".agent-row").first.wait_for()
        page.fill("#message", "go")
        page.press("#message", "Enter")
        page.locator(".run.running .text").wait_for()
        assert stalling.started.wait(10)
        page.click("#stop")
        page.locator(".run.stopped").wait_for()
        assert page.locator(".run-foot .state").inner_text() == "Stopped"
        assert page.locator(".failure").count() == 0
        assert stalling.cancelled.wait(10)
        assert page.locator("#stop").is_hidden()


def test_two_open_questions_are_answered_one_at_a_time_with_choice_buttons(
    page: Page,
) -> None:
    with running(create_app(two_questions(), MemoryCheckpointStore())) as url:
        page.goto(url + "/")
        page.locator(".agent-row").first.wait_for()
        page.fill("#message", "go")
        page.press("#message", "Enter")
        page.locator(".run.waiting").wait_for()
        left = page.locator('.request[data-interrupt="pair/left@1#0~1"]')
        right = page.locator('.request[data-interrupt="pair/right@1#0~1"]')
        choices = left.locator(".choices button")
        assert [choices.nth(i).inner_text() for i in range(choices.count())] == ["red", "blue"]
        assert right.locator(".choices").count() == 0  # free text: no buttons
        choices.nth(1).click()
        page.locator(".turn").nth(1).locator(".run-foot .state").filter(
            has_text="Waiting for your answer"
        ).wait_for()
        first = page.locator(".turn").first
        assert "Answered below" in first.locator('[data-interrupt="pair/left@1#0~1"]').inner_text()
        open_now = page.locator(".request:not(.answered):not(.again)")
        assert open_now.count() == 1  # answering left left right open, once
        assert open_now.get_attribute("data-interrupt") == "pair/right@1#0~1"
        assert page.locator(".prompt .bubble.answer").inner_text() == "blue"
        open_now.locator("input").fill("green")
        open_now.locator("button[type=submit]").click()
        page.locator(".run.done").wait_for()
        assert page.locator(".run.done .text").inner_text() == "left got: blue | right got: green"
        assert page.locator(".request:not(.answered):not(.again)").count() == 0
        states = page.locator(".run-foot .state")
        assert [states.nth(i).inner_text() for i in range(3)] == [
            "Answered",
            "Answered",
            "Completed",
        ]


def test_a_group_chat_reads_as_a_timeline_in_markdown_without_injection(
    page: Page,
) -> None:
    with running(create_app(chat(), MemoryCheckpointStore())) as url:
        page.goto(url + "/")
        page.locator(".agent-row").first.wait_for()
        page.fill("#message", "hi")
        page.press("#message", "Enter")
        page.locator(".run.done").wait_for()
        speeches = page.locator(".timeline .speech")
        assert [speeches.nth(i).get_attribute("data-path") for i in range(4)] == [
            "room/alice",
            "room/bob",
            "room/alice",
            "room/bob",
        ]
        first = speeches.nth(0).locator(".text")
        assert first.locator("strong").inner_text() == "Hello"
        assert first.locator("code").inner_text() == "alice"
        assert speeches.nth(1).locator(".text li").all_inner_texts() == ["one", "two"]
        docs = speeches.nth(3).locator(".text a")
        assert docs.get_attribute("href") == "https://example.com/docs"
        assert docs.get_attribute("rel") == "noopener noreferrer"
        injected = speeches.nth(2).locator(".text")
        assert injected.locator("img, a, script").count() == 0
        assert '<img src=x onerror="window.injected=1">' in injected.inner_text()
        assert "(javascript:alert(1))" in injected.inner_text()
        assert page.evaluate("window.injected") is None
        page.click('.segmented [data-layout="tree"]')  # grouped by agent, on request
        assert page.locator(".timeline").count() == 0
        assert page.locator('.node[data-path="room/alice"] .text').count() == 2
        assert INJECTION.split(" and")[0] in page.locator(".run").inner_text()


@pytest.mark.parametrize("viewport", [{"width": 390, "height": 844}])
def test_the_page_works_at_phone_width(page: Page) -> None:
    with running(create_app(newsroom(), MemoryCheckpointStore())) as url:
        page.goto(url + "/")
        page.locator(".agent-row").first.wait_for(state="attached")
        assert page.locator("#sidebar").is_hidden()  # a drawer, closed
        assert page.locator("#target").inner_text() == "newsroom"
        page.fill("#message", "the city library " + "x" * 300)  # a long word wraps too
        page.press("#message", "Enter")
        page.locator(".run.waiting").wait_for()
        page.locator(".tool summary").click()  # its arguments and result hold the long word
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        assert page.evaluate("document.getElementById('turns').scrollWidth") <= 390
        page.locator(".tool summary").click()
        text = page.locator('.node[data-path="newsroom/drafting/writer"] .text').bounding_box()
        assert text is not None and text["width"] > 250  # not one word per line
        answer = page.locator(".request input").bounding_box()
        assert answer is not None and answer["width"] > 150
        if os.environ.get("RAF_UPDATE_SCREENSHOT"):  # docs/serving.md shows this one too
            page.screenshot(path=str(DOCS_SCREENSHOT.with_name("serving-page-phone.png")))
        page.click("#toggle-sidebar")
        assert page.locator("#toggle-sidebar").get_attribute("aria-expanded") == "true"
        row = page.locator('.agent-row[data-path="newsroom/drafting"]')
        box = row.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
        row.focus()
        page.keyboard.press("Enter")
        assert page.locator("#sidebar").is_hidden()  # picking an agent closes the drawer
        assert page.locator("#target").inner_text() == "newsroom/drafting"
        page.click("#toggle-studio")
        page.locator("#graph svg").wait_for()
        assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_under_a_path_prefix_without_the_apps_lifespan_runs_take_the_agui_route(
    page: Page,
) -> None:
    outer = Starlette(routes=[Mount("/raf", app=create_app(newsroom(), MemoryCheckpointStore()))])
    with running(outer) as url:
        page.goto(url + "/raf/")
        page.locator(".agent-row").first.wait_for()
        page.fill("#message", "the city library")
        page.press("#message", "Enter")
        page.locator(
            ".run.waiting"
        ).wait_for()  # the studio's runs answered 503: the plain route ran it
        assert page.locator("#error").is_hidden()
        assert page.locator(".turn").count() == 1


MARKDOWN = """# Title
Some *em*, **strong**, ~~gone~~ and `code <b>`.

- one
- two with [link](https://example.com "x")
1. first
2. second

> quoted **bold**

```python
print("<script>alert(1)</script>")
```

| a | b |
|---|---|
| <i>1</i> | 2 |

[bad](javascript:alert(1)) [data](data:text/html,<script>alert(1)</script>) <script>alert(2)</script>
<img src=x onerror=alert(3)> [ok](mailto:a@example.com) [bad2](javascript:void0)"""


def test_markdown_renders_safely(page: Page) -> None:
    with running(create_app(newsroom(), MemoryCheckpointStore())) as url:
        page.goto(url + "/")
        page.locator(".agent-row").first.wait_for()
        shape = page.evaluate(
            """async (text) => {
                const { renderMarkdown } = await import("./static/markdown.js");
                const root = renderMarkdown(text);
                const tags = [...root.querySelectorAll("*")].map((n) => n.tagName.toLowerCase());
                return {
                    tags: [...new Set(tags)].sort(),
                    links: [...root.querySelectorAll("a")].map((a) => a.getAttribute("href")),
                    code: root.querySelector("pre code").textContent,
                    cell: root.querySelector("td").textContent,
                    text: root.textContent,
                };
            }""",
            MARKDOWN,
        )
    assert shape["tags"] == sorted(
        [
            "a",
            "blockquote",
            "code",
            "del",
            "div",
            "em",
            "h3",
            "li",
            "ol",
            "p",
            "pre",
            "strong",
            "table",
            "td",
            "th",
            "tr",
            "ul",
            "br",
        ]
    )
    assert shape["links"] == ["mailto:a@example.com"]  # the list's link has a title: left as text
    assert shape["code"] == 'print("<script>alert(1)</script>")'
    assert shape["cell"] == "<i>1</i>"
    assert "<script>alert(2)</script>" in shape["text"]
    assert "<img src=x onerror=alert(3)>" in shape["text"]
    assert "[bad](javascript:alert(1))" in shape["text"]
    assert "bad2 (javascript:void0)" in shape["text"]
