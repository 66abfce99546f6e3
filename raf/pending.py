"""`PendingRequest`: a question a waiting run asked a human, as `Session.pending_requests()`
lists it.

A run that ends waiting records its open requests in the session (under
`"{root agent}#requests"`); the next turn that answers them records what is still open. So an
application lists what waits, and answers it, with nothing but the session id and the store.

Example:
    >>> request = PendingRequest(request_id="desk/ask@0#0", path=("desk", "ask"),
    ...                          payload={"question": "Refund 40 EUR?"})
    >>> request.question
    'Refund 40 EUR?'
"""

from __future__ import annotations

import json
from typing import Any, TypeVar, cast

from pydantic import BaseModel, ConfigDict, TypeAdapter, computed_field

from raf.updates import AgentPath, RequestInfoUpdate

__all__ = ["PendingRequest", "REQUESTS"]

T = TypeVar("T")

REQUESTS = "#requests"
"""The session key suffix of a root agent's open requests."""

_QUESTION_FIELDS = ("question", "prompt", "message", "text", "title")
_QUESTION_CHARS = 500


class PendingRequest(BaseModel):
    """One open request of a waiting session: answer it with the next `run()` on the session
    (text answers the oldest; `ToolResultContent(call_id=request_id, result=<JSON>)` answers
    this one, typed)."""

    model_config = ConfigDict(frozen=True)

    request_id: str
    """The request's id, unique in the whole run (it carries the asker's full path)."""
    path: AgentPath = ()
    """The agent path of the agent that asked, from the root of the run."""
    payload: Any = None
    """What was asked, as the asker passed it (its JSON data once the session was reloaded
    from a store: `payload_as(Model)` types it again)."""

    @computed_field
    @property
    def question(self) -> str:
        """The question in words: a text payload itself, else its `question` (or `prompt`,
        `message`, `text`, `title`) field, else its JSON, cut at 500 characters."""
        return question_of(self.payload)

    def payload_as(self, type_: type[T]) -> T:
        """The payload validated as `type_` (a pydantic model, a dataclass, a `TypedDict`...).

        Raises:
            pydantic.ValidationError: when the payload is not a `type_`.
        """
        if isinstance(self.payload, type_):
            return self.payload
        return TypeAdapter(type_).validate_python(self.payload)

    @classmethod
    def of(cls, update: RequestInfoUpdate) -> PendingRequest:
        """The pending request a streamed `RequestInfoUpdate` asks."""
        return cls(request_id=update.request_id, path=update.path, payload=update.payload)


def question_of(payload: Any) -> str:
    """The question a request's `payload` asks, in words (see `PendingRequest.question`)."""
    if isinstance(payload, str):
        return payload
    fields: Any = payload.model_dump(mode="json") if isinstance(payload, BaseModel) else payload
    if isinstance(fields, dict):
        named = cast(dict[str, Any], fields)
        for name in _QUESTION_FIELDS:
            value = named.get(name)
            if isinstance(value, str) and value:
                return value
    try:
        text = json.dumps(fields, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(payload)
    return text if len(text) <= _QUESTION_CHARS else text[: _QUESTION_CHARS - 1] + "…"
