"""HandoffBuilder: handoff tools, control moving with the conversation, turns and limits."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import anyio
import pytest

from raf import (
    FunctionAgent,
    HandoffBuilder,
    HandoffLimitExceeded,
    ReactAgent,
    SequentialBuilder,
    Session,
)
from raf.agent import IAgent
from raf.builders.handoff import UnreachableHandoffWarning
from raf.errors import GraphValidationError
from raf.messages import ChatMessage, ToolCallContent, ToolResultContent, message_list_adapter
from raf.providers.openai import OpenAIProvider, create_client
from raf.testing import ScriptedOpenAIServer, ScriptedProvider, Turn, text, tool_calls
from raf.testing.scripted_provider import ScriptedRequest
from raf.tools import tool
from raf.updates import AgentUpdate, ExecutorInvoked, ExecutorInvoking
from tests.helpers import Foreign, task_count

pytestmark = pytest.mark.anyio


async def stream(agent: IAgent, prompt: str, session: Session | None = None) -> list[AgentUpdate]:
    async with agent.run(prompt, session) as updates:
        return [u async for u in updates]


def react(agent_id: str, script: list[Turn], description: str = "") -> ReactAgent:
    return ReactAgent(agent_id, ScriptedProvider(script), agent_id, description=description)


def requests(agent: ReactAgent) -> list[ScriptedRequest]:
    """The model calls `agent` made (its provider is a `ScriptedProvider`)."""
    provider = agent.provider
    assert isinstance(provider, ScriptedProvider)
    return provider.requests


def server_model(messages: list[ChatMessage]) -> Turn:
    """Plays every agent of the desk: the system prompt says who is asking."""
    who = messages[0].text
    if who == "triage":
        return tool_calls(("handoff_to_billing", {}), text="Let me pass you on.")
    if who == "billing" and "refunded" in str(messages[-1].contents[0]):
        return text("Refund of $12 issued.")
    if who == "billing":
        return tool_calls(("refund", {"amount": 12}))
    raise AssertionError(f"unexpected call by {who!r}")


@tool
def refund(amount: int) -> str:
    """Refund the customer.

    Args:
        amount: dollars.
    """
    return f"refunded {amount}"


async def test_react_agents_hand_off_over_http_with_the_tools_they_were_sent() -> None:
    async with (
        ScriptedOpenAIServer(server_model) as server,
        create_client(server.base_url, "k") as client,
    ):
        provider = OpenAIProvider(client, "scripted")
        triage = ReactAgent("triage", provider, "triage", description="Routes customers.")
        billing = ReactAgent(
            "billing", provider, "billing", tools=[refund], description="Refunds and invoices."
        )
        sales = ReactAgent("sales", provider, "sales", description="New plans and upgrades.")
        desk = (
            HandoffBuilder(triage, id="desk").add_agent(billing).add_agent(sales).build().as_agent()
        )
        items = await stream(desk, "I was charged twice")
        again = await desk.run("charged twice again", Session()).collect()

    triage_call, billing_first, billing_second = server.requests[:3]
    assert [(t.name, t.description) for t in triage_call.tools] == [
        ("handoff_to_billing", "Refunds and invoices."),
        ("handoff_to_sales", "New plans and upgrades."),
    ]
    assert triage_call.tools[0].parameters == {"type": "object", "properties": {}}
    assert [t.name for t in billing_first.tools] == [
        "refund",
        "handoff_to_triage",
        "handoff_to_sales",
    ]
    # Nothing forces a tool: the model may answer in text, which ends the turn.
    assert all("tool_choice" not in r.body for r in server.requests)
    # Every tool result billing is sent follows its call (however other agents' turns are
    # presented), and the conversation it continues holds triage's call and result, paired.
    called: set[str] = set()
    for content in (c for m in billing_first.messages for c in m.contents):
        if isinstance(content, ToolCallContent):
            called.add(content.call_id)
        elif isinstance(content, ToolResultContent):
            assert content.call_id in called
    handed = [c for m in again.messages for c in m.contents if c.type != "text"][:2]
    call, result = handed
    assert isinstance(call, ToolCallContent) and isinstance(result, ToolResultContent)
    assert (call.name, result.call_id, result.is_error) == (
        "handoff_to_billing",
        call.call_id,
        False,
    )
    assert billing_second.messages[-1].role == "tool"

    kinds = [(u.type, getattr(u, "executor_id", getattr(u, "name", ""))) for u in items]
    handoff_at = kinds.index(("tool_call_start", "handoff_to_billing"))
    assert kinds.index(("executor_invoking", "billing")) > handoff_at
    assert ("executor_invoking", "sales") not in kinds
    invoked = [u.executor_id for u in items if isinstance(u, ExecutorInvoked)]
    assert invoked == ["router", "triage", "billing", "router"]
    deltas = {(u.path, u.text) for u in items if u.type == "text_delta"}
    assert (("desk", "billing"), "issued.") in deltas


async def test_a_turn_resumes_at_the_agent_that_ended_the_last_one() -> None:
    triage = react("triage", [tool_calls(("handoff_to_billing", {})), text("triage again")])
    billing = react("billing", [text("refund done"), text("anything else?")])
    workflow = HandoffBuilder(triage, id="desk").add_agent(billing).build()
    desk = workflow.as_agent()
    session = Session()
    first = await desk.run("charged twice", session).collect()
    second = await stream(desk, "thanks", session)
    assert first.messages[-1].text == "refund done"
    assert [u.executor_id for u in second if isinstance(u, ExecutorInvoking)] == [
        "router",
        "billing",
        "router",
    ]
    # The second turn's model call saw the whole conversation of the first.
    assert [m.text for m in requests(billing)[-1].messages][-2:] == ["refund done", "thanks"]

    # Starting every turn at the triage agent instead:
    triage = react("triage", [tool_calls(("handoff_to_billing", {})), text("triage again")])
    billing = react("billing", [text("refund done")])
    desk = (
        HandoffBuilder(triage, id="desk")
        .add_agent(billing)
        .with_resume_at("triage")
        .build()
        .as_agent()
    )
    await desk.run("charged twice", session := Session()).collect()
    assert (await desk.run("thanks", session).collect()).text == "triage again"


async def test_two_handoff_calls_in_one_answer_the_first_wins() -> None:
    triage = react(
        "triage",
        [tool_calls(("handoff_to_sales", {}, "c1"), ("handoff_to_billing", {}, "c2"))],
    )
    billing = react("billing", [text("billing here")])
    sales = react("sales", [text("sales here")])
    desk = HandoffBuilder(triage, id="desk").add_agent(billing).add_agent(sales).build()
    session = Session()
    items = await stream(desk.as_agent(), "help", session)
    called = [(u.call_id, u.is_error, u.result) for u in items if u.type == "tool_called"]
    assert called[0][:2] == ("c1", False)
    assert called[1][:2] == ("c2", True)
    assert "handoff_to_sales was called first" in called[1][2]
    answers = [u.message.text for u in items if u.type == "message_completed" and u.message.text]
    assert answers == ["sales here"]
    # The conversation sales continued holds both calls, each with its result, in order.
    history = session.get_as("desk#history", message_list_adapter)
    assert history is not None
    contents = [(c.type, c.call_id) for m in history for c in m.contents if c.type != "text"]
    assert contents == [
        ("tool_call", "c1"),
        ("tool_call", "c2"),
        ("tool_result", "c1"),
        ("tool_result", "c2"),
    ]
    assert len(requests(sales)) == 1 and not requests(billing)


async def test_ping_pong_past_the_limit_raises_and_does_not_poison_the_session() -> None:
    ping = tool_calls(("handoff_to_b", {}))
    pong = tool_calls(("handoff_to_a", {}))
    a = react("a", [ping, ping, text("a answers")])
    b = react("b", [pong, pong])
    desk = HandoffBuilder(a, id="desk").add_agent(b).with_max_handoffs(3).build().as_agent()
    session = Session()
    with pytest.raises(HandoffLimitExceeded) as info:
        await desk.run("go", session).collect()
    assert info.value.path == ("desk",)
    assert "a -> b -> a -> b -> a" in str(info.value)
    # The failed turn left no active agent behind: the next turn starts at a again.
    assert (await desk.run("once more", session).collect()).text == "a answers"


async def test_declared_routes_are_the_only_handoff_tools() -> None:
    triage = react("triage", [tool_calls(("handoff_to_billing", {}))])
    billing = react("billing", [text("done")])
    sales = react("sales", [])
    desk = (
        HandoffBuilder(triage, id="desk")
        .add_agent(billing)
        .add_agent(sales)
        .add_handoff(triage, ["billing", sales])
        .build()
    )
    assert sorted(desk.successors["triage"]) == ["billing", "router", "sales"]
    assert sorted(desk.successors["billing"]) == ["router"]
    await desk.as_agent().run("hi").collect()
    assert [r.tools for r in requests(billing)] == [[]]
    names = [d.name for d in requests(triage)[0].tools]
    assert names == ["handoff_to_billing", "handoff_to_sales"]


async def test_function_agents_and_foreign_agents_are_terminal_specialists() -> None:
    triage = react("triage", [tool_calls(("handoff_to_refunds", {}))])
    refunds = Foreign(FunctionAgent("refunds", lambda m: "refunded", "Refunds."))
    faq = FunctionAgent("faq", lambda m: "see the FAQ")
    desk = HandoffBuilder(triage, id="desk").add_agent(refunds).add_agent(faq).build()
    response = await desk.as_agent().run("money back").collect()
    assert response.messages[-1].text == "refunded"
    names = [d.name for d in requests(triage)[0].tools]
    assert names == ["handoff_to_refunds", "handoff_to_faq"]
    only_functions = HandoffBuilder(faq, id="faq_desk").add_agent(FunctionAgent("x", str))
    with pytest.warns(UnreachableHandoffWarning, match="from the triage agent 'faq' to 'x';"):
        built = only_functions.build()
    assert (await built.as_agent().run("q").collect()).text == "see the FAQ"


async def test_after_an_agent_that_cannot_hand_off_the_next_turn_starts_at_triage() -> None:
    to_faq = tool_calls(("handoff_to_faq", {}))
    triage = react("triage", [to_faq, text("Anything else?"), to_faq])
    faq = FunctionAgent("faq", lambda m: "See our FAQ.", "Answers common questions.")
    desk = HandoffBuilder(triage, id="desk").add_agent(faq).add_handoff(triage, [faq])
    session = Session()
    agent = desk.build().as_agent()
    assert (await agent.run("Opening hours?", session).collect()).text == "See our FAQ."
    assert (await agent.run("Hello again", session).collect()).text == "Anything else?"
    # With "last", the agent that answered keeps the next turn, whatever it is.
    sticky = HandoffBuilder(react("triage", [to_faq]), id="desk").add_agent(faq)
    sticky_agent = sticky.with_resume_at("last").build().as_agent()
    await sticky_agent.run("Opening hours?", session := Session()).collect()
    again = await sticky_agent.run("And on Sunday?", session).collect()
    assert [m.author for m in again.messages] == ["faq"]


def test_build_warns_about_agents_no_route_reaches() -> None:
    a, b, c = react("a", []), react("b", []), react("c", [])
    builder = HandoffBuilder(a, id="desk").add_agent(b).add_agent(c)
    builder.add_handoff(a, [b]).add_handoff(c, [a, b])
    with pytest.warns(UnreachableHandoffWarning) as caught:
        builder.build()
    assert str(caught[0].message) == (
        "HandoffBuilder 'desk': no handoff route leads from the triage agent 'a' to 'c'; so "
        "the routes c -> a, c -> b can never be taken; add_handoff() a route to them, or "
        "leave them out"
    )
    assert caught[0].filename == __file__


async def test_nested_in_a_sequence_with_a_nested_specialist_every_token_reaches_the_top() -> None:
    check = FunctionAgent("check", lambda m: "checked")
    report = FunctionAgent("report", lambda m: "report ready")
    specialist = SequentialBuilder(id="audit").add_agent(check).add_agent(report).build()
    triage = react("triage", [tool_calls(("handoff_to_audit", {}))])
    desk = HandoffBuilder(triage, id="desk").add_agent(specialist.as_agent()).build()
    after = FunctionAgent("after", lambda m: f"after {m[-1].text}")
    outer = SequentialBuilder(id="outer").add_agent(desk.as_agent()).add_agent(after).build()
    items = await stream(outer.as_agent(), "audit me")
    deltas = [(u.path, u.text) for u in items if u.type == "text_delta"]
    assert (("outer", "desk", "audit", "check"), "checked") in deltas
    assert (("outer", "desk", "audit", "report"), "report ready") in deltas
    assert deltas[-1] == (("outer", "after"), "after report ready")
    calls = [u.path for u in items if u.type == "tool_call_start"]
    assert calls == [("outer", "desk", "triage")]
    steps = [(u.path, u.executor_id) for u in items if isinstance(u, ExecutorInvoking)]
    assert (("outer", "desk", "audit"), "check") in steps
    assert steps[-1] == (("outer",), "after")


async def test_one_built_desk_serves_twenty_sessions_at_once() -> None:
    def triage_model(messages: list[ChatMessage]) -> Turn:
        n = int(messages[1].text.split()[-1])
        return tool_calls((f"handoff_to_{'billing' if n % 2 else 'sales'}", {}), delay=0.01)

    def specialist(agent_id: str) -> ReactAgent:
        def model(messages: list[ChatMessage]) -> Turn:
            users = [m.text for m in messages if m.role == "user" and m.author is None]
            return text(f"{agent_id}: {' | '.join(users)}", delay=0.01)

        return ReactAgent(agent_id, ScriptedProvider(model), agent_id)

    triage = ReactAgent("triage", ScriptedProvider(triage_model), "triage")
    desk = (
        HandoffBuilder(triage, id="desk")
        .add_agent(specialist("billing"))
        .add_agent(specialist("sales"))
        .build()
        .as_agent()
    )
    sessions = [Session(id=f"s{n}") for n in range(20)]
    answers: dict[int, list[str]] = {}

    async def converse(n: int) -> None:
        first = await desk.run(f"customer {n}", sessions[n]).collect()
        second = await desk.run(f"again {n}", sessions[n]).collect()
        answers[n] = [first.text, second.text]

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for n in range(20):
                tg.start_soon(converse, n)
    for n in range(20):
        who = "billing" if n % 2 else "sales"
        assert answers[n] == [f"{who}: customer {n}", f"{who}: customer {n} | again {n}"]


def test_build_mistakes_name_the_ids() -> None:
    triage = react("triage", [])
    billing = react("billing", [])
    with pytest.raises(GraphValidationError, match="'ghost'"):
        HandoffBuilder(triage).add_agent(billing).add_handoff(triage, ["ghost"]).build()
    with pytest.raises(GraphValidationError, match="'billing'"):
        HandoffBuilder(triage).add_agent(billing).add_agent(react("billing", [])).build()
    with pytest.raises(GraphValidationError, match="'triage' would hand off to itself"):
        HandoffBuilder(triage).add_agent(billing).add_handoff("triage", ["triage"]).build()
    faq = FunctionAgent("faq", lambda m: "")
    with pytest.raises(GraphValidationError, match="'faq' cannot hand off"):
        HandoffBuilder(triage).add_agent(faq).add_handoff(faq, [triage]).build()
    with pytest.raises(GraphValidationError, match="'billing desk' cannot name the tool"):
        HandoffBuilder(triage).add_agent(react("billing desk", [])).build()

    @tool(name="handoff_to_billing")
    def clash() -> str:
        """Pretend."""
        return ""

    clashing = ReactAgent("triage", ScriptedProvider([]), "t", tools=[clash])
    with pytest.raises(GraphValidationError, match="handoff_to_billing"):
        HandoffBuilder(clashing).add_agent(billing).build()
    with pytest.raises(TypeError, match=r"add_handoff\(source, \['billing'\]\)"):
        HandoffBuilder(triage).add_handoff(triage, billing)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="0 or more"):
        HandoffBuilder(triage).with_max_handoffs(-1)
    with pytest.raises(TypeError, match=r"HandoffBuilder\(triage\) takes an agent"):
        HandoffBuilder("triage")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"add_agent\(agent\) takes an agent"):
        HandoffBuilder(triage).add_agent(ReactAgent)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match='"active", "triage" or "last"'):
        HandoffBuilder(triage).with_resume_at("billing")  # type: ignore[arg-type]


def test_the_graph_and_metadata() -> None:
    triage = react("triage", [])
    desk = HandoffBuilder(triage).add_agent(FunctionAgent("router", lambda m: "")).build()
    assert desk.id == "workflow_handoff_triage"
    assert list(desk.executors) == ["router_2", "triage", "router"]
    agent = desk.as_agent()
    assert agent.metadata.kind == "handoff"
    assert agent.metadata.children == ("triage", "router")
    assert "router_2" in desk.to_mermaid()
    assert json.loads(json.dumps(agent.metadata.model_dump()))["kind"] == "handoff"


async def test_leaving_the_stream_early_cancels_the_specialist_and_leaks_no_task() -> None:
    cancelled = anyio.Event()

    async def slow(messages: list[ChatMessage]) -> AsyncIterator[str]:
        yield "working"
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        yield "never"  # pragma: no cover

    triage = react("triage", [tool_calls(("handoff_to_slow", {}))])
    desk = HandoffBuilder(triage, id="desk").add_agent(FunctionAgent("slow", slow)).build()
    before = task_count()
    with anyio.fail_after(5):
        async with desk.as_agent().run("go") as updates:
            async for update in updates:
                if update.type == "text_delta" and update.path == ("desk", "slow"):
                    break
        await cancelled.wait()
    assert task_count() == before
