from __future__ import annotations

from typing import Any, get_args

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from raf.messages import ChatMessage
from raf.updates import (
    AgentResponse,
    AgentUpdate,
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
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
by_type: dict[type, st.SearchStrategy[Any]] = {
    TextDelta: st.builds(TextDelta, text=text, path=paths),
    ReasoningDelta: st.builds(ReasoningDelta, text=text, path=paths),
    ToolCallStart: st.builds(ToolCallStart, call_id=text, name=text, path=paths),
    ToolCallArgs: st.builds(ToolCallArgs, call_id=text, delta=text, path=paths),
    ToolCallEnd: st.builds(ToolCallEnd, call_id=text, path=paths),
    ToolCalled: st.builds(
        ToolCalled, call_id=text, name=text, result=text, is_error=st.booleans(), path=paths
    ),
    Usage: st.builds(
        Usage, input_tokens=st.integers(0, 99), output_tokens=st.integers(0, 99), path=paths
    ),
    ExecutorInvoking: st.builds(ExecutorInvoking, executor_id=text, path=paths),
    ExecutorInvoked: st.builds(
        ExecutorInvoked,
        executor_id=text,
        messages=st.lists(st.builds(ChatMessage.user, text), max_size=2),
        value=json_values,
        path=paths,
    ),
    MessageCompleted: st.builds(
        MessageCompleted, message=st.builds(ChatMessage.assistant, text), path=paths
    ),
    RequestInfoUpdate: st.builds(
        RequestInfoUpdate, request_id=text, payload=json_values, path=paths
    ),
}
updates = st.one_of(*by_type.values())


def test_the_strategy_covers_every_item_of_the_union() -> None:
    (union, *_) = get_args(AgentUpdate)
    assert set(get_args(union)) == set(by_type)


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


class Plan(BaseModel):
    steps: list[str]


def test_a_parametrised_response_is_an_agent_response_equal_to_the_plain_one() -> None:
    typed = AgentResponse[Plan](messages=[ChatMessage.assistant("ok")], value=Plan(steps=["go"]))
    plain = AgentResponse(messages=[ChatMessage.assistant("ok")], value=Plan(steps=["go"]))
    assert isinstance(typed, AgentResponse)
    assert typed == plain and plain == typed
    copied = typed.model_copy(update={"status": "waiting"})
    assert type(copied) is AgentResponse[Plan]
    assert (copied.value, copied.status) == (Plan(steps=["go"]), "waiting")


@given(st.lists(text, max_size=4))
def test_a_parametrised_response_validates_json_into_its_value_type(steps: list[str]) -> None:
    dumped = AgentResponse(value=Plan(steps=steps)).model_dump_json()
    assert AgentResponse[Plan].model_validate_json(dumped).value == Plan(steps=steps)
    assert AgentResponse.model_validate_json(dumped).value == {"steps": steps}
