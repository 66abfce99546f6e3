"""Time travel in the studio: a fork from any checkpoint of a thread, a step one included, runs
on from there on a new thread, streamed as a studio run; the original thread is only read."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from starlette.applications import Starlette

from raf import IAgent, WorkflowBuilder
from raf.engine import FunctionExecutor, NodeContext
from raf.messages import ChatMessage
from raf.serve import create_app
from raf.stores import SqliteCheckpointStore
from tests.serve.events import check_order, parse, text_of, types
from tests.serve.trees import newsroom, run_input, user

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def serving(app: Starlette) -> AsyncIterator[httpx2.AsyncClient]:
    """A client of `app` with the app's lifespan running, as under uvicorn."""
    async with app.router.lifespan_context(app):
        transport = httpx2.ASGITransport(app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://localhost") as http:
            yield http


async def run(http: httpx2.AsyncClient, body: dict[str, Any]) -> list[dict[str, Any]]:
    response = await http.post("/agents/newsroom/run", json=body)
    assert response.status_code == 200, response.text
    return parse(response.text)


async def checkpoints(http: httpx2.AsyncClient, thread: str) -> list[dict[str, Any]]:
    return (await http.get(f"/studio/threads/{thread}/checkpoints")).json()["checkpoints"]


async def fork(
    http: httpx2.AsyncClient, thread: str, checkpoint: str, **body: Any
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Fork from `checkpoint`; the answer, and the events of the run it started (if any)."""
    made = await http.post(f"/studio/threads/{thread}/checkpoints/{checkpoint}/fork", json=body)
    assert made.status_code == 201, made.text
    answer = made.json()
    if "runId" not in answer:
        return answer, []
    followed = await http.get(f"/studio/runs/{answer['runId']}/events", params={"after": 0})
    return answer, parse(followed.text)


def answer(thread: str, interrupt: str, value: str) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": f"answer-{thread}-{value}",
        "messages": [],
        "resume": [{"interruptId": interrupt, "status": "resolved", "payload": value}],
    }


async def test_a_fork_from_a_step_runs_the_turn_on_from_there(tmp_path: Path) -> None:
    app = create_app(newsroom(), SqliteCheckpointStore(tmp_path / "studio.sqlite"))
    async with serving(app) as http:
        original = await run(http, run_input("t", user("m1", "the library")))
        before = await checkpoints(http, "t")
        saved = [
            (await http.get(f"/studio/threads/t/checkpoints/{c['id']}")).json() for c in before
        ]
        drafted = next(c for c in before if c["kind"] == "step" and c["superstep"] == 0)
        made, events = await fork(http, "t", drafted["id"])
        new = made["threadId"]
        asked = events[-1]["outcome"]["interrupts"]
        published = await run(http, answer(new, asked[0]["id"], "with changes"))
        after = await checkpoints(http, "t")
        again = [(await http.get(f"/studio/threads/t/checkpoints/{c['id']}")).json() for c in after]
        listed = (await http.get("/studio/threads")).json()["threads"]
        forked = await checkpoints(http, new)
    assert made["forkedFrom"] == {"thread": "t", "checkpoint": drafted["id"]}
    assert made["agent"] == "newsroom"
    check_order(events)
    # Only what comes after the step runs: the review asks again, with the original's ids.
    steps = {e["stepName"] for e in events if e["type"] == "STEP_STARTED"}
    assert "drafting" not in steps and "review" in steps
    assert asked == original[-1]["outcome"]["interrupts"]
    assert text_of(published, "publish") == (
        "Published: A short piece on the library. [with changes]"
    )
    assert types(published)[-1] == "RUN_FINISHED"
    assert after == before and again == saved  # the original thread is only read
    assert listed[0]["id"] == new and listed[0]["forkedFrom"] == made["forkedFrom"]
    assert [c["kind"] for c in forked].count("turn") == 2


async def test_a_fork_from_a_step_of_an_answered_turn_keeps_the_answer(tmp_path: Path) -> None:
    app = create_app(newsroom(), SqliteCheckpointStore(tmp_path / "studio.sqlite"))
    async with serving(app) as http:
        waiting = await run(http, run_input("t", user("m1", "the library")))
        interrupt = waiting[-1]["outcome"]["interrupts"][0]["id"]
        await run(http, answer("t", interrupt, "yes"))
        listed = await checkpoints(http, "t")
        first_turn = next(i for i, c in enumerate(listed) if c["kind"] == "turn")
        reviewed = next(c for c in listed[first_turn:] if c["kind"] == "step")
        made, events = await fork(http, "t", reviewed["id"], threadId="branch")
        reopened = await http.get("/studio/threads/branch/checkpoints")
        newest = reopened.json()["checkpoints"][-1]
        shown = (await http.get(f"/studio/threads/branch/checkpoints/{newest['id']}")).json()
    assert made["threadId"] == "branch"
    assert types(events)[-1] == "RUN_FINISHED" and events[-1].get("outcome") is None
    assert "[yes]" in text_of(events, "publish")
    assert [m["text"] for m in shown["messages"]][-1] == (
        "Published: A short piece on the library. [yes]"
    )
    assert shown["requests"] == []


def nested() -> IAgent:
    """outer (graph): start -> inner (graph: a -> b) -> end; each node says its name."""

    def saying(name: str, *, last: bool = False) -> FunctionExecutor:
        async def say(message: Any, ctx: NodeContext) -> None:
            said = f"{message if isinstance(message, str) else message[-1].text} {name}"
            if last:
                await ctx.yield_output(ChatMessage.assistant(said, author=name))
            else:
                await ctx.send(said)

        return FunctionExecutor(name, say)

    inner = (
        WorkflowBuilder("inner")
        .add_edge(saying("a"), saying("b", last=True))
        .set_start("a")
        .build()
        .as_agent()
    )
    return (
        WorkflowBuilder("outer")
        .add_edge(saying("start"), inner)
        .add_edge("inner", saying("end", last=True))
        .set_start("start")
        .build()
        .as_agent()
    )


async def test_a_fork_from_inside_a_nested_workflow_goes_on_inside_it(tmp_path: Path) -> None:
    app = create_app(nested(), SqliteCheckpointStore(tmp_path / "studio.sqlite"))
    async with serving(app) as http:
        ran = await http.post("/agents/outer/run", json=run_input("t", user("m1", "go")))
        assert types(parse(ran.text))[-1] == "RUN_FINISHED"
        steps = [c for c in await checkpoints(http, "t") if c["kind"] == "step"]
        inside = [step for step in steps if step["inside"] == ["outer/inner"]]
        shown = (await http.get(f"/studio/threads/t/checkpoints/{inside[0]['id']}")).json()
        assert "outer/inner#running" in shown["data"]["session"]
        made, events = await fork(http, "t", inside[0]["id"])
    assert len(inside) == 2  # after `a` and after `b`, inside the outer superstep running `inner`
    started = [e["stepName"] for e in events if e["type"] == "STEP_STARTED"]
    assert "a" not in started and "start" not in started and "b" in started
    said = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert said[-1] == "go start a b end"
    assert types(events)[-1] == "RUN_FINISHED"
    assert made["agent"] == "outer"


async def test_fork_refusals(tmp_path: Path) -> None:
    app = create_app([newsroom(), nested()], SqliteCheckpointStore(tmp_path / "studio.sqlite"))
    async with serving(app) as http:
        await run(http, run_input("t", user("m1", "the library")))
        step = next(c for c in await checkpoints(http, "t") if c["kind"] == "step")
        url = f"/studio/threads/t/checkpoints/{step['id']}/fork"
        unknown = await http.post(url, json={"agent": "nope"})
        other = await http.post(url, json={"agent": "outer"})
        not_text = await http.post(url, json={"agent": 3})
        await http.post(url, json={"threadId": "taken"})
        busy = await http.post(url, json={"threadId": "t"})
    without_lifespan = httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app), base_url="http://localhost"
    )
    async with without_lifespan as http:
        closed = await http.post(url, json={})
    assert unknown.status_code == 422 and "no agent is served at 'nope'" in unknown.text
    assert other.status_code == 422 and "does not run that graph" in other.text
    assert not_text.status_code == 422
    assert busy.status_code == 409
    assert closed.status_code == 503 and "lifespan" in closed.json()["detail"]


def flaky(failures: list[str]) -> IAgent:
    """flaky (graph): `first` -> `second`, which fails while `failures` holds a message."""

    async def first(message: Any, ctx: NodeContext) -> None:
        await ctx.send(message[-1].text + " first")

    async def second(text: str, ctx: NodeContext) -> None:
        if failures:
            raise RuntimeError(failures.pop())
        await ctx.yield_output(ChatMessage.assistant(text + " second", author="second"))

    return (
        WorkflowBuilder("flaky")
        .add_edge(FunctionExecutor("first", first), FunctionExecutor("second", second))
        .set_start("first")
        .build()
        .as_agent()
    )


async def test_a_fork_whose_run_fails_is_the_thread_as_that_turn_found_it(
    tmp_path: Path,
) -> None:
    failures: list[str] = []
    app = create_app(flaky(failures), SqliteCheckpointStore(tmp_path / "studio.sqlite"))
    async with serving(app) as http:
        for n, text in enumerate(("one", "two")):
            ran = await http.post("/agents/flaky/run", json=run_input("t", user(f"m{n}", text)))
            assert types(parse(ran.text))[-1] == "RUN_FINISHED"
        listed = await checkpoints(http, "t")
        kinds = [c["kind"] for c in listed]
        turn = listed[kinds.index("turn")]
        first_turn = (await http.get(f"/studio/threads/t/checkpoints/{turn['id']}")).json()
        step_of_two = listed[kinds.index("turn") + 1]  # after `first`, in the second run
        failures.append("second is down")
        made, events = await fork(http, "t", step_of_two["id"])
        forked = await checkpoints(http, made["threadId"])
        saved = (
            await http.get(f"/studio/threads/{made['threadId']}/checkpoints/{forked[-1]['id']}")
        ).json()
    assert kinds == ["step", "step", "turn", "step", "step", "turn"]
    assert types(events)[-1] == "RUN_ERROR" and "second is down" in events[-1]["message"]
    # The failed turn never happened: the fork is the thread after its first turn.
    assert saved["messages"] == first_turn["messages"]
    assert [m["text"] for m in saved["messages"]] == ["one", "one first second"]
