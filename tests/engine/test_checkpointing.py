from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from raf.engine import (
    CheckpointSaved,
    CheckpointValueError,
    NodeContext,
    NodeInvoking,
    Workflow,
    WorkflowBuilder,
)
from raf.engine.checkpointing import DATA_VERSION, decode_state, encode_state
from raf.engine.state import RunState
from raf.errors import CheckpointError
from raf.messages import ChatMessage
from raf.session import Session
from raf.stores import MemoryCheckpointStore, SqliteCheckpointStore
from tests.engine.support import Calls

pytestmark = pytest.mark.anyio


def pipeline(calls: Calls) -> Workflow:
    """start -> (left, right) -> join (fan-in) -> report; each node counts in its state."""

    async def step(message: Any, ctx: NodeContext) -> None:
        ctx.state["runs"] = ctx.state.get("runs", 0) + 1
        await ctx.send(f"{message}>{ctx.node_id}")

    async def join(parts: list[str], ctx: NodeContext) -> None:
        await ctx.send(" + ".join(parts))

    async def report(message: str, ctx: NodeContext) -> None:
        await ctx.yield_output(ChatMessage.assistant(message, author="report"))

    return (
        WorkflowBuilder("pipeline")
        .add_fan_out(
            calls.node("start", step), [calls.node("left", step), calls.node("right", step)]
        )
        .add_edge("left", calls.node("deep", step))
        .add_fan_in(["deep", "right"], calls.node("join", join))
        .add_edge("join", calls.node("report", report))
        .set_start("start")
        .build()
    )


async def test_one_checkpoint_per_superstep_with_sortable_ids() -> None:
    store = MemoryCheckpointStore()
    session = Session(id="s1", store=store)
    result = await pipeline(Calls()).run("in", session)
    saved = [e for e in result.events if isinstance(e, CheckpointSaved)]
    assert [e.superstep for e in saved] == [0, 1, 2, 3, 4]
    ids = [e.checkpoint_id for e in saved]
    assert ids == sorted(ids) == await store.list("s1")
    assert await store.latest("s1") == ids[-1] == result.checkpoint_id
    checkpoint = await store.load(ids[1])
    assert checkpoint.workflow_id == "pipeline" and checkpoint.superstep == 1
    assert checkpoint.data["version"] == DATA_VERSION == 2
    json.dumps(checkpoint.data)  # plain JSON all the way down


async def test_no_store_means_no_checkpoints() -> None:
    result = await pipeline(Calls()).run("in", Session())
    assert not any(isinstance(e, CheckpointSaved) for e in result.events)
    assert result.checkpoint_id is None


async def test_resume_from_a_middle_checkpoint_does_not_rerun_completed_nodes() -> None:
    store = MemoryCheckpointStore()
    first_calls = Calls()
    first = await pipeline(first_calls).run("in", Session(id="s", store=store))
    ids = await store.list("s")

    # Superstep 1 ran left and right: `right` already sent into the fan-in buffer.
    again = Calls()
    resumed = await pipeline(again).resume(ids[1], store)
    assert resumed.status == "completed"
    assert again.count == {"deep": 1, "join": 1, "report": 1}
    assert resumed.outputs == first.outputs
    assert [m.text for m in resumed.outputs] == ["in>start>left>deep + in>start>right"]
    invoked = [e.node_id for e in resumed.events if isinstance(e, NodeInvoking)]
    assert invoked == ["deep", "join", "report"]


async def test_resume_restores_node_states_from_the_checkpoint() -> None:
    store = MemoryCheckpointStore()
    await pipeline(Calls()).run("in", Session(id="s", store=store))
    ids = await store.list("s")
    session = Session(id="elsewhere")
    await pipeline(Calls()).resume(ids[0], store, session=session)
    assert session.get("start#state") == {"runs": 1}
    assert session.get("deep#state") == {"runs": 1}
    assert session.get("left#state") == {"runs": 1}


async def test_resume_continues_checkpointing_into_the_store() -> None:
    store = MemoryCheckpointStore()
    await pipeline(Calls()).run("in", Session(id="s", store=store))
    ids = await store.list("s")
    resumed = await pipeline(Calls()).resume(ids[2], store)
    new_ids = [e.checkpoint_id for e in resumed.events if isinstance(e, CheckpointSaved)]
    assert len(new_ids) == 2
    assert await store.list("s") == [*ids, *new_ids]


async def test_resuming_a_completed_run_runs_nothing_and_keeps_its_outputs() -> None:
    store = MemoryCheckpointStore()
    first = await pipeline(Calls()).run("in", Session(id="s", store=store))
    calls = Calls()
    resumed = await pipeline(calls).resume(first.checkpoint_id or "", store)
    assert resumed.status == "completed"
    assert resumed.outputs == first.outputs
    assert sum(calls.count.values()) == 0


async def test_resume_refuses_another_workflow_or_graph() -> None:
    store = MemoryCheckpointStore()
    await pipeline(Calls()).run("in", Session(id="s", store=store))
    checkpoint_id = (await store.list("s"))[0]
    calls = Calls()
    other = WorkflowBuilder("other").add_executor(calls.forward("start")).set_start("start").build()
    with pytest.raises(ValueError, match="belongs to workflow 'pipeline'"):
        await other.resume(checkpoint_id, store)
    changed = (
        WorkflowBuilder("pipeline").add_executor(calls.forward("start")).set_start("start").build()
    )
    with pytest.raises(ValueError, match="different graph"):
        await changed.resume(checkpoint_id, store)
    with pytest.raises(ValueError, match="answer no pending request"):
        await pipeline(Calls()).resume(checkpoint_id, store, responses={"x@0#0": 1})


async def test_an_unserializable_message_fails_the_run_naming_the_node() -> None:
    calls = Calls()
    workflow = (
        WorkflowBuilder("w")
        .add_edge(calls.forward("maker", lambda m: object()), calls.output("user"))
        .set_start("maker")
        .build()
    )
    result = await workflow.run(None, Session(store=MemoryCheckpointStore()))
    assert result.status == "failed"
    error = result.error
    assert isinstance(error, CheckpointValueError) and isinstance(error, TypeError)
    assert error.node_id == "user"
    assert "a message pending for node 'user'" in str(error) and "object" in str(error)
    assert calls.count["user"] == 0


async def test_an_unserializable_node_state_fails_the_run_naming_its_key() -> None:
    async def keep(message: Any, ctx: NodeContext) -> None:
        ctx.state["handle"] = object()

    workflow = (
        WorkflowBuilder("w").add_executor(Calls().node("keeper", keep)).set_start("keeper").build()
    )
    result = await workflow.run(None, Session(store=MemoryCheckpointStore()))
    assert result.status == "failed"
    assert isinstance(result.error, CheckpointValueError)
    assert "session key 'keeper#state'" in str(result.error)


async def test_a_checkpoint_survives_reopening_a_sqlite_store(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    async with SqliteCheckpointStore(path) as store:
        await pipeline(Calls()).run("in", Session(id="s", store=store))
        middle = (await store.list("s"))[2]
    calls = Calls()
    async with SqliteCheckpointStore(path) as reopened:
        resumed = await pipeline(calls).resume(middle, reopened)
    assert calls.count == {"join": 1, "report": 1}
    assert [m.text for m in resumed.outputs] == ["in>start>left>deep + in>start>right"]


async def test_resume_stream_streams_the_continued_run() -> None:
    store = MemoryCheckpointStore()
    await pipeline(Calls()).run("in", Session(id="s", store=store))
    third = (await store.list("s"))[2]
    checkpoint = await store.load(third)
    assert [node for node, _ in checkpoint.data["pending"]] == ["join"]
    async with pipeline(Calls()).resume_stream(third, store) as events:
        seen = [event async for event in events]
    invoked = [e.node_id for e in seen if isinstance(e, NodeInvoking)]
    assert invoked == ["join", "report"]
    assert isinstance(seen[-1], CheckpointSaved) and seen[-1].superstep == 4


class Note(BaseModel):
    text: str
    tags: tuple[str, ...] = ()


TYPED_STATE: dict[str, Any] = {
    "seen": {"x", "y"},
    "frozen": frozenset({1}),
    "pair": (1, 2),
    "msgs": [ChatMessage.user("hi")],
    "note": Note(text="n", tags=("a",)),
    "by_round": {1: "first", 2: "second"},
    "when": datetime(2024, 5, 1, 9, 0, tzinfo=UTC),
    "plain": {"n": 1, "items": [1, 2]},
}


def typed_then_asks() -> Workflow:
    """keep (fills its state with typed values) -> ask (waits for a human) -> show (reads it)."""

    async def keep(message: Any, ctx: NodeContext) -> None:
        ctx.state.update(TYPED_STATE)
        await ctx.send(message)

    async def ask(message: Any, ctx: NodeContext) -> None:
        await ctx.send(await ctx.request_info("ok?"))

    async def show(message: Any, ctx: NodeContext) -> None:
        await ctx.yield_output(message)

    calls = Calls()
    return (
        WorkflowBuilder("typed")
        .add_edge(calls.node("keep", keep), calls.node("ask", ask))
        .add_edge("ask", calls.node("show", show))
        .set_start("keep")
        .build()
    )


async def test_node_state_keeps_its_types_across_a_resume() -> None:
    store = MemoryCheckpointStore()
    waiting = await typed_then_asks().run(1, Session(id="s", store=store))
    assert waiting.status == "waiting"
    elsewhere = Session(id="elsewhere")
    done = await typed_then_asks().resume(
        waiting.checkpoint_id or "",
        store,
        {waiting.requests[0].request_id: "yes"},
        session=elsewhere,
    )
    assert done.outputs == ["yes"]
    state = elsewhere.get("keep#state")
    assert state == TYPED_STATE
    assert {key: type(value) for key, value in state.items()} == {
        key: type(value) for key, value in TYPED_STATE.items()
    }
    assert type(state["msgs"][0]) is ChatMessage
    json.loads(elsewhere.to_json())  # a restored session still serializes


async def test_the_session_snapshot_is_tagged_json() -> None:
    store = MemoryCheckpointStore()
    waiting = await typed_then_asks().run(1, Session(id="s", store=store))
    checkpoint = await store.load(waiting.checkpoint_id or "")
    kept = checkpoint.data["session"]["keep#state"]
    assert kept["t"] == "dict"
    assert kept["v"]["seen"] == {
        "t": "set",
        "v": [{"t": "json", "v": "x"}, {"t": "json", "v": "y"}],
    }
    json.dumps(checkpoint.data)


async def test_a_version_1_checkpoint_still_resumes_with_its_json_session() -> None:
    store = MemoryCheckpointStore()
    waiting = await typed_then_asks().run(1, Session(id="s", store=store))
    checkpoint = await store.load(waiting.checkpoint_id or "")
    old_session = {"keep#state": {"seen": ["x", "y"], "pair": [1, 2]}}
    old = checkpoint.model_copy(
        update={"id": "old", "data": {**checkpoint.data, "version": 1, "session": old_session}}
    )
    await store.save(old)
    session = Session(id="again")
    done = await typed_then_asks().resume(
        "old", store, {waiting.requests[0].request_id: "yes"}, session=session
    )
    assert done.outputs == ["yes"]
    assert session.get("keep#state") == {"seen": ["x", "y"], "pair": [1, 2]}


async def test_an_unknown_data_version_is_refused_naming_it() -> None:
    store = MemoryCheckpointStore()
    waiting = await typed_then_asks().run(1, Session(id="s", store=store))
    checkpoint = await store.load(waiting.checkpoint_id or "")
    await store.save(
        checkpoint.model_copy(update={"id": "future", "data": {**checkpoint.data, "version": 99}})
    )
    with pytest.raises(ValueError, match=r"'future' holds engine data version 99; .* \[1, 2\]"):
        await typed_then_asks().resume("future", store)


async def test_a_model_defined_in_a_function_in_node_state_fails_naming_its_key() -> None:
    class Local(BaseModel):
        x: int = 1

    async def keep(message: Any, ctx: NodeContext) -> None:
        ctx.state["local"] = Local()

    workflow = WorkflowBuilder("w").add_executor(Calls().node("keeper", keep)).set_start("keeper")
    result = await workflow.build().run(None, Session(store=MemoryCheckpointStore()))
    assert isinstance(result.error, CheckpointValueError)
    assert "session key 'keeper#state'" in str(result.error)
    assert "module level" in str(result.error)


async def test_a_foreign_checkpoint_raises_checkpoint_error_naming_it() -> None:
    store = MemoryCheckpointStore()
    await pipeline(Calls()).run("in", Session(id="s", store=store))
    checkpoint_id = (await store.list("s"))[0]
    other = WorkflowBuilder("other").add_executor(Calls().forward("start")).set_start("start")
    with pytest.raises(CheckpointError, match="belongs to workflow 'pipeline'") as caught:
        await other.build().resume(checkpoint_id, store)
    assert caught.value.checkpoint_id == checkpoint_id


@pytest.mark.parametrize(
    "edit",
    [
        lambda data: data.pop("pending"),
        lambda data: data.update(pending=[["left"]]),
        lambda data: data.update(suspended=[["x", {"superstep": 0}]]),
        lambda data: data["session"].update({"k": {"t": "nonsense", "v": 1}}),
        lambda data: data.update(requests=[{"request_id": "r"}]),
        lambda data: data.update(answers=[[1, 2, 3]]),
        lambda data: data.update(outputs=[["report", {"t": "message", "v": {"role": "x"}}]]),
        lambda data: data.pop("scope"),
    ],
)
async def test_an_edited_checkpoint_raises_checkpoint_error_naming_it(edit: Any) -> None:
    store = MemoryCheckpointStore()
    await pipeline(Calls()).run("in", Session(id="s", store=store))
    checkpoint_id = (await store.list("s"))[1]
    original = await store.load(checkpoint_id)
    data = json.loads(json.dumps(original.data))
    edit(data)
    await store.save(original.model_copy(update={"data": data}))
    with pytest.raises(CheckpointError) as caught:
        await pipeline(Calls()).resume(checkpoint_id, store)
    assert caught.value.checkpoint_id == checkpoint_id
    assert checkpoint_id in str(caught.value) and "truncated or edited" in str(caught.value)


async def test_a_truncated_stored_checkpoint_raises_checkpoint_error(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "runs.db"
    store = SqliteCheckpointStore(path)
    await pipeline(Calls()).run("in", Session(id="s", store=store))
    checkpoint_id = (await store.list("s"))[0]
    with sqlite3.connect(path) as db:
        (text,) = db.execute(
            "select data from checkpoints where id = ?", (checkpoint_id,)
        ).fetchone()
        db.execute("update checkpoints set data = ? where id = ?", (text[:-40], checkpoint_id))
    reopened = SqliteCheckpointStore(path)
    with pytest.raises(CheckpointError, match=checkpoint_id) as caught:
        await pipeline(Calls()).resume(checkpoint_id, reopened)
    assert caught.value.checkpoint_id == checkpoint_id


async def test_decoding_never_imports_a_module_a_checkpoint_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import sys

    sys.modules.pop("this", None)
    store = MemoryCheckpointStore()
    calls = Calls()
    await pipeline(calls).run("in", Session(id="s", store=store))
    checkpoint_id = (await store.list("s"))[1]
    original = await store.load(checkpoint_id)
    data = json.loads(json.dumps(original.data))
    data["session"]["planted"] = {"t": "model", "cls": "this:Anything", "v": {"a": 1}}
    await store.save(original.model_copy(update={"data": data}))
    session = Session(id="s", store=store)
    await pipeline(Calls()).resume(checkpoint_id, store, session=session)
    assert "this" not in sys.modules
    assert "Zen of Python" not in capsys.readouterr().out
    # An undeclared model comes back as its data.
    assert session.get("planted") == {"a": 1}


class Grade(BaseModel):
    score: int


async def test_a_declared_or_registered_model_comes_back_as_itself() -> None:
    from raf.engine.codec import _MODELS, decode, register_model  # pyright: ignore[reportPrivateUsage]

    path = f"{Grade.__module__}:Grade"
    _MODELS.pop(path, None)
    data = {"t": "model", "cls": path, "v": {"score": 3}}
    assert decode(data) == {"score": 3}
    register_model(Grade)
    assert decode(data) == Grade(score=3)
    with pytest.raises(TypeError, match="pydantic model class"):
        register_model(dict)  # type: ignore[arg-type]


async def test_a_lone_surrogate_in_the_input_of_a_checkpointing_run_is_replaced() -> None:
    from raf.builders import SequentialBuilder
    from raf.function_agent import FunctionAgent

    echo = FunctionAgent("echo", lambda messages: messages[-1].text)
    agent = SequentialBuilder(id="team").add_agent(echo).build().as_agent()
    store = MemoryCheckpointStore()
    session = Session(id="s", store=store)
    response = await agent.run("bad \ud800 input", session).collect()
    assert response.text == "bad \ufffd input"
    assert [m.text for m in session.get("team#history")] == ["bad \ufffd input"] * 2
    assert await store.latest("s") is not None
    direct = await pipeline(Calls()).run("raw \udfff", Session(id="d", store=store))
    assert direct.status == "completed"
    assert [m.text for m in direct.outputs] == [
        "raw \ufffd>start>left>deep + raw \ufffd>start>right"
    ]


@pytest.mark.parametrize("errors", [set(), {"wf/guide/call_1"}], ids=["none", "one"])
def test_the_answers_that_are_errors_come_back_from_a_checkpoint(errors: set[str]) -> None:
    state = RunState(answers={"wf/guide/call_1": "offline", "wf/ask@1#0": "yes"}, errors=errors)
    data = encode_state(state)
    assert ("errors" in data) == bool(errors)  # a checkpoint without any stays as it was
    assert decode_state(json.loads(json.dumps(data))).errors == errors
