"""LangGraph: a `StateGraph` whose nodes each call a zero-latency chat model.

The model is a minimal `BaseChatModel` subclass streaming one `AIMessageChunk` (with usage).
The state is `messages` with the `add_messages` reducer; each node hands the model the system
instructions plus the whole conversation and appends its reply. Runs are consumed with
`astream(stream_mode=["messages", "updates"])`: "messages" streams every token as the model
produces it (the closest to raf's text deltas) and "updates" gives each node's finished
message (the closest to raf's completed messages), so the consumer sees the same things.
Nesting (scenario E) adds compiled graphs as nodes of their parents and streams with
`subgraphs=True`; checkpoints (scenario F) use langgraph-checkpoint-sqlite's
`AsyncSqliteSaver` with the default durability.

`LangGraphInvokeSuite` ("langgraph-invoke") runs the same graphs through LangGraph's cheapest
path, `graph.ainvoke(state)`: nothing is streamed, so each node's model answers through
`_agenerate` (one finished `AIMessage`) and the caller sees the tokens only in the state the run
returns. Its check counts the assistant messages of that state (and the token in each); scenario
E, a token's latency on its way to the consumer, does not exist on that path (n/a).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any, TypedDict

from bench.suites.base import (
    INSTRUCTIONS,
    PROMPT,
    TOKEN,
    Checkpointed,
    Outcome,
    Run,
    Unavailable,
    conversation_size,
    now,
)

try:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, AIMessageChunk, AnyMessage, BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
except ImportError as exc:
    raise Unavailable(f"LangGraph is not installed: {exc}") from exc


class _Stamp:
    """Where the model notes what it saw and when it answered (a pydantic model is frozen-ish)."""

    def __init__(self) -> None:
        self.largest_input = 0
        self.stamp = 0.0


class ZeroLatencyChatModel(BaseChatModel):
    """Answers `TOKEN` at once, streamed as one chunk carrying usage."""

    book: Any = None

    @property
    def _llm_type(self) -> str:
        return "zero-latency"

    def _note(self, messages: list[BaseMessage]) -> int:
        conversation = conversation_size(messages, _is_system)
        if conversation > self.book.largest_input:
            self.book.largest_input = conversation
        return len(messages)

    def _usage(self, inputs: int) -> Any:
        return {"input_tokens": inputs, "output_tokens": 1, "total_tokens": inputs + 1}

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        inputs = self._note(messages)
        message = AIMessage(content=TOKEN, usage_metadata=self._usage(inputs))
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        return self._generate(messages, stop, None, **kwargs)

    async def _astream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        inputs = self._note(messages)
        self.book.stamp = now()
        message = AIMessageChunk(content=TOKEN, usage_metadata=self._usage(inputs))
        chunk = ChatGenerationChunk(message=message)
        if run_manager is not None:
            await run_manager.on_llm_new_token(TOKEN, chunk=chunk)
        yield chunk


class State(TypedDict):
    """The graph state: the conversation, and the fan-out's aggregate."""

    messages: Annotated[list[AnyMessage], add_messages]
    aggregate: list[AnyMessage]


def _count(item: Any) -> tuple[int, int]:
    """Tokens and finished assistant messages in one `astream` item."""
    mode, payload = item[-2], item[-1]
    if mode == "messages":
        return (1, 0) if payload[0].content == TOKEN else (0, 0)
    replies = 0
    for update in payload.values():
        if update:
            replies += sum(1 for m in update.get("messages", ()) if m.type == "ai")
    return 0, replies


def _start() -> dict[str, Any]:
    """The state every run starts from: the user's prompt."""
    return {"messages": [("user", PROMPT)]}


class LangGraphSuite:
    """LangGraph's side of every scenario."""

    name = "langgraph"
    modules = ("langgraph.graph", "langchain_core.language_models")

    def __init__(self) -> None:
        self.model = _Stamp()
        self._chat = ZeroLatencyChatModel(book=self.model)

    def version(self) -> str:
        from importlib.metadata import version

        return f"langgraph {version('langgraph')}, langchain-core {version('langchain-core')}"

    def details(self) -> dict[str, str]:
        return {
            "leaf": "StateGraph node calling a BaseChatModel subclass (one streamed chunk)",
            "stream": "graph.astream(state, stream_mode=['messages', 'updates'])",
        }

    def _node(self, name: str) -> Callable[[State], Awaitable[dict[str, Any]]]:
        chat = self._chat

        async def node(state: State) -> dict[str, Any]:
            reply = await chat.ainvoke([("system", INSTRUCTIONS), *state["messages"]])
            reply.name = name
            return {"messages": [reply]}

        return node

    def _chain_graph(self, agents: int, checkpointer: Any = None) -> Any:
        graph = StateGraph(State)
        previous = START
        for i in range(agents):
            graph.add_node(f"agent{i}", self._node(f"agent{i}"))
            graph.add_edge(previous, f"agent{i}")
            previous = f"agent{i}"
        graph.add_edge(previous, END)
        return graph.compile(checkpointer=checkpointer)

    async def _consume(self, graph: Any, config: Any = None) -> Outcome:
        tokens = replies = 0
        async for item in graph.astream(_start(), config, stream_mode=["messages", "updates"]):
            seen, done = _count(item)
            tokens += seen
            replies += done
        return Outcome(tokens, replies)

    async def chain(self, agents: int) -> Run:
        graph = self._chain_graph(agents)
        return lambda: self._consume(graph)

    async def fan_out(self, agents: int) -> Run:
        graph = StateGraph(State)
        names = [f"agent{i}" for i in range(agents)]
        for name in names:
            graph.add_node(name, self._node(name))
            graph.add_edge(START, name)

        def join(state: State) -> dict[str, Any]:
            last = {m.name: m for m in state["messages"] if m.type == "ai"}
            return {"aggregate": [last[name] for name in names]}

        graph.add_node("join", join)
        graph.add_edge(names, "join")
        graph.add_edge("join", END)
        compiled = graph.compile()
        return lambda: self._consume(compiled)

    async def sessions(self, sessions: int, agents: int) -> Run:
        import anyio

        graph = self._chain_graph(agents)

        async def run() -> Outcome:
            outcomes: list[Outcome] = []

            async def one() -> None:
                outcomes.append(await self._consume(graph))

            async with anyio.create_task_group() as tg:
                for _ in range(sessions):
                    tg.start_soon(one)
            return Outcome(sum(o.tokens for o in outcomes), sum(o.replies for o in outcomes))

        return run

    async def nested(self, depth: int) -> Callable[[], Awaitable[float]]:
        graph = self._chain_graph(1)
        for level in range(depth):
            parent = StateGraph(State)
            parent.add_node(f"level{level}", graph)
            parent.add_edge(START, f"level{level}")
            parent.add_edge(f"level{level}", END)
            graph = parent.compile()
        book = self.model

        async def run() -> float:
            latency = 0.0
            async for _namespace, (chunk, _meta) in graph.astream(
                _start(), stream_mode="messages", subgraphs=True
            ):
                if chunk.content == TOKEN:
                    latency = now() - book.stamp
            return latency

        return run

    async def checkpointed(self, agents: int, directory: str) -> Checkpointed:
        try:
            import aiosqlite
            from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
        except ImportError as exc:
            raise Unavailable(f"langgraph-checkpoint-sqlite is not installed: {exc}") from exc
        connection = await aiosqlite.connect(os.path.join(directory, "langgraph.sqlite"))
        saver = AsyncSqliteSaver(connection)
        await saver.setup()
        plain = self._chain_graph(agents)
        stored = self._chain_graph(agents, checkpointer=saver)
        threads = iter(range(1 << 30))

        def config() -> dict[str, Any]:
            return {"configurable": {"thread_id": f"t{next(threads)}"}}

        async def checkpoints() -> int:
            thread = config()
            await self._consume(stored, thread)
            return len([c async for c in saver.alist(thread)])

        return Checkpointed(
            plain=lambda: self._consume(plain),
            checkpointed=lambda: self._consume(stored, config()),
            checkpoints=checkpoints,
            close=connection.close,
        )


class LangGraphInvokeSuite(LangGraphSuite):
    """LangGraph's cheapest path: the same graphs run with `graph.ainvoke`, nothing streamed."""

    name = "langgraph-invoke"

    def details(self) -> dict[str, str]:
        return {
            "leaf": "StateGraph node calling a BaseChatModel subclass (_agenerate: one AIMessage)",
            "run": "graph.ainvoke(state): no stream, the tokens reach the caller in the final state",
        }

    async def _consume(self, graph: Any, config: Any = None) -> Outcome:
        # No token is streamed: each one is counted in the finished reply that carries it.
        state = await graph.ainvoke(_start(), config)
        replies = [m for m in state["messages"] if m.type == "ai"]
        return Outcome(sum(1 for m in replies if m.content == TOKEN), len(replies))

    async def nested(self, depth: int) -> Callable[[], Awaitable[float]]:
        raise Unavailable(
            "ainvoke streams nothing: a token reaches the caller only when the whole run has "
            "returned, so there is no token latency to measure per nesting level"
        )


def _is_system(message: BaseMessage) -> bool:
    return message.type == "system"
