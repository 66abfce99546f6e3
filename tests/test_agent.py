from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence

import anyio
import pytest

from raf.agent import (
    AgentMetadata,
    BaseAgent,
    IAgent,
    RunOptions,
    check_agent_id,
    invoke_agent,
)
from raf.budget import Budget
from raf.errors import AgentError, BudgetExceeded, RunTimeout, ToolError
from raf.function_agent import FunctionAgent
from raf.messages import ChatMessage
from raf.run import RunContext
from raf.session import Session
from raf.updates import AgentResponse, AgentUpdate, MessageCompleted, TextDelta
from tests.helpers import Foreign, task_count

pytestmark = pytest.mark.anyio


def echo(messages: list[ChatMessage]) -> str:
    return " | ".join(m.text for m in messages)


async def test_stream_yields_deltas_then_completed_message() -> None:
    async def words(messages: list[ChatMessage]) -> AsyncIterator[str]:
        for w in ("a", "b", "c"):
            yield w

    agent = FunctionAgent("w", words)
    async with agent.run("go") as stream:
        items = [u async for u in stream]
    assert [u.type for u in items] == ["text_delta"] * 3 + ["message_completed"]
    assert all(u.path == ("w",) for u in items)
    last = items[-1]
    assert isinstance(last, MessageCompleted) and last.message.text == "abc"
    assert last.message.author == "w"


async def test_collect_returns_the_response() -> None:
    response = await FunctionAgent("e", echo).run("hi").collect()
    assert response.text == "hi"
    assert response.messages[0].role == "assistant"


async def test_iterating_without_entering_shows_the_async_with_form() -> None:
    run = FunctionAgent("e", echo).run("hi")
    with pytest.raises(TypeError, match=r"async with agent\.run"):
        async for _ in run:  # type: ignore[attr-defined]
            pass
    assert (await run.collect()).text == "hi"


async def test_awaiting_a_run_returns_its_response() -> None:
    agent = FunctionAgent("e", echo)
    response = await agent.run("hi")
    assert isinstance(response, AgentResponse) and response.text == "hi"
    assert (await agent.run("again")).text == "hi | hi | again"  # the session went on


async def test_an_awaited_run_is_used_up_like_a_collected_one() -> None:
    run = FunctionAgent("e", echo).run("hi")
    assert (await run).text == "hi"
    assert run.response is not None and run.response.text == "hi"
    with pytest.raises(RuntimeError, match=r"^this AgentRun has run already"):
        await run


async def test_a_plain_with_shows_the_async_with_form() -> None:
    run = FunctionAgent("e", echo).run("hi")
    with pytest.raises(TypeError) as raised, run:  # type: ignore[attr-defined]
        pass
    assert str(raised.value) == (
        "an AgentRun is entered with `async with`, not `with`: write "
        "`async with agent.run(messages) as stream:` inside an async function, or "
        "`response = await agent.run(messages)` for the response"
    )
    assert (await run).text == "hi"  # the mistake did not use the run up


async def test_a_run_starts_once() -> None:
    run = FunctionAgent("e", echo).run("hi")
    await run.collect()
    with pytest.raises(RuntimeError, match=r"^this AgentRun has run already; start a new one"):
        await run.collect()


@pytest.mark.parametrize("given", [42, {"role": "user", "content": "hi"}])
def test_run_refuses_bad_input_at_the_call(given: object) -> None:
    with pytest.raises(TypeError, match=r"pass a str, a ChatMessage or a list of ChatMessage"):
        FunctionAgent("e", echo).run(given)  # type: ignore[arg-type]


def test_run_refuses_a_session_id_or_an_options_dict_saying_what_to_pass() -> None:
    agent = FunctionAgent("a", lambda m: "x")
    with pytest.raises(TypeError, match=r"session is a Session, not str: pass Session\(id='s1'\)"):
        agent.run("hi", "s1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"not dict: pass RunOptions\(timeout=3\)"):
        agent.run("hi", options={"timeout": 3})  # type: ignore[arg-type]


async def test_a_workflow_run_refuses_a_session_id() -> None:
    from raf import SequentialBuilder

    workflow = SequentialBuilder(id="s").add_agent(FunctionAgent("a", lambda m: "x")).build()
    with pytest.raises(TypeError, match=r"pass Session\(id='chat'\)"):
        await workflow.run("hi", "chat")  # type: ignore[arg-type]


async def test_default_session_continues_the_conversation_and_reset_clears_it() -> None:
    agent = FunctionAgent("e", echo)
    assert (await agent.run("one").collect()).text == "one"
    assert (await agent.run("two").collect()).text == "one | one | two"
    await agent.reset()
    assert (await agent.run("three").collect()).text == "three"


async def test_explicit_sessions_do_not_see_each_other() -> None:
    agent = FunctionAgent("e", echo)
    s1, s2 = Session(), Session()
    await agent.run("a", s1).collect()
    await agent.run("x", s2).collect()
    assert (await agent.run("b", s1).collect()).text == "a | a | b"
    assert (await agent.run("y", s2).collect()).text == "x | x | y"


async def test_session_round_trips_mid_conversation() -> None:
    agent = FunctionAgent("e", echo)
    session = Session()
    await agent.run("a", session).collect()
    restored = Session.from_json(session.to_json())
    assert (await agent.run("b", restored).collect()).text == "a | a | b"


async def test_error_surfaces_after_the_items_before_it() -> None:
    async def fails(messages: list[ChatMessage]) -> AsyncIterator[str]:
        yield "partial"
        raise ToolError("broken on purpose")

    seen: list[AgentUpdate] = []
    with pytest.raises(ToolError, match="broken on purpose"):
        async with FunctionAgent("f", fails).run("go") as stream:
            async for update in stream:
                seen.append(update)
    assert [u.type for u in seen] == ["text_delta"]


async def test_failed_agent_is_not_poisoned() -> None:
    calls = 0

    def flaky(messages: list[ChatMessage]) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ValueError("first call fails")
        return "fine"

    agent = FunctionAgent("flaky", flaky)
    with pytest.raises(AgentError, match="first call fails") as info:
        await agent.run("x").collect()
    assert isinstance(info.value.__cause__, ValueError)
    assert (await agent.run("x").collect()).text == "fine"


async def test_leaving_early_cancels_the_producer_promptly() -> None:
    started = anyio.Event()
    cancelled = anyio.Event()

    async def forever(messages: list[ChatMessage]) -> AsyncIterator[str]:
        yield "first"
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        yield "never"  # pragma: no cover

    before = task_count()
    with anyio.fail_after(5):
        async with FunctionAgent("slow", forever).run("go") as stream:
            async for update in stream:
                assert isinstance(update, TextDelta)
                await started.wait()
                break
        assert cancelled.is_set()
    assert task_count() == before


async def test_timeout_raises_run_timeout_with_path() -> None:
    async def stuck(messages: list[ChatMessage]) -> str:
        await anyio.sleep_forever()
        return "never"  # pragma: no cover

    with pytest.raises(RunTimeout) as info:
        await FunctionAgent("stuck", stuck).run("x", options=RunOptions(timeout=0.01)).collect()
    assert info.value.path == ("stuck",)
    assert "RunOptions.timeout" in str(info.value)


async def test_seconds_budget_raises_budget_exceeded() -> None:
    async def stuck(messages: list[ChatMessage]) -> str:
        await anyio.sleep_forever()
        return "never"  # pragma: no cover

    options = RunOptions(budget=Budget(seconds=0.01))
    with pytest.raises(BudgetExceeded) as info:
        await FunctionAgent("stuck", stuck).run("x", options=options).collect()
    assert info.value.kind == "seconds"


def test_function_agent_is_an_iagent_with_metadata() -> None:
    agent = FunctionAgent("e", echo, description="echoes")
    assert isinstance(agent, IAgent)
    assert agent.metadata == AgentMetadata(
        id="e", name="e", description="echoes", kind="function", children=()
    )
    assert agent.get_subagent("x") is None


@pytest.mark.parametrize("bad", ["", "a/b", "a#b", " lead"])
def test_bad_ids_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="not usable"):
        check_agent_id(bad)


def test_an_id_that_is_not_a_str_is_a_type_error() -> None:
    from raf import ConcurrentBuilder

    expected = r"^agent id must be a str, not int \(3\); pass a name such as id='3'$"
    with pytest.raises(TypeError, match=expected):
        check_agent_id(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=expected):
        ConcurrentBuilder(id=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^agent id must be a str, not NoneType"):
        FunctionAgent(None, echo)  # type: ignore[arg-type]


async def test_function_agent_rejects_other_return_types() -> None:
    agent = FunctionAgent("n", lambda messages: 42)  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="returned int"):
        await agent.run("x").collect()


class _Parent(BaseAgent):
    kind = "test-parent"

    def __init__(self, child: IAgent) -> None:
        super().__init__("parent")
        self.child = child

    def subagents(self) -> Sequence[IAgent]:
        return (self.child,)

    async def invoke(self, messages: list[ChatMessage], ctx: RunContext) -> AgentResponse:
        return await invoke_agent(self.child, messages, ctx)


@pytest.mark.parametrize("native", [True, False])
async def test_children_stream_under_the_parent_path(native: bool) -> None:
    child: IAgent = (
        FunctionAgent("foreign", echo) if native else Foreign(FunctionAgent("foreign", echo))
    )
    parent = _Parent(child)
    assert parent.metadata.children == ("foreign",)
    assert parent.get_subagent("foreign") is child
    async with parent.run("hi") as stream:
        items = [u async for u in stream]
    assert {u.path for u in items} == {("parent", "foreign")}
    assert (await parent.run("again").collect()).text.endswith("again")


async def test_leaving_early_closes_the_agents_generator_at_once() -> None:
    # The consumer leaves while the generator is parked at a `yield` (the buffer is full):
    # its `finally` must run before the block ends, not when the generator is collected.
    closed: list[str] = []

    async def many(messages: list[ChatMessage]) -> AsyncIterator[str]:
        try:
            for n in range(100_000):
                yield f"{n} "
        finally:
            closed.append("finally")

    with anyio.fail_after(5):
        async with FunctionAgent("many", many).run("go") as stream:
            async for _ in stream:
                break
    assert closed == ["finally"]


async def test_a_callable_returning_an_async_iterator_streams() -> None:
    async def words(messages: list[ChatMessage]) -> AsyncIterator[str]:
        for word in ("a", "b"):
            yield word

    agent = FunctionAgent("w", lambda messages: words(messages))
    async with agent.run("go") as stream:
        deltas = [u.text for u in stream_items(await collect_items(stream), TextDelta)]
    assert deltas == ["a", "b"]


async def test_streaming_something_else_than_text_names_the_agent() -> None:
    async def numbers(messages: list[ChatMessage]) -> AsyncIterator[object]:
        yield 1

    agent = FunctionAgent("nums", numbers)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"FunctionAgent 'nums': fn streamed int"):
        await agent.run("go").collect()


async def test_collect_raises_a_lone_error_of_a_task_group_as_itself() -> None:
    async def grouped(messages: list[ChatMessage]) -> str:
        async def fail() -> None:
            raise ValueError("inside a task group")

        async with anyio.create_task_group() as tg:
            tg.start_soon(fail)
        return "never"  # pragma: no cover

    agent = FunctionAgent("g", grouped)
    with pytest.raises(AgentError, match="fn raised ValueError: inside a task group") as info:
        await agent.run("x").collect()
    assert type(info.value.__cause__) is ValueError
    with pytest.raises(AgentError, match="fn raised ValueError: inside a task group") as info:
        async with agent.run("x") as stream:
            async for _ in stream:
                pass
    assert type(info.value.__cause__) is ValueError


@pytest.mark.parametrize("options", [RunOptions(timeout=30), RunOptions(budget=Budget(seconds=30))])
async def test_an_agents_own_timeout_error_is_not_taken_for_the_runs(options: RunOptions) -> None:
    def fails(messages: list[ChatMessage]) -> str:
        raise TimeoutError("db connection timed out")

    with pytest.raises(AgentError, match="db connection timed out") as info:
        await FunctionAgent("db", fails).run("x", options=options).collect()
    assert not isinstance(info.value, RunTimeout | BudgetExceeded)
    assert type(info.value.__cause__) is TimeoutError


async def collect_items(stream: AsyncIterator[AgentUpdate]) -> list[AgentUpdate]:
    return [update async for update in stream]


def stream_items(items: Sequence[AgentUpdate], kind: type[TextDelta]) -> list[TextDelta]:
    return [item for item in items if isinstance(item, kind)]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: RunOptions(timout=5),  # type: ignore[call-arg]
            "RunOptions() got an unknown field 'timout'; did you mean 'timeout'? its fields are: "
            "max_rounds, timeout, budget, metadata, on_busy, client_tools",
        ),
        (
            lambda: Budget(token=5),  # type: ignore[call-arg]
            "Budget() got an unknown field 'token'; did you mean 'tokens'? its fields are: "
            "tokens, rounds, seconds",
        ),
        (
            lambda: RunOptions(budget={"second": 3}),
            "Budget() got an unknown field 'second'; did you mean 'seconds'? its fields are: "
            "tokens, rounds, seconds",
        ),
        (
            lambda: Budget(colour=1),  # type: ignore[call-arg]
            "Budget() got an unknown field 'colour'; its fields are: tokens, rounds, seconds",
        ),
    ],
)
def test_option_objects_refuse_an_unknown_field_naming_the_closest(
    make: Callable[[], object], message: str
) -> None:
    with pytest.raises(TypeError) as raised:
        make()
    assert str(raised.value) == message


def test_option_objects_still_take_their_fields() -> None:
    options = RunOptions(timeout=5, budget={"tokens": 9})  # type: ignore[arg-type]
    assert options.timeout == 5.0 and options.budget == Budget(tokens=9)
