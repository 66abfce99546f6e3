"""The ReAct loop shared by `ReactAgent` and the role adapters.

Each round: one streamed model call (every provider event forwarded at once as an
`AgentUpdate`), the assistant message, then the tool calls it asked for, concurrently, their
results appended in call order. The loop ends when the model answers in text (no schema) or
submits a valid `resolve` call (with a schema), and raises `MaxRoundsExceeded` when the model
calls run out.

Example:
    >>> import anyio
    >>> from raf.agent import default_options, Session
    >>> from raf.run import RunContext, discard
    >>> from raf.testing.script import text
    >>> from raf.testing.scripted_provider import ScriptedProvider
    >>> async def no_tools(call, ctx):
    ...     raise AssertionError("no tools here")
    >>> loop = ReactLoop(ScriptedProvider([text("hello")]), "Greet.", (), no_tools)
    >>> ctx = RunContext(("greeter",), Session(), default_options(), discard)
    >>> anyio.run(loop.run, [ChatMessage.user("hi")], ctx).text
    'hello'
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import anyio
from pydantic import BaseModel

from raf._streaming import single_exceptions
from raf._trusted import (
    assistant_text,
    completed_response,
    message_completed,
    text_delta,
    usage,
)
from raf.errors import AgentError, MaxRoundsExceeded, ProviderError
from raf.messages import (
    ChatMessage,
    Content,
    ReasoningContent,
    TextContent,
    ToolCallContent,
    ToolResultContent,
)
from raf.providers._checks import check_event
from raf.providers.base import (
    Completion,
    LlmProvider,
    ReasoningChunk,
    TextChunk,
    ToolCallDelta,
    ToolCallStarted,
    UsageReport,
)
from raf.providers.seat import seen_by
from raf.react.client_calls import wait_on
from raf.react.exits import ExitTool, second_exit
from raf.react.native import check_answer, native_format
from raf.react.resolve import DUPLICATE, RESOLVE_TOOL_NAME, check_resolve, correction_message
from raf.react.text_calls import HeldText, parse_text_calls
from raf.run import RunContext
from raf.tools.definition import ToolDefinition
from raf.tools.in_doubt import InDoubt
from raf.tools.tool import ToolResult
from raf.updates import (
    AgentResponse,
    ReasoningDelta,
    ToolCallArgs,
    ToolCalled,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)

if TYPE_CHECKING:
    from raf.steps import CallJournal as ToolJournal

Dispatch = Callable[[ToolCallContent, RunContext], Awaitable[ToolResult]]
"""Runs one call of a known tool; turns every failure into an error `ToolResult`."""

OutputMode = Literal["tool", "native"]
"""How structured output is submitted: the `resolve` tool, or a JSON-schema text answer."""


@dataclass(frozen=True, slots=True)
class ReactLoop:
    """One configured ReAct loop; holds no run state, so one loop serves many runs at once."""

    provider: LlmProvider
    """The model."""
    instructions: str
    """The system message put before the conversation (none when empty)."""
    tools: tuple[ToolDefinition, ...]
    """Every tool the model sees, `resolve` included when the schema is submitted through it."""
    dispatch: Dispatch
    """Runs calls of the tools in `tools` (except `resolve`)."""
    output_schema: type[BaseModel] | None = None
    """The structured output the model must submit."""
    max_rounds: int = 10
    """Model calls per run, unless `RunOptions.max_rounds` says otherwise."""
    author: str | None = None
    """The author of the assistant and tool messages the loop adds: the agent's id, the seat
    from which it sees the conversation."""
    label: str = "the ReAct loop"
    """Who runs the loop, for error messages."""
    exits: tuple[ExitTool, ...] = ()
    """Tools whose call ends the loop after its round (their definitions are in `tools`)."""
    output_mode: OutputMode = "tool"
    """`tool`: the model submits the output by calling `resolve` (which must be in `tools`);
    `native`: every call carries a strict JSON-schema response format and the text answer is
    the output."""
    text_tool_calls: bool = False
    """Take an answer that is only a JSON tool call written as text as that tool call."""
    idempotent: frozenset[str] = frozenset()
    """Tools that may run again when a recovered run (durable or resumed from a checkpoint)
    finds a call of theirs in doubt."""
    client: frozenset[str] = frozenset()
    """Tools the run's caller executes (`RunOptions.client_tools`, defined in `tools`): a
    round that calls one ends the loop waiting on it (`raf.react.client_calls`)."""
    _names: frozenset[str] = field(init=False, repr=False)
    _exits: dict[str, ExitTool] = field(init=False, repr=False)
    _system: tuple[ChatMessage, ...] = field(init=False, repr=False)
    _format: dict[str, Any] | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_names", frozenset(d.name for d in self.tools))
        object.__setattr__(self, "_exits", {e.name: e for e in self.exits})
        schema = self.output_schema
        fmt = native_format(schema) if schema is not None and self.output_mode == "native" else None
        object.__setattr__(self, "_format", fmt)
        # Built once: messages are frozen, so every run can share it.
        system = (ChatMessage.system(self.instructions),) if self.instructions else ()
        object.__setattr__(self, "_system", system)

    async def run(
        self,
        messages: Sequence[ChatMessage],
        ctx: RunContext,
        earlier: Sequence[ChatMessage] = (),
    ) -> AgentResponse:
        """Run the loop on `messages` (the conversation), streaming through `ctx.emit`;
        `earlier` are messages the loop made in this turn before it waited (on client tool
        calls), with their answers: the conversation goes on after them.

        Raises:
            MaxRoundsExceeded: when the model calls run out before a final answer.
            BudgetExceeded: when the run's budget of rounds or tokens is crossed.
            ProviderError: when the model fails.
        """
        try:
            # The conversation from this agent's seat; what the loop appends is its own.
            turn = ctx.turn
            if earlier:
                messages = [*messages, *earlier]
            conversation = seen_by(
                self.author, messages, turn.presented, turn.prefixes, system=self._system
            )
            added: list[ChatMessage] = list(earlier) if earlier else []
            tokens_in = tokens_out = 0
            schema = self.output_schema
            rounds = ctx.options.max_rounds or self.max_rounds
            budgeted = ctx.budget is not None
            telemetry = turn.telemetry
            # A run that checkpoints records its tool calls, unless durable (each a step).
            engine = turn.engine
            journal = None if engine is None or turn.durable is not None else engine.journal
            made = 0  # tool calls so far: a call's index names it in the run's journal
            for _ in range(rounds):
                if budgeted:
                    ctx.charge_round()
                durable = turn.durable
                if durable is None:
                    call = self._call_model(conversation, ctx)
                else:  # a recorded step (raf.durable)
                    call = durable.model_call(ctx, partial(self._call_model, conversation))
                if telemetry is None:
                    completion, round_usage = await call
                else:
                    completion, round_usage = await telemetry.chat(
                        self.provider, ctx.path, ctx.session, conversation, call
                    )
                tokens_in += round_usage.input_tokens
                tokens_out += round_usage.output_tokens
                if budgeted:
                    ctx.charge_tokens(round_usage.total_tokens)
                message = self._assistant(completion)
                conversation.append(message)
                added.append(message)
                await ctx.emit(message_completed(message, ctx.path))
                if not completion.tool_calls:
                    if schema is None:
                        return completed_response(added, tokens_in, tokens_out, None)
                    if self._format is None:
                        conversation.append(correction_message())
                        continue
                    value, correction = check_answer(schema, completion.text)
                    if correction is not None:
                        conversation.append(correction)
                        continue
                    return completed_response(added, tokens_in, tokens_out, value)
                try:
                    results, resolved, value, exited, asked = await self._run_calls(
                        completion.tool_calls, ctx, journal, made
                    )
                except InDoubt as doubt:
                    # Calls in doubt after a crash wait for a human (raf.tools.journal); the
                    # re-run after the answer starts this agent afresh.
                    used = Usage(input_tokens=tokens_in, output_tokens=tokens_out)
                    return AgentResponse(usage=used, status="waiting", pending=doubt.requests)
                made += len(completion.tool_calls)
                conversation.extend(results)
                added.extend(results)
                if asked:
                    # The client runs these: the turn waits for their results.
                    pending = await wait_on(asked, added, ctx)
                    response = completed_response(added, tokens_in, tokens_out, None)
                    return response.model_copy(update={"status": "waiting", "pending": pending})
                if resolved:
                    assert isinstance(value, BaseModel)
                    final = ChatMessage(
                        role="assistant",
                        contents=[TextContent(text=value.model_dump_json())],
                        author=self.author,
                    )
                    added.append(final)
                    await ctx.emit(message_completed(final, ctx.path))
                    return completed_response(added, tokens_in, tokens_out, value)
                if exited:
                    # An exit tool was called: whoever offered it takes over from here.
                    return completed_response(added, tokens_in, tokens_out, None)
            goal = "submitting its output through resolve" if schema else "a final answer"
            raise MaxRoundsExceeded(
                f"{self.label} made {rounds} model calls without {goal}; raise max_rounds "
                "(on the agent or in RunOptions) or give it a simpler task",
                path=ctx.path,
            )
        except AgentError as exc:
            # Failures of this agent's own (a provider's, say) get its path.
            exc.with_path(ctx.path)
            raise

    async def _call_model(
        self, conversation: list[ChatMessage], ctx: RunContext
    ) -> tuple[Completion, Usage]:
        path = ctx.path
        emit = ctx.emit
        completion: Completion | None = None
        reported: Usage | None = None
        started: set[str] = set()
        held = HeldText() if self.text_tool_calls else None
        model = self.provider.model
        stream = self.provider.stream(conversation, tools=self.tools, response_format=self._format)
        async with stream as events:
            async for event in events:
                if type(event) is not TextChunk or type(event.text) is not str:
                    check_event(event, model, path)  # a token is checked right here
                if isinstance(event, TextChunk):
                    text = event.text if held is None else held.feed(event.text)
                    if text:
                        await emit(text_delta(text, path))
                elif isinstance(event, ToolCallDelta):
                    await emit(ToolCallArgs(call_id=event.call_id, delta=event.delta, path=path))
                elif isinstance(event, ReasoningChunk):
                    await emit(ReasoningDelta(text=event.text, path=path))
                elif isinstance(event, ToolCallStarted):
                    started.add(event.call_id)
                    await emit(ToolCallStart(call_id=event.call_id, name=event.name, path=path))
                elif isinstance(event, UsageReport):
                    item = usage(event.input_tokens, event.output_tokens, path)
                    reported = item if reported is None else reported + item
                    await emit(item)
                else:
                    assert isinstance(event, Completion)  # `check_event` let nothing else by
                    completion = event
        if completion is None:
            raise ProviderError(
                f"model {model!r} ended its stream without a completion", model=model, path=path
            )
        if reported is None:
            reported = usage(completion.input_tokens, completion.output_tokens, path)
            if reported.total_tokens:
                await emit(reported)
        if held is not None:
            rest = held.release()
            calls = None
            if rest and not completion.tool_calls:
                prefix = f"text_call_{len(conversation)}"
                calls = parse_text_calls(completion.text, self._names, prefix)
            if calls:
                completion = replace(completion, text="", tool_calls=calls)
            elif rest:
                await emit(text_delta(rest, path))
        for call in completion.tool_calls:
            call_id = call.call_id
            if call_id not in started:
                await emit(ToolCallStart(call_id=call_id, name=call.name, path=path))
                await emit(ToolCallArgs(call_id=call_id, delta=call.arguments, path=path))
            await emit(ToolCallEnd(call_id=call_id, path=path))
        return completion, reported

    def _assistant(self, completion: Completion) -> ChatMessage:
        return assistant_message(completion, self.author)

    async def _run_calls(
        self,
        calls: list[ToolCallContent],
        ctx: RunContext,
        journal: ToolJournal | None = None,
        first: int = 0,
    ) -> tuple[list[ChatMessage], bool, Any, bool, list[ToolCallContent]]:
        results: list[ToolResult | None] = [None] * len(calls)
        pending: list[int] = []
        asked: list[int] = []
        resolved = False
        exited: str | None = None
        value: Any = None
        schema = self.output_schema
        for index, call in enumerate(calls):
            if schema is not None and self._format is None and call.name == RESOLVE_TOOL_NAME:
                if resolved:
                    result = DUPLICATE
                else:
                    value, result = check_resolve(schema, call.arguments)
                    resolved = value is not None
            elif call.name in self._exits:
                if exited is None:
                    exited = call.name
                    result = ToolResult(self._exits[call.name].result)
                else:
                    result = second_exit(exited, call.name)
            elif call.name not in self._names:
                result = self._unknown(call.name)
            elif call.name in self.client:
                asked.append(index)
                continue
            else:
                pending.append(index)
                continue
            results[index] = result
            await self._report(call, result, ctx)
        if journal is not None and pending:
            await journal.check(ctx, [(first + i, calls[i]) for i in pending], self.idempotent)
        if len(pending) == 1 or ctx.turn.durable is not None:  # durable steps: in order
            for index in pending:
                await self._run_one(calls, index, results, ctx, journal, first)
        elif pending:
            # Dispatchers turn failures into results; anything else surfaces as itself.
            with single_exceptions():
                async with anyio.create_task_group() as tg:
                    for index in pending:
                        tg.start_soon(self._run_one, calls, index, results, ctx, journal, first)
        if asked and (resolved or exited is not None):
            ended = f"not run: {RESOLVE_TOOL_NAME if resolved else exited} ended the turn"
            for index in asked:
                results[index] = result = ToolResult(ended, is_error=True)
                await self._report(calls[index], result, ctx)
            asked = []
        messages = [
            self._tool_message(call, result)
            for call, result in zip(calls, results, strict=True)
            if result is not None
        ]
        client = [calls[i] for i in asked] if asked else []
        return messages, resolved, value, exited is not None, client

    async def _run_one(
        self,
        calls: list[ToolCallContent],
        index: int,
        results: list[ToolResult | None],
        ctx: RunContext,
        journal: ToolJournal | None = None,
        first: int = 0,
    ) -> None:
        call = calls[index]
        turn = ctx.turn
        durable = turn.durable
        if durable is None:
            if journal is None:
                work = self.dispatch(call, ctx)
            else:  # recorded in a checkpointed run's store (raf.tools.journal)
                idempotent = call.name in self.idempotent
                work = journal.call(ctx, first + index, call, self.dispatch, idempotent=idempotent)
        else:  # a recorded step (raf.durable)
            idempotent = call.name in self.idempotent
            work = durable.tool_call(ctx, call, self.dispatch, idempotent=idempotent)
        telemetry = turn.telemetry
        result = await (work if telemetry is None else telemetry.tool(call, ctx.path, work))
        results[index] = result
        await self._report(call, result, ctx)

    async def _report(self, call: ToolCallContent, result: ToolResult, ctx: RunContext) -> None:
        await ctx.emit(
            ToolCalled(
                call_id=call.call_id,
                name=call.name,
                result=result.text,
                is_error=result.is_error,
                path=ctx.path,
            )
        )

    def _tool_message(self, call: ToolCallContent, result: ToolResult) -> ChatMessage:
        content = ToolResultContent(
            call_id=call.call_id, result=result.text, is_error=result.is_error
        )
        return ChatMessage(role="tool", contents=[content], author=self.author)

    def _unknown(self, name: str) -> ToolResult:
        if not self._names:
            return ToolResult(
                f"unknown tool {name!r}: no tools are available here; answer in text",
                is_error=True,
            )
        available = ", ".join(sorted(self._names))
        return ToolResult(
            f"unknown tool {name!r}; the available tools are: {available}. "
            "Call one of them by its exact name.",
            is_error=True,
        )


def assistant_message(completion: Completion, author: str | None) -> ChatMessage:
    """The assistant message of `completion`, as the loop appends it to the conversation."""
    if not completion.reasoning and not completion.tool_calls:
        return assistant_text(completion.text, author)  # the usual answer (checked)
    contents: list[Content] = []
    if completion.reasoning:
        # The whole message, as streamed: its reasoning too (never sent back to a model).
        contents.append(ReasoningContent(text=completion.reasoning))
    if completion.text or not completion.tool_calls:
        contents.append(TextContent(text=completion.text))
    contents.extend(completion.tool_calls)
    return ChatMessage(role="assistant", contents=contents, author=author)
