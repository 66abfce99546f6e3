"""The edges of the human-in-the-loop protocol: a turn that fails after answering, request ids
of agents entered more than once, and answers to requests that do not exist."""

from __future__ import annotations

import json
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from raf.agent import BaseAgent
from raf.engine import FunctionExecutor, NodeContext, WorkflowAgent, WorkflowBuilder
from raf.errors import AgentError, UnknownRequest, WorkflowError
from raf.function_agent import FunctionAgent
from raf.messages import ChatMessage, ToolCallContent
from raf.react import ReactAgent
from raf.run import RunContext
from raf.session import Session
from raf.testing import ScriptedProvider, text
from raf.updates import AgentResponse

pytestmark = pytest.mark.anyio


def approval(workflow_id: str) -> WorkflowAgent:
    """writer -> review (asks a human) -> publish: answers "{draft}: {verdict}"."""

    async def review(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        verdict = await ctx.request_info({"draft": conversation[-1].text})
        await ctx.send(f"{conversation[-1].text}: {verdict}")

    async def publish(line: str, ctx: NodeContext) -> None:
        await ctx.yield_output(ChatMessage.assistant(line, author=workflow_id))

    writer = FunctionAgent("writer", lambda messages: f"draft on {messages[0].text}")
    return (
        WorkflowBuilder(workflow_id)
        .add_edge(writer, FunctionExecutor("review", review))
        .add_edge("review", FunctionExecutor("publish", publish))
        .set_start("writer")
        .build()
        .as_agent()
    )


def ids(response: AgentResponse) -> list[str]:
    return [r.request_id for r in response.pending]


# --- a turn that answers, then fails or is cancelled -----------------------------------------


def failing_after(inner: WorkflowAgent, trouble: list[str]) -> WorkflowAgent:
    """inner -> after, where `after` raises while `trouble` holds a reason."""

    async def after(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        if trouble:
            raise RuntimeError(trouble.pop())
        await ctx.yield_output(ChatMessage.assistant(f"wrapped: {conversation[-1].text}"))

    return (
        WorkflowBuilder("outer")
        .add_edge(inner, FunctionExecutor("after", after))
        .set_start("inner")
        .build()
        .as_agent()
    )


async def test_a_nested_wait_answered_by_a_failing_turn_takes_the_next_answer() -> None:
    trouble = ["publisher down"]
    outer = failing_after(approval("inner"), trouble)
    session = Session()
    asked = await outer.run("dogs", session).collect()
    assert ids(asked) == ["outer/inner/review@1#0"]
    with pytest.raises(WorkflowError, match="publisher down"):  # after inner completed
        await outer.run("yes", session).collect()
    assert sorted(session.keys("")) == [
        "outer#history",
        "outer#pending",
        "outer#requests",
        "outer/inner#pending",
    ]
    done = await outer.run("yes again", session).collect()
    assert (done.status, done.text) == ("completed", "wrapped: draft on dogs: yes again")
    history = [m.text for m in session.get("outer#history")]
    assert history == ["dogs", "yes again", "wrapped: draft on dogs: yes again"]


async def test_a_nested_wait_answered_by_a_cancelled_turn_takes_the_next_answer() -> None:
    scope = anyio.CancelScope()

    async def after(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        if not scope.cancel_called:
            scope.cancel()
            await anyio.lowlevel.checkpoint()
        await ctx.yield_output(ChatMessage.assistant(f"wrapped: {conversation[-1].text}"))

    outer = (
        WorkflowBuilder("outer")
        .add_edge(approval("inner"), FunctionExecutor("after", after))
        .set_start("inner")
        .build()
        .as_agent()
    )
    session = Session()
    await outer.run("dogs", session).collect()
    with scope:
        await outer.run("yes", session).collect()
    assert scope.cancelled_caught
    done = await outer.run("yes again", session).collect()
    assert (done.status, done.text) == ("completed", "wrapped: draft on dogs: yes again")


class _WaitsOnNothing(BaseAgent):
    """Says it waits, yet names no request."""

    async def invoke(self, messages: list[ChatMessage], ctx: RunContext) -> AgentResponse:
        return AgentResponse(messages=[], status="waiting")


async def test_an_agent_that_waits_on_no_request_fails_the_run_naming_it() -> None:
    outer = WorkflowBuilder("outer").add_executor(_WaitsOnNothing("odd")).set_start("odd")
    with pytest.raises(AgentError) as raised:
        await outer.build().as_agent().run("hi").collect()
    assert raised.value.path == ("outer", "odd")
    assert "'outer/odd' ended its turn waiting but names no pending request" in str(raised.value)


# --- one id per request ----------------------------------------------------------------------


async def test_a_nested_workflow_entered_twice_in_one_handling_asks_with_two_ids() -> None:
    inner = approval("inner")

    async def twice(message: Any, ctx: NodeContext) -> None:
        cats = await ctx.invoke_agent(inner, [ChatMessage.user("cats")])
        dogs = await ctx.invoke_agent(inner, [ChatMessage.user("dogs")])
        await ctx.yield_output(ChatMessage.assistant(f"{cats.text} | {dogs.text}"))

    outer = WorkflowBuilder("outer").add_executor(FunctionExecutor("n", twice)).set_start("n")
    agent = outer.build().as_agent()
    session = Session()
    first = await agent.run("go", session).collect()
    assert ids(first) == ["outer/n@0#0/inner/review@1#0"]
    second = await agent.run("meow", session).collect()
    # The second call asks its own question: the first answer does not answer it too.
    assert ids(second) == ["outer/n@0#1/inner/review@1#0"]
    assert second.pending[0].payload == {"draft": "draft on dogs"}
    done = await agent.run("woof", session).collect()
    assert done.text == "draft on cats: meow | draft on dogs: woof"


async def test_a_nested_workflow_entered_in_two_supersteps_asks_again_with_a_new_id() -> None:
    inner = approval("inner")

    async def ask_inner(message: Any, ctx: NodeContext) -> None:
        response = await ctx.invoke_agent(inner, [ChatMessage.user(str(message))])
        if ctx.superstep == 0:
            await ctx.send("again")
        else:
            await ctx.yield_output(response.messages[-1])

    loop = FunctionExecutor("loop", ask_inner)
    outer = WorkflowBuilder("outer").add_edge(loop, loop).set_start(loop).set_max_supersteps(4)
    agent = outer.build().as_agent()
    session = Session()
    first = await agent.run("go", session).collect()
    assert ids(first) == ["outer/loop@0#0/inner/review@1#0"]
    second = await agent.run("first answer", session).collect()
    assert (second.status, ids(second)) == ("waiting", ["outer/loop@1#0/inner/review@1#0"])
    assert second.pending[0].payload == {"draft": "draft on again"}
    done = await agent.run("second answer", session).collect()
    assert done.text == "draft on again: second answer"


async def test_an_agent_node_in_a_loop_asks_with_a_new_id_each_time_round() -> None:
    inner = approval("inner")

    async def route(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        rounds = ctx.state["rounds"] = ctx.state.get("rounds", 0) + 1
        if rounds < 2:
            await ctx.send([ChatMessage.user("round two")])
        else:
            await ctx.yield_output(conversation[-1])

    outer = (
        WorkflowBuilder("outer")
        .add_edge(inner, FunctionExecutor("route", route))
        .add_edge("route", inner)
        .set_start(inner)
        .set_max_supersteps(6)
        .build()
        .as_agent()
    )
    session = Session()
    first = await outer.run("go", session).collect()
    assert ids(first) == ["outer/inner/review@1#0"]
    second = await outer.run("one", session).collect()
    assert ids(second) == ["outer/inner@2#0/inner/review@1#0"]
    done = await outer.run("two", session).collect()
    assert done.text == "draft on round two: two"


async def test_two_nodes_of_one_superstep_invoking_agents_with_one_id_ask_apart() -> None:
    def caller(node_id: str) -> FunctionExecutor:
        helper = approval("helper")  # a different instance per node, with the same id

        async def call(message: Any, ctx: NodeContext) -> None:
            response = await ctx.invoke_agent(helper, [ChatMessage.user(node_id)])
            await ctx.yield_output(response.messages[-1])

        return FunctionExecutor(node_id, call)

    async def split(message: Any, ctx: NodeContext) -> None:
        await ctx.send(message)

    outer = (
        WorkflowBuilder("outer")
        .add_fan_out(FunctionExecutor("split", split), [caller("a"), caller("b")])
        .set_start("split")
        .build()
        .as_agent()
    )
    session = Session()
    asked = await outer.run("go", session).collect()
    # Streamed as each branch asks; the ids do not depend on that order.
    assert sorted(ids(asked)) == ["outer/a@1#0/helper/review@1#0", "outer/b@1#0/helper/review@1#0"]
    answer = ChatMessage.tool_result("outer/b@1#0/helper/review@1#0", json.dumps("for b"))
    partly = await outer.run(answer, session).collect()
    assert ids(partly) == ["outer/a@1#0/helper/review@1#0"]
    done = await outer.run("for a", session).collect()
    assert [m.text for m in done.messages] == ["draft on b: for b", "draft on a: for a"]


# --- an answer to no request -----------------------------------------------------------------


async def test_a_tool_result_for_an_unknown_request_is_refused_by_a_waiting_workflow() -> None:
    agent = approval("wf")
    session = Session()
    await agent.run("cats", session).collect()
    before = session.to_json()
    stray = ChatMessage.tool_result("wf/review@9#9", json.dumps(True))
    with pytest.raises(UnknownRequest) as raised:
        await agent.run(stray, session).collect()
    error = raised.value
    assert (error.request_id, error.pending, error.path) == (
        "wf/review@9#9",
        ["wf/review@1#0"],
        ("wf",),
    )
    assert "'wf/review@9#9'" in str(error) and "'wf/review@1#0'" in str(error)
    assert session.to_json() == before
    done = await agent.run("fine", session).collect()
    assert done.text == "draft on cats: fine"


async def test_a_tool_result_is_refused_by_a_workflow_that_waits_on_nothing() -> None:
    agent = approval("wf")
    session = Session()
    with pytest.raises(UnknownRequest) as raised:
        await agent.run(ChatMessage.tool_result("wf/review@2#0", "1"), session).collect()
    assert raised.value.pending == [] and "no request is pending" in str(raised.value)
    assert session.keys("") == []


async def test_a_tool_result_for_an_unknown_request_is_refused_by_a_leaf_agent() -> None:
    provider = ScriptedProvider([text("hello"), text("again")])
    leaf = ReactAgent("leaf", provider, "Be brief.")
    session = Session()
    await leaf.run("hi", session).collect()
    before = session.to_json()
    with pytest.raises(UnknownRequest) as raised:
        await leaf.run(ChatMessage.tool_result("call_7", "42"), session).collect()
    assert (raised.value.request_id, raised.value.path) == ("call_7", ("leaf",))
    assert session.to_json() == before
    again = await leaf.run("still there?", session).collect()
    assert again.text == "again"
    assert [m.role for m in session.get("leaf#history")] == ["user", "assistant"] * 2


async def test_a_tool_result_answering_a_tool_call_of_the_conversation_is_kept() -> None:
    echo = FunctionAgent("echo", lambda messages: f"{len(messages)} messages")
    call = ChatMessage(
        role="assistant", contents=[ToolCallContent(call_id="c1", name="add", arguments="{}")]
    )
    response = await echo.run(
        [ChatMessage.user("add"), call, ChatMessage.tool_result("c1", "3")]
    ).collect()
    assert response.text == "3 messages"
    # A later turn may answer a call the history holds, too.
    session = Session()
    await echo.run([ChatMessage.user("add"), call], session).collect()
    later = await echo.run(ChatMessage.tool_result("c1", "3"), session).collect()
    assert later.text == "4 messages"
