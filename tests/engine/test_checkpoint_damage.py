"""Checkpoints edited by hand: resuming raises `CheckpointError` naming the checkpoint (or
works), never whatever decoding happened to hit."""

from __future__ import annotations

import copy
from typing import Any, cast

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raf.engine import FunctionExecutor, NodeContext, Workflow, WorkflowBuilder
from raf.errors import CheckpointError
from raf.function_agent import FunctionAgent
from raf.messages import ChatMessage
from raf.session import Session
from raf.stores import MemoryCheckpointStore

DECODING = (KeyError, IndexError, TypeError, ValueError, AttributeError)


def nested() -> Workflow:
    """outer: prep -> inner (writer -> review, which asks) -> wrap."""

    async def review(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        verdict = await ctx.request_info({"draft": conversation[-1].text})
        await ctx.yield_output(ChatMessage.assistant(f"{conversation[-1].text}: {verdict}"))

    async def forward(message: Any, ctx: NodeContext) -> None:
        await ctx.send(message)

    async def wrap(conversation: Any, ctx: NodeContext) -> None:
        await ctx.yield_output(ChatMessage.assistant(f"wrapped: {conversation!s}"))

    writer = FunctionAgent("writer", lambda messages: f"draft on {messages[0].text}")
    inner = (
        WorkflowBuilder("inner")
        .add_edge(writer, FunctionExecutor("review", review))
        .set_start("writer")
        .build()
        .as_agent()
    )
    return (
        WorkflowBuilder("outer")
        .add_edge(FunctionExecutor("prep", forward), inner)
        .add_edge(inner, FunctionExecutor("wrap", wrap))
        .set_start("prep")
        .build()
    )


async def waiting_checkpoint() -> tuple[MemoryCheckpointStore, str, dict[str, Any]]:
    store = MemoryCheckpointStore()
    await nested().as_agent().run("dogs", Session(id="s", store=store)).collect()
    latest = await store.latest("s")
    assert latest is not None
    return store, latest, (await store.load(latest)).data


def places(data: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside `data` (dict keys and list indexes)."""
    found = [at] if at else []
    if isinstance(data, dict):
        for key, value in cast(dict[str, Any], data).items():
            found += places(value, (*at, key))
    elif isinstance(data, list):
        for index, value in enumerate(cast(list[Any], data)):
            found += places(value, (*at, index))
    return found


def edit(data: dict[str, Any], at: tuple[Any, ...], how: str, value: Any) -> None:
    parent: Any = data
    for step in at[:-1]:
        parent = parent[step]
    last = at[-1]
    if how == "drop":
        del parent[last]
    else:
        parent[last] = value


async def resume_edited(at_index: int, how: str, value: Any) -> None:
    store, checkpoint_id, original = await waiting_checkpoint()
    data = copy.deepcopy(original)
    # Protected by the store's own checks, which another part of raf makes.
    found = [p for p in places(data) if p[0] not in ("version", "workflow", "graph")]
    edit(data, found[at_index % len(found)], how, value)
    saved = await store.load(checkpoint_id)
    await store.save(saved.model_copy(update={"data": data}))
    try:
        result = await nested().resume(checkpoint_id, store, session=Session(id="s", store=store))
    except CheckpointError as exc:
        assert exc.checkpoint_id == checkpoint_id and checkpoint_id in str(exc)
        return
    error = result.error
    while error is not None:
        assert not isinstance(error, DECODING), repr(error)
        error = error.__cause__


wrong = st.one_of(
    st.none(),
    st.integers(-3, 3),
    st.text(max_size=3),
    st.just("ghost"),
    st.just([]),
    st.just({}),
    st.just([["ghost", []]]),
    st.just({"t": "nope"}),
)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=150)
@given(at=st.integers(0, 10_000), how=st.sampled_from(["drop", "set"]), value=wrong)
def test_an_edited_checkpoint_resumes_or_raises_checkpoint_error(
    backend: str, at: int, how: str, value: Any
) -> None:
    anyio.run(resume_edited, at, how, value, backend=backend)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize(
    ("where", "what"),
    [
        (("pending",), [["ghost", []]]),
        (("session", "outer/inner#pending", "v", "state"), None),
        (("turn", "base"), "many"),
        (("turn",), {"path": ["outer"]}),
    ],
)
def test_each_damage_names_the_checkpoint(backend: str, where: tuple[str, ...], what: Any) -> None:
    async def main() -> None:
        store, checkpoint_id, original = await waiting_checkpoint()
        data = copy.deepcopy(original)
        edit(data, where, "drop" if what is None else "set", what)
        saved = await store.load(checkpoint_id)
        await store.save(saved.model_copy(update={"data": data}))
        with pytest.raises(CheckpointError) as raised:
            await nested().resume(checkpoint_id, store)
        assert raised.value.checkpoint_id == checkpoint_id
        assert f"checkpoint {checkpoint_id!r}" in str(raised.value)

    anyio.run(main, backend=backend)
