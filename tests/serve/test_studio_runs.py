"""The studio's runs in process: they outlive their request, are re-attached and stopped."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from starlette.applications import Starlette

from raf.serve import create_app
from raf.stores import MemoryCheckpointStore
from tests.serve.events import check_order, parse, types
from tests.serve.trees import Stalling, newsroom, run_input, user

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def serving(app: Starlette, token: str | None = None) -> AsyncIterator[httpx2.AsyncClient]:
    """A client of `app` with the app's lifespan running, as under uvicorn."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with app.router.lifespan_context(app):
        transport = httpx2.ASGITransport(app)
        async with httpx2.AsyncClient(
            transport=transport, base_url="http://localhost", headers=headers
        ) as http:
            yield http


async def test_a_studio_run_streams_as_the_agui_route_does_and_replays() -> None:
    app = create_app(newsroom(), MemoryCheckpointStore())
    async with serving(app) as http:
        body = run_input("t", user("m1", "the library"))
        started = await http.post("/studio/agents/newsroom/runs", json=body)
        replay = await http.get(f"/studio/runs/{body['runId']}/events", params={"after": 0})
        later = await http.get(f"/studio/runs/{body['runId']}/events", params={"after": 3})
        plain = await http.post(
            "/agents/newsroom/run", json=run_input("u", user("m2", "the library"))
        )
        running = (await http.get("/studio/threads/t/runs")).json()
    events = parse(started.text)
    assert started.status_code == 200
    check_order(events)
    assert types(events) == types(parse(plain.text))
    assert events[-1]["outcome"]["interrupts"][0]["id"].startswith("newsroom/review@")
    assert parse(replay.text) == events
    assert parse(later.text) == events[3:]
    assert running == {"runs": []}  # it has ended


async def test_a_run_outlives_its_request_is_found_reattached_and_stopped() -> None:
    stalling = Stalling()
    app = create_app(stalling.agent, MemoryCheckpointStore())
    body = run_input("t", user("m1", "hi"))
    async with serving(app) as http, anyio.create_task_group() as group:
        first = anyio.CancelScope()

        async def open_and_leave() -> None:
            with first:
                await http.post("/studio/agents/staller/runs", json=body)

        group.start_soon(open_and_leave)
        await anyio.to_thread.run_sync(stalling.started.wait)
        first.cancel()  # the page goes away: the run goes on
        in_flight = (await http.get("/studio/threads/t/runs")).json()["runs"]
        assert [r["runId"] for r in in_flight] == [body["runId"]]
        assert in_flight[0]["events"] >= 3 and not stalling.cancelled.is_set()

        followed: list[dict[str, Any]] = []

        async def reattach() -> None:
            response = await http.get(f"/studio/runs/{body['runId']}/events?after=0")
            followed.extend(parse(response.text))

        group.start_soon(reattach)
        stopped = await http.post(f"/studio/runs/{body['runId']}/stop", json={})
    assert stopped.status_code == 200
    assert stalling.cancelled.is_set()
    assert types(followed)[0] == "RUN_STARTED"
    assert followed[-1] == {"type": "RUN_ERROR", "message": "Stopped.", "code": "Stopped"}
    assert any(e.get("delta") == "thinking" for e in followed)


async def test_studio_run_refusals() -> None:
    app = create_app(newsroom(), MemoryCheckpointStore(), token="s3cret")
    body = run_input("t", user("m1", "the library"))
    async with serving(app) as http:
        anonymous = await http.post("/studio/agents/newsroom/runs", json=body)
    async with serving(app, token="s3cret") as http:
        unknown_agent = await http.post("/studio/agents/nope/runs", json=body)
        bad_body = await http.post("/studio/agents/newsroom/runs", json={"messages": 1})
        first = await http.post("/studio/agents/newsroom/runs", json=body)
        again = await http.post("/studio/agents/newsroom/runs", json=body)
        unknown_run = await http.get("/studio/runs/nope/events")
        bad_after = await http.get(f"/studio/runs/{body['runId']}/events?after=x")
        stop_unknown = await http.post("/studio/runs/nope/stop", json={})
    no_lifespan = httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app),
        base_url="http://localhost",
        headers={"Authorization": "Bearer s3cret"},
    )
    async with no_lifespan as http:
        closed = await http.post("/studio/agents/newsroom/runs", json=body)
    assert anonymous.status_code == 401
    assert unknown_agent.status_code == 404
    assert bad_body.status_code == 422 and "RunAgentInput" in bad_body.json()["detail"]
    assert first.status_code == 200
    assert again.status_code == 409 and "exists already" in again.json()["detail"]
    assert unknown_run.status_code == 404 and stop_unknown.status_code == 404
    assert bad_after.status_code == 422
    assert closed.status_code == 503 and "lifespan" in closed.json()["detail"]
