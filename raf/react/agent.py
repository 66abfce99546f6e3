"""`ReactAgent`: the leaf agent, an LLM calling tools until it can answer.

Example:
    >>> import anyio
    >>> from raf.testing.script import text, tool_calls
    >>> from raf.testing.scripted_provider import ScriptedProvider
    >>> from raf.tools import tool
    >>> @tool
    ... def add(a: int, b: int) -> int:
    ...     '''Add two numbers.'''
    ...     return a + b
    >>> provider = ScriptedProvider([tool_calls(("add", {"a": 2, "b": 3})), text("5")])
    >>> agent = ReactAgent("calc", provider, "Use the tools.", tools=[add])
    >>> anyio.run(lambda: agent.run("2 + 3?").collect()).text
    '5'
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from types import CoroutineType
from typing import Any, ClassVar, TypeVar, cast, get_args, overload

from pydantic import BaseModel

from raf.agent import BaseAgent, Session
from raf.messages import ChatMessage, ToolCallContent
from raf.providers.base import LlmProvider
from raf.react.client_calls import CLIENT_CALLS, ClientCalls, with_client_tools
from raf.react.exits import ExitTool
from raf.react.loop import OutputMode, ReactLoop
from raf.react.resolve import RESOLVE_TOOL_NAME, before_resolve, resolve_definition
from raf.run import RunContext
from raf.tools.tool import Tool, ToolResult, as_tool
from raf.updates import AgentResponse, ValueT

M = TypeVar("M", bound=BaseModel)


class ReactAgent(BaseAgent[ValueT]):
    """An LLM with tools: stream a model call, run the tools it asks for, repeat until it answers.

    With `output_schema` the model must finish by calling the `resolve` tool with arguments
    matching the schema; the response's `value` is then the validated model instance and its
    last message is the value as JSON. With `output_mode="native"` the model answers in JSON
    text instead, constrained by a strict JSON-schema response format on every call (for
    servers whose models cannot call tools reliably; see docs/local-models.md). Holds no run
    state: history lives in sessions.

    Type checkers know the value's type: `ReactAgent(..., output_schema=Plan)` is a
    `ReactAgent[Plan]`, whose runs give `AgentResponse[Plan]`; without a schema the agent is a
    `ReactAgent[None]`, whose value is None.

    The model sees the conversation from this agent's seat: only this agent's own earlier
    messages are `assistant` messages; other agents' messages come as user messages naming
    their authors (see `raf.providers.seat`).

    Args:
        id: the agent id.
        provider: the model.
        instructions: the system message.
        tools: `Tool`s (or plain typed functions, wrapped with `@tool`).
        output_schema: the structured output the model must submit, if any.
        max_rounds: model calls per run (`RunOptions.max_rounds` overrides it).
        description: what the agent does, for people and routing models.
        name: a display name (the id by default).
        output_mode: `"tool"` (submit through `resolve`) or `"native"` (a JSON text answer
            under a strict JSON-schema response format); needs `output_schema` when native.
        text_tool_calls: take an answer that is only a tool call written as JSON text
            (bare, in a ```json fence or in `<tool_call>` tags) as that tool call.

    Raises:
        TypeError: when an argument has the wrong type (a model name where the provider
            belongs, a single tool instead of a sequence, a schema that is not a pydantic
            model class, instructions that are not a str).
        ValueError: on duplicate tool names, a tool named `resolve` next to an output
            schema, `max_rounds` below 1, or an unknown or schema-less `output_mode`.
    """

    kind: ClassVar[str] = "react"

    # The value's type is the schema's (`ReactAgent[Plan]`), or None without a schema. A
    # schema typed `type[Plan] | None` matches each overload in turn: `ReactAgent[Plan] |
    # ReactAgent[None]`.
    @overload
    def __init__(
        self: ReactAgent[None],
        id: str,
        provider: LlmProvider,
        instructions: str,
        tools: Sequence[Tool | Callable[..., Any]] = (),
        output_schema: None = None,
        max_rounds: int = 10,
        description: str = "",
        *,
        name: str | None = None,
        output_mode: OutputMode = "tool",
        text_tool_calls: bool = False,
    ) -> None: ...

    @overload
    def __init__(
        self: ReactAgent[M],
        id: str,
        provider: LlmProvider,
        instructions: str,
        tools: Sequence[Tool | Callable[..., Any]] = ...,
        output_schema: type[M] = ...,
        max_rounds: int = 10,
        description: str = "",
        *,
        name: str | None = None,
        output_mode: OutputMode = "tool",
        text_tool_calls: bool = False,
    ) -> None: ...

    def __init__(
        self,
        id: str,
        provider: LlmProvider,
        instructions: str,
        tools: Sequence[Tool | Callable[..., Any]] = (),
        output_schema: type[BaseModel] | None = None,
        max_rounds: int = 10,
        description: str = "",
        *,
        name: str | None = None,
        output_mode: OutputMode = "tool",
        text_tool_calls: bool = False,
    ) -> None:
        super().__init__(id, name=name, description=description)
        _check_arguments(id, provider, instructions, tools, output_schema, max_rounds, output_mode)
        self._tools: dict[str, Tool] = {}
        for item in tools:
            wrapped = as_tool(item)
            if wrapped.name in self._tools:
                raise ValueError(
                    f"ReactAgent {id!r}: two tools are named {wrapped.name!r}; "
                    "give one another name with @tool(name=...)"
                )
            self._tools[wrapped.name] = wrapped
        definitions = tuple(t.definition for t in self._tools.values())
        if output_schema is not None and output_mode == "tool":
            if RESOLVE_TOOL_NAME in self._tools:
                raise ValueError(
                    f"ReactAgent {id!r}: the tool name {RESOLVE_TOOL_NAME!r} is reserved for "
                    "structured output; rename that tool"
                )
            definitions += (resolve_definition(output_schema),)
        self._loop = ReactLoop(
            provider=provider,
            instructions=instructions,
            tools=definitions,
            dispatch=self._dispatch,
            output_schema=output_schema,
            max_rounds=max_rounds,
            author=id,
            label=f"ReactAgent {id!r}",
            output_mode=output_mode,
            text_tool_calls=text_tool_calls,
            idempotent=frozenset(t.name for t in self._tools.values() if t.idempotent),
        )

    @property
    def provider(self) -> LlmProvider:
        """The model."""
        return self._loop.provider

    @property
    def instructions(self) -> str:
        """The system message."""
        return self._loop.instructions

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The agent's tools (without `resolve`)."""
        return tuple(self._tools.values())

    @property
    def max_rounds(self) -> int:
        """Model calls per run, unless `RunOptions.max_rounds` says otherwise."""
        return self._loop.max_rounds

    @property
    def schema(self) -> type[BaseModel] | None:
        """The structured output type, if any."""
        return self._loop.output_schema

    @property
    def output_mode(self) -> OutputMode:
        """How the structured output is submitted: `"tool"` (resolve) or `"native"`."""
        return self._loop.output_mode

    def output_schema(self) -> dict[str, Any] | None:
        """JSON schema of the structured value, if the agent has an output schema."""
        schema = self._loop.output_schema
        return schema.model_json_schema() if schema is not None else None

    def with_exits(self, exits: Sequence[ExitTool]) -> ReactAgent[ValueT | None]:
        """A view of this agent that also offers `exits`, tools whose call ends its loop.

        The view shares everything else (id, provider, tools, schema); this agent is not
        changed. Patterns that take control back from an agent (a handoff) run the view. A
        run of the view that ends on an exit has no value, hence `ReactAgent[T | None]`.

        Raises:
            ValueError: when an exit is named like one of the agent's tools.

        Example:
            >>> import anyio
            >>> from raf.react.exits import ExitTool
            >>> from raf.testing import ScriptedProvider, tool_calls
            >>> from raf.tools import ToolDefinition
            >>> model = ScriptedProvider([tool_calls(("handoff_to_billing", {}))])
            >>> agent = ReactAgent("triage", model, "Route the user.")
            >>> leave = ExitTool(ToolDefinition(name="handoff_to_billing"), "Transferred.")
            >>> response = anyio.run(agent.with_exits([leave]).run("refund?").collect)
            >>> [(m.role, m.text) for m in response.messages]
            [('assistant', ''), ('tool', '')]
            >>> response.messages[-1].contents[0].result
            'Transferred.'
        """
        loop = self._loop
        taken = {d.name for d in loop.tools} | {e.name for e in loop.exits}
        clashes = sorted({e.name for e in exits} & taken)
        if clashes:
            raise ValueError(
                f"ReactAgent {self.id!r} already has tools named {clashes}; "
                "rename them with @tool(name=...)"
            )
        definitions = before_resolve(loop.tools, [e.definition for e in exits])
        view = copy.copy(self)
        view._default_session = Session()  # a view run on its own keeps its own conversation
        view._loop = dataclasses.replace(loop, tools=definitions, exits=(*loop.exits, *exits))
        return view

    def invoke(
        self, messages: list[ChatMessage], ctx: RunContext
    ) -> CoroutineType[Any, Any, AgentResponse[ValueT]]:
        """Run the ReAct loop on the conversation `messages`; see the class docstring."""
        if not ctx.options.client_tools and not ctx.turn.answers:
            return self._loop.run(messages, ctx)  # the loop's own coroutine: no layer between
        return self._with_client_tools(messages, ctx)

    def invoke_turn(
        self, messages: list[ChatMessage], ctx: RunContext
    ) -> CoroutineType[Any, Any, AgentResponse[ValueT]]:
        """Run one turn as the root of a run; new messages that answer the client tool calls
        the last turn waits on come first, as the tool results of those calls (see
        `raf.react.client_calls`)."""
        if ctx.session.get(ctx.key(CLIENT_CALLS)) is None:  # a root's place is its path
            return super().invoke_turn(messages, ctx)  # no layer between
        return self._answered_turn(messages, ctx)

    async def _answered_turn(
        self, messages: list[ChatMessage], ctx: RunContext
    ) -> AgentResponse[ValueT]:
        kept = ClientCalls.load(ctx)
        assert kept is not None
        key = ClientCalls.key(ctx.place)
        ctx.session.pop(key)  # the history holds the waiting turn's messages
        try:
            return await super().invoke_turn(kept.answered_turn(messages, ctx, self.id), ctx)
        except BaseException:
            if ctx.session.get(key) is None:  # a failed turn never happened: it waits again
                ctx.session.set(key, kept)
            raise

    async def _with_client_tools(
        self, messages: list[ChatMessage], ctx: RunContext
    ) -> AgentResponse[ValueT]:
        """A run offering the run's client tools too; a nested agent whose earlier turn
        waits on client calls that this turn answers goes on after them."""
        tools = ctx.options.client_tools
        loop = (
            with_client_tools(self._loop, tools, f"ReactAgent {self.id!r}") if tools else self._loop
        )
        kept = ClientCalls.load(ctx) if len(ctx.path) > 1 else None
        if kept is None:
            return await loop.run(messages, ctx)
        answers = ctx.turn.answers
        if any(request_id not in answers for request_id, _ in kept.calls):
            ctx.session.pop(ClientCalls.key(ctx.place))  # a fresh call: that wait is stale
            return await loop.run(messages, ctx)
        earlier = [*kept.messages, *kept.results(answers, ctx.turn.errors, self.id)]
        response = await loop.run(messages, ctx, earlier)
        if response.status != "waiting":
            ctx.session.pop(ClientCalls.key(ctx.place))
        return response

    async def _dispatch(self, call: ToolCallContent, ctx: RunContext) -> ToolResult:
        return await self._tools[call.name].call(call.arguments, ctx)


def _check_arguments(
    id: str,
    provider: object,
    instructions: object,
    tools: object,
    output_schema: object,
    max_rounds: object,
    output_mode: object,
) -> None:
    """Fail at construction, saying what to pass, rather than deep inside the first run."""
    who = f"ReactAgent {id!r}"
    if isinstance(provider, str):
        raise TypeError(
            f"{who}: provider must be an LlmProvider, not the str {provider!r}; for a model "
            f'name pass OpenAIProvider(client, "{provider}") with client = '
            "raf.create_client() (or an openai.AsyncOpenAI)"
        )
    if not isinstance(provider, LlmProvider):
        raise TypeError(
            f"{who}: provider must be an LlmProvider (a .model and a .stream(...)), got "
            f'{type(provider).__name__}; pass OpenAIProvider(client, "gpt-4o-mini") or a '
            "raf.testing.ScriptedProvider"
        )
    if not isinstance(instructions, str):
        raise TypeError(
            f"{who}: instructions must be a str (the system message), got "
            f"{type(instructions).__name__}"
        )
    if isinstance(tools, Tool) or callable(tools):
        raise TypeError(f"{who}: tools must be a sequence of tools; pass tools=[{_name(tools)}]")
    if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Sequence):
        raise TypeError(
            f"{who}: tools must be a sequence (a list or tuple) of tools, got "
            f"{type(cast(object, tools)).__name__}"
        )
    if output_schema is not None and not (
        isinstance(output_schema, type) and issubclass(output_schema, BaseModel)
    ):
        raise TypeError(
            f"{who}: output_schema must be a pydantic model class (class Answer(BaseModel): "
            f"...), got {_name(cast(object, output_schema))}"
        )
    if not isinstance(max_rounds, int) or isinstance(max_rounds, bool) or max_rounds < 1:
        raise ValueError(f"{who}: max_rounds must be an int of at least 1, not {max_rounds!r}")
    if output_mode not in get_args(OutputMode):
        raise ValueError(f"{who}: output_mode must be 'tool' or 'native', not {output_mode!r}")
    if output_mode == "native" and output_schema is None:
        raise ValueError(
            f"{who}: output_mode='native' constrains the answer to output_schema; "
            "pass output_schema=YourModel too"
        )


def _name(value: object) -> str:
    """How to write `value` in a message: a class or function by its name, else its repr."""
    name = getattr(value, "__name__", None) or getattr(value, "name", None)
    return name if isinstance(name, str) else repr(value)
