"""The studio's routes in process: threads, checkpoints, inspecting one, forking, the graph."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette

from raf import FunctionAgent, WorkflowBuilder
from raf.engine import FunctionExecutor, NodeContext
from raf.serve import create_app
from raf.serve.agui.studio import LIST_LIMIT, bounded
from raf.stores import MemoryCheckpointStore
from tests.serve.events import parse, text_of, types
from tests.serve.trees import newsroom, run_input, user

pytestmark = pytest.mark.anyio

REVIEW = "newsroom/review@1#0"


def client(app: Starlette, token: str | None = None, host: str = "localhost") -> httpx2.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app), base_url=f"http://{host}", headers=headers
    )


async def run(http: httpx2.AsyncClient, body: dict[str, Any]) -> list[dict[str, Any]]:
    response = await http.post("/agents/newsroom/run", json=body)
    assert response.status_code == 200, response.text
    return parse(response.text)


def answer(thread: str, value: str) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": f"answer-{thread}-{value}",
        "messages": [],
        "resume": [{"interruptId": REVIEW, "status": "resolved", "payload": value}],
    }


async def test_threads_are_listed_newest_first() -> None:
    async with client(create_app(newsroom(), MemoryCheckpointStore())) as http:
        assert (await http.get("/studio/threads")).json() == {
            "threads": [],
            "truncated": False,
            "before": None,
        }
        await run(http, run_input("first", user("m1", "the library")))
        await run(http, run_input("second", user("m2", "the museum")))
        listed = (await http.get("/studio/threads")).json()
    assert [t["id"] for t in listed["threads"]] == ["second", "first"]
    assert listed["truncated"] is False
    assert all(t["createdAt"] and t["forkedFrom"] is None for t in listed["threads"])


async def test_a_threads_checkpoints_are_its_turns_and_steps_oldest_first() -> None:
    async with client(create_app(newsroom(), MemoryCheckpointStore())) as http:
        await run(http, run_input("t", user("m1", "the library")))
        first = (await http.get("/studio/threads/t/checkpoints")).json()
        await run(http, answer("t", "yes"))
        both = (await http.get("/studio/threads/t/checkpoints")).json()
    kinds = [c["kind"] for c in first["checkpoints"]]
    assert kinds[-1] == "turn" and set(kinds[:-1]) == {"step"} and len(kinds) >= 3
    assert first["checkpoints"][-1]["pending"] == 1
    ids = [c["id"] for c in both["checkpoints"]]
    assert ids == sorted(ids) and ids[: len(kinds)] == [c["id"] for c in first["checkpoints"]]
    assert [c["kind"] for c in both["checkpoints"]].count("turn") == 2
    assert both["checkpoints"][-1]["pending"] == 0
    steps = [c for c in both["checkpoints"] if c["kind"] == "step"]
    assert {c["workflow"] for c in steps} == {"newsroom"}


async def test_a_checkpoint_shows_its_requests_next_nodes_and_conversation() -> None:
    async with client(create_app(newsroom(), MemoryCheckpointStore())) as http:
        await run(http, run_input("t", user("m1", "the library")))
        listed = (await http.get("/studio/threads/t/checkpoints")).json()["checkpoints"]
        turn = (await http.get(f"/studio/threads/t/checkpoints/{listed[-1]['id']}")).json()
        first_step = next(c for c in listed if c["kind"] == "step" and c["superstep"] == 0)
        step = (await http.get(f"/studio/threads/t/checkpoints/{first_step['id']}")).json()
    assert turn["kind"] == "turn"
    assert turn["requests"] == [
        {
            "id": REVIEW,
            "node": "review",
            "path": ["newsroom"],
            "payload": {"prompt": "Publish this draft?", "draft": "A short piece on the library."},
        }
    ]
    assert step["kind"] == "step" and step["next"] == ["review"] and step["requests"] == []
    assert [m["author"] for m in step["messages"]] == [
        None,
        "researcher",
        "researcher",
        "researcher",
        "writer",
    ]
    assert step["messages"][1]["tools"] == ["lookup"]
    assert step["messages"][-1]["text"] == "A short piece on the library."
    assert step["data"]["workflow"] == "newsroom"


async def test_an_unknown_checkpoint_or_one_of_another_thread_is_404() -> None:
    async with client(create_app(newsroom(), MemoryCheckpointStore())) as http:
        await run(http, run_input("t", user("m1", "the library")))
        await run(http, run_input("u", user("m2", "the museum")))
        other = (await http.get("/studio/threads/u/checkpoints")).json()["checkpoints"][-1]["id"]
        unknown = await http.get("/studio/threads/t/checkpoints/nope")
        foreign = await http.get(f"/studio/threads/t/checkpoints/{other}")
        forked = await http.post(f"/studio/threads/t/checkpoints/{other}/fork", json={})
    assert unknown.status_code == foreign.status_code == forked.status_code == 404
    assert foreign.json()["detail"] == f"thread 't' has no checkpoint {other!r}"


async def test_a_fork_runs_again_from_a_turn_and_leaves_the_thread_as_it_was() -> None:
    async with client(create_app(newsroom(), MemoryCheckpointStore())) as http:
        await run(http, run_input("t", user("m1", "the library")))
        waiting = (await http.get("/studio/threads/t/checkpoints")).json()["checkpoints"][-1]
        published = await run(http, answer("t", "yes"))
        forked = await http.post(f"/studio/threads/t/checkpoints/{waiting['id']}/fork", json={})
        assert forked.status_code == 201, forked.text
        new = forked.json()["threadId"]
        again = await run(http, answer(new, "with changes"))
        listed = (await http.get("/studio/threads")).json()["threads"]
        original = (await http.get("/studio/threads/t/checkpoints")).json()["checkpoints"]
    assert "Published: A short piece on the library. [yes]" in text_of(published, "publish")
    assert "Published: A short piece on the library. [with changes]" in text_of(again, "publish")
    assert types(again)[-1] == "RUN_FINISHED"
    assert new != "t" and listed[0]["id"] == new
    assert listed[0]["forkedFrom"] == {"thread": "t", "checkpoint": waiting["id"]}
    assert original[-1]["pending"] == 0  # the original kept its own answer


async def test_a_fork_into_a_named_thread_and_its_refusals() -> None:
    async with client(create_app(newsroom(), MemoryCheckpointStore())) as http:
        await run(http, run_input("t", user("m1", "the library")))
        listed = (await http.get("/studio/threads/t/checkpoints")).json()["checkpoints"]
        turn, step = listed[-1]["id"], listed[0]["id"]
        url = f"/studio/threads/t/checkpoints/{turn}/fork"
        named = await http.post(url, json={"threadId": "branch"})
        again = await http.post(url, json={"threadId": "branch"})
        of_step = await http.post(f"/studio/threads/t/checkpoints/{step}/fork", json={})
        empty = await http.post(url, json={"threadId": ""})
        not_object = await http.post(url, json=[1])
        huge = await http.post(url, json={"threadId": "x" * 10_000})
        as_text = await http.post(url, content=b"{}", headers={"Content-Type": "text/plain"})
    assert named.status_code == 201 and named.json()["threadId"] == "branch"
    assert again.status_code == 409 and "exists already" in again.json()["detail"]
    assert of_step.status_code == 503  # it runs on: in the app's lifespan (test_studio_forks.py)
    assert empty.status_code == 422 and "threadId is empty" in empty.json()["detail"]
    assert not_object.status_code == 422
    assert huge.status_code == 413
    assert as_text.status_code == 415  # the guard: no page of another origin can fork


async def test_the_graph_of_a_workflow_and_of_a_leaf() -> None:
    echo = FunctionAgent("echo", lambda m: m[-1].text)
    async with client(create_app([newsroom(), echo], MemoryCheckpointStore())) as http:
        graph = (await http.get("/studio/graph/newsroom")).json()
        inner = (await http.get("/studio/graph/newsroom/drafting")).json()
        leaf = (await http.get("/studio/graph/echo")).json()
        unknown = await http.get("/studio/graph/nope")
    assert graph["workflow"] == "newsroom" and graph["start"] == "drafting"
    assert [(n["id"], n["kind"], n["start"]) for n in graph["nodes"]] == [
        ("drafting", "agent", True),
        ("review", "function", False),
        ("publish", "function", False),
    ]
    assert graph["nodes"][0]["agentKind"] == "sequential"
    assert [(e["source"], e["target"]) for e in graph["edges"]] == [
        ("drafting", "review"),
        ("review", "publish"),
    ]
    assert inner["workflow"] == "drafting" and len(inner["nodes"]) >= 2
    assert leaf == {"agent": "echo", "workflow": None, "nodes": [], "edges": []}
    assert unknown.status_code == 404


async def test_every_studio_route_wants_the_token_and_a_known_host() -> None:
    app = create_app(newsroom(), MemoryCheckpointStore(), token="s3cret")
    urls = [
        "/studio/threads",
        "/studio/threads/t/checkpoints",
        "/studio/graph/newsroom",
        "/studio/threads/t/checkpoints/c",
    ]
    async with client(app) as http:
        refused = [(await http.get(url)).status_code for url in urls]
        fork = await http.post("/studio/threads/t/checkpoints/c/fork", json={})
    async with client(app, token="s3cret") as http:
        allowed = (await http.get("/studio/threads")).status_code
        wrong = await http.get("/studio/threads", headers={"Authorization": "Bearer nope"})
    async with client(app, token="s3cret", host="evil.test") as http:
        rebound = (await http.get("/studio/threads")).status_code
    assert refused == [401] * len(urls) and fork.status_code == 401
    assert allowed == 200 and wrong.status_code == 401
    assert rebound == 400


async def test_lists_are_bounded() -> None:
    store = MemoryCheckpointStore()
    echo = FunctionAgent("echo", lambda m: m[-1].text)
    async with client(create_app(echo, store)) as http:
        for index in range(LIST_LIMIT + 2):
            body = run_input(f"t{index}", user(f"m{index}", "hi"))
            assert (await http.post("/agents/echo/run", json=body)).status_code == 200
        listed = (await http.get("/studio/threads")).json()
    assert len(listed["threads"]) == LIST_LIMIT and listed["truncated"] is True
    assert listed["threads"][0]["id"] == f"t{LIST_LIMIT + 1}"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=8) | st.dictionaries(st.text(max_size=5), inner, max_size=8)
    ),
    max_leaves=60,
)


@settings(max_examples=40, deadline=None)
@given(JSON)
def test_bounded_data_stays_small_and_json(value: Any) -> None:
    cut = bounded(value, depth=3, items=3, chars=10)
    text = json.dumps(cut)
    assert len(text) <= len(json.dumps(value)) + 400
    if isinstance(value, str | int | bool) or value is None:
        assert cut == value or (isinstance(value, str) and len(value) > 10)


async def test_a_thread_id_with_slashes_is_addressed_like_any_other() -> None:
    async with client(create_app(newsroom(), MemoryCheckpointStore())) as http:
        await run(http, run_input("team/a", user("m1", "the library")))
        listed = (await http.get("/studio/threads/team%2Fa/checkpoints")).json()["checkpoints"]
        turn = listed[-1]["id"]
        shown = await http.get(f"/studio/threads/team/a/checkpoints/{turn}")
        forked = await http.post(f"/studio/threads/team/a/checkpoints/{turn}/fork", json={})
    assert [t["kind"] for t in listed][-1] == "turn"
    assert shown.status_code == 200 and shown.json()["requests"][0]["node"] == "review"
    assert forked.status_code == 201
    assert forked.json()["forkedFrom"] == {"thread": "team/a", "checkpoint": turn}


async def test_a_large_graph_is_cut_and_says_so() -> None:
    async def step(message: object, ctx: NodeContext) -> None:
        await ctx.send(message)

    builder = WorkflowBuilder("long").add_executor(FunctionExecutor("n0", step))
    for index in range(1, 320):
        builder.add_edge(f"n{index - 1}", FunctionExecutor(f"n{index}", step))
    agent = builder.set_start("n0").build().as_agent()
    async with client(create_app(agent, MemoryCheckpointStore())) as http:
        graph = (await http.get("/studio/graph/long")).json()
    assert len(graph["nodes"]) == 300 and graph["truncated"] is True
    assert len(graph["edges"]) == 299
