"""Tool calls in doubt: started before a crash, with no recorded end.

Both ways of recovering a run meet them: a durable run (`raf.durable`) recovered by another
worker, and a checkpointed workflow run resumed from its store (`raf.tools.journal`). An
idempotent tool's call in doubt runs again. Any other becomes a request to a human, whose
answer decides: `rerun` (run it again), `skip` with the result the call is taken to have
given (`{"decision": "skip", "result": "..."}`, or the text `skip: ...`), or `fail` (the
run fails with a `ToolError`).

Example:
    >>> decision_of('{"decision": "skip", "result": "sent"}')
    Decision(choice='skip', result='sent')
    >>> decision_of({"decision": "rerun"}).choice
    'rerun'
    >>> in_doubt_id(("team", "writer"), "team/writer#1:send_mail")
    'team/writer/team/writer#1:send_mail.in-doubt'
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, cast

from raf.errors import ToolError
from raf.messages import ChatMessage, ToolCallContent
from raf.updates import AgentPath, RequestInfoUpdate

__all__ = [
    "Decision",
    "InDoubt",
    "answer_text",
    "decision_of",
    "in_doubt_id",
    "in_doubt_request",
    "refused",
]

Choice = Literal["rerun", "skip", "fail"]


@dataclass(frozen=True, slots=True)
class Decision:
    """What a human decided about a call in doubt."""

    choice: Choice
    """Run it again, take `result` as its result, or fail the run."""
    result: str = ""
    """The result when skipped."""


class InDoubt(Exception):
    """Raised through an agent whose tool calls in doubt wait for a human's decision; the
    ReAct loop turns it into a `waiting` response."""

    def __init__(self, requests: list[RequestInfoUpdate]) -> None:
        super().__init__(", ".join(r.request_id for r in requests))
        self.requests = requests


def in_doubt_id(place: AgentPath, step: str) -> str:
    """The id of the request about the call named `step` (`"{place}#{n}:{tool}"`) of the
    agent at `place`: stable across recoveries, and under the agent's place like its other
    requests."""
    return f"{'/'.join(place)}/{step}.in-doubt"


def in_doubt_request(request_id: str, call: ToolCallContent, path: AgentPath) -> RequestInfoUpdate:
    """The request asking a human what to do with `call`, which is in doubt."""
    payload = {
        "kind": "tool_in_doubt",
        "tool": call.name,
        "arguments": call.arguments,
        "question": (
            f"The call of tool {call.name!r} started before the run stopped and has no "
            "recorded end: it may or may not have taken effect. Answer 'rerun', 'fail', or "
            '{"decision": "skip", "result": "<the result to assume>"}.'
        ),
        "choices": ["rerun", "skip", "fail"],
    }
    return RequestInfoUpdate(request_id=request_id, payload=payload, path=path)


def decision_of(answer: object) -> Decision | None:
    """The decision an answer gives (its text, or the JSON value parsed from it), or None
    when it gives none."""
    data: Any = answer
    if isinstance(answer, str):
        try:
            data = json.loads(answer.strip())
        except ValueError:
            data = answer.strip()
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


def refused(call: ToolCallContent, path: AgentPath) -> ToolError:
    """The error that fails the run when a human chose `fail` for `call`."""
    return ToolError(
        f"the call of tool {call.name!r} was in doubt after a crash (it may or may not have "
        "taken effect) and a human chose to fail the run",
        path=path,
    )


def answer_text(messages: list[ChatMessage], request_id: str) -> str:
    """The answer to `request_id` in `messages`: a tool result for it, else the last text."""
    for message in messages:
        for content in message.contents:
            if content.type == "tool_result" and content.call_id == request_id:
                return content.result
    return messages[-1].text if messages else ""
