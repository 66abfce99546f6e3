"""JSON from a model: one call, validated, corrected and asked again a bounded number of times.

A pattern's own model calls (a Magentic manager's ledgers) answer with JSON of a schema. A
model that writes something else (prose, a wrong field type, a value the pattern cannot use)
is shown what was wrong and asked again; after `attempts` calls the caller decides what a
missing answer means (a Magentic stall, say), with every problem in hand.

Example:
    >>> import anyio
    >>> from pydantic import BaseModel
    >>> from raf.testing import ScriptedProvider, text
    >>> class Verdict(BaseModel):
    ...     ok: bool
    >>> model = ScriptedProvider([text("sure!"), text('{"ok": true}')])
    >>> answer = anyio.run(ask_json, model, [ChatMessage.user("ok?")], Verdict)
    >>> answer.value, len(answer.problems)
    (Verdict(ok=True), 1)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from raf.adapters.structured import completion_text, response_format, validate_json
from raf.messages import ChatMessage
from raf.providers.base import LlmProvider, ProviderEvent
from raf.tools.arguments import describe_validation_error

__all__ = ["Answer", "ask_json", "ask_text"]

M = TypeVar("M", bound=BaseModel)

ATTEMPTS = 3
"""Model calls made for one answer before giving up on it."""


def _new_problems() -> list[str]:
    return []


@dataclass(frozen=True, slots=True)
class Answer(Generic[M]):
    """A validated answer, or None, and what was wrong with each rejected one."""

    value: M | None
    problems: list[str] = field(default_factory=_new_problems)


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
) -> Answer[M]:
    """Ask `provider` for JSON of `schema`, up to `attempts` times.

    An answer that is not JSON of `schema`, or that `check` rejects (it returns what is
    wrong), is followed by a correction naming the problem, and the model is asked again.
    `before_call` runs before each call (to charge a budget); `on_event` sees every
    provider event. A provider failure propagates.
    """
    fmt = format if format is not None else response_format(schema)
    conversation = list(messages)
    problems: list[str] = []
    for _ in range(attempts):
        if before_call is not None:
            before_call()
        text = await completion_text(provider, conversation, fmt, on_event=on_event)
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
            ChatMessage.user(
                f"That answer cannot be used: {problem}. Answer again with JSON only, "
                "following the format asked for."
            ),
        ]
    return Answer(None, problems)


async def ask_text(
    provider: LlmProvider,
    messages: Sequence[ChatMessage],
    *,
    before_call: Callable[[], None] | None = None,
    on_event: Callable[[ProviderEvent], Awaitable[None]] | None = None,
) -> str:
    """One plain-text call (a fact sheet, a plan, a final answer): the completion's text."""
    if before_call is not None:
        before_call()
    return await completion_text(provider, messages, None, on_event=on_event)
