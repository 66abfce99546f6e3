"""The run route at its edges: stray resume entries, two open questions, ids across turns,
GET on a run route, failures that close every step, the body limit, threads not kept."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from starlette.types import Message

from raf import IAgent, WorkflowBuilder
from raf.engine import FunctionExecutor, NodeContext
from raf.messages import ChatMessage
from raf.serve import create_app
from raf.serve.threads import Threads
from raf.stores import MemoryCheckpointStore
from tests.serve.events import check_order, parse, types
from tests.serve.test_app import client, run
from tests.serve.trees import failing_team, newsroom, run_input, user

pytestmark = pytest.mark.anyio


def _asker(name: str) -> FunctionExecutor:
    async def ask(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        answer = await ctx.request_info({"question": f"{name}?"})
        await ctx.yield_output(ChatMessage.assistant(f"{name} got: {answer}", author=name))

    return FunctionExecutor(name, ask)


def two_questions() -> IAgent:
    """pair (graph): start fans out to `left` and `right`, each asking a question."""

    async def start(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        await ctx.send(conversation)

    return (
        WorkflowBuilder("pair")
        .add_fan_out(FunctionExecutor("start", start), [_asker("left"), _asker("right")])
        .set_start("start")
        .build()
        .as_agent()
    )


def texts(events: list[dict[str, Any]]) -> list[str]:
    return [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]


def resume(interrupt_id: str, payload: Any) -> list[dict[str, Any]]:
    return [{"interruptId": interrupt_id, "status": "resolved", "payload": payload}]


async def test_a_resume_entry_for_no_open_request_fails_and_stores_nothing() -> None:
    store = MemoryCheckpointStore()
    async with client(create_app(newsroom(), store)) as http:
        first = user("u1", "the city library")
        asked = await run(http, "newsroom", run_input("t1", first))
        [interrupt] = asked[-1]["outcome"]["interrupts"]
        before = (await Threads(store).open("t1")).session.snapshot()
        stray = await run(http, "newsroom", run_input("t1", first, resume=resume("x", "yes")))
        after = (await Threads(store).open("t1")).session.snapshot()
        answered = await run(
            http, "newsroom", run_input("t1", first, resume=resume(interrupt["id"], "yes"))
        )
    assert types(stray) == ["RUN_STARTED", "RUN_ERROR"]
    assert stray[-1]["message"].startswith("no open request 'x'")
    assert interrupt["id"] in stray[-1]["message"]
    assert after == before  # no orphan tool message in the history
    assert answered[-1]["type"] == "RUN_FINISHED"
    assert any(t.endswith("[yes]") for t in texts(answered))


async def test_answering_one_of_two_questions_sends_each_answer_once() -> None:
    async with client(create_app(two_questions(), MemoryCheckpointStore())) as http:
        go = user("u1", "go")
        asked = await run(http, "pair", run_input("t", go))
        left, right = (i["id"] for i in asked[-1]["outcome"]["interrupts"])
        first = await run(http, "pair", run_input("t", go, resume=resume(left, "blue")))
        [still] = first[-1]["outcome"]["interrupts"]
        last = await run(http, "pair", run_input("t", go, resume=resume(right, "red")))
    assert texts(first) == ["left got: blue"]
    assert still["id"] == right  # the open request keeps the id the client knows
    assert texts(last) == ["right got: red"]
    assert "outcome" not in last[-1]


async def test_interrupt_ids_are_unique_across_the_turns_of_a_thread() -> None:
    ids: list[str] = []
    async with client(create_app(newsroom(), MemoryCheckpointStore())) as http:
        sent: list[dict[str, Any]] = []
        for turn in range(3):
            sent.append(user(f"u{turn}", f"topic {turn}"))
            asked = await run(http, "newsroom", run_input("t", *sent))
            [interrupt] = asked[-1]["outcome"]["interrupts"]
            ids.append(interrupt["id"])
            done = await run(
                http, "newsroom", run_input("t", *sent, resume=resume(interrupt["id"], "ok"))
            )
            assert done[-1]["type"] == "RUN_FINISHED" and "outcome" not in done[-1]
    assert len(set(ids)) == 3
    assert all(i.startswith("newsroom/review@1#0~") for i in ids)


async def test_get_on_a_run_route_is_405() -> None:
    async with client(create_app(newsroom(), MemoryCheckpointStore())) as http:
        got = await http.get("/agents/newsroom/drafting/run")
        missing = await http.get("/agents/nowhere/run")
    assert got.status_code == 405
    assert got.headers["allow"] == "POST"
    assert missing.status_code == 404


async def test_a_failing_run_finishes_every_step_it_started() -> None:
    async with client(create_app(failing_team(), MemoryCheckpointStore())) as http:
        events = await run(http, "team", run_input("t", user("u", "go")))
    check_order(events)
    kinds = types(events)
    assert kinds[-1] == "RUN_ERROR"
    assert kinds.count("STEP_STARTED") == kinds.count("STEP_FINISHED") == 2


async def test_context_reaches_the_agent_once_until_it_changes() -> None:
    seen: list[list[tuple[str, str]]] = []

    def answer(messages: list[ChatMessage]) -> str:
        seen.append([(m.role, m.text) for m in messages])
        return "ok"

    from raf import FunctionAgent

    context = [{"description": "city", "value": "Lisbon"}]
    async with client(create_app(FunctionAgent("echo", answer), MemoryCheckpointStore())) as http:
        await run(http, "echo", run_input("t", user("u1", "hi"), context=context))
        await run(
            http, "echo", run_input("t", user("u1", "hi"), user("u2", "and?"), context=context)
        )
    assert seen[0] == [("system", "Context from the client:\n- city: Lisbon"), ("user", "hi")]
    assert seen[1][-2:] == [("assistant", "ok"), ("user", "and?")]  # the context once


def _huge_body(chunks: int, size: int) -> tuple[Callable[[], Any], list[int]]:
    """An ASGI `receive` streaming `chunks` chunks of `size` bytes, and how many were read."""
    read = [0]
    block = b"x" * size

    async def receive() -> Message:
        read[0] += 1
        more = read[0] < chunks
        return {"type": "http.request", "body": block, "more_body": more}

    return receive, read


async def _post(app: Any, receive: Any, headers: list[tuple[bytes, bytes]]) -> list[Message]:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/agents/newsroom/run",
        "raw_path": b"/agents/newsroom/run",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"localhost"), (b"content-type", b"application/json"), *headers],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    await app(scope, receive, send)
    return sent


@pytest.mark.parametrize("token", [None, "tok"])
async def test_a_body_over_the_limit_is_413_without_being_read(token: str | None) -> None:
    limit = 1024 * 1024
    app = create_app(newsroom(), MemoryCheckpointStore(), token=token, max_body_bytes=limit)
    # 300 MB announced: refused before a byte of it is read.
    receive, read = _huge_body(300, 1024 * 1024)
    sent = await _post(app, receive, [(b"content-length", str(300 * 1024 * 1024).encode())])
    assert sent[0]["status"] == 413 and read[0] == 0
    assert b"max-body-bytes" in sent[1]["body"]
    # 300 MB streamed without a length: refused once just over the limit has arrived.
    receive, read = _huge_body(300 * 16, 64 * 1024)
    sent = await _post(app, receive, [])
    assert sent[0]["status"] == 413
    assert read[0] == limit // (64 * 1024) + 1


async def test_a_body_within_the_limit_runs() -> None:
    app = create_app(newsroom(), MemoryCheckpointStore(), max_body_bytes=4096)
    async with client(app) as http:
        ok = await http.post("/agents/newsroom/run", json=run_input("t", user("u", "x")))
        big = await http.post("/agents/newsroom/run", json=run_input("t", user("u", "x" * 5000)))
    assert ok.status_code == 200 and parse(ok.text)[-1]["type"] == "RUN_FINISHED"
    assert big.status_code == 413


def test_the_body_limit_is_checked() -> None:
    with pytest.raises(ValueError, match="max_body_bytes must be positive"):
        create_app(newsroom(), MemoryCheckpointStore(), max_body_bytes=0)


async def test_threads_are_not_kept_in_memory_between_runs() -> None:
    store = MemoryCheckpointStore()
    async with client(create_app(newsroom(), store)) as http:
        for n in range(20):
            await run(http, "newsroom/drafting/writer", run_input(f"t{n}", user("u", "x")))
    assert not store._session_locks._writers  # pyright: ignore[reportPrivateUsage]
    reopened = await Threads(store).open("t7")
    assert "u" in reopened.seen
