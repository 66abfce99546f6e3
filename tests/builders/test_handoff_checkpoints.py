"""A handoff turn checkpointed into SQLite resumes mid-turn; a specialist that asks a human
makes the turn wait, and the next run answers it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from raf import FunctionAgent, HandoffBuilder, ReactAgent, Session
from raf.engine import FunctionExecutor, NodeContext, Workflow, WorkflowBuilder
from raf.messages import ChatMessage
from raf.stores import SqliteCheckpointStore
from raf.testing import ScriptedProvider, Turn, text, tool_calls
from raf.updates import RequestInfoUpdate

pytestmark = pytest.mark.anyio


def build(calls: Counter[str]) -> Workflow:
    def scripted(agent_id: str, turn: Turn) -> ReactAgent:
        def model(messages: list[ChatMessage]) -> Turn:
            calls[agent_id] += 1
            return turn

        return ReactAgent(agent_id, ScriptedProvider(model), agent_id)

    triage = scripted("triage", tool_calls(("handoff_to_billing", {})))
    billing = scripted("billing", tool_calls(("handoff_to_refunds", {})))
    refunds = FunctionAgent("refunds", lambda m: f"refunded after {len(m)} messages")
    return (
        HandoffBuilder(triage, id="desk")
        .add_agent(billing)
        .add_agent(refunds)
        .add_handoff(triage, [billing])
        .add_handoff(billing, [refunds])
        .build()
    )


async def test_a_checkpoint_mid_turn_resumes_at_the_agent_it_handed_to(tmp_path: Path) -> None:
    calls: Counter[str] = Counter()
    path = tmp_path / "desk.sqlite"
    async with SqliteCheckpointStore(path) as store:
        session = Session(id="s1", store=store)
        first = await build(calls).run("money back", session)
        full = [m.text for m in first.outputs[-1]]
        assert full[-1] == "refunded after 5 messages"
        assert session.get("router#state") == {"active": "refunds"}
        checkpoints = await store.list("s1")
        assert len(checkpoints) == 5  # router, triage, billing, refunds, router

    calls.clear()
    async with SqliteCheckpointStore(path) as reopened:
        resumed_session = Session(id="s1", store=reopened)
        # After triage handed off, before billing ran.
        resumed = await build(calls).resume(checkpoints[1], reopened, session=resumed_session)
    assert [m.text for m in resumed.outputs[-1]] == full
    assert calls == Counter({"billing": 1})
    assert resumed_session.get("router#state") == {"active": "refunds"}


def asking_specialist() -> Workflow:
    async def ask(message: Any, ctx: NodeContext) -> None:
        answer = await ctx.request_info({"confirm": "refund $12?"})
        await ctx.yield_output([ChatMessage.assistant(f"refund {answer}", author="refunds")])

    return (
        WorkflowBuilder("refunds")
        .add_executor(FunctionExecutor("ask", ask))
        .set_start("ask")
        .build()
    )


async def test_a_specialist_that_asks_a_human_makes_the_turn_wait() -> None:
    model = ScriptedProvider([tool_calls(("handoff_to_refunds", {})), text("hello again")])
    triage = ReactAgent("triage", model, "triage")
    desk = HandoffBuilder(triage, id="desk").add_agent(asking_specialist().as_agent()).build()
    agent = desk.as_agent()
    session = Session()
    async with agent.run("money back", session) as updates:
        items = [u async for u in updates]
    asked = [u.request_id for u in items if isinstance(u, RequestInfoUpdate)]
    assert asked == ["desk/refunds/ask@0#0"]
    done = await agent.run("yes", session).collect()
    assert done.messages[-1].text == "refund yes"
    assert model.calls == 1  # triage did not run again
    # The turn ended at the specialist: the next one starts there.
    assert session.get("desk/router#state") == {"active": "refunds"}
