"""What a `RunAgentInput` adds to a thread."""

from __future__ import annotations

import json

import pytest
from ag_ui.core import RunAgentInput

from raf.messages import ToolResultContent
from raf.serve.agui.inputs import input_ids, new_input


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
    messages = new_input(given, seen=set()).messages
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
        resume=[{"interruptId": "wf/ask@0#0~2", "status": "resolved", "payload": {"ok": True}}],
    )
    [answer] = new_input(given, seen={"u1"}, asked={"wf/ask@0#0": "wf/ask@0#0~2"}).messages
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
        new_input(media, seen=set())
    cancelled = run(messages=[], resume=[{"interruptId": "q~1", "status": "cancelled"}])
    with pytest.raises(ValueError, match="cannot withdraw"):
        new_input(cancelled, seen=set(), asked={"q": "q~1"})


def test_a_resume_entry_naming_no_open_request_is_refused_naming_the_open_ones() -> None:
    stray = run(messages=[], resume=[{"interruptId": "x", "status": "resolved", "payload": 1}])
    with pytest.raises(ValueError, match=r"no open request 'x' \(the open requests are \['q~1'\]"):
        new_input(stray, seen=set(), asked={"q": "q~1"})
    with pytest.raises(ValueError, match="no request is open"):
        new_input(stray, seen=set())


def test_context_becomes_a_system_message_when_it_changes() -> None:
    context = [{"description": "the user's city", "value": "Lisbon"}]
    given = run(messages=[{"id": "u", "role": "user", "content": "weather?"}], context=context)
    taken = new_input(given, seen=set())
    assert [(m.role, m.text) for m in taken.messages] == [
        ("system", "Context from the client:\n- the user's city: Lisbon"),
        ("user", "weather?"),
    ]
    again = new_input(given, seen=set(), context=taken.context)
    assert [m.role for m in again.messages] == ["user"]


def test_frontend_tools_become_client_tools() -> None:
    tool = {"name": "show_map", "description": "Shows a map.", "parameters": {"type": "object"}}
    [taken] = new_input(run(messages=[], tools=[tool]), seen=set()).tools
    assert (taken.name, taken.description, taken.parameters) == (
        "show_map",
        "Shows a map.",
        {"type": "object"},
    )
    bad = {**tool, "name": "show map"}
    with pytest.raises(ValueError, match=r"frontend tool 'show map' has a name a model cannot"):
        new_input(run(messages=[], tools=[bad]), seen=set())
    with pytest.raises(ValueError, match=r"'show_map' has parameters that are not a JSON schema"):
        new_input(run(messages=[], tools=[{**tool, "parameters": [1]}]), seen=set())
    assert new_input(run(messages=[], tools=[], state={}), seen=set()).messages == []


def test_shared_state_is_shown_when_it_changes_and_the_thread_keeps_it() -> None:
    given = run(messages=[], state={"units": "metric", "count": 1})
    taken = new_input(given, seen=set())
    assert [(m.role, m.text) for m in taken.messages] == [
        ("system", 'Shared state from the client (JSON):\n{"count": 1, "units": "metric"}')
    ]
    assert taken.state == {"units": "metric", "count": 1}
    same = new_input(given, seen=set(), state={"count": 1, "units": "metric"})
    assert same.messages == []
    kept = new_input(run(messages=[], state={}), seen=set(), state={"count": 1})
    assert (kept.messages, kept.state) == ([], {"count": 1})
    assert new_input(run(messages=[]), seen=set()).state is None


def test_a_frontend_tool_result_answers_the_request_its_call_is_known_by() -> None:
    result = {"id": "r1", "role": "tool", "toolCallId": "wire-1", "content": "shown"}
    taken = new_input(run(messages=[result]), seen=set(), asked={"guide/call_1": "wire-1"})
    [message] = taken.messages
    [result] = message.contents
    assert isinstance(result, ToolResultContent)
    assert (result.call_id, result.result) == ("guide/call_1", "shown")
    assert not result.is_error


@pytest.mark.parametrize(
    ("content", "error", "said"),
    [
        ("", "the map is offline", "the map is offline"),
        ("no map", "the map is offline", "no map\nthe map is offline"),
        ("the map is offline", "the map is offline", "the map is offline"),
    ],
    ids=["error only", "content and error", "error in the content"],
)
def test_a_tool_message_with_an_error_is_an_error_result_saying_it(
    content: str, error: str, said: str
) -> None:
    failed = {"id": "r1", "role": "tool", "toolCallId": "wire-1", "content": content}
    given = run(messages=[{**failed, "error": error}])
    [message] = new_input(given, seen=set(), asked={"guide/call_1": "wire-1"}).messages
    [result] = message.contents
    assert isinstance(result, ToolResultContent)
    assert (result.call_id, result.result, result.is_error) == ("guide/call_1", said, True)
