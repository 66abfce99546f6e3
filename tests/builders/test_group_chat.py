"""GroupChatBuilder: selectors, termination, bounds, sessions, nesting."""

from __future__ import annotations

import json
from collections import Counter

import anyio
import pytest

from raf import (
    Budget,
    BudgetExceeded,
    FunctionAgent,
    FunctionCondition,
    GroupChatBuilder,
    MaxRounds,
    ReactAgent,
    RunOptions,
    SequentialBuilder,
    Session,
    SpeakerSaid,
    TextMention,
    llm_selector,
    round_robin,
)
from raf.agent import AgentMetadata, IAgent
from raf.errors import GraphValidationError, SchemaValidationError, WorkflowError
from raf.messages import ChatMessage
from raf.providers.openai import OpenAIProvider, create_client
from raf.testing import ScriptedOpenAIServer, ScriptedProvider, Turn, text
from raf.updates import AgentUpdate, ExecutorInvoked
from tests.helpers import Foreign, task_count

pytestmark = pytest.mark.anyio


async def stream(agent: IAgent, prompt: str, session: Session | None = None) -> list[AgentUpdate]:
    async with agent.run(prompt, session) as updates:
        return [u async for u in updates]


def speaker(agent_id: str, calls: Counter[str] | None = None) -> FunctionAgent:
    """Answers `<id> <n>`, n counting the messages it saw."""

    def answer(messages: list[ChatMessage]) -> str:
        if calls is not None:
            calls[agent_id] += 1
        return f"{agent_id} {len(messages)}"

    return FunctionAgent(agent_id, answer, f"The {agent_id} of the team.")


def chat(*agents: IAgent, id: str = "chat") -> GroupChatBuilder:
    builder = GroupChatBuilder(id=id)
    for agent in agents:
        builder.add_agent(agent)
    return builder


def texts(messages: list[ChatMessage]) -> list[str]:
    return [m.text for m in messages]


def server_model(messages: list[ChatMessage]) -> Turn:
    """Plays the selector and both writers: the system prompt says who is asking."""
    system = messages[0].text
    if system.startswith("You coordinate"):
        spoken = [m for m in messages if "] line " in m.text]
        if "'nobody' is not a participant" in messages[-1].text:
            return text('{"reason": "sorry", "speaker": "poet"}')
        if not spoken:
            return text('{"reason": "first", "speaker": "nobody"}')
        return text('{"reason": "reply", "speaker": "critic"}')
    return text(f"[{system}] line {len(messages)}")


async def test_react_agents_and_an_llm_selector_over_http() -> None:
    async with (
        ScriptedOpenAIServer(server_model) as server,
        create_client(server.base_url, "k") as client,
    ):
        provider = OpenAIProvider(client, "scripted")
        poet = ReactAgent("poet", provider, "poet", description="Writes verse.")
        critic = ReactAgent("critic", provider, "critic", description="Judges verse.")
        room = (
            chat(poet, critic, id="room")
            .with_selector(llm_selector(provider))
            .with_termination(SpeakerSaid("critic"))
            .build()
            .as_agent()
        )
        items = await stream(room, "A poem about rain")

    selections = [r for r in server.requests if r.response_format is not None]
    assert len(selections) == 3  # an unknown speaker, corrected; then the critic
    for request in selections:
        assert request.tools == [] and "tool_choice" not in request.body
        schema = request.response_format["json_schema"]["schema"]  # type: ignore[index]
        assert schema["properties"]["speaker"]["enum"] == ["poet", "critic"]
        assert "- poet: Writes verse." in request.messages[0].text
    assert "'nobody' is not a participant" in selections[1].messages[-1].text
    writers = [r for r in server.requests if r.response_format is None]
    assert [r.tools for r in writers] == [[], []]
    assert "[poet] line 2" in writers[1].messages[-1].text

    messages = [u.message for u in items if u.type == "message_completed"]
    assert [(m.author, m.text) for m in messages] == [
        ("poet", "[poet] line 2"),
        ("critic", "[critic] line 3"),
    ]
    choices = [
        u.value for u in items if isinstance(u, ExecutorInvoked) and u.executor_id == "selector"
    ]
    assert choices == ["poet", "critic", None]
    usage_paths = {u.path for u in items if u.type == "usage"}
    assert usage_paths == {("room", "selector"), ("room", "poet"), ("room", "critic")}


async def test_selector_calls_count_in_the_budget() -> None:
    picks = ScriptedProvider(lambda m: text('{"reason": "", "speaker": "a"}'))
    room = (
        chat(speaker("a"), speaker("b"))
        .with_selector(llm_selector(picks))
        .with_max_rounds(5)
        .build()
        .as_agent()
    )
    with pytest.raises(BudgetExceeded) as info:
        await room.run("go", options=RunOptions(budget=Budget(rounds=3))).collect()
    assert info.value.path == ("chat", "selector")
    assert picks.calls == 3  # the fourth call is refused before it is made


async def test_an_llm_selector_that_never_names_a_participant_fails_clearly() -> None:
    picks = ScriptedProvider(lambda m: text("the poet, I think"))
    room = chat(speaker("a"), speaker("b")).with_selector(llm_selector(picks, max_attempts=2))
    room = room.build()
    with pytest.raises(SchemaValidationError, match="named no participant in 2 attempts") as info:
        await room.as_agent().run("go").collect()
    assert info.value.path == ("chat", "selector")


async def test_round_robin_stops_at_the_mention_and_continues_next_run() -> None:
    calls: Counter[str] = Counter()
    done = FunctionAgent("closer", lambda m: "that is all, DONE")
    room = (
        chat(speaker("a", calls), speaker("b", calls), done)
        .with_termination(TextMention("DONE"))
        .build()
        .as_agent()
    )
    session = Session()
    first = await room.run("start", session).collect()
    assert texts(first.messages) == ["a 1", "b 2", "that is all, DONE"]
    # The next run continues the transcript, and round robin goes on from the next speaker.
    second = await room.run("more", session).collect()
    assert texts(second.messages) == ["a 5", "b 6", "that is all, DONE"]
    assert calls == Counter({"a": 2, "b": 2})


async def test_rounds_and_conditions_count_per_run() -> None:
    room = chat(speaker("a"), speaker("b")).with_termination(MaxRounds(3)).build().as_agent()
    session = Session()
    assert texts((await room.run("one", session).collect()).messages) == ["a 1", "b 2", "a 3"]
    assert texts((await room.run("two", session).collect()).messages) == ["b 5", "a 6", "b 7"]
    # Several input messages are fine.
    many = [ChatMessage.user("x"), ChatMessage.user("y")]
    assert texts((await room.run(many, Session()).collect()).messages) == ["a 2", "b 3", "a 4"]


async def test_a_chat_that_never_terminates_is_stopped_by_the_bound() -> None:
    never = FunctionCondition(lambda transcript: False)
    room = chat(speaker("a"), speaker("b")).with_termination(never).with_max_rounds(4).build()
    response = await room.as_agent().run("go").collect()
    assert texts(response.messages) == ["a 1", "b 2", "a 3", "b 4"]
    unbounded = await chat(speaker("a")).build().as_agent().run("go").collect()
    assert len(unbounded.messages) == 10  # the default bound


async def test_conditions_compose_and_stop_at_once() -> None:
    calls: Counter[str] = Counter()
    room = (
        chat(speaker("a", calls), speaker("b", calls))
        .with_termination((SpeakerSaid("b") & MaxRounds(3)) | TextMention("never"))
        .build()
        .as_agent()
    )
    response = await room.run("go").collect()
    assert texts(response.messages) == ["a 1", "b 2", "a 3", "b 4"]
    assert calls == Counter({"a": 2, "b": 2})


async def test_a_function_selector_sees_the_transcript_and_participants() -> None:
    seen: list[tuple[int, list[str]]] = []

    async def pick(transcript: list[ChatMessage], participants: list[AgentMetadata]) -> str:
        seen.append((len(transcript), [p.description for p in participants]))
        return participants[len(transcript) % 2].id

    room = chat(speaker("a"), speaker("b")).with_selector(pick).with_max_rounds(3).build()
    response = await room.as_agent().run("go").collect()
    assert texts(response.messages) == ["b 1", "a 2", "b 3"]
    assert seen[0] == (1, ["The a of the team.", "The b of the team."])

    lost = chat(speaker("a")).with_selector(lambda t, p: "zed").build().as_agent()
    with pytest.raises(WorkflowError, match=r"chose 'zed', which is not a participant"):
        await lost.run("go").collect()


async def test_termination_ends_its_own_level_only() -> None:
    inner = (
        chat(speaker("x"), FunctionAgent("y", lambda m: "inner FINISHED"), id="inner")
        .with_termination(TextMention("FINISHED"))
        .build()
        .as_agent()
    )
    after = FunctionAgent("after", lambda m: "the parent goes on")
    outer = SequentialBuilder(id="outer").add_agent(inner).add_agent(after).build().as_agent()
    response = await outer.run("go").collect()
    assert texts(response.messages) == ["x 1", "inner FINISHED", "the parent goes on"]

    # A chat inside a chat: the inner one ends, the outer one takes its next speaker.
    room = (
        chat(inner, speaker("z"), id="room")
        .with_termination(SpeakerSaid("z") & MaxRounds(3))
        .build()
        .as_agent()
    )
    response = await room.run("go").collect()
    assert texts(response.messages) == [
        "x 1",
        "inner FINISHED",
        "z 3",
        "x 4",
        "inner FINISHED",
        "z 6",
    ]


async def test_nested_in_a_sequence_with_a_workflow_member_every_token_reaches_the_top() -> None:
    async def streamed(messages: list[ChatMessage]):
        for word in ("one ", "two"):
            yield word

    team = (
        SequentialBuilder(id="team")
        .add_agent(FunctionAgent("drafter", streamed))
        .add_agent(speaker("checker"))
        .build()
        .as_agent()
    )
    room = chat(team, Foreign(speaker("guest"))).with_max_rounds(2).build().as_agent()
    outer = SequentialBuilder(id="outer").add_agent(room).build().as_agent()
    items = await stream(outer, "go")
    deltas = [(u.path, u.text) for u in items if u.type == "text_delta"]
    assert deltas == [
        (("outer", "chat", "team", "drafter"), "one "),
        (("outer", "chat", "team", "drafter"), "two"),
        (("outer", "chat", "team", "checker"), "checker 2"),
        (("outer", "chat", "guest"), "guest 3"),
    ]
    steps = [(u.path, u.executor_id) for u in items if u.type == "executor_invoking"]
    assert (("outer", "chat", "team"), "drafter") in steps
    assert (("outer", "chat"), "guest") in steps


async def test_one_built_chat_serves_twenty_sessions_at_once() -> None:
    def echo(agent_id: str) -> ReactAgent:
        def model(messages: list[ChatMessage]) -> Turn:
            topic = messages[1].text
            return text(f"{agent_id} on {topic} #{len(messages) - 1}", delay=0.005)

        return ReactAgent(agent_id, ScriptedProvider(model), agent_id)

    room = chat(echo("a"), echo("b")).with_termination(MaxRounds(3)).build().as_agent()
    results: dict[int, list[list[str]]] = {}

    async def converse(n: int) -> None:
        session = Session(id=f"s{n}")
        first = await room.run(f"topic{n}", session).collect()
        second = await room.run("more", session).collect()
        results[n] = [texts(first.messages), texts(second.messages)]

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for n in range(20):
                tg.start_soon(converse, n)
    for n in range(20):
        t = f"topic{n}"
        assert results[n] == [
            [f"a on {t} #1", f"b on {t} #2", f"a on {t} #3"],
            [f"b on {t} #5", f"a on {t} #6", f"b on {t} #7"],
        ]


async def test_leaving_the_stream_early_cancels_the_speaker_and_leaks_no_task() -> None:
    cancelled = anyio.Event()

    async def slow(messages: list[ChatMessage]):
        yield "start"
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        yield "never"  # pragma: no cover

    room = chat(FunctionAgent("slow", slow)).build().as_agent()
    before = task_count()
    with anyio.fail_after(5):
        async with room.run("go") as updates:
            async for update in updates:
                if update.type == "text_delta":
                    break
        await cancelled.wait()
    assert task_count() == before


def test_build_mistakes() -> None:
    with pytest.raises(GraphValidationError, match="no participants"):
        GroupChatBuilder().build()
    with pytest.raises(GraphValidationError, match="'a'"):
        chat(speaker("a"), speaker("a")).build()
    with pytest.raises(TypeError, match="pass the agent itself, not its id"):
        GroupChatBuilder().add_agent("a")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="FunctionCondition"):
        GroupChatBuilder().with_termination(lambda t: True)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="selector function"):
        GroupChatBuilder().with_selector("a")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="1 or more"):
        GroupChatBuilder().with_max_rounds(0)
    with pytest.raises(ValueError, match="1 or more"):
        MaxRounds(0)
    with pytest.raises(ValueError, match="non-empty"):
        TextMention("")
    with pytest.raises(TypeError, match="LlmProvider"):
        llm_selector("gpt-4o")  # type: ignore[arg-type]


def test_the_graph_and_metadata() -> None:
    room = chat(speaker("a"), speaker("selector")).with_selector(round_robin()).build()
    assert room.id == "chat"
    assert GroupChatBuilder().add_agent(speaker("a")).build().id == "workflow_group_chat"
    assert list(room.executors) == ["selector_2", "a", "selector"]
    assert sorted(room.successors["selector_2"]) == ["a", "selector"]
    agent = room.as_agent()
    assert agent.metadata.kind == "group_chat"
    assert agent.metadata.children == ("a", "selector")
    assert json.loads(agent.metadata.model_dump_json())["children"] == ["a", "selector"]
