"""The studio's panels in real headless Chromium: the graph lit by a run, checkpoints and a fork
from one, raw events, past threads, and a run that survives a reload.

The worker's one browser, shared with tests/serve/test_page.py (tests/serve/browser.py); a fresh
page (tests/serve/conftest.py) and server each.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import pytest

from raf.serve import create_app
from raf.serve.agui.studio import LIST_LIMIT
from raf.serve.threads import Threads
from raf.stores import MemoryCheckpointStore, SqliteCheckpointStore
from tests.serve.servers import running
from tests.serve.studio_trees import Gated, slow
from tests.serve.trees import Stalling, newsroom, run_input, user

if TYPE_CHECKING:
    from playwright.sync_api import Page  # loaded by the browser fixture, on first use


def node_state(page: Page, node: str) -> str:
    classes = page.locator(f'#graph g.gnode[data-node="{node}"]').get_attribute("class") or ""
    return next(c for c in classes.split() if c in {"idle", "active", "done", "waiting", "error"})


def ask(page: Page, text: str) -> None:
    page.fill("#message", text)
    page.press("#message", "Enter")


def open_studio(page: Page, tab: str) -> None:
    if page.locator("#toggle-studio").get_attribute("aria-expanded") != "true":
        page.click("#toggle-studio")
    page.click(f"#tab-{tab}")


def test_the_graph_is_drawn_and_its_nodes_light_up_as_the_run_goes(page: Page) -> None:
    stalling = Stalling()
    with running(create_app([slow(stalling), newsroom()], MemoryCheckpointStore())) as url:
        page.goto(url + "/")
        page.locator(".agent-row").first.wait_for()
        open_studio(page, "graph")
        page.locator('#graph g.gnode[data-node="after"]').wait_for()
        assert page.locator("#graph-caption").inner_text() == "slow · graph · 2 nodes"
        edge = page.locator("#graph g.gedge")
        assert (edge.get_attribute("data-source"), edge.get_attribute("data-target")) == (
            "staller",
            "after",
        )
        assert node_state(page, "staller") == node_state(page, "after") == "idle"
        ask(page, "go")
        assert stalling.started.wait(10)
        page.locator('#graph g.gnode.active[data-node="staller"]').wait_for()
        assert node_state(page, "after") == "idle"
        page.click("#stop")
        page.locator(".run.stopped").wait_for()
        assert node_state(page, "staller") == "idle"
        ask(page, "again")  # the staller answers this time; both nodes run
        page.locator('#graph g.gnode.done[data-node="after"]').wait_for()
        assert node_state(page, "staller") == "done"

        page.locator('.agent-row[data-path="newsroom"]').click()
        page.locator('#graph g.gnode[data-node="publish"]').wait_for()
        ask(page, "the city library")
        page.locator(".run.waiting").wait_for()
        page.locator('#graph g.gnode.waiting[data-node="review"]').wait_for()
        assert [node_state(page, n) for n in ("drafting", "review", "publish")] == [
            "done",
            "waiting",
            "idle",
        ]
        page.locator('#graph g.gnode[data-node="drafting"]').focus()
        page.keyboard.press("Enter")  # a node that is an agent: pick it
        assert page.locator("#target").inner_text() == "newsroom/drafting"


def test_checkpoints_are_inspected_and_a_turn_runs_again_on_a_new_thread(page: Page) -> None:
    with running(create_app(newsroom(), MemoryCheckpointStore())) as url:
        page.goto(url + "/")
        page.locator(".agent-row").first.wait_for()
        ask(page, "the city library")
        page.locator(".run.waiting").wait_for()
        page.locator(".request input").fill("approved")
        page.locator(".request button[type=submit]").click()
        page.locator(".run.done").wait_for()
        original = page.locator("#thread-id").inner_text()

        open_studio(page, "checkpoints")
        turns = page.locator("#checkpoints .checkpoint.cp-turn")
        turns.nth(1).wait_for()
        assert turns.all_inner_texts()[0].startswith("After turn 2")
        assert page.locator("#checkpoints .checkpoint.cp-step").count() >= 3
        turns.nth(1).locator("button").click()  # after turn 1: waiting for the review
        inspector = page.locator("#inspector")
        inspector.locator("h3").filter(has_text="After turn 1").wait_for()
        assert "newsroom/review@" in inspector.locator(".cp-requests").inner_text()
        assert "Publish this draft?" in inspector.locator(".cp-requests").inner_text()
        assert "the city library" in inspector.locator(".cp-messages").inner_text()
        step = page.locator("#checkpoints .checkpoint.cp-step").first
        step.locator("button").click()
        inspector.locator("h3").filter(has_text="Step").wait_for()
        assert inspector.locator(".fork").count() == 1  # a step inside a run can fork too

        turns.nth(1).locator("button").click()
        inspector.locator(".fork").click()
        page.wait_for_function(
            "(old) => !document.getElementById('thread-id').textContent.startsWith(old)",
            arg=original,
        )
        assert page.locator(".turn").count() == 1  # the fork's past: the first turn
        request = page.locator(".request:not(.answered)")
        request.locator("input").fill("with changes")
        request.locator("button[type=submit]").click()
        page.locator(".run.done").wait_for()
        assert page.locator(".run.done .text").inner_text() == (
            "Published: A short piece on the library. [with changes]"
        )

        threads = page.locator("#threads .thread-row")
        threads.nth(1).wait_for()
        assert "fork of" in threads.first.inner_text()
        page.locator(f'#threads .thread-row[data-thread^="{original}"]').click()
        page.locator(".run.done").wait_for()
        assert page.locator("#thread-id").inner_text() == original
        assert page.locator(".run.done .text").inner_text() == (
            "Published: A short piece on the library. [approved]"
        )


def test_a_step_runs_again_on_a_new_thread_and_the_page_follows_the_run(
    page: Page, tmp_path: Path
) -> None:
    path = tmp_path / "studio.sqlite"
    with running(lambda: create_app(newsroom(), SqliteCheckpointStore(path))) as url:
        page.goto(url + "/")
        page.locator(".agent-row").first.wait_for()
        ask(page, "the city library")
        page.locator(".run.waiting").wait_for()
        original = page.locator("#thread-id").inner_text()
        asked = page.locator(".request .ask").inner_text()

        open_studio(page, "checkpoints")
        page.locator("#checkpoints .checkpoint.cp-turn").first.wait_for()
        after_drafting = re.compile(r"^Step 0 of newsroom")  # not the steps inside drafting
        drafted = page.locator("#checkpoints .checkpoint.cp-step").filter(has_text=after_drafting)
        assert "inside newsroom/drafting" in page.locator("#checkpoints").inner_text()
        drafted.locator("button").click()
        inspector = page.locator("#inspector")
        inspector.locator("h3").filter(has_text=after_drafting).wait_for()
        inspector.locator(".fork").click()
        page.wait_for_function(
            "(old) => !document.getElementById('thread-id').textContent.startsWith(old)",
            arg=original,
        )
        # The fork's run goes on from the step: the review asks again, drafting does not rerun.
        forked = page.locator(".turn").last
        forked.locator(".run.waiting").wait_for()
        assert page.locator(".turn").count() == 1
        assert forked.locator(".request .ask").inner_text() == asked
        request = forked.locator(".request:not(.answered)")
        request.locator("input").fill("with changes")
        request.locator("button[type=submit]").click()
        page.locator(".turn").nth(1).locator(".run.done").wait_for()
        assert page.locator(".turn").nth(1).locator(".text").inner_text() == (
            "Published: A short piece on the library. [with changes]"
        )
        page.locator("#threads .thread-row .thread-meta").filter(has_text="fork of").wait_for()
        page.locator(f'#threads .thread-row[data-thread^="{original}"]').click()
        page.locator(".run.waiting").wait_for()  # the original still waits on its question
        assert page.locator("#thread-id").inner_text() == original


def test_the_raw_events_panel_lists_every_event_of_the_thread(page: Page) -> None:
    with running(create_app(newsroom(), MemoryCheckpointStore())) as url:
        page.goto(url + "/")
        page.locator(".agent-row").first.wait_for()
        open_studio(page, "events")
        assert page.locator("#events-caption").inner_text() == "No events yet."
        ask(page, "the city library")
        page.locator(".run.waiting").wait_for()
        page.locator("#events .event.RUN_FINISHED").wait_for()
        kinds = page.locator("#events .ev-type").all_inner_texts()
        assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
        assert "TOOL_CALL_START" in kinds and "STEP_STARTED" in kinds
        assert page.locator("#events-caption").inner_text() == f"{len(kinds)} events in 1 runs"
        page.locator("#events .event.TOOL_CALL_START summary").click()
        assert (
            '"toolCallName": "lookup"'
            in page.locator("#events .event.TOOL_CALL_START pre").inner_text()
        )


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 800}])
def test_a_run_in_flight_survives_a_reload(page: Page) -> None:
    stalling = Stalling()
    with running(create_app(stalling.agent, MemoryCheckpointStore())) as url:
        page.goto(url + "/")
        page.locator(".agent-row").first.wait_for()
        ask(page, "go")
        page.locator(".run.running .text").filter(has_text="thinking").wait_for()
        assert stalling.started.wait(10)
        page.reload()
        page.locator(".run.running .text").filter(has_text="thinking").wait_for()
        assert page.locator(".run-foot .state").inner_text() == "Running…"
        assert not stalling.cancelled.is_set()  # re-attached: the run went on
        assert page.locator(".run .text").inner_text() == "thinking"  # no event twice
        # The turn is drawn from the browser's cache before the page re-attaches to the run.
        page.locator("#stop").wait_for(state="visible")
        page.click("#stop")
        page.locator(".run.stopped").wait_for()
        assert stalling.cancelled.wait(10)
        ask(page, "more")
        page.locator(".turn").nth(1).locator(".run.done").wait_for()
        assert page.locator(".turn").nth(1).locator(".text").inner_text() == "back again"


def test_a_thread_another_client_ran_is_reopened_from_the_server(page: Page) -> None:
    with running(create_app(newsroom(), MemoryCheckpointStore())) as url:
        ran = page.request.post(
            url + "/agents/newsroom/run",
            data=run_input("elsewhere", user("m1", "the city library")),
            headers={"Content-Type": "application/json"},
        )
        assert ran.ok and "RUN_FINISHED" in ran.text()
        page.goto(url + "/")
        page.locator(".agent-row").first.wait_for()
        page.locator('#threads .thread-row[data-thread="elsewhere"]').click()
        page.locator(".prompt.restored").wait_for()
        speeches = page.locator(".timeline .speech")
        assert "the city library" in speeches.first.inner_text()
        assert "A short piece on the library." in page.locator(".run").inner_text()
        request = page.locator(".request:not(.answered)")
        assert request.locator(".ask").inner_text() == "Publish this draft?"
        request.locator("input").fill("fine")
        request.locator("button[type=submit]").click()
        page.locator(".turn").nth(1).locator(".run.done").wait_for()
        assert "[fine]" in page.locator(".turn").nth(1).locator(".text").inner_text()
        assert page.locator(".turn").first.locator(".run-foot .state").inner_text() == "Answered"


def test_a_run_that_ended_while_the_page_was_away_is_read_to_its_end(page: Page) -> None:
    gated = Gated()
    with running(create_app(gated.agent, MemoryCheckpointStore())) as url:
        page.goto(url + "/")
        page.locator(".agent-row").first.wait_for()
        ask(page, "go")
        page.locator(".run.running .text").filter(has_text="waiting").wait_for()
        assert gated.started.wait(10)
        page.goto("about:blank")  # the page goes away; the run goes on (and may end) meanwhile
        gated.release.set()
        page.goto(url + "/")
        page.locator(".run.done").wait_for()
        assert page.locator(".run .text").inner_text() == "waiting and done"
        assert page.locator(".run-foot .state").inner_text() == "Completed"


def test_older_threads_come_a_page_at_a_time(page: Page, tmp_path: Path) -> None:
    path = tmp_path / "studio.sqlite"
    names = [f"past-{n:03d}" for n in range(LIST_LIMIT + 30)]

    async def make_threads() -> None:
        async with SqliteCheckpointStore(path) as store:
            threads = Threads(store)
            for name in names:
                async with threads.hold(name) as thread:
                    await threads.save(thread)

    # Playwright's sync API runs an event loop in this thread: the threads are made in another.
    maker = threading.Thread(target=anyio.run, args=(make_threads,))
    maker.start()
    maker.join(60)
    with running(lambda: create_app(newsroom(), SqliteCheckpointStore(path))) as url:
        page.goto(url + "/")
        page.locator(f'#threads [data-thread="{names[-1]}"]').wait_for()
        rows = page.locator("#threads .thread-row")
        assert page.locator(f'#threads [data-thread="{names[0]}"]').count() == 0
        shown = rows.count()  # the newest page, and the page's own new thread
        assert shown == LIST_LIMIT + 1
        page.locator("#threads .older-threads").click()
        page.locator(f'#threads [data-thread="{names[0]}"]').wait_for()
        assert rows.count() == shown + 30
        assert page.locator("#threads .older-threads").count() == 0
        page.locator(f'#threads [data-thread="{names[0]}"]').click()
        assert page.locator("#thread-id").inner_text().startswith(names[0][:8])
