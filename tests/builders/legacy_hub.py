"""Handoff, group-chat and Magentic workflows whose checkpoints, written before the three
patterns shared one hub, are kept in `data/legacy_hub.json` (test_legacy_hub.py resumes them).

The workflows use the public API alone, so the same definitions ran at commit e874e42 (where
a handoff turn travelled as a `(start, conversation, trail)` tuple, a group-chat round as
`(start, transcript, rounds, speaker, said)` and a Magentic answer as an `AgentResponse`).
`python -m tests.builders.legacy_hub OUT.json`, run in a checkout of that commit, wrote the
file: every checkpoint of a checkpointed run and its final answer, and for each waiting run
the session's JSON, the answer given next and the final answer to it.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio

from raf import (
    FunctionAgent,
    GroupChatBuilder,
    HandoffBuilder,
    MagenticBuilder,
    MaxRounds,
    ReactAgent,
    Session,
)
from raf.engine import FunctionExecutor, NodeContext, Workflow, WorkflowBuilder
from raf.messages import ChatMessage
from raf.stores import MemoryCheckpointStore
from raf.testing import ScriptedProvider, Turn, text, tool_calls


def _routing(agent_id: str, target: str) -> ReactAgent:
    return ReactAgent(
        agent_id, ScriptedProvider(lambda m: tool_calls((f"handoff_to_{target}", {}))), agent_id
    )


def handoff() -> Workflow:
    """triage -> billing -> refunds (a function agent that answers)."""
    refunds = FunctionAgent("refunds", lambda m: f"refunded after {len(m)} messages")
    return (
        HandoffBuilder(_routing("triage", "billing"), id="desk")
        .add_agent(_routing("billing", "refunds"))
        .add_agent(refunds)
        .add_handoff("triage", ["billing"])
        .add_handoff("billing", ["refunds"])
        .build()
    )


def group_chat() -> Workflow:
    """Three members round robin, four rounds; each says how much it saw."""
    members = [FunctionAgent(name, lambda m, name=name: f"{name} saw {len(m)}") for name in "abc"]
    chat = GroupChatBuilder(id="chat")
    for member in members:
        chat.add_agent(member)
    return chat.with_termination(MaxRounds(4)).build()


def _manager(messages: list[ChatMessage]) -> Turn:
    prompt = messages[0].text
    if "progress ledger" in prompt:
        rounds = messages[-1].text.count("[calc]") + messages[-1].text.count("[echo]")

        def entry(answer: Any) -> dict[str, Any]:
            return {"reason": "-", "answer": answer}

        return text(
            json.dumps(
                {
                    "is_request_satisfied": entry(rounds >= 2),
                    "is_in_loop": entry(False),
                    "is_progress_being_made": entry(True),
                    "next_speaker": entry("calc" if rounds % 2 == 0 else "echo"),
                    "instruction": entry(f"step {rounds + 1}"),
                }
            )
        )
    if "final answer" in prompt:
        return text(f"done: {messages[-1].text.count('TEAM TRANSCRIPT')} transcript")
    return text("- calc adds, echo repeats")


def magentic(*, review: bool = False) -> Workflow:
    """A manager alternating between two members for two rounds."""
    team = (
        MagenticBuilder(ScriptedProvider(_manager), id="team")
        .add_agent(FunctionAgent("calc", lambda m: f"calc {m[-1].text}"))
        .add_agent(FunctionAgent("echo", lambda m: f"echo {m[-1].text}"))
    )
    return (team.with_plan_review() if review else team).build()


def _asking(agent_id: str) -> Workflow:
    async def ask(message: Any, ctx: NodeContext) -> None:
        answer = await ctx.request_info({"confirm": "go on?"})
        await ctx.yield_output([ChatMessage.assistant(f"{agent_id}: {answer}", author=agent_id)])

    return (
        WorkflowBuilder(agent_id)
        .add_executor(FunctionExecutor("ask", ask))
        .set_start("ask")
        .build()
    )


def waiting_handoff() -> Workflow:
    """triage hands off to a specialist that asks a human."""
    return (
        HandoffBuilder(_routing("triage", "refunds"), id="desk")
        .add_agent(_asking("refunds").as_agent())
        .build()
    )


def waiting_chat() -> Workflow:
    """A chat whose second speaker asks a human."""
    return (
        GroupChatBuilder(id="chat")
        .add_agent(FunctionAgent("a", lambda m: "a spoke"))
        .add_agent(_asking("b").as_agent())
        .with_termination(MaxRounds(3))
        .build()
    )


CHECKPOINTED = {"handoff": handoff, "group_chat": group_chat, "magentic": magentic}
"""Runs whose every checkpoint is kept, by name."""
WAITING = {
    "handoff": waiting_handoff,
    "group_chat": waiting_chat,
    "magentic": lambda: magentic(review=True),
}
"""Runs that wait for a human, by name: the session is kept, then answered."""
PROMPT = "money back"
ANSWER = "yes"


def texts(messages: list[ChatMessage]) -> list[str]:
    """What a test compares: each message's author and text."""
    return [f"{m.author}: {m.text}" for m in messages]


async def _collect() -> dict[str, Any]:
    written: dict[str, Any] = {"checkpointed": {}, "waiting": {}}
    for name, make in CHECKPOINTED.items():
        store = MemoryCheckpointStore()
        result = await make().run(PROMPT, Session(id=name, store=store))
        checkpoints = [await store.load(i) for i in await store.list(name)]
        written["checkpointed"][name] = {
            "checkpoints": [c.model_dump(mode="json") for c in checkpoints],
            "answer": texts(result.outputs[-1]),
        }
    for name, make in WAITING.items():
        agent = make().as_agent()
        session = Session()
        waiting = await agent.run(PROMPT, session).collect()
        assert waiting.status == "waiting", name
        kept = session.to_json()
        done = await agent.run(ANSWER, session).collect()
        written["waiting"][name] = {"session": kept, "answer": texts(done.messages)}
    return written


if __name__ == "__main__":
    with open(sys.argv[1], "w") as out:
        json.dump(anyio.run(_collect), out, indent=1, sort_keys=True)
