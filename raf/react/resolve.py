"""The `resolve` tool: how a ReAct loop with an output schema submits its structured answer.

Example:
    >>> from pydantic import BaseModel
    >>> class Answer(BaseModel):
    ...     city: str
    >>> resolve_definition(Answer).parameters["required"]
    ['city']
    >>> check_resolve(Answer, '{"city": "Oslo"}')[0]
    Answer(city='Oslo')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from raf.messages import ChatMessage
from raf.tools.arguments import describe_validation_error
from raf.tools.definition import ToolDefinition
from raf.tools.tool import ToolResult

RESOLVE_TOOL_NAME = "resolve"
"""The name of the structured-output tool."""

RESOLVE_DESCRIPTION = (
    "Submit the final structured output for this role. Call this when the task is complete."
)
"""The description the model sees."""

ACCEPTED = ToolResult("Output accepted.")
DUPLICATE = ToolResult(
    "Ignored: an earlier resolve call of this turn was already accepted.", is_error=True
)

CORRECTION_TEXT = (
    "A plain-text answer is not accepted here: submit the final output by calling the "
    f"`{RESOLVE_TOOL_NAME}` tool with arguments matching its JSON schema. Call "
    f"`{RESOLVE_TOOL_NAME}` now."
)
"""The user message sent back when the model answers in text instead of calling resolve."""


def resolve_definition(schema: type[BaseModel]) -> ToolDefinition:
    """The `resolve` tool for `schema`: its parameters are the schema's JSON schema."""
    return ToolDefinition(
        name=RESOLVE_TOOL_NAME,
        description=RESOLVE_DESCRIPTION,
        parameters=schema.model_json_schema(),
    )


def check_resolve(schema: type[BaseModel], arguments: str) -> tuple[Any, ToolResult]:
    """Validate resolve `arguments` against `schema`: (the value, or None; the tool result)."""
    value, problem = validate_output(schema, arguments or "{}")
    if value is None:
        return None, ToolResult(
            f"invalid arguments for tool {RESOLVE_TOOL_NAME!r}: {problem}. "
            f"Fix them and call {RESOLVE_TOOL_NAME} again.",
            is_error=True,
        )
    return value, ACCEPTED


def validate_output(schema: type[BaseModel], json_text: str) -> tuple[Any, str]:
    """Validate structured output: (the value, ""), or (None, what is wrong with it)."""
    try:
        value = schema.model_validate_json(json_text)
    except ValidationError as exc:
        return None, describe_validation_error(exc)
    if not _survives_json(schema, value):
        return None, "Infinity and NaN are not JSON numbers; use finite numbers"
    return value, ""


def _survives_json(schema: type[BaseModel], value: BaseModel) -> bool:
    """True when the value comes back equal from its JSON (the output is re-sent as JSON).

    Non-finite floats (from `Infinity`, `NaN`, or lax strings such as "inf") would turn into
    null there; NaN never equals itself, so it fails too.
    """
    try:
        return schema.model_validate_json(value.model_dump_json()) == value
    except ValidationError:
        return False


def correction_message() -> ChatMessage:
    """The user message asking the model to call resolve instead of answering in text."""
    return ChatMessage.user(CORRECTION_TEXT)


def before_resolve(
    tools: tuple[ToolDefinition, ...], extra: Sequence[ToolDefinition]
) -> tuple[ToolDefinition, ...]:
    """`tools` with `extra` added, `resolve` (when there is one) staying the last."""
    split = len(tools) - (RESOLVE_TOOL_NAME in {d.name for d in tools[-1:]})
    return (*tools[:split], *extra, *tools[split:])
