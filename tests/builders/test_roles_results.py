"""Role outputs in the log: content by hash apart from the moderator's small signals, ids in
write order, appends that lose a race write nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel

from raf.adapters import AdapterBinding, RoleResult, ThreadContext
from raf.builders import END, RoleEvent, RoleWorkflowBuilder
from raf.errors import SchemaValidationError
from raf.session import Session
from raf.stores import MemoryCheckpointStore, StoredEvent, content_digest, new_id
from raf.stores.ids import MonotonicIds

from .roles_support import REVIEW_KINDS, counting_binding, review_builder

pytestmark = pytest.mark.anyio


class Patch(BaseModel):
    diff: str
    files: list[str]
    passed: bool
    note: str


class Verdict(BaseModel):
    approved: bool


BIG = "+" * 100_000


def _moderator(chain: list[RoleEvent], topic_id: str) -> Any:
    last = chain[-1].role
    return {"__start__": "coder", "coder": "reviewer"}.get(last, END)


def _workflow(coder: Any, seen: list[ThreadContext]) -> Any:
    def adapter(prompt: str, schema: type[Any], /) -> Any:
        async def review(thread: ThreadContext) -> Verdict:
            seen.append(thread)
            return Verdict(approved=True)

        return coder if schema is Patch else review

    return (
        RoleWorkflowBuilder(id="code")
        .add_role("coder", "Code.", Patch)
        .add_role("reviewer", "Review.", Verdict)
        .with_moderator(_moderator)
        .build(AdapterBinding(adapter))
    )


async def test_a_typed_role_keeps_its_scalar_fields_as_meta_and_its_whole_output_as_content() -> (
    None
):
    async def coder(thread: ThreadContext) -> Patch:
        return Patch(diff=BIG, files=["a.py"], passed=True, note="short")

    seen: list[ThreadContext] = []
    store = MemoryCheckpointStore()
    await _workflow(coder, seen).as_agent().run("go", Session(id="s", store=store))
    step = (await store.events(key="s"))[1]
    assert step.meta == {"passed": True, "note": "short"}  # no long text, no list
    assert step.hash is not None
    assert json.loads(await store.get(step.hash))["diff"] == BIG
    (thread,) = seen
    assert thread.steps[0].value["diff"] == BIG  # the next role sees the whole output
    assert thread.steps[0].meta == {"passed": True, "note": "short"}


async def test_a_role_chooses_its_signals_with_a_role_result() -> None:
    async def coder(thread: ThreadContext) -> RoleResult:
        patch = Patch(diff=BIG, files=["a.py"], passed=False, note="n")
        return RoleResult(content=patch, meta={"tests": "red"})

    seen: list[ThreadContext] = []
    store = MemoryCheckpointStore()
    response = await _workflow(coder, seen).as_agent().run("go", Session(id="s", store=store))
    events = await store.events(key="s")
    assert events[1].meta == {"tests": "red"}
    assert len(json.dumps(events[1].meta)) < 100
    assert response.value == Verdict(approved=True)
    assert json.loads(response.messages[0].text)["diff"] == BIG


async def test_a_role_result_whose_content_is_not_the_schema_fails_the_step() -> None:
    async def coder(thread: ThreadContext) -> RoleResult:
        return RoleResult(content={"diff": "x"}, meta={})

    with pytest.raises(SchemaValidationError, match="role 'coder' of role workflow 'code'"):
        await _workflow(coder, []).as_agent().run("go", Session(id="s"))


async def test_meta_is_for_small_signals() -> None:
    async def coder(thread: ThreadContext) -> RoleResult:
        patch = Patch(diff=BIG, files=[], passed=True, note="")
        return RoleResult(content=patch, meta={"diff": BIG})

    with pytest.raises(SchemaValidationError, match="bytes of meta"):
        await _workflow(coder, []).as_agent().run("go", Session(id="s"))


async def test_steps_sort_after_an_opening_another_process_wrote_with_its_clock_ahead() -> None:
    """Another writer's clock is 2 s ahead: the steps written here still sort after it,
    the tick runner never stalls and the graph path never replays a role."""
    store = MemoryCheckpointStore()
    ahead = MonotonicIds(clock=lambda: int(datetime.now(UTC).timestamp() * 1000) + 2_000)
    binding, adapter = counting_binding()
    runner = review_builder().build_tick_runner(binding, store)
    opening = await runner.start("local", "Write.")
    content = await store.get(opening.hash or "")
    await store.append(
        StoredEvent(
            id=ahead.new(),
            occurred_at=datetime.now(UTC),
            kind="review.__start__",
            key="t",
            hash=content_digest(content),
        ),
        content,
    )
    for _ in range(6):
        await runner.tick()
    kinds = [e.kind for e in await store.events(key="t")]
    assert kinds == REVIEW_KINDS
    assert adapter.calls == {"write": 4, "review": 4}


async def test_a_step_that_loses_the_race_to_another_writer_writes_nothing() -> None:
    """While the coder works, another writer appends to the topic: the coder's append names
    the event it read, so it is refused; the moderator decides again from the log."""
    store = MemoryCheckpointStore()
    plays: list[int] = []

    async def coder(thread: ThreadContext) -> Patch:
        plays.append(len(plays))
        if len(plays) == 1:  # someone else writes to the topic meanwhile
            note = b"{}"
            await store.append(
                StoredEvent(
                    id=new_id(),
                    occurred_at=datetime.now(UTC),
                    kind="elsewhere.note",
                    key="s",
                    hash=content_digest(note),
                ),
                note,
            )
        return Patch(diff="d", files=[], passed=True, note=str(len(plays)))

    await _workflow(coder, []).as_agent().run("go", Session(id="s", store=store))
    steps = [e for e in await store.events(key="s") if e.kind == "code.coder"]
    assert [e.meta["note"] for e in steps] == ["2"]  # the first play's step was refused
    assert plays == [0, 1]
