"""What a durable run writes to its DBOS stream, and the JSON of its recorded steps.

The stream of a run (key `raf.updates`) holds envelopes as JSON text: one per item streamed
outside a step (completed messages, tool results, lifecycle items, human requests), and one
at the end of each turn (the response and the session after it) or on failure. Tokens are
not in it (see docs/scale-out.md, "Tokens").

Example:
    >>> from raf.updates import TextDelta
    >>> is_token(TextDelta(text="hi", path=("a",)))
    True
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from raf.messages import ToolCallContent
from raf.providers.base import Completion
from raf.updates import AgentResponse, AgentUpdate, Usage

__all__ = [
    "STREAM",
    "Envelope",
    "FailedEnvelope",
    "TurnEnvelope",
    "UpdateEnvelope",
    "envelope_adapter",
    "is_token",
]

STREAM = "raf.updates"
"""The DBOS stream key of a durable run's envelopes."""

_TOKENS = frozenset({"text_delta", "reasoning_delta", "tool_call_start", "tool_call_args"})


def is_token(update: AgentUpdate) -> bool:
    """Whether `update` is a token of a message being streamed (live only, never recorded)."""
    return update.type in _TOKENS or update.type == "tool_call_end"


class UpdateEnvelope(BaseModel):
    """One streamed item."""

    model_config = ConfigDict(frozen=True)
    type: Literal["update"] = "update"
    """The tag."""
    update: AgentUpdate
    """The item."""


class TurnEnvelope(BaseModel):
    """The end of a turn: completed, or waiting for a human."""

    model_config = ConfigDict(frozen=True)
    type: Literal["turn"] = "turn"
    """The tag."""
    response: AgentResponse[Any]
    """The turn's response."""
    session: str
    """The session after the turn, as `Session.to_json()` writes it."""


class FailedEnvelope(BaseModel):
    """The run failed."""

    model_config = ConfigDict(frozen=True)
    type: Literal["failed"] = "failed"
    """The tag."""
    error: str
    """The exception's class name."""
    message: str
    """Its message, without the path."""
    path: tuple[str, ...] = ()
    """Where it happened."""
    fields: dict[str, str | int | float | bool | None] = Field(
        default_factory=dict[str, str | int | float | bool | None]
    )
    """The exception's own attributes that are plain values (a `BudgetExceeded`'s `kind`,
    `limit`, `used`), so a reader raises it again with them."""


Envelope = Annotated[UpdateEnvelope | TurnEnvelope | FailedEnvelope, Field(discriminator="type")]
"""Anything a durable run's stream holds."""

envelope_adapter: TypeAdapter[Envelope] = TypeAdapter(Envelope)


class ModelStep(BaseModel):
    """The recorded result of a model call."""

    model_config = ConfigDict(frozen=True)
    text: str = ""
    """The answer's text."""
    reasoning: str = ""
    """Its reasoning."""
    tool_calls: list[ToolCallContent] = Field(default_factory=list[ToolCallContent])
    """The tool calls it asked for."""
    input_tokens: int = 0
    """Input tokens of the completion."""
    output_tokens: int = 0
    """Output tokens of the completion."""
    finish_reason: str | None = None
    """Why the model stopped."""
    usage: Usage
    """The usage the call reported."""

    @classmethod
    def of(cls, completion: Completion, usage: Usage) -> ModelStep:
        """The record of a call that gave `completion` and reported `usage`."""
        return cls(
            text=completion.text,
            reasoning=completion.reasoning,
            tool_calls=completion.tool_calls,
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
            finish_reason=completion.finish_reason,
            usage=usage,
        )

    def completion(self) -> Completion:
        """The completion as the loop takes it."""
        return Completion(
            self.text,
            self.reasoning,
            list(self.tool_calls),
            self.input_tokens,
            self.output_tokens,
            self.finish_reason,
        )


class ToolStep(BaseModel):
    """The recorded result of a tool call."""

    model_config = ConfigDict(frozen=True)
    text: str
    """The result text."""
    is_error: bool = False
    """Whether the call failed."""
