"""`FunctionAgent` checks its function when it is built, and names itself when it fails."""

from __future__ import annotations

import pytest

from raf import AgentError, ChatMessage, FunctionAgent, SequentialBuilder, WorkflowError

PREFIX = (
    "FunctionAgent 'x': fn must be a function fn(messages) returning a str or a ChatMessage "
    "(or an async generator of str), got "
)


def test_a_text_instead_of_a_function_says_how_to_answer_it_always() -> None:
    with pytest.raises(TypeError) as raised:
        FunctionAgent("x", "hello")  # type: ignore[arg-type]
    assert (
        str(raised.value)
        == PREFIX + "the str 'hello' (for a fixed answer: lambda messages: 'hello')"
    )


@pytest.mark.parametrize(("fn", "shown"), [(3, "the int 3"), (None, "None")])
def test_anything_else_not_callable_is_named(fn: object, shown: str) -> None:
    with pytest.raises(TypeError) as raised:
        FunctionAgent("x", fn)  # type: ignore[arg-type]
    assert str(raised.value) == PREFIX + shown


def test_swapped_arguments_are_named() -> None:
    with pytest.raises(TypeError) as raised:
        FunctionAgent(lambda messages: "hi", "greeter")  # type: ignore[arg-type]
    assert str(raised.value) == (
        "FunctionAgent(id, fn) takes the id first: FunctionAgent('greeter', fn), "
        "got the function first"
    )


def _broken(messages: list[ChatMessage]) -> str:
    raise KeyError("missing")


@pytest.mark.anyio
async def test_a_failure_at_top_level_names_the_agent_and_keeps_the_cause() -> None:
    agent = FunctionAgent("lookup", _broken)
    for attempt in (agent.run("go").collect, lambda: _streamed(agent)):
        with pytest.raises(AgentError) as info:
            await attempt()
        assert info.value.path == ("lookup",)
        assert (
            str(info.value)
            == "function agent 'lookup': fn raised KeyError: 'missing' (at 'lookup')"
        )
        assert isinstance(info.value.__cause__, KeyError)
    assert (await FunctionAgent("lookup", lambda m: "fine").run("again")).text == "fine"


@pytest.mark.anyio
async def test_nested_a_failure_stays_the_workflow_error_of_its_node() -> None:
    team = SequentialBuilder(id="team").add_agent(FunctionAgent("lookup", _broken)).build()
    with pytest.raises(WorkflowError) as info:
        await team.as_agent().run("go")
    assert (info.value.path, info.value.executor_id) == (("team",), "lookup")
    assert isinstance(info.value.__cause__, KeyError)


async def _streamed(agent: FunctionAgent) -> None:
    async with agent.run("go") as stream:
        async for _ in stream:
            pass
