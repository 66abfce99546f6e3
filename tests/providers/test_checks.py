"""A provider of one's own that streams a wrong event fails with a ProviderError naming it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raf import ReactAgent, SequentialBuilder
from raf.errors import ProviderError
from raf.messages import ChatMessage, ToolCallContent
from raf.providers._checks import check_event
from raf.providers.base import (
    Completion,
    ReasoningChunk,
    TextChunk,
    ToolCallDelta,
    ToolCallStarted,
    UsageReport,
)
from tests.helpers import EventsProvider

pytestmark = pytest.mark.anyio


def _homemade(*events: object) -> EventsProvider:
    """A provider of one's own streaming `events`, then a good completion."""
    return EventsProvider([*events, Completion(text="fine")], model="homemade")


@pytest.mark.parametrize(
    ("event", "said"),
    [
        (TextChunk(None), "a TextChunk whose text is None (a NoneType), not a str"),  # type: ignore[arg-type]
        (UsageReport("3", 1), "a UsageReport whose input_tokens is '3' (a str), not an int"),  # type: ignore[arg-type]
        (UsageReport(1, True), "whose output_tokens is True (a bool), not an int"),
        (Completion(text=None), "a Completion whose text is None (a NoneType), not a str"),  # type: ignore[arg-type]
        (
            Completion(tool_calls=[{"name": "x"}]),  # type: ignore[list-item]
            "whose tool_calls is [{'name': 'x'}] (a list), not a list of ToolCallContent",
        ),
        (ToolCallDelta("c1", 7), "a ToolCallDelta whose delta is 7 (an int), not a str"),  # type: ignore[arg-type]
        ("hello", "streamed 'hello' (a str), which is not a provider event"),
    ],
)
async def test_a_wrong_event_fails_the_call_naming_the_field_and_the_agent(
    event: object, said: str
) -> None:
    agent = ReactAgent("writer", _homemade(event), "Write.")
    team = SequentialBuilder(id="team").add_agent(agent).build().as_agent()
    with pytest.raises(ProviderError) as failure:
        await team.run("go").collect()
    assert said in str(failure.value)
    assert failure.value.path == ("team", "writer")
    assert failure.value.model == "homemade"
    assert "see raf.providers.base" in str(failure.value)


async def test_good_events_stream_as_before() -> None:
    calls = [ToolCallContent(call_id="c1", name="t", arguments="{}")]
    provider = _homemade(
        ReasoningChunk("hm"),
        TextChunk("fi"),
        TextChunk("ne"),
        ToolCallStarted("c9", "t"),
        UsageReport(3, 2),
    )
    response = await ReactAgent("writer", provider, "Write.").run("go").collect()
    assert response.text == "fine"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (3, 2)
    check_event(Completion(tool_calls=calls, finish_reason="tool_calls"), "m", ())


_good = st.one_of(
    st.builds(TextChunk, st.text()),
    st.builds(ReasoningChunk, st.text()),
    st.builds(ToolCallStarted, st.text(), st.text()),
    st.builds(ToolCallDelta, st.text(), st.text()),
    st.builds(UsageReport, st.integers(0), st.integers(0)),
    st.builds(Completion, st.text(), st.text()),
)
_wrong = st.one_of(st.none(), st.booleans(), st.floats(), st.binary(), st.lists(st.integers()))


@given(event=_good, field=st.integers(0, 5), value=_wrong)
def test_any_field_of_a_wrong_type_is_a_provider_error(event: Any, field: int, value: Any) -> None:
    check_event(event, "m", ("a",))  # a good event passes
    names = [n for n in type(event).__slots__ if n != "finish_reason"]
    name = names[field % len(names)]
    if name == "tool_calls" and isinstance(value, list) and not value:
        value = [1]  # an empty list is a good list of calls
    if name in ("model", "response_id") and value is None:
        value = 1.5  # None is a good value: the provider may not know it
    setattr(event, name, value)
    with pytest.raises(ProviderError, match=f"whose {name} is"):
        check_event(event, "m", ("a",))


async def test_a_role_adapters_call_is_checked_too() -> None:
    from pydantic import BaseModel

    from raf.adapters import ThreadContext, create_llm_adapter

    class Verdict(BaseModel):
        ok: bool

    role = create_llm_adapter(_homemade(UsageReport(None, 1)))("Judge.", Verdict)  # type: ignore[arg-type]
    with pytest.raises(ProviderError, match="a UsageReport whose input_tokens is None"):
        await role(ThreadContext(thread_id="t", start=[ChatMessage.user("Is it fine?")]))
