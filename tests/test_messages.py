from __future__ import annotations

from typing import Any

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


@given(st.text(), st.sampled_from([None, "writer", "team lead/1"]))
def test_text_constructors_build_the_message_its_parts_would(text: str, author: str | None) -> None:
    # They validate plain data (cheaper); the message must be the one built part by part.
    part = [TextContent(text=text)]
    assert ChatMessage.user(text) == ChatMessage(role="user", contents=part)
    assert ChatMessage.user(text, author) == ChatMessage(role="user", contents=part, author=author)
    assert ChatMessage.system(text) == ChatMessage(role="system", contents=part)
    assert ChatMessage.assistant(text, author) == ChatMessage(
        role="assistant", contents=part, author=author
    )
    assert isinstance(ChatMessage.user(text).contents[0], TextContent)


def test_text_constructors_refuse_what_is_not_text() -> None:
    with pytest.raises(ValidationError):
        ChatMessage.user(3)  # type: ignore[arg-type]


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
    with pytest.raises(TypeError, match=r"messages\[1\] is the int 3, not a ChatMessage"):
        as_messages([ChatMessage.user("x"), 3])  # type: ignore[list-item]


ACCEPTED = "pass a str, a ChatMessage or a list of ChatMessage, e.g. "


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (42, "messages is the int 42; " + ACCEPTED + "ChatMessage.user('...')"),
        (None, "messages is None; " + ACCEPTED + "ChatMessage.user('...')"),
        (b"hi", "messages is the bytes b'hi'; " + ACCEPTED + "ChatMessage.user('...')"),
        (
            {"role": "user", "content": "hi"},
            "messages is the dict {'role': 'user', 'content': 'hi'}; "
            + ACCEPTED
            + "ChatMessage.user('hi')",
        ),
        (
            {"role": "system", "content": "Be brief."},
            "messages is the dict {'role': 'system', 'content': 'Be brief.'}; "
            + ACCEPTED
            + "ChatMessage.system('Be brief.')",
        ),
        (
            {"role": "tool", "content": "4"},
            "messages is the dict {'role': 'tool', 'content': '4'}; "
            + ACCEPTED
            + "ChatMessage.tool_result(call_id, '4')",
        ),
        (
            [{"role": "assistant", "content": "ok"}],
            "messages[0] is the dict {'role': 'assistant', 'content': 'ok'}, not a ChatMessage; "
            + ACCEPTED
            + "[ChatMessage.assistant('ok'), ...]",
        ),
        (
            ["hi", "there"],
            "messages[0] is the str 'hi', not a ChatMessage; "
            + ACCEPTED
            + "[ChatMessage.user('hi'), ...]",
        ),
    ],
)
def test_as_messages_says_what_to_pass_instead(given: object, message: str) -> None:
    with pytest.raises(TypeError) as raised:
        as_messages(given)  # type: ignore[arg-type]
    assert str(raised.value) == message


def test_as_messages_shortens_a_long_value() -> None:
    with pytest.raises(TypeError) as raised:
        as_messages({"role": "user", "content": "x" * 500})  # type: ignore[arg-type]
    assert len(str(raised.value)) < 250
    assert "ChatMessage.user('xxx" in str(raised.value)


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


@pytest.mark.parametrize(
    "build",
    [
        lambda text: ChatMessage.user(text, author=text),
        lambda text: ChatMessage(role="assistant", contents=[ReasoningContent(text=text)]),
        lambda text: ChatMessage(
            role="assistant",
            contents=[ToolCallContent(call_id=text, name=text, arguments=text)],
        ),
        lambda text: ChatMessage.tool_result(text, text),
        lambda text: ChatMessage.model_validate(
            {"role": "user", "contents": [{"type": "text", "text": text}]}
        ),
    ],
)
def test_a_lone_surrogate_in_a_message_becomes_the_replacement_character(build: Any) -> None:
    message: ChatMessage = build("bad \ud800 text")
    # Dumping encodes UTF-8, which a lone surrogate would make raise.
    strings = [v for v in message.model_dump()["contents"][0].values() if isinstance(v, str)]
    strings = [s for s in strings if s not in ("text", "reasoning", "tool_call", "tool_result")]
    assert strings and all(s == "bad \ufffd text" for s in strings)
    assert message.author in (None, "bad \ufffd text")
    assert ChatMessage.model_validate_json(message.model_dump_json()) == message
