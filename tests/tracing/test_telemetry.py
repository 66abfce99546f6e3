"""The spans of traced runs: their tree, attributes, status and links, on asyncio and trio."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from raf import ConcurrentBuilder, FunctionAgent, ReactAgent, SequentialBuilder
from raf.errors import ProviderError
from raf.messages import ChatMessage
from raf.providers.openai import OpenAIProvider, create_client
from raf.providers.retry import RetryPolicy
from raf.session import Session
from raf.stores import MemoryCheckpointStore
from raf.testing import ScriptedOpenAIServer, ScriptedProvider, error, text, tool_calls
from raf.tools import tool
from tests.engine.support import Calls
from tests.engine.test_facade_hitl import approval
from tests.tracing.support import recording

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def explode() -> str:
    """Always fails."""
    raise ValueError("the fuse was lit")


def nested() -> Any:
    """seq(calc with tools, par(w, v)): a sequential workflow with a concurrent one inside."""
    calc = ReactAgent(
        "calc",
        ScriptedProvider([tool_calls(("add", {"a": 1, "b": 2})), text("3")]),
        "Use the tools.",
        tools=[add],
    )
    w = ReactAgent("w", ScriptedProvider([text("west")]), "Go west.")
    v = ReactAgent("v", ScriptedProvider([text("east")]), "Go east.")
    par = ConcurrentBuilder(id="par").add_agent(w).add_agent(v).build().as_agent()
    return SequentialBuilder(id="seq").add_agent(calc).add_agent(par).build().as_agent()


async def test_spans_nest_as_the_agent_tree_across_concurrent_branches() -> None:
    with recording() as recorded:
        response = await nested().run("go")
    assert response.status == "completed"
    tree = recorded.tree()
    assert tree[:6] == [
        "invoke_agent seq",
        "  superstep seq",
        "    invoke_agent calc",
        "      chat scripted",
        "      execute_tool add",
        "      chat scripted",
    ]
    # The branches run in tasks of their own, and still hang under the superstep that ran them.
    branches = [s for s in recorded.named("invoke_agent w") + recorded.named("invoke_agent v")]
    assert len(branches) == 2
    parents = {recorded.parent(s) for s in branches}
    assert len(parents) == 1
    (parent,) = parents
    assert parent is not None and parent.name == "superstep par"
    assert recorded.parent(parent) == recorded.one("invoke_agent par")
    for name, path in [("w", "seq/par/w"), ("v", "seq/par/v")]:
        (chat,) = [
            s for s in recorded.named("chat scripted") if s.attributes["raf.agent.path"] == path
        ]
        assert recorded.parent(chat) == recorded.one(f"invoke_agent {name}")
    assert len({s.context.trace_id for s in recorded.spans if s.context}) == 1


async def test_agent_spans_carry_the_conventions_attributes() -> None:
    session = Session(id="conversation-1")
    with recording() as recorded:
        await nested().run("go", session=session)
    root = recorded.one("invoke_agent seq")
    assert root.kind == SpanKind.INTERNAL
    assert root.parent is None
    attributes = dict(root.attributes or {})
    assert {k: attributes[k] for k in attributes if k != "raf.requests.pending"} == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.id": "seq",
        "gen_ai.agent.name": "seq",
        "raf.agent.kind": "sequential",
        "raf.agent.path": "seq",
        "gen_ai.conversation.id": "conversation-1",
        "gen_ai.usage.input_tokens": root.attributes["gen_ai.usage.input_tokens"],
        "gen_ai.usage.output_tokens": root.attributes["gen_ai.usage.output_tokens"],
        "raf.run.status": "completed",
    }
    calc = recorded.one("invoke_agent calc").attributes
    assert (calc["raf.agent.kind"], calc["raf.agent.path"]) == ("react", "seq/calc")
    tool_span = recorded.one("execute_tool add")
    call_id = str(tool_span.attributes["gen_ai.tool.call.id"])
    assert call_id.startswith("call_")
    assert dict(tool_span.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.type": "function",
        "raf.agent.path": "seq/calc",
    }
    steps = recorded.named("superstep seq")
    assert [s.attributes["raf.superstep.index"] for s in steps] == [0, 1]
    assert [tuple(s.attributes["raf.superstep.nodes"]) for s in steps] == [("calc",), ("par",)]


async def test_a_model_call_over_http_names_model_server_usage_and_finish_reason() -> None:
    async with (
        ScriptedOpenAIServer([text("Hello there", usage=(12, 3))], model="gpt-test") as server,
        create_client(server.base_url, "test-key") as client,
    ):
        provider = OpenAIProvider(client, "gpt-requested", retry=RetryPolicy(max_attempts=1))
        agent = ReactAgent("greeter", provider, "Greet.")
        port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
        with recording() as recorded:
            await agent.run("hi")
    chat = recorded.one("chat gpt-requested")
    assert chat.kind == SpanKind.CLIENT
    assert recorded.parent(chat) == recorded.one("invoke_agent greeter")
    attributes = dict(chat.attributes or {})
    assert attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-requested",
        "gen_ai.request.stream": True,
        "server.address": "127.0.0.1",
        "server.port": port,
        "raf.agent.path": "greeter",
        "gen_ai.conversation.id": attributes["gen_ai.conversation.id"],
        "gen_ai.response.model": "gpt-test",
        "gen_ai.response.id": attributes["gen_ai.response.id"],
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 3,
    }
    assert str(attributes["gen_ai.response.id"]).startswith("chatcmpl-")
    assert chat.status.status_code == StatusCode.UNSET


async def test_a_failing_tool_marks_its_span_and_the_run_goes_on() -> None:
    agent = ReactAgent(
        "fixer",
        ScriptedProvider([tool_calls(("explode", {}), ("add", {"a": "x"})), text("could not")]),
        "Try.",
        tools=[explode, add],
    )
    with recording() as recorded:
        response = await agent.run("fix it")
    assert response.text == "could not"
    failed = recorded.one("execute_tool explode")
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.attributes["error.type"] == "ValueError"
    (event,) = failed.events
    assert event.name == "exception"
    assert event.attributes["exception.message"] == "the fuse was lit"
    invalid = recorded.one("execute_tool add")
    assert invalid.status.status_code == StatusCode.ERROR
    assert invalid.attributes["error.type"] == "tool_error"
    assert "invalid arguments" in (invalid.status.description or "")
    # The tools failed, not the agent.
    assert recorded.one("invoke_agent fixer").status.status_code == StatusCode.UNSET


async def test_a_failure_is_recorded_on_the_span_it_came_out_of_with_the_agent_path() -> None:
    broken = ReactAgent("broken", ScriptedProvider([error(status=400)]), "Fail.")
    fine = FunctionAgent("fine", lambda m: "fine")
    workflow = SequentialBuilder(id="pipe").add_agent(fine).add_agent(broken).build().as_agent()
    with recording() as recorded, pytest.raises(ProviderError) as raised:
        await workflow.run("go")
    assert raised.value.path == ("pipe", "broken")
    chat = recorded.one("chat scripted")
    assert chat.status.status_code == StatusCode.ERROR
    assert chat.attributes["error.type"] == ProviderError.__qualname__
    assert chat.attributes["raf.agent.path"] == "pipe/broken"
    agent_span = recorded.one("invoke_agent broken")
    assert agent_span.status.status_code == StatusCode.ERROR
    assert agent_span.attributes["raf.agent.path"] == "pipe/broken"
    assert [e.name for e in agent_span.events] == ["exception"]
    step = recorded.named("superstep pipe")[-1]
    assert step.status.status_code == StatusCode.ERROR
    assert step.attributes["raf.node.id"] == "broken"
    assert recorded.one("invoke_agent fine").status.status_code == StatusCode.UNSET
    assert recorded.one("invoke_agent pipe").status.status_code == StatusCode.ERROR


async def test_content_is_recorded_only_when_opted_in(monkeypatch: pytest.MonkeyPatch) -> None:
    def agent() -> ReactAgent[None]:
        script = [tool_calls(("add", {"a": 1, "b": 2})), text("3")]
        return ReactAgent("calc", ScriptedProvider(script), "Add.", tools=[add])

    content_keys = {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    }
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    with recording() as recorded:
        await agent().run("1 + 2?")
    assert not any(content_keys & set(s.attributes or {}) for s in recorded.spans)

    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    with recording() as recorded:
        await agent().run("1 + 2?")
    tool_span = recorded.one("execute_tool add")
    assert json.loads(str(tool_span.attributes["gen_ai.tool.call.arguments"])) == {"a": 1, "b": 2}
    assert tool_span.attributes["gen_ai.tool.call.result"] == "3"
    first, _ = recorded.named("chat scripted")
    assert json.loads(str(first.attributes["gen_ai.input.messages"])) == [
        {"role": "system", "parts": [{"type": "text", "content": "Add."}]},
        {"role": "user", "parts": [{"type": "text", "content": "1 + 2?"}]},
    ]
    assert json.loads(str(first.attributes["gen_ai.output.messages"])) == [
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": tool_span.attributes["gen_ai.tool.call.id"],
                    "name": "add",
                    "arguments": {"a": 1, "b": 2},
                }
            ],
            "finish_reason": "tool_calls",
        }
    ]

    # The switch wins over the variable.
    with recording(capture_content=False) as recorded:
        await agent().run("1 + 2?")
    assert not any(content_keys & set(s.attributes or {}) for s in recorded.spans)


async def test_an_answer_links_to_the_waiting_run_and_spans_the_wait() -> None:
    agent = approval(Calls())
    session = Session()
    with recording() as recorded:
        first = await agent.run("cats", session=session)
        assert first.status == "waiting"
        asked_run = recorded.one("invoke_agent wf")
        assert asked_run.attributes["raf.run.status"] == "waiting"
        assert tuple(asked_run.attributes["raf.requests.pending"]) == ("wf/review@2#0",)
        (asking,) = [
            s for s in recorded.spans if any(e.name == "raf.request_info" for e in s.events)
        ]
        assert asking.name == "superstep wf"
        recorded.exporter.clear()
        second = await agent.run("looks good", session=session)
    assert second.status == "completed"
    answered_run = recorded.one("invoke_agent wf")
    assert answered_run.context is not None and asked_run.context is not None
    assert answered_run.context.trace_id != asked_run.context.trace_id
    (link,) = answered_run.links
    assert link.context.span_id == asked_run.context.span_id
    assert link.attributes == {"raf.link": "resumes"}
    wait = recorded.one("request_info review")
    assert wait.start_time is not None and answered_run.start_time is not None
    assert wait.start_time < answered_run.start_time  # it began when the question was asked
    assert wait.attributes["raf.request.id"] == "wf/review@2#0"
    assert float(wait.attributes["raf.request.wait_seconds"]) > 0
    (asked_link,) = wait.links
    assert asking.context is not None
    assert asked_link.context.span_id == asking.context.span_id
    resumed = recorded.parent(wait)
    assert resumed is not None and resumed.attributes.get("raf.superstep.resumed") is True
    assert recorded.parent(resumed) == answered_run


async def test_a_run_resumed_from_a_checkpoint_links_to_the_run_that_saved_it() -> None:
    agent = approval(Calls())
    store = MemoryCheckpointStore()
    session = Session(store=store)
    with recording() as recorded:
        result = await agent.workflow.run([ChatMessage.user("cats")], session=session)
        assert result.status == "waiting"
        first = recorded.one("invoke_workflow wf")
        assert first.attributes["gen_ai.operation.name"] == "invoke_workflow"
        assert first.attributes["raf.run.status"] == "waiting"
        checkpoint = (await store.list(session.id))[-1]
        (request,) = result.requests
        recorded.exporter.clear()
        resumed = await agent.workflow.resume(checkpoint, store, {request.request_id: "yes"})
    assert resumed.status == "completed"
    second = recorded.one("invoke_workflow wf")
    (link,) = second.links
    assert first.context is not None
    assert link.context.span_id == first.context.span_id


async def test_leaving_a_stream_early_ends_every_span_without_an_error() -> None:
    slow = ReactAgent("slow", ScriptedProvider([text("a b c d e f", delay=10)]), "Wait.")
    fast = FunctionAgent("fast", lambda m: "done")
    workflow = SequentialBuilder(id="s").add_agent(fast).add_agent(slow).build().as_agent()
    with recording() as recorded:
        async with workflow.run("go") as stream:
            async for update in stream:
                if update.type == "message_completed":
                    break
    names = [s.name for s in recorded.spans]
    assert "invoke_agent slow" in names and "chat scripted" in names
    cancelled = recorded.one("invoke_agent slow")
    assert cancelled.attributes.get("raf.cancelled") is True
    assert cancelled.status.status_code == StatusCode.UNSET


async def test_a_patterns_own_model_calls_get_chat_spans_under_its_superstep() -> None:
    from raf import GroupChatBuilder
    from raf.builders.group_chat import llm_selector

    selector = ScriptedProvider([text('{"speaker": "a"}'), text('{"speaker": "b"}')])
    a = FunctionAgent("a", lambda m: "from a")
    b = FunctionAgent("b", lambda m: "from b")
    chat = (
        GroupChatBuilder(id="room")
        .add_agent(a)
        .add_agent(b)
        .with_selector(llm_selector(selector))
        .with_max_rounds(2)
        .build()
        .as_agent()
    )
    with recording() as recorded:
        await chat.run("talk")
    calls = recorded.named("chat scripted")
    assert len(calls) >= 2
    for call in calls:
        parent = recorded.parent(call)
        assert parent is not None and parent.name.startswith(("superstep", "invoke_agent"))
        assert call.attributes["gen_ai.request.model"] == "scripted"
