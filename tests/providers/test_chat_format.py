"""Conversion between raf messages and chat-completions message dicts."""

from __future__ import annotations

import pytest

from raf.messages import (
    ChatMessage,
    ReasoningContent,
    TextContent,
    ToolCallContent,
    ToolResultContent,
)
from raf.providers._chat_format import from_chat_completions, to_chat_completions

CONVERSATION = [
    ChatMessage.system("Be brief."),
    ChatMessage(role="user", contents=[TextContent(text="add 1 and 2")], author="alice"),
    ChatMessage(
        role="assistant",
        contents=[
            ReasoningContent(text="I should call add."),
            ToolCallContent(call_id="c1", name="add", arguments='{"a": 1, "b": 2}'),
            ToolCallContent(call_id="c2", name="log", arguments="{}"),
        ],
        author="calc",
    ),
    ChatMessage(
        role="tool",
        contents=[
            ToolResultContent(call_id="c1", result="3"),
            ToolResultContent(call_id="c2", result="boom", is_error=True),
        ],
    ),
    ChatMessage.assistant("It is 3.", author="team lead"),
]


def test_conversation_to_chat_completions() -> None:
    assert to_chat_completions(CONVERSATION) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "add 1 and 2", "name": "alice"},
        {
            "role": "assistant",
            "name": "calc",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
                },
                {"id": "c2", "type": "function", "function": {"name": "log", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "3"},
        {"role": "tool", "tool_call_id": "c2", "content": "boom"},
        # "team lead" has a space, which a participant name may not: it becomes "_".
        {"role": "assistant", "name": "team_lead", "content": "It is 3."},
    ]


def test_assistant_text_and_tool_calls_together() -> None:
    message = ChatMessage(
        role="assistant",
        contents=[
            TextContent(text="Let me check."),
            ToolCallContent(call_id="c", name="f", arguments="{}"),
        ],
    )
    (converted,) = to_chat_completions([message])
    assert converted.get("content") == "Let me check."
    assert len(converted.get("tool_calls", [])) == 1  # type: ignore[arg-type]


def test_round_trip_drops_only_reasoning() -> None:
    back = from_chat_completions(to_chat_completions(CONVERSATION))  # type: ignore[arg-type]
    assert back[0] == CONVERSATION[0]
    assert back[1] == CONVERSATION[1]
    assert back[2].tool_calls == CONVERSATION[2].tool_calls
    assert not any(c.type == "reasoning" for c in back[2].contents)
    assert [m.contents for m in back[3:5]] == [
        [ToolResultContent(call_id="c1", result="3")],
        [ToolResultContent(call_id="c2", result="boom")],
    ]
    assert back[5].text == "It is 3."


def test_content_parts_and_developer_role_are_read() -> None:
    messages = from_chat_completions(
        [
            {"role": "developer", "content": "rules"},
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            },
        ]
    )
    assert messages == [ChatMessage.system("rules"), ChatMessage.user("ab")]


def test_a_tool_message_without_a_result_is_refused_with_its_position() -> None:
    messages = [
        ChatMessage.user("add"),
        ChatMessage(
            role="assistant", contents=[ToolCallContent(call_id="c1", name="add", arguments="{}")]
        ),
        ChatMessage(role="tool", contents=[TextContent(text="3")]),
    ]
    with pytest.raises(ValueError, match=r"message 2 .*ToolResultContent\(call_id=\.\.\.\)"):
        to_chat_completions(messages)
