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

from typing import TypeVar

from pydantic import BaseModel

from raf.adapters.meter import CallMeter
from raf.adapters.role_context import role_context
from raf.adapters.structured import response_format, structured_call
from raf.adapters.thread import AdapterFn, RoleFn, ThreadContext, thread_messages
from raf.messages import ChatMessage
from raf.providers.base import LlmProvider

M = TypeVar("M", bound=BaseModel)


def create_llm_adapter(provider: LlmProvider) -> AdapterFn:
    """An adapter whose roles make one chat call with a JSON-schema response format.

    The role prompt is the system message, the thread the conversation; the answer is
    validated against the schema (`SchemaValidationError` when it does not match). Inside a
    role workflow the call streams its text, reasoning and usage on the role's path, and
    counts against the run's budget.
    """

    def adapter(prompt: str, schema: type[M], /) -> RoleFn[M]:
        fmt = response_format(schema)
        system = ChatMessage.system(prompt)

        async def role(thread: ThreadContext) -> M:
            messages = [system, *thread_messages(thread)]
            ctx = role_context()
            if ctx is None:
                return await structured_call(provider, messages, schema, fmt)
            # Inside a role workflow the call streams to the run, on the role's path.
            meter = CallMeter(ctx, text=True)
            meter.charge()
            return await structured_call(provider, messages, schema, fmt, on_event=meter.on_event)

        return role

    return adapter
