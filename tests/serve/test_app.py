"""The app in process (httpx2's ASGI transport): routes, tokens, runs, threads, a busy thread."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from starlette.applications import Starlette

from raf import FunctionAgent, SequentialBuilder
from raf.messages import ChatMessage
from raf.serve import create_app
from raf.stores import MemoryCheckpointStore, SqliteCheckpointStore
from tests.serve.events import parse, text_of, types
from tests.serve.trees import failing_team, newsroom, run_input, user

pytestmark = pytest.mark.anyio

REVIEW = "newsroom/review@1#0~1"


def client(app: Starlette, token: str | None = None) -> httpx2.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app), base_url="http://localhost", headers=headers
    )


async def run(http: httpx2.AsyncClient, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    response = await http.post(f"/agents/{path}/run", json=body)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return parse(response.text)


async def test_agents_lists_the_trees_and_one_subtree() -> None:
    echo = FunctionAgent("echo", lambda m: m[-1].text, description="Says it back.")
    async with client(create_app([newsroom(), echo], MemoryCheckpointStore())) as http:
        trees = (await http.get("/agents")).json()
        sub = (await http.get("/agents/newsroom/drafting")).json()
    assert [(t["id"], t["kind"]) for t in trees] == [("newsroom", "graph"), ("echo", "function")]
    assert [c["id"] for c in trees[0]["children"][0]["children"]] == ["researcher", "writer"]
    assert sub["description"] == "Researches and writes a draft."
    assert [c["id"] for c in sub["children"]] == ["researcher", "writer"]


async def test_an_unknown_path_is_404_naming_the_closest_paths() -> None:
    async with client(create_app(newsroom(), MemoryCheckpointStore())) as http:
        shown = await http.get("/agents/newsroom/drafting/writter")
        ran = await http.post("/agents/newsroom/writer/run", json=run_input("t", user("u", "x")))
    assert shown.status_code == 404
    assert "newsroom/drafting/writer" in shown.json()["detail"]
    assert ran.status_code == 404
    assert "closest" in ran.json()["detail"]


async def test_a_token_is_required_when_configured() -> None:
    app = create_app(newsroom(), MemoryCheckpointStore(), token="s3cret")
    async with client(app) as anonymous, client(app, "wrong") as wrong, client(app, "s3cret") as ok:
        assert (await anonymous.get("/agents")).status_code == 401
        assert (await wrong.get("/agents/newsroom")).status_code == 401
        refused = await anonymous.post("/agents/newsroom/run", json=run_input("t", user("u", "x")))
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == "Bearer"
        assert (await ok.get("/agents")).status_code == 200
        assert (await anonymous.get("/")).status_code == 200  # the page holds no data


async def test_the_token_comes_from_raf_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAF_TOKEN", "from-env")
    app = create_app(newsroom(), MemoryCheckpointStore())
    async with client(app) as anonymous, client(app, "from-env") as ok:
        assert (await anonymous.get("/agents")).status_code == 401
        assert (await ok.get("/agents")).status_code == 200


async def test_a_malformed_input_is_422() -> None:
    async with client(create_app(newsroom(), MemoryCheckpointStore())) as http:
        response = await http.post("/agents/newsroom/run", json={"messages": []})
    assert response.status_code == 422
    assert {tuple(e["loc"]) for e in response.json()["errors"]} >= {("threadId",), ("runId",)}


async def test_a_run_streams_the_nested_tree_and_ends_waiting() -> None:
    async with client(create_app(newsroom(), MemoryCheckpointStore())) as http:
        events = await run(http, "newsroom", run_input("t1", user("u1", "the city library")))
    kinds = types(events)
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    started = {e["name"]: e for e in events if e["type"] == "SUBAGENT_STARTED"}
    assert list(started) == [
        "newsroom/drafting",
        "newsroom/drafting/researcher",
        "newsroom/drafting/writer",
    ]
    drafting = started["newsroom/drafting"]["subagentRunId"]
    assert started["newsroom/drafting/writer"]["parentSubagentRunId"] == drafting
    assert started["newsroom/drafting/writer"]["description"] == "Writes the piece."
    steps = [(e["stepName"], e.get("subagentRunId")) for e in events if e["type"] == "STEP_STARTED"]
    assert steps == [
        ("drafting", None),
        ("researcher", drafting),
        ("writer", drafting),
        ("review", None),
    ]
    call = next(e for e in events if e["type"] == "TOOL_CALL_START")
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert call["toolCallName"] == "lookup"
    assert result["toolCallId"] == call["toolCallId"]
    assert result["content"] == "the city library: founded 1911, 3 branches"
    assert "REASONING_MESSAGE_CONTENT" in kinds
    assert text_of(events, "writer") == "A short piece on the library."
    finished = events[-1]
    assert finished["outcome"]["type"] == "interrupt"
    [interrupt] = finished["outcome"]["interrupts"]
    assert interrupt["id"] == REVIEW
    assert interrupt["message"] == "Publish this draft?"
    assert interrupt["metadata"]["payload"]["draft"] == "A short piece on the library."
    assert finished["usage"][0]["totalTokens"] > 0
    suspended = [e for e in events if e["type"] == "SUBAGENT_FINISHED" and "outcome" in e]
    assert suspended == []  # drafting finished; only the graph's own review node waits


async def test_a_resume_entry_answers_the_request_and_the_run_completes() -> None:
    async with client(create_app(newsroom(), MemoryCheckpointStore())) as http:
        first = user("u1", "the city library")
        await run(http, "newsroom", run_input("t1", first))
        resume = [{"interruptId": REVIEW, "status": "resolved", "payload": "approved"}]
        events = await run(http, "newsroom", run_input("t1", first, resume=resume))
    assert "SUBAGENT_STARTED" not in types(events)  # the draft is not written again
    assert text_of(events, "publish") == "Published: A short piece on the library. [approved]"
    assert "outcome" not in events[-1]


async def test_a_plain_user_message_answers_the_oldest_request() -> None:
    async with client(create_app(newsroom(), MemoryCheckpointStore())) as http:
        first = user("u1", "the city library")
        await run(http, "newsroom", run_input("t1", first))
        events = await run(http, "newsroom", run_input("t1", first, user("u2", "ship it")))
    assert text_of(events, "publish").endswith("[ship it]")


async def test_a_cancelling_resume_entry_is_refused_in_the_stream() -> None:
    async with client(create_app(newsroom(), MemoryCheckpointStore())) as http:
        first = user("u1", "the city library")
        await run(http, "newsroom", run_input("t1", first))
        resume = [{"interruptId": REVIEW, "status": "cancelled"}]
        events = await run(http, "newsroom", run_input("t1", first, resume=resume))
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert "answer it with status 'resolved'" in events[-1]["message"]


async def test_a_thread_continues_the_session_and_takes_only_new_messages() -> None:
    seen: list[list[str]] = []

    def answer(messages: list[ChatMessage]) -> str:
        seen.append([m.text for m in messages])
        return f"turn {len(seen)}"

    app = create_app(FunctionAgent("bot", answer), MemoryCheckpointStore())
    async with client(app) as http:
        one = await run(http, "bot", run_input("t", user("u1", "hello")))
        reply = next(e for e in one if e["type"] == "TEXT_MESSAGE_START")
        # An AG-UI client sends the whole conversation again, its own copy of the reply included.
        echoed = {"id": reply["messageId"], "role": "assistant", "content": "turn 1"}
        await run(http, "bot", run_input("t", user("u1", "hello"), echoed, user("u2", "again")))
        await run(http, "bot", run_input("other", user("u3", "fresh")))
    assert seen == [["hello"], ["hello", "turn 1", "again"], ["fresh"]]


async def test_a_restarted_server_continues_a_waiting_thread(tmp_path: Path) -> None:
    first = user("u1", "the city library")
    path = tmp_path / "threads.db"
    async with SqliteCheckpointStore(path) as store, client(create_app(newsroom(), store)) as http:
        await run(http, "newsroom", run_input("t1", first))
    # A new store object and a new app on the same file: what a restarted server has.
    async with SqliteCheckpointStore(path) as again, client(create_app(newsroom(), again)) as http:
        events = await run(http, "newsroom", run_input("t1", first, user("u2", "yes")))
    assert text_of(events, "publish") == "Published: A short piece on the library. [yes]"


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_two_workers_on_one_database_serve_a_thread_in_turn(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Two apps (two server workers) on one database: each turn of a thread sees every turn
    before it, whichever worker served it."""

    def stores() -> tuple[Any, Any]:
        if kind == "sqlite":
            path = tmp_path / "threads.db"
            return SqliteCheckpointStore(path), SqliteCheckpointStore(path)
        from raf.stores import PostgresCheckpointStore

        dsn: str = request.getfixturevalue("postgres_dsn")
        schema: str = request.getfixturevalue("postgres_schema")
        return (
            PostgresCheckpointStore(dsn, schema=schema),
            PostgresCheckpointStore(dsn, schema=schema),
        )

    def counting() -> FunctionAgent:
        return FunctionAgent("count", lambda messages: f"{len(messages)} messages")

    one, two = stores()
    async with (
        one,
        two,
        client(create_app(counting(), one)) as a,
        client(create_app(counting(), two)) as b,
    ):
        said: list[str] = []
        for index, worker in enumerate([a, b, a, b]):
            events = await run(worker, "count", run_input("t", user(f"u{index}", "next")))
            said.append(text_of(events, "count"))
    assert said == ["1 messages", "3 messages", "5 messages", "7 messages"]


async def test_a_second_run_on_a_busy_thread_gets_session_busy() -> None:
    started, gate = anyio.Event(), anyio.Event()

    async def slow(messages: list[ChatMessage]) -> AsyncIterator[str]:
        yield "working"
        started.set()
        await gate.wait()
        yield " done"

    app = create_app(FunctionAgent("slow", slow), MemoryCheckpointStore())
    results: dict[str, list[dict[str, Any]]] = {}

    async def first(http: httpx2.AsyncClient) -> None:
        results["first"] = await run(http, "slow", run_input("busy", user("u1", "go")))

    with anyio.fail_after(10):
        async with client(app) as http, anyio.create_task_group() as tg:
            tg.start_soon(first, http)
            await started.wait()
            results["second"] = await run(http, "slow", run_input("busy", user("u2", "again")))
            gate.set()
    assert types(results["second"]) == ["RUN_STARTED", "RUN_ERROR"]
    assert results["second"][-1]["code"] == "SessionBusy"
    said = results["second"][-1]["message"]
    assert "thread 'busy' has a run in progress" in said and "send this run again" in said
    assert text_of(results["first"], "slow") == "working done"


async def test_a_failing_agent_ends_with_run_error_naming_its_path() -> None:
    team = failing_team()
    async with client(create_app(team, MemoryCheckpointStore())) as http:
        events = await run(http, "team", run_input("t", user("u", "go")))
    error = events[-1]
    assert error["type"] == "RUN_ERROR"
    assert error["code"] == "WorkflowError"
    assert error["metadata"]["path"][0] == "team"
    assert "broken" in error["message"]
    failed = [e for e in events if e["type"] == "SUBAGENT_ERROR"]
    assert failed and all(e["message"] == error["message"] for e in failed)


async def test_running_a_nested_agent_directly() -> None:
    async with client(create_app(newsroom(), MemoryCheckpointStore())) as http:
        events = await run(http, "newsroom/drafting/writer", run_input("w", user("u", "facts")))
    assert text_of(events, "writer") == "A short piece on the library."
    assert "SUBAGENT_STARTED" not in types(events)


async def test_the_page_and_its_files_are_served() -> None:
    async with client(create_app(newsroom(), MemoryCheckpointStore())) as http:
        page = await http.get("/")
        script = await http.get("/static/app.js")
        style = await http.get("/static/style.css")
    assert page.status_code == 200 and "<title>" in page.text
    assert script.status_code == 200 and "fetch(" in script.text
    assert style.status_code == 200


def test_create_app_checks_its_arguments() -> None:
    with pytest.raises(TypeError, match="IAgents"):
        create_app(["not an agent"], MemoryCheckpointStore())  # type: ignore[list-item]
    with pytest.raises(TypeError, match="event log"):
        create_app(newsroom(), store=object())  # type: ignore[arg-type]


async def test_a_thread_named_like_another_threads_key_breaks_nothing() -> None:
    # A workflow checkpoints its steps under the thread's id: `thread:abc` is where an earlier
    # raf kept thread `abc`.
    echo = FunctionAgent("echo", lambda m: " ".join(x.text for x in m))
    desk = SequentialBuilder(id="desk").add_agent(echo).build().as_agent()
    async with client(create_app(desk, MemoryCheckpointStore())) as http:
        first = await run(http, "desk", run_input("thread:abc", user("m1", "one")))
        second = await run(http, "desk", run_input("abc", user("m2", "two")))
        third = await run(http, "desk", run_input("abc", user("m3", "three")))
    assert [e[-1]["type"] for e in (first, second, third)] == ["RUN_FINISHED"] * 3
    assert text_of(third, "echo") == "two two three"


@pytest.mark.parametrize(
    ("thread_id", "said"),
    [("raf:thread:x", "reserves"), ("a\x01b", "control character"), ("t" * 600, "characters")],
)
async def test_a_thread_id_that_cannot_name_a_thread_is_a_422(thread_id: str, said: str) -> None:
    echo = FunctionAgent("echo", lambda m: m[-1].text)
    async with client(create_app(echo, MemoryCheckpointStore())) as http:
        response = await http.post("/agents/echo/run", json=run_input(thread_id, user("m", "hi")))
    assert response.status_code == 422
    assert said in response.json()["detail"]
