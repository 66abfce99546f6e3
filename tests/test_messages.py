from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from raf.messages import (
    ChatMessage,
    ReasoningContent,
    TextContent,
    ToolCallContent,
    ToolResultContent,
    as_messages,
    message_list_adapter,
)


def test_text_concatenates_text_parts_only() -> None:
    message = ChatMessage(
        role="assistant",
        contents=[
            TextContent(text="a"),
            ReasoningContent(text="thinking"),
            ToolCallContent(call_id="1", name="f", arguments="{}"),
            TextContent(text="b"),
        ],
    )
    assert message.text == "ab"
    assert [c.name for c in message.tool_calls] == ["f"]


def test_constructors_set_roles_and_author() -> None:
    assert ChatMessage.user("u").role == "user"
    assert ChatMessage.system("s").role == "system"
    reply = ChatMessage.assistant("x", author="w")
    assert (reply.role, reply.author, reply.text) == ("assistant", "w", "x")
    result = ChatMessage.tool_result("c1", "boom", is_error=True)
    part = result.contents[0]
    assert isinstance(part, ToolResultContent) and part.is_error and part.call_id == "c1"


def test_messages_are_frozen() -> None:
    message = ChatMessage.user("hi")
    with pytest.raises(ValidationError):
        message.role = "assistant"  # type: ignore[misc]


def test_as_messages_accepts_the_three_forms() -> None:
    one = ChatMessage.user("x")
    assert as_messages("x") == [one]
    assert as_messages(one) == [one]
    assert as_messages((one, one)) == [one, one]


def test_as_messages_names_the_bad_item() -> None:
    with pytest.raises(TypeError, match=r"messages\[1\] is int"):
        as_messages([ChatMessage.user("x"), 3])  # type: ignore[list-item]


contents = st.one_of(
    st.builds(TextContent, text=st.text()),
    st.builds(ReasoningContent, text=st.text()),
    st.builds(ToolCallContent, call_id=st.text(), name=st.text(), arguments=st.text()),
    st.builds(ToolResultContent, call_id=st.text(), result=st.text(), is_error=st.booleans()),
)
messages = st.builds(
    ChatMessage,
    role=st.sampled_from(["system", "user", "assistant", "tool"]),
    contents=st.lists(contents, max_size=4),
    author=st.none() | st.text(max_size=5),
)


@given(st.lists(messages, max_size=4))
def test_messages_round_trip_through_json(conversation: list[ChatMessage]) -> None:
    data = message_list_adapter.dump_json(conversation)
    assert message_list_adapter.validate_json(data) == conversation
