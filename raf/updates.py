"""Stream items of `IAgent.run`, the collected `AgentResponse`, and `Usage`.

Every item carries `path`: the agent ids from the agent `run()` was called on down to the
agent that produced it.

Example:
    >>> TextDelta(text="hi", path=("team", "writer")).path[-1]
    'writer'
"""

from __future__ import annotations

from typing import Annotated, Any, Generic, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from typing_extensions import TypeVar

from raf._defaults import new_list
from raf.errors import AgentPath as AgentPath
from raf.messages import ChatMessage


class _Item(BaseModel):
    model_config = ConfigDict(
        defer_build=True, frozen=True, extra="forbid", arbitrary_types_allowed=True
    )

    path: AgentPath = ()
    """Agent ids from the agent that was run down to the producer of this item."""


class TextDelta(_Item):
    """A piece of answer text as the model streams it."""

    type: Literal["text_delta"] = "text_delta"
    text: str
    """The new text."""


class ReasoningDelta(_Item):
    """A piece of reasoning text (also manager ledgers of orchestrations)."""

    type: Literal["reasoning_delta"] = "reasoning_delta"
    text: str
    """The new reasoning text."""


class ToolCallStart(_Item):
    """The model began a tool call."""

    type: Literal["tool_call_start"] = "tool_call_start"
    call_id: str
    """Identifier of the call."""
    name: str
    """The tool's name."""


class ToolCallArgs(_Item):
    """A piece of a tool call's JSON arguments."""

    type: Literal["tool_call_args"] = "tool_call_args"
    call_id: str
    """Identifier of the call."""
    delta: str
    """The new argument text."""


class ToolCallEnd(_Item):
    """The model finished writing a tool call."""

    type: Literal["tool_call_end"] = "tool_call_end"
    call_id: str
    """Identifier of the call."""


class ToolCalled(_Item):
    """A tool ran (or was refused) and produced its result."""

    type: Literal["tool_called"] = "tool_called"
    call_id: str
    """Identifier of the call."""
    name: str
    """The tool's name."""
    result: str
    """The result text given back to the model."""
    is_error: bool = False
    """True when the call failed."""


class Usage(_Item):
    """Token usage of one model call, or a sum of several.

    Example:
        >>> (Usage(input_tokens=3, output_tokens=4) + Usage(input_tokens=1, output_tokens=0)).total_tokens
        8
    """

    type: Literal["usage"] = "usage"
    input_tokens: int = 0
    """Prompt tokens."""
    output_tokens: int = 0
    """Completion tokens."""

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


class ExecutorInvoking(_Item):
    """A workflow node starts handling a message."""

    type: Literal["executor_invoking"] = "executor_invoking"
    executor_id: str
    """The node's id."""


class ExecutorInvoked(_Item):
    """A workflow node finished handling a message."""

    type: Literal["executor_invoked"] = "executor_invoked"
    executor_id: str
    """The node's id."""
    messages: list[ChatMessage] = Field(default_factory=new_list)
    """Messages the node produced (an agent node's response)."""
    value: Any = None
    """The node's structured value, if any."""
    status: Literal["completed", "waiting"] = "completed"
    """`waiting` when the node's step ended the turn waiting for a human answer."""


class MessageCompleted(_Item):
    """An agent finished one whole message, assembled from its deltas."""

    type: Literal["message_completed"] = "message_completed"
    message: ChatMessage
    """The whole message."""


class RequestInfoUpdate(_Item):
    """The run waits for a human answer; the next `run()` on the session answers it."""

    type: Literal["request_info"] = "request_info"
    request_id: str
    """Stable id of the request, unique across branches and nesting levels."""
    payload: Any = None
    """What the workflow asks."""


AgentUpdate = Annotated[
    TextDelta
    | ReasoningDelta
    | ToolCallStart
    | ToolCallArgs
    | ToolCallEnd
    | ToolCalled
    | Usage
    | ExecutorInvoking
    | ExecutorInvoked
    | MessageCompleted
    | RequestInfoUpdate,
    Field(discriminator="type"),
]
"""Any item of an agent's stream."""

agent_update_adapter: TypeAdapter[AgentUpdate] = TypeAdapter(
    AgentUpdate, config=ConfigDict(defer_build=True)
)


ValueT = TypeVar("ValueT", default=Any, covariant=True)
"""The type of `AgentResponse.value`: the agent's output schema where the types say it
(`ReactAgent(..., output_schema=Plan)` answers `AgentResponse[Plan]`), `Any` unless given."""


class AgentResponse(BaseModel, Generic[ValueT]):
    """What a whole run gives: the messages the agent produced, summed usage, a value.

    Generic in the value's type for type checkers only: `AgentResponse` alone is
    `AgentResponse[Any]`, and raf always builds the unparametrised class, so a response is
    the same class whatever its agent (compare, copy, checkpoint it as any other).
    `AgentResponse[Plan].model_validate_json(...)` validates a stored response's value as a
    `Plan`.

    Example:
        >>> AgentResponse(messages=[ChatMessage.assistant("ok")]).text
        'ok'
    """

    model_config = ConfigDict(defer_build=True, frozen=True, arbitrary_types_allowed=True)

    messages: list[ChatMessage] = Field(default_factory=new_list)
    """Messages the agent added to the conversation."""
    usage: Usage = Field(default_factory=Usage)
    """Usage summed over the whole agent tree."""
    # The default is None whatever `ValueT` is: an agent with an output schema always sets it.
    value: ValueT = cast(Any, None)
    """The structured output, when the agent has an output schema."""
    status: Literal["completed", "waiting"] = "completed"
    """`waiting` when the run ended waiting for human answers (see `pending`)."""
    pending: list[RequestInfoUpdate] = Field(default_factory=new_list)
    """The open requests of a waiting run, oldest first; the next `run()` answers them."""
    paths: list[AgentPath] = Field(default_factory=new_list)
    """The agent path of each of `messages`, in the same order (`()` where unknown): set by
    `run()`, from the agent that completed each message in the stream."""

    @property
    def text(self) -> str:
        """Text of the last message, or an empty string (see `answers` for a team)."""
        return self.messages[-1].text if self.messages else ""

    @property
    def answers(self) -> dict[str, str]:
        """What each agent answered, by agent path: every member's answer of a concurrent
        team, where `text` is only the last message.

        Keys are paths joined by `/` (`"team/review"`), in the order the agents first
        answered; an agent that said several things has its last. Assistant messages with text count;
        a message of unknown path (restored from a checkpoint, or built by hand) is keyed by
        its author.

        Example:
            >>> said = [ChatMessage.assistant("A draft.", author="edit"),
            ...         ChatMessage.assistant("Looks good.", author="review")]
            >>> AgentResponse(messages=said, paths=[("team", "edit"), ("team", "review")]).answers
            {'team/edit': 'A draft.', 'team/review': 'Looks good.'}
        """
        found: dict[str, str] = {}
        for index, message in enumerate(self.messages):
            text = message.text
            if message.role != "assistant" or not text:
                continue
            path = self.paths[index] if index < len(self.paths) else ()
            key = "/".join(path) if path else message.author
            if key is not None:
                found[key] = text
        return found
