"""`agent_to_adapter`: roles played by any agent, its answer extracted into the schema.

Example:
    >>> import anyio
    >>> from pydantic import BaseModel
    >>> from raf.adapters import ThreadContext
    >>> from raf.function_agent import FunctionAgent
    >>> from raf.testing.script import text
    >>> from raf.testing.scripted_provider import ScriptedProvider
    >>> class Count(BaseModel):
    ...     n: int
    >>> counter = FunctionAgent("counter", lambda messages: "I count three.")
    >>> adapter = agent_to_adapter(counter, ScriptedProvider([text('{"n": 3}')]))
    >>> anyio.run(adapter("Count.", Count), ThreadContext(thread_id="t"))
    Count(n=3)
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from raf.adapters.role_context import role_context
from raf.adapters.structured import response_format, structured_call
from raf.adapters.thread import AdapterFn, RoleFn, ThreadContext, thread_messages
from raf.agent import IAgent, invoke_agent
from raf.messages import ChatMessage
from raf.providers.base import LlmProvider
from raf.providers.seat import attributed
from raf.session import Session
from raf.updates import AgentResponse

M = TypeVar("M", bound=BaseModel)

EXTRACT_INSTRUCTIONS = (
    "You extract structured data. Read the answer below and return it as JSON matching the "
    "response schema. Use only what the answer says; do not add facts."
)
"""The system message of the extraction call."""


def agent_to_adapter(agent: IAgent, extract_provider: LlmProvider) -> AdapterFn:
    """An adapter whose roles run `agent` on the thread, then extract the schema in one call.

    The agent gets the role prompt as a system message, then the thread, in a fresh session
    each time (inside a role workflow it runs as a child of the role, streaming on its path). When its response already carries a value of the schema's type, that value is
    used and no extraction call is made.
    """

    def adapter(prompt: str, schema: type[M], /) -> RoleFn[M]:
        fmt = response_format(schema)
        system = ChatMessage.system(prompt)

        async def role(thread: ThreadContext) -> M:
            messages = [system, *thread_messages(thread)]
            ctx = role_context()
            if ctx is None:
                response = await agent.run(messages, session=Session()).collect()
            else:  # inside a role workflow: stream the agent's items on the role's path
                response = await invoke_agent(agent, messages, ctx)
            if isinstance(response.value, schema):
                return response.value
            messages = [
                ChatMessage.system(EXTRACT_INSTRUCTIONS),
                ChatMessage.user(
                    f"Role instructions:\n{prompt}\n\nThe answer:\n{_answer_text(response)}"
                ),
            ]
            return await structured_call(extract_provider, messages, schema, fmt)

        return role

    return adapter


def _answer_text(response: AgentResponse) -> str:
    parts = [
        attributed(m.author, m.text) if m.author else m.text
        for m in response.messages
        if m.role == "assistant" and m.text
    ]
    return "\n\n".join(parts)
