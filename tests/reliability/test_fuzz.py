"""Fuzzed model output and user input: every run recovers or fails with a clear raf error,
never another exception and never a hang, and the session stays usable afterwards.

Model output is played by `ScriptedProvider` in process and by `ScriptedOpenAIServer` over
real HTTP through `OpenAIProvider` and the `openai` client.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from raf import (
    AgentError,
    AgentResponse,
    ChatMessage,
    FunctionAgent,
    GraphValidationError,
    IAgent,
    ReactAgent,
    RetryPolicy,
    SequentialBuilder,
    Session,
    TextContent,
    ToolCallContent,
    ToolResultContent,
    tool,
)
from raf.providers.base import LlmProvider
from raf.providers.openai import OpenAIProvider
from raf.stores import MemoryCheckpointStore, SqliteCheckpointStore
from raf.testing import ScriptedOpenAIServer, ScriptedProvider, Turn, error, text, tool_calls

Via = Literal["scripted", "http"]
FAST_RETRIES = RetryPolicy(max_attempts=2, initial_delay=0.001, max_delay=0.002, jitter=False)
FUZZ = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


class Answer(BaseModel):
    answer: str


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


# --- strategies -------------------------------------------------------------------------------

surrogates = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"])
odd_text = st.lists(st.one_of(st.text(max_size=12), surrogates), max_size=4).map("".join)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | odd_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(odd_text, inner, max_size=3),
    max_leaves=6,
)
valid_add = st.fixed_dictionaries({"a": st.integers(), "b": st.integers()}).map(json.dumps)
arguments = st.one_of(
    valid_add,
    st.dictionaries(st.sampled_from(["a", "b", "answer", "x"]), json_values, max_size=3).map(
        json.dumps
    ),
    json_values.map(json.dumps),
    odd_text,
    st.tuples(valid_add, st.integers(0, 12)).map(lambda cut: cut[0][: cut[1]]),
)
oversized = json.dumps({"a": 1, "b": "9" * 200_000})
tool_names = st.one_of(
    st.sampled_from(["add", "resolve", "no_such_tool", "", "add ", "handoff_to_x"]), odd_text
)
model_turns = st.one_of(
    odd_text.map(text),
    st.tuples(odd_text, odd_text).map(lambda pair: text(pair[0], reasoning=pair[1])),
    st.lists(st.tuples(tool_names, arguments), min_size=1, max_size=3).map(
        lambda calls: tool_calls(*calls)
    ),
    st.sampled_from([400, 429, 500, 503]).map(error),
    # Big deltas: streamed in 16-character pieces it would cost seconds over HTTP.
    st.just(tool_calls(("add", oversized), chunk_size=50_000)),
)


class Played:
    """A script: the fuzzed turns, then the agent's normal answer for ever."""

    def __init__(self, turns: list[Turn], normal: Turn) -> None:
        self.turns = list(turns)
        self.normal = normal

    def __call__(self, messages: list[ChatMessage]) -> Turn:
        return self.turns.pop(0) if self.turns else self.normal


TLS = ssl.create_default_context()
"""The one TLS context of every client here. Each `openai` client would make its own, loading
the CA bundle (~50 ms CPU, a third of this module's CPU over its examples), and the scripted
server speaks plain HTTP."""


@asynccontextmanager
async def provider_for(via: Via, played: Played) -> AsyncIterator[LlmProvider]:
    if via == "scripted":
        yield ScriptedProvider(played)
        return
    async with (
        ScriptedOpenAIServer(played) as server,
        # As `create_client` makes it (its own retries off), on the shared TLS context.
        openai.AsyncOpenAI(
            base_url=server.base_url,
            api_key="key",
            max_retries=0,
            http_client=openai.DefaultAsyncHttpxClient(verify=TLS),
        ) as client,
    ):
        yield OpenAIProvider(client, "scripted", retry=FAST_RETRIES)


async def run_all(agent: IAgent, messages: Any, session: Session) -> AgentResponse:
    """Stream a run to its end, checking every item survives JSON in UTF-8."""
    run = agent.run(messages, session)
    async with run as stream:
        async for update in stream:
            update.model_dump_json().encode()
    assert run.response is not None
    return run.response


def check_usable(session: Session) -> None:
    """The session still round-trips through JSON in UTF-8 (no lone surrogate got in)."""
    text_form = session.to_json()
    text_form.encode()
    Session.from_json(text_form)


async def fuzz_model_output(via: Via, turns: list[Turn], structured: bool, nested: bool) -> None:
    normal = tool_calls(("resolve", {"answer": "ok"})) if structured else text("ok")
    played = Played(turns, normal)
    async with provider_for(via, played) as provider:
        leaf = ReactAgent(
            "leaf",
            provider,
            "Answer.",
            [add],
            output_schema=Answer if structured else None,
            max_rounds=5,
        )
        agent: IAgent = (
            SequentialBuilder(id="outer").add_agent(leaf).build().as_agent() if nested else leaf
        )
        session = Session()
        with anyio.fail_after(20):
            try:
                first = await run_all(agent, "go", session)
            except AgentError:
                pass  # a clear failure: a provider error, or the rounds ran out
            else:
                assert first.status == "completed"
            check_usable(session)
            played.turns.clear()
            # The next normal run on the same session works.
            second = await run_all(agent, "again", session)
        assert second.status == "completed"
        if structured:
            assert second.value == Answer(answer="ok")
        else:
            assert second.text == "ok"
        check_usable(session)


@pytest.mark.parametrize("via", ["scripted", "http"])
@FUZZ
@given(
    turns=st.lists(model_turns, max_size=4),
    structured=st.booleans(),
    nested=st.booleans(),
)
def test_fuzzed_model_output_recovers_or_fails_clearly(
    via: Via, turns: list[Turn], structured: bool, nested: bool, anyio_backend: str
) -> None:
    anyio.run(fuzz_model_output, via, turns, structured, nested, backend=anyio_backend)


@pytest.mark.anyio
@pytest.mark.parametrize("via", ["scripted", "http"])
async def test_a_10_mb_answer_arrives_whole(via: Via) -> None:
    answer = "x" * 10_000_000
    played = Played([text(answer, chunk_size=1_000_000)], text("ok"))
    async with provider_for(via, played) as provider:
        agent = ReactAgent("leaf", provider, "Answer.")
        session = Session()
        with anyio.fail_after(30):
            first = await agent.run("go", session).collect()
            assert first.text == answer
            assert (await agent.run("again", session).collect()).text == "ok"


# --- user input ------------------------------------------------------------------------------


class Huge:
    """Stands for a 1 MB user message (made in the test, so hypothesis never prints it)."""

    def __repr__(self) -> str:
        return "HUGE"


HUGE = Huge()

contents = st.one_of(
    odd_text.map(lambda t: TextContent(text=t)),
    st.tuples(odd_text, odd_text, odd_text).map(
        lambda c: ToolCallContent(call_id=c[0], name=c[1], arguments=c[2])
    ),
    st.tuples(odd_text, odd_text, st.booleans()).map(
        lambda c: ToolResultContent(call_id=c[0], result=c[1], is_error=c[2])
    ),
)
messages = st.builds(
    ChatMessage,
    role=st.sampled_from(["user", "assistant", "system", "tool"]),
    contents=st.lists(contents, max_size=3),
    author=st.none() | odd_text,
)
inputs = st.one_of(
    st.lists(messages, max_size=4),
    odd_text,
    st.just(HUGE),
    st.sampled_from([None, 3, b"bytes", {"role": "user"}, [{"role": "user"}], ["text"]]),
)
ids = st.one_of(odd_text, st.sampled_from(["a/b", "a#b", " lead", "\x00", "é∂", "x" * 500]))


def echo_model(messages: list[ChatMessage]) -> Turn:
    return text(f"seen {len(messages)}")


async def fuzz_user_input(
    given_input: Any, session_id: str, agent_id: str, store: Literal["memory", "sqlite"], tmp: str
) -> None:
    try:
        leaf = ReactAgent(agent_id, ScriptedProvider(echo_model), "Answer.")
    except ValueError:
        leaf = ReactAgent("leaf", ScriptedProvider(echo_model), "Answer.")
    try:
        workflow = (
            SequentialBuilder(id="outer")
            .add_agent(leaf)
            .add_agent(FunctionAgent("tail", lambda m: f"tail {len(m)}"))
        )
        agent: IAgent = workflow.build().as_agent()
    except GraphValidationError:
        agent = leaf
    if given_input is HUGE:
        given_input = [ChatMessage.user("y" * 1_000_000)]
    backing = MemoryCheckpointStore() if store == "memory" else SqliteCheckpointStore(tmp)
    async with backing as kept:
        try:
            session = Session(id=session_id, store=kept)
        except ValueError:
            session = Session(store=kept)
        with anyio.fail_after(20):
            try:
                await run_all(agent, given_input, session)
            except (AgentError, TypeError, ValueError) as failure:
                # Bad arguments are refused with a TypeError or ValueError saying what to
                # pass; a run that fails says so with an AgentError.
                assert str(failure)
            check_usable(session)
            after = await run_all(agent, "hello", session)
        assert after.status == "completed"
        assert after.text.startswith(("seen", "tail"))


@FUZZ
@given(
    given_input=inputs, session_id=ids, agent_id=ids, store=st.sampled_from(["memory", "sqlite"])
)
def test_fuzzed_user_input_runs_or_is_refused_clearly(
    given_input: Any,
    session_id: str,
    agent_id: str,
    store: Literal["memory", "sqlite"],
    anyio_backend: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    path = str(tmp_path_factory.mktemp("fuzz") / "runs.db")
    anyio.run(
        fuzz_user_input, given_input, session_id, agent_id, store, path, backend=anyio_backend
    )


# --- what the fuzzing found ------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("via", ["scripted", "http"])
async def test_a_lone_surrogate_from_the_model_arrives_as_a_replacement_character(
    via: Via,
) -> None:
    played = Played([text("a\ud800b", reasoning="\udfff")], text("ok"))
    async with provider_for(via, played) as provider:
        agent = ReactAgent("leaf", provider, "Answer.")
        session = Session()
        with anyio.fail_after(10):
            response = await run_all(agent, "go", session)
    assert response.text == "a\ufffdb"
    assert "\\ud800" not in session.to_json()
    check_usable(session)


@pytest.mark.parametrize("bad", ["\x00", "a\x00b", "\ud800", "x\udfff"])
def test_a_session_id_no_store_can_keep_is_refused_where_it_is_given(bad: str) -> None:
    with pytest.raises(ValueError, match="session id"):
        Session(id=bad)


@pytest.mark.parametrize("bad", ["\ud800", "a\x00b", "\x00"])
def test_an_agent_id_json_cannot_carry_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="agent id"):
        FunctionAgent(bad, lambda m: "x")
