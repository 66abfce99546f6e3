"""One structured-output model call: a JSON-schema response format, validated into a model.

Example:
    >>> from pydantic import BaseModel
    >>> class Verdict(BaseModel):
    ...     ok: bool
    >>> response_format(Verdict)["json_schema"]["name"]
    'Verdict'
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from raf.errors import SchemaValidationError
from raf.messages import ChatMessage
from raf.providers.base import Completion, LlmProvider, ProviderEvent
from raf.tools.arguments import describe_validation_error

M = TypeVar("M", bound=BaseModel)

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n?```\s*$", re.DOTALL)
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def response_format(schema: type[BaseModel]) -> dict[str, Any]:
    """The chat-completions `json_schema` response format for `schema` (not strict)."""
    name = _NAME_CHARS.sub("_", schema.__name__)[:64] or "output"
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": schema.model_json_schema(), "strict": False},
    }


async def structured_call(
    provider: LlmProvider,
    messages: Sequence[ChatMessage],
    schema: type[M],
    format: dict[str, Any] | None = None,
    *,
    on_event: Callable[[ProviderEvent], Awaitable[None]] | None = None,
) -> M:
    """Make one model call with `schema`'s response format and validate the answer.

    `on_event` sees every provider event as it arrives (to stream reasoning, count usage).

    Raises:
        SchemaValidationError: when the answer is not JSON matching `schema`.
        ProviderError: when the model fails.
    """
    text = ""
    fmt = format if format is not None else response_format(schema)
    async with provider.stream(messages, response_format=fmt) as events:
        async for event in events:
            if on_event is not None:
                await on_event(event)
            if isinstance(event, Completion):
                text = event.text
    try:
        return validate_json(text, schema)
    except ValidationError as exc:
        raise SchemaValidationError(
            f"model {provider.model!r} answered with output that does not match "
            f"{schema.__name__}: {describe_validation_error(exc)}; make the prompt ask for "
            "these fields, or use a model that supports structured output"
        ) from exc


def validate_json(text: str, schema: type[M]) -> M:
    """`text` (bare JSON, or JSON in a ```json fence) validated against `schema`.

    Raises:
        pydantic.ValidationError: when it is not JSON matching `schema`.

    Example:
        >>> from pydantic import BaseModel
        >>> class Verdict(BaseModel):
        ...     ok: bool
        >>> validate_json('{"ok": true}', Verdict)
        Verdict(ok=True)
    """
    fenced = _FENCE.match(text)
    return schema.model_validate_json(fenced.group(1) if fenced else text)
