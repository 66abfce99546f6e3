"""One structured-output model call: a JSON-schema response format, validated into a model.

Example:
    >>> from pydantic import BaseModel
    >>> class Verdict(BaseModel):
    ...     ok: bool
    >>> response_format(Verdict)["json_schema"]["name"]
    'Verdict'
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from raf.errors import SchemaValidationError
from raf.messages import ChatMessage
from raf.providers._checks import check_event
from raf.providers.base import Completion, LlmProvider, ProviderEvent
from raf.providers.seat import seen_by
from raf.react.native import json_answer
from raf.react.native import response_format as _response_format
from raf.tools.arguments import describe_validation_error
from raf.tracing.settings import RUNNING
from raf.updates import Usage

M = TypeVar("M", bound=BaseModel)


def response_format(schema: type[BaseModel]) -> dict[str, Any]:
    """The chat-completions `json_schema` response format for `schema` (not strict)."""
    return _response_format(schema)


async def structured_call(
    provider: LlmProvider,
    messages: Sequence[ChatMessage],
    schema: type[M],
    format: dict[str, Any] | None = None,
    *,
    on_event: Callable[[ProviderEvent], Awaitable[None]] | None = None,
    seat: str | None = None,
) -> M:
    """Make one model call with `schema`'s response format and validate the answer.

    `on_event` sees every provider event as it arrives (to stream reasoning, count usage).
    The model sees `messages` from `seat` (see `raf.providers.seat`): with no seat, every
    agent's message is another's, shown as a user message naming its author.

    Raises:
        SchemaValidationError: when the answer is not JSON matching `schema`.
        ProviderError: when the model fails.
    """
    fmt = format if format is not None else response_format(schema)
    text = await completion_text(provider, messages, fmt, on_event=on_event, seat=seat)
    try:
        return validate_json(text, schema)
    except ValidationError as exc:
        raise SchemaValidationError(
            f"model {provider.model!r} answered with output that does not match "
            f"{schema.__name__}: {describe_validation_error(exc)}; make the prompt ask for "
            "these fields, or use a model that supports structured output"
        ) from exc


async def completion_text(
    provider: LlmProvider,
    messages: Sequence[ChatMessage],
    fmt: dict[str, Any] | None,
    *,
    on_event: Callable[[ProviderEvent], Awaitable[None]] | None = None,
    seat: str | None = None,
) -> str:
    """One streamed model call with response format `fmt`: the completion's text, every
    event checked and shown to `on_event` as it arrives (the model sees `messages` from
    `seat`)."""
    shown = seen_by(seat, messages)
    telemetry = RUNNING.get()
    if telemetry is None:
        return (await _completion(provider, shown, fmt, on_event))[0].text
    work = _completion(provider, shown, fmt, on_event)
    return (await telemetry.chat(provider, None, None, shown, work))[0].text


async def _completion(
    provider: LlmProvider,
    messages: Sequence[ChatMessage],
    fmt: dict[str, Any] | None,
    on_event: Callable[[ProviderEvent], Awaitable[None]] | None,
) -> tuple[Completion, Usage]:
    completion = Completion()
    async with provider.stream(messages, response_format=fmt) as events:
        async for event in events:
            check_event(event, provider.model, ())
            if on_event is not None:
                await on_event(event)
            if isinstance(event, Completion):
                completion = event
    return completion, Usage(
        input_tokens=completion.input_tokens, output_tokens=completion.output_tokens
    )


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
    return schema.model_validate_json(json_answer(text))
