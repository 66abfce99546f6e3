"""What a `RunAgentInput` adds to a thread."""

from __future__ import annotations

import json

import pytest
from ag_ui.core import RunAgentInput

from raf.serve.agui.inputs import input_ids, new_messages


def run(**fields: object) -> RunAgentInput:
    return RunAgentInput.model_validate({"threadId": "t", "runId": "r", **fields})


def test_each_kind_of_message_becomes_a_raf_message() -> None:
    given = run(
        messages=[
            {"id": "s", "role": "system", "content": "Be brief."},
            {
                "id": "u",
                "role": "user",
                "content": [{"type": "text", "text": "hi "}, {"type": "text", "text": "there"}],
            },
            {
                "id": "a",
                "role": "assistant",
                "name": "bot",
                "content": "calling",
                "toolCalls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"id": "t", "role": "tool", "toolCallId": "c1", "content": "42"},
            {"id": "r", "role": "reasoning", "content": "hmm"},
        ]
    )
    messages = new_messages(given, seen=set())
    assert [(m.role, m.text) for m in messages] == [
        ("system", "Be brief."),
        ("user", "hi there"),
        ("assistant", "calling"),
        ("tool", ""),
    ]
    assert messages[2].author == "bot"
    assert [c.type for c in messages[2].contents] == ["text", "tool_call"]
    assert messages[3].contents[0].model_dump()["result"] == "42"
    assert input_ids(given) == {"s", "u", "a", "t", "r"}


def test_seen_messages_are_skipped_and_resume_entries_answer_requests() -> None:
    given = run(
        messages=[{"id": "u1", "role": "user", "content": "old"}],
        resume=[{"interruptId": "wf/ask@0#0", "status": "resolved", "payload": {"ok": True}}],
    )
    [answer] = new_messages(given, seen={"u1"})
    assert answer.role == "tool"
    result = answer.contents[0].model_dump()
    assert result["call_id"] == "wf/ask@0#0"
    assert json.loads(result["result"]) == {"ok": True}


def test_media_and_cancelled_requests_are_refused_saying_why() -> None:
    media = run(
        messages=[
            {
                "id": "u",
                "role": "user",
                "content": [
                    {"type": "image", "source": {"type": "url", "value": "http://x/y.png"}}
                ],
            }
        ]
    )
    with pytest.raises(ValueError, match="text parts only"):
        new_messages(media, seen=set())
    cancelled = run(messages=[], resume=[{"interruptId": "q", "status": "cancelled"}])
    with pytest.raises(ValueError, match="cannot withdraw"):
        new_messages(cancelled, seen=set())
