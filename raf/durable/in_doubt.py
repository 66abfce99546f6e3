"""Tool calls in doubt: started before a crash, with no recorded end.

An idempotent tool's call in doubt runs again. Any other becomes a request to a human, whose
answer decides: `rerun` (run it again), `skip` with the result the call is taken to have
given (`{"decision": "skip", "result": "..."}`, or the text `skip: ...`), or `fail` (the
run fails with a `ToolError`).

Example:
    >>> decision_of('{"decision": "skip", "result": "sent"}')
    Decision(choice='skip', result='sent')
    >>> decision_of("rerun").choice
    'rerun'
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, cast

from raf.messages import ChatMessage, ToolCallContent
from raf.updates import AgentPath, RequestInfoUpdate

__all__ = ["Decision", "decision_of", "in_doubt_request"]

Choice = Literal["rerun", "skip", "fail"]


@dataclass(frozen=True, slots=True)
class Decision:
    """What a human decided about a call in doubt."""

    choice: Choice
    """Run it again, take `result` as its result, or fail the run."""
    result: str = ""
    """The result when skipped."""


def in_doubt_request(request_id: str, call: ToolCallContent, path: AgentPath) -> RequestInfoUpdate:
    """The request asking a human what to do with `call`, which is in doubt."""
    payload = {
        "kind": "tool_in_doubt",
        "tool": call.name,
        "arguments": call.arguments,
        "question": (
            f"The call of tool {call.name!r} started before a worker stopped and has no "
            "recorded end: it may or may not have taken effect. Answer 'rerun', 'fail', or "
            '{"decision": "skip", "result": "<the result to assume>"}.'
        ),
        "choices": ["rerun", "skip", "fail"],
    }
    return RequestInfoUpdate(request_id=request_id, payload=payload, path=path)


def decision_of(answer: str) -> Decision | None:
    """The decision an answer gives, or None when it gives none."""
    text = answer.strip()
    try:
        data: Any = json.loads(text)
    except ValueError:
        data = text
    if isinstance(data, dict):
        fields = cast(dict[str, Any], data)
        choice = str(fields.get("decision", "")).lower()
        if choice == "rerun" or choice == "skip" or choice == "fail":
            return Decision(choice, str(fields.get("result", "")))
        return None
    if not isinstance(data, str):
        return None
    word, _, rest = data.partition(":")
    word = word.strip().lower()
    if word == "rerun" or word == "skip" or word == "fail":
        return Decision(word, rest.strip())
    return None


def answer_text(messages: list[ChatMessage], request_id: str) -> str:
    """The answer to `request_id` in `messages`: a tool result for it, else the last text."""
    for message in messages:
        for content in message.contents:
            if content.type == "tool_result" and content.call_id == request_id:
                return content.result
    return messages[-1].text if messages else ""
