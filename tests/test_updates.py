from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from raf.messages import ChatMessage
from raf.updates import (
    AgentResponse,
    ExecutorInvoked,
    ExecutorInvoking,
    MessageCompleted,
    ReasoningDelta,
    RequestInfoUpdate,
    TextDelta,
    ToolCallArgs,
    ToolCalled,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    agent_update_adapter,
)

paths = st.lists(st.text(min_size=1, max_size=4), max_size=4).map(tuple)
text = st.text(max_size=8)
updates = st.one_of(
    st.builds(TextDelta, text=text, path=paths),
    st.builds(ReasoningDelta, text=text, path=paths),
    st.builds(ToolCallStart, call_id=text, name=text, path=paths),
    st.builds(ToolCallArgs, call_id=text, delta=text, path=paths),
    st.builds(ToolCallEnd, call_id=text, path=paths),
    st.builds(ToolCalled, call_id=text, name=text, result=text, is_error=st.booleans(), path=paths),
    st.builds(Usage, input_tokens=st.integers(0, 99), output_tokens=st.integers(0, 99), path=paths),
    st.builds(ExecutorInvoking, executor_id=text, path=paths),
    st.builds(
        ExecutorInvoked,
        executor_id=text,
        messages=st.lists(st.builds(ChatMessage.user, text), max_size=2),
        value=st.none() | st.integers() | text,
        path=paths,
    ),
    st.builds(MessageCompleted, message=st.builds(ChatMessage.assistant, text), path=paths),
    st.builds(
        RequestInfoUpdate,
        request_id=text,
        payload=st.none() | st.dictionaries(text, st.integers(), max_size=2),
        path=paths,
    ),
)


@given(updates)
def test_every_update_round_trips_through_the_union(update: Any) -> None:
    dumped = update.model_dump(mode="json")
    assert agent_update_adapter.validate_python(dumped) == update
    assert agent_update_adapter.validate_json(update.model_dump_json()) == update


def test_usage_adds_and_totals() -> None:
    total = Usage(input_tokens=2, output_tokens=3) + Usage(input_tokens=5, output_tokens=7)
    assert (total.input_tokens, total.output_tokens, total.total_tokens) == (7, 10, 17)


def test_response_text_is_the_last_message() -> None:
    response = AgentResponse(messages=[ChatMessage.assistant("a"), ChatMessage.assistant("b")])
    assert response.text == "b"
    assert AgentResponse().text == ""
