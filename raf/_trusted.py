"""Building a pydantic model from values raf made and checked itself, without validating again.

Validation is the right price at the edges (what users and providers hand in); in the middle
of a run raf builds a few models per agent from parts that are already models or already
checked (a node's id, an agent's path, messages it made), where validating again would
cost as much as the building, or more. `trusted` does what pydantic's `model_construct` does for a
model without extra fields, private attributes or `model_post_init`, minus its loop over the
fields: the caller gives every field, in order.

`tests/test_trusted.py` checks that each model built this way is indistinguishable from the
validated one (equality, dumps, copies, pickling, the fields set).

Example:
    >>> from raf.updates import ExecutorInvoking
    >>> made = trusted(
    ...     ExecutorInvoking,
    ...     {"path": ("team",), "type": "executor_invoking", "executor_id": "writer"},
    ...     {"path", "executor_id"},
    ... )
    >>> made == ExecutorInvoking(executor_id="writer", path=("team",))
    True
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from raf.errors import AgentPath
from raf.messages import ChatMessage, TextContent
from raf.updates import (
    AgentResponse,
    ExecutorInvoked,
    ExecutorInvoking,
    MessageCompleted,
    TextDelta,
    Usage,
)

M = TypeVar("M", bound=BaseModel)
R = TypeVar("R", bound="AgentResponse[Any]")

_new = object.__new__
# The setters of `BaseModel`'s own slots, called directly: `object.__setattr__(model, name, v)`
# looks the name up and slices its arguments first, some 500 instructions a call more.
_slots = vars(BaseModel)
_set_dict = _slots["__dict__"].__set__
_set_fields_set = _slots["__pydantic_fields_set__"].__set__
_set_extra = _slots["__pydantic_extra__"].__set__
_set_private = _slots["__pydantic_private__"].__set__


def trusted(cls: type[M], values: dict[str, Any], given: set[str]) -> M:
    """An instance of `cls` holding `values` (every field, in declaration order), as if built
    from the fields named in `given` (its `model_fields_set`). Takes ownership of both."""
    model = _new(cls)
    _set_dict(model, values)
    _set_fields_set(model, given)
    _set_extra(model, None)
    _set_private(model, None)
    return model


# --- the models the hot path builds, from checked parts ------------------------------------


def executor_invoking(node_id: str, path: AgentPath) -> ExecutorInvoking:
    """`ExecutorInvoking(executor_id=node_id, path=path)` of a built workflow's node."""
    values = {"path": path, "type": "executor_invoking", "executor_id": node_id}
    return trusted(ExecutorInvoking, values, {"executor_id", "path"})


def executor_invoked(
    node_id: str, messages: list[ChatMessage], value: Any, path: AgentPath
) -> ExecutorInvoked:
    """`ExecutorInvoked(executor_id=node_id, messages=messages, value=value, path=path)`, for
    `messages` that are all `ChatMessage`s (copied, as validation would)."""
    values = {
        "path": path,
        "type": "executor_invoked",
        "executor_id": node_id,
        "messages": list(messages),
        "value": value,
        "status": "completed",
    }
    return trusted(ExecutorInvoked, values, {"executor_id", "messages", "value", "path"})


def message_completed(message: ChatMessage, path: AgentPath) -> MessageCompleted:
    """`MessageCompleted(message=message, path=path)`."""
    values = {"path": path, "type": "message_completed", "message": message}
    return trusted(MessageCompleted, values, {"message", "path"})


def completed_response(
    messages: list[ChatMessage], input_tokens: int, output_tokens: int, value: Any
) -> AgentResponse[Any]:
    """`AgentResponse(messages=messages, usage=Usage(input_tokens=..., output_tokens=...),
    value=value)` for messages an agent made and token counts summed from checked `Usage`s;
    takes ownership of `messages`."""
    values = {
        "messages": messages,
        "usage": usage(input_tokens, output_tokens),
        "value": value,
        "status": "completed",
        "pending": [],
        "paths": [],
    }
    return trusted(AgentResponse, values, {"messages", "usage", "value"})


def with_paths(response: R, paths: list[AgentPath]) -> R:
    """`response.model_copy(update={"paths": paths})`, for the checked paths of its messages;
    takes ownership of `paths`. A response with extra fields or private attributes (a user's
    subclass) is copied by pydantic, which copies those too."""
    if response.__pydantic_extra__ is not None or response.__pydantic_private__ is not None:
        return response.model_copy(update={"paths": paths})
    values = {**response.__dict__, "paths": paths}
    return trusted(type(response), values, response.model_fields_set | {"paths"})


def text_delta(text: str, path: AgentPath) -> TextDelta:
    """`TextDelta(text=text, path=path)`, for text a provider's checked event carried."""
    return trusted(TextDelta, {"path": path, "type": "text_delta", "text": text}, {"text", "path"})


def usage(input_tokens: int, output_tokens: int, path: AgentPath | None = None) -> Usage:
    """`Usage(input_tokens=..., output_tokens=..., path=path)` (no path given: `()`), for
    checked token counts."""
    values = {
        "path": () if path is None else path,
        "type": "usage",
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
    }
    given = {"input_tokens", "output_tokens"}
    if path is not None:
        given.add("path")
    return trusted(Usage, values, given)


def assistant_text(text: str, author: str | None) -> ChatMessage:
    """`ChatMessage.assistant(text, author)`, for the checked text of a model's answer."""
    part = trusted(TextContent, {"type": "text", "text": text}, {"type", "text"})
    values = {"role": "assistant", "contents": [part], "author": author}
    given = {"role", "contents"} if author is None else {"role", "contents", "author"}
    return trusted(ChatMessage, values, given)
