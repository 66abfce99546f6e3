"""A session with a store: loaded by its id, saved after each finished turn, fenced."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from raf import (
    AgentError,
    ChatMessage,
    FunctionAgent,
    IAgent,
    PendingRequest,
    Session,
    SessionConflict,
    WorkflowBuilder,
)
from raf.engine import FunctionExecutor, NodeContext
from raf.stores import MemoryCheckpointStore, SqliteCheckpointStore

pytestmark = pytest.mark.anyio


class Refund(BaseModel):
    question: str
    amount: int


def desk() -> IAgent:
    async def ask(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        verdict = await ctx.request_info(Refund(question="Refund it?", amount=40))
        await ctx.yield_output(ChatMessage.assistant(f"refund: {verdict}", author="desk"))

    return (
        WorkflowBuilder("desk")
        .add_edge(
            FunctionAgent("note", lambda m: f"noted {m[-1].text}"), FunctionExecutor("ask", ask)
        )
        .set_start("note")
        .build()
        .as_agent()
    )


def echo() -> FunctionAgent:
    return FunctionAgent("echo", lambda messages: " ".join(m.text for m in messages))


async def test_a_new_session_object_continues_the_conversation_its_id_saved(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    async with SqliteCheckpointStore(path) as store:
        await echo().run("one", Session("chat", store))
    async with SqliteCheckpointStore(path) as store:
        again = await echo().run("two", Session("chat", store))  # a new agent, a new store
    assert again.text == "one one two"


async def test_open_lists_typed_requests_and_a_typed_answer_completes(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    async with SqliteCheckpointStore(path) as store:
        asked = await desk().run("order 7", Session("s", store))
        assert asked.status == "waiting"
        live = Session("s", store)
        assert live.pending_requests() == []  # not loaded yet
    async with SqliteCheckpointStore(path) as store:
        session = await Session.open("s", store)
        [request] = session.pending_requests()
        assert isinstance(request, PendingRequest)
        assert (request.request_id, request.question) == ("desk/ask@1#0", "Refund it?")
        assert request.payload_as(Refund) == Refund(question="Refund it?", amount=40)
        done = await desk().run("yes", session)
        assert (done.status, done.text) == ("completed", "refund: yes")
        assert session.pending_requests() == []
        assert (await Session.open("s", store)).pending_requests() == []


async def test_a_stale_state_never_overwrites_a_newer_turn() -> None:
    store = MemoryCheckpointStore()
    agent = echo()
    await agent.run("one", Session("chat", store))
    stale = await Session.open("chat", store)
    await agent.run("two", Session("chat", store))  # another process's turn
    stale.set("echo#history", [])
    with pytest.raises(SessionConflict, match="nothing was written"):
        await stale.save()
    # A run on the stale object first catches up with the newest turn, then saves.
    response = await agent.run("three", stale)
    assert response.text.startswith("one one two")


async def test_a_failed_turn_saves_nothing() -> None:
    store = MemoryCheckpointStore()
    fail = [True]

    def flaky(messages: list[ChatMessage]) -> str:
        if fail and fail.pop():
            raise RuntimeError("down")
        return "ok"

    agent = FunctionAgent("flaky", flaky)
    with pytest.raises(AgentError, match="down"):
        await agent.run("hi", Session("s", store))
    assert (await Session.open("s", store)).saved is None
    await agent.run("hi", Session("s", store))
    assert (await Session.open("s", store)).history(agent)[-1].text == "ok"


@pytest.mark.parametrize(
    ("session_id", "problem"),
    [("raf:session:x", "reserves"), ("x" * 513, "513 characters"), ("a\x00b", "NUL")],
)
def test_ids_a_store_cannot_keep_apart_are_refused(session_id: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        Session(session_id)


async def test_load_and_save_without_a_store_say_what_to_pass() -> None:
    with pytest.raises(TypeError, match="store=SqliteCheckpointStore"):
        await Session("s").load()


async def test_a_record_key_is_no_sessions_checkpoint_key() -> None:
    store = MemoryCheckpointStore()
    agent = echo()
    # The session `raf...` cannot exist; a session whose id looks like a thread's stays apart.
    await agent.run("a", Session("thread:abc", store))
    await agent.run("b", Session("abc", store))
    assert (await Session.open("abc", store)).history(agent)[-1].text == "b"
    assert (await Session.open("thread:abc", store)).history(agent)[-1].text == "a"


def test_the_question_of_a_request_in_words() -> None:
    assert PendingRequest(request_id="r", payload="Go?").question == "Go?"
    assert PendingRequest(request_id="r", payload={"prompt": "Go?"}).question == "Go?"
    long = PendingRequest(request_id="r", payload={"n": "x" * 1000}).question
    assert len(long) == 500 and long.endswith("…")
