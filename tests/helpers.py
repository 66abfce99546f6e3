"""Small shared test utilities."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Sequence
from contextlib import aclosing, asynccontextmanager, contextmanager
from typing import Any

import anyio
from anyio.from_thread import start_blocking_portal

from raf.agent import AgentMetadata, AgentRun, IAgent, RunOptions
from raf.messages import ChatMessage, MessagesInput
from raf.session import Session
from raf.testing import ScriptedOpenAIServer
from raf.testing.script import Script
from raf.tools.definition import ToolDefinition


class EventsProvider:
    """A provider that plays fixed event lists, one per call, exactly as given (any object, so
    that a test can stream a wrong one)."""

    def __init__(self, *calls: Sequence[object], model: str = "fixed") -> None:
        self._calls = list(calls)
        self._model = model

    @property
    def model(self) -> str:
        return self._model

    @asynccontextmanager
    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolDefinition] = (),
        response_format: dict[str, Any] | None = None,
    ) -> AsyncIterator[AsyncIterator[Any]]:
        events = self._calls.pop(0)

        async def play() -> AsyncGenerator[Any]:
            for event in events:
                yield event

        async with aclosing(play()) as played:
            yield played


class Barrier:
    """Lets its `parties` through `wait()` together, once the last of them has arrived."""

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.arrived = 0
        self._all = anyio.Event()

    async def wait(self) -> None:
        self.arrived += 1
        if self.arrived == self.parties:
            self._all.set()
        await self._all.wait()


async def answers_in_sessions(agent: IAgent, prompts: Sequence[str]) -> list[str]:
    """Run every prompt at once, each on its own session; the answers' texts, in order."""
    answers = [""] * len(prompts)

    async def one(index: int) -> None:
        session = Session(id=f"session{index}")
        answers[index] = (await agent.run(prompts[index], session).collect()).text

    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:
            for index in range(len(prompts)):
                group.start_soon(one, index)
    return answers


@contextmanager
def endpoint_in_thread(script: Script, **options: Any) -> Iterator[ScriptedOpenAIServer]:
    """A `ScriptedOpenAIServer(script, **options)` served from a thread of its own, on asyncio.

    For a synchronous test whose subject is another process (an example, the `raf` command)
    talking to the endpoint: run as an async test on each backend, it would start that same
    process twice."""
    with (
        start_blocking_portal(backend="asyncio") as portal,
        portal.wrap_async_context_manager(ScriptedOpenAIServer(script, **options)) as server,
    ):
        yield server


def task_count() -> int:
    """How many tasks run on the current event loop (asyncio or trio)."""
    return len(anyio.get_running_tasks())


class Foreign:
    """An `IAgent` that is not a raf agent: it wraps one behind the public `run()`.

    `honours_options=False` drops the `RunOptions` it is given, as an agent may.
    """

    def __init__(self, inner: IAgent, *, honours_options: bool = True) -> None:
        self.inner = inner
        self.honours_options = honours_options

    @property
    def id(self) -> str:
        return self.inner.id

    @property
    def metadata(self) -> AgentMetadata:
        return self.inner.metadata

    def get_subagent(self, agent_id: str) -> IAgent | None:
        return None

    def run(
        self,
        messages: MessagesInput,
        session: Session | None = None,
        options: RunOptions | None = None,
    ) -> AgentRun:
        return self.inner.run(messages, session, options if self.honours_options else None)

    async def reset(self) -> None:
        await self.inner.reset()
