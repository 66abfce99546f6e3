"""`create_llm_adapter`: roles answered by one structured-output model call.

Example:
    >>> import anyio
    >>> from pydantic import BaseModel
    >>> from raf.adapters import ThreadContext
    >>> from raf.messages import ChatMessage
    >>> from raf.testing.script import text
    >>> from raf.testing.scripted_provider import ScriptedProvider
    >>> class Verdict(BaseModel):
    ...     ok: bool
    >>> adapter = create_llm_adapter(ScriptedProvider([text('{"ok": true}')]))
    >>> judge = adapter("Is the plan sound?", Verdict)
    >>> thread = ThreadContext(thread_id="t", start=[ChatMessage.user("plan: rest")])
    >>> anyio.run(judge, thread)
    Verdict(ok=True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar, overload

from pydantic import BaseModel

from raf.adapters.meter import CallMeter
from raf.adapters.role_context import role_context
from raf.adapters.structured import completion_text, response_format, structured_call
from raf.adapters.thread import (
    AdapterFn,
    ResultAdapterFn,
    RoleFn,
    RoleResult,
    ThreadContext,
    role_output,
    thread_messages,
)
from raf.messages import ChatMessage
from raf.providers.base import LlmProvider, ProviderEvent

M = TypeVar("M", bound=BaseModel)

UserMessageBuilder = Callable[[ThreadContext], "str | ChatMessage | Sequence[ChatMessage]"]
"""`build_user_message(thread)`: what the model is shown after the role prompt."""
ResponseParser = Callable[[str, ThreadContext], Any]
"""`parse_response(response_text, thread)`: the role's `RoleResult` or schema instance."""


@overload
def create_llm_adapter(
    provider: LlmProvider, *, build_user_message: UserMessageBuilder | None = None
) -> AdapterFn: ...


@overload
def create_llm_adapter(
    provider: LlmProvider,
    *,
    build_user_message: UserMessageBuilder | None = None,
    parse_response: ResponseParser,
) -> ResultAdapterFn: ...


def create_llm_adapter(
    provider: LlmProvider,
    *,
    build_user_message: UserMessageBuilder | None = None,
    parse_response: ResponseParser | None = None,
) -> AdapterFn | ResultAdapterFn:
    """An adapter whose roles make one chat call with a JSON-schema response format.

    The role prompt is the system message, the thread the conversation; the answer is
    validated against the schema (`SchemaValidationError` when it does not match). Inside a
    role workflow the call streams its text, reasoning and usage on the role's path, and
    counts against the run's budget.

    Args:
        provider: the model.
        build_user_message: `(thread) -> text or messages` shown instead of the thread's
            opening messages and steps.
        parse_response: `(response_text, thread) -> RoleResult` (or a schema instance, or
            JSON data of it): the call is then made without a response format, and the
            role's answer is what this makes of the model's text.
    """

    def conversation(prompt: str, thread: ThreadContext) -> list[ChatMessage]:
        if build_user_message is None:
            return [ChatMessage.system(prompt), *thread_messages(thread)]
        shown = build_user_message(thread)
        if isinstance(shown, str):
            shown = [ChatMessage.user(shown)]
        elif isinstance(shown, ChatMessage):
            shown = [shown]
        return [ChatMessage.system(prompt), *shown]

    def streaming() -> Callable[[ProviderEvent], Any] | None:
        ctx = role_context()
        if ctx is None:
            return None
        # Inside a role workflow the call streams to the run, on the role's path.
        meter = CallMeter(ctx, text=True)
        meter.charge()
        return meter.on_event

    def adapter(prompt: str, schema: type[M], /) -> RoleFn[M]:
        fmt = response_format(schema)

        async def role(thread: ThreadContext) -> M:
            messages = conversation(prompt, thread)
            return await structured_call(provider, messages, schema, fmt, on_event=streaming())

        return role

    if parse_response is None:
        return adapter
    parse = parse_response

    def parsing(prompt: str, schema: type[M], /) -> RoleFn[M | RoleResult]:
        async def role(thread: ThreadContext) -> M | RoleResult:
            messages = conversation(prompt, thread)
            text = await completion_text(provider, messages, None, on_event=streaming())
            return role_output(parse(text, thread), schema)

        return role

    return parsing
