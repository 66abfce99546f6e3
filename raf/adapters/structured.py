"""JSON from a model: structured calls, validated, corrected and asked again (bounded).

Every call raf makes for JSON of a schema goes through `ask_json`: a role's structured answer
(`structured_call`, one call unless asked for more), a Magentic manager's progress ledger, an
LLM speaker selector's choice. The answer is read by `validate_json` (bare, in a ```json
fence, or the first object in prose that fits the schema); one that does not fit, or that the
caller's `check` rejects, is shown to the model with what was wrong, and the model is asked
again, up to `attempts` calls. What a missing answer means is the caller's to decide (an
error, a Magentic stall), with every problem in hand.

Example:
    >>> import anyio
    >>> from pydantic import BaseModel
    >>> from raf.testing import ScriptedProvider, text
    >>> class Verdict(BaseModel):
    ...     ok: bool
    >>> model = ScriptedProvider([text("sure!"), text('Here: {"ok": true}')])
    >>> answer = anyio.run(ask_json, model, [ChatMessage.user("ok?")], Verdict)
    >>> answer.value, len(answer.problems)
    (Verdict(ok=True), 1)
    >>> response_format(Verdict)["json_schema"]["name"]
    'Verdict'
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from raf._defaults import new_list
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

ATTEMPTS = 3
"""Model calls `ask_json` makes for one answer unless told otherwise."""
AGAIN = "Answer again with JSON only, following the format asked for."
"""How a correction ends unless the caller words it."""
PROSE_OBJECTS = 16
"""Objects tried in an answer's prose before it counts as no JSON (the model is untrusted:
reading its answer stays linear in practice)."""
_DECODER = json.JSONDecoder()
"""Reads the objects in an answer's prose (stateless: one serves every call, as in `json.loads`)."""


def response_format(schema: type[BaseModel]) -> dict[str, Any]:
    """The chat-completions `json_schema` response format for `schema` (not strict)."""
    return _response_format(schema)


@dataclass(frozen=True, slots=True)
class Answer(Generic[M]):
    """A validated answer, or None, and what was wrong with each rejected one."""

    value: M | None
    problems: list[str] = field(default_factory=new_list)


async def ask_json(
    provider: LlmProvider,
    messages: Sequence[ChatMessage],
    schema: type[M],
    *,
    format: dict[str, Any] | None = None,
    attempts: int = ATTEMPTS,
    check: Callable[[M], str | None] | None = None,
    before_call: Callable[[], None] | None = None,
    on_event: Callable[[ProviderEvent], Awaitable[None]] | None = None,
    seat: str | None = None,
    again: str = AGAIN,
) -> Answer[M]:
    """Ask `provider` for JSON of `schema`, up to `attempts` times.

    An answer that is not JSON of `schema`, or that `check` rejects (it returns what is
    wrong), is followed by a correction naming the problem and ending in `again`, and the
    model is asked again. `before_call` runs before each call (to charge a budget);
    `on_event` sees every provider event; the model sees the conversation from `seat` (see
    `structured_call`). A provider failure propagates.
    """
    fmt = format if format is not None else response_format(schema)
    conversation = list(messages)
    problems: list[str] = []
    for _ in range(attempts):
        if before_call is not None:
            before_call()
        text = await completion_text(provider, conversation, fmt, on_event=on_event, seat=seat)
        try:
            value = validate_json(text, schema)
        except ValidationError as exc:
            problem = f"not JSON of {schema.__name__}: {describe_validation_error(exc)}"
        else:
            problem = check(value) if check is not None else None
            if problem is None:
                return Answer(value, problems)
        problems.append(problem)
        conversation += [
            ChatMessage.assistant(text),
            ChatMessage.user(f"That answer cannot be used: {problem}. {again}"),
        ]
    return Answer(None, problems)


async def structured_call(
    provider: LlmProvider,
    messages: Sequence[ChatMessage],
    schema: type[M],
    format: dict[str, Any] | None = None,
    *,
    on_event: Callable[[ProviderEvent], Awaitable[None]] | None = None,
    seat: str | None = None,
    attempts: int = 1,
) -> M:
    """Make a model call with `schema`'s response format and validate the answer (`ask_json`
    with one attempt, unless `attempts` allows corrections).

    `on_event` sees every provider event as it arrives (to stream reasoning, count usage).
    The model sees `messages` from `seat` (see `raf.providers.seat`): with no seat, every
    agent's message is another's, shown as a user message naming its author.

    Raises:
        SchemaValidationError: when no answer is JSON matching `schema`.
        ProviderError: when the model fails.
    """
    answer = await ask_json(
        provider,
        messages,
        schema,
        format=format,
        attempts=attempts,
        on_event=on_event,
        seat=seat,
    )
    if answer.value is None:
        raise SchemaValidationError(
            f"model {provider.model!r} answered with output that does not match "
            f"{schema.__name__} ({answer.problems[-1]}); make the prompt ask for these "
            "fields, or use a model that supports structured output"
        )
    return answer.value


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
    """`text` validated against `schema`: bare JSON, JSON in a ```json fence, or else the
    first JSON object in the prose around it that is JSON of `schema`.

    Raises:
        pydantic.ValidationError: when none is (the error of `text` read as a whole).

    Example:
        >>> from pydantic import BaseModel
        >>> class Verdict(BaseModel):
        ...     ok: bool
        >>> validate_json('{"ok": true}', Verdict), validate_json('Yes: {"ok": true}.', Verdict)
        (Verdict(ok=True), Verdict(ok=True))
    """
    try:
        return schema.model_validate_json(json_answer(text))
    except ValidationError:
        found = _object_in_prose(text, schema)
        if found is None:
            raise
        return found


def _object_in_prose(text: str, schema: type[M]) -> M | None:
    start = text.find("{")
    for _ in range(PROSE_OBJECTS):
        if start == -1:
            break
        try:
            data, _ = _DECODER.raw_decode(text, start)
            return schema.model_validate(data)
        except (ValueError, ValidationError):
            start = text.find("{", start + 1)
    return None
