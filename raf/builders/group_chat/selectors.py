"""Who speaks next in a group chat: `round_robin()`, a function, or `llm_selector(provider)`.

A selector picks one participant id per round. Its state (the round-robin position) lives in
the chat's session through the node context, so one selector serves many chats and sessions.

Example:
    >>> import anyio
    >>> from raf import FunctionAgent, GroupChatBuilder, MaxRounds
    >>> a, b = FunctionAgent("a", lambda m: "A"), FunctionAgent("b", lambda m: "B")
    >>> last = FunctionSelector(lambda transcript, participants: participants[-1].id)
    >>> chat = GroupChatBuilder(id="chat").add_agent(a).add_agent(b).with_selector(last)
    >>> agent = chat.with_termination(MaxRounds(2)).build().as_agent()
    >>> [m.text for m in anyio.run(agent.run("go").collect).messages]
    ['B', 'B']
"""

from __future__ import annotations

import inspect
import json
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from raf.agent import AgentMetadata, BaseAgent
from raf.errors import SchemaValidationError
from raf.messages import ChatMessage
from raf.providers._checks import check_event
from raf.providers.base import Completion, LlmProvider, TextChunk, UsageReport
from raf.providers.seat import seen_by
from raf.run import RunContext
from raf.updates import AgentResponse, ReasoningDelta, Usage

if TYPE_CHECKING:
    from raf.engine.context import NodeContext

__all__ = [
    "EndChat",
    "FunctionSelector",
    "LlmSelector",
    "RoundRobin",
    "Selector",
    "SelectorFn",
    "SpeakerChoice",
    "llm_selector",
    "round_robin",
]


@dataclass(frozen=True, slots=True)
class EndChat:
    """What a selector returns instead of a speaker's id to end the chat now.

    Example:
        >>> EndChat("The team agrees: ship it.").message
        'The team agrees: ship it.'
    """

    message: str = ""
    """The chat's final message, added by the selector (none when empty)."""


Choice = str | EndChat
"""A selector's answer: the id of the next speaker, or `EndChat(...)`."""

SelectorFn = Callable[[list[ChatMessage], list[AgentMetadata]], Choice | Awaitable[Choice]]
"""`fn(transcript, candidates) -> id | EndChat` (sync or async): the next speaker, or the end."""

DEFAULT_INSTRUCTIONS = (
    "You coordinate a group chat. Read the conversation and choose the participant who "
    "should speak next, by what each participant does."
)


class Selector(ABC):
    """Chooses the next speaker of a group chat."""

    @abstractmethod
    async def choose(
        self,
        transcript: list[ChatMessage],
        participants: list[AgentMetadata],
        ctx: NodeContext,
    ) -> Choice:
        """The id of the next speaker, or `EndChat(final_message)` to end the chat.

        Args:
            transcript: the conversation so far.
            participants: the members that may speak now, in participant order (all of
                them, unless the chat filters candidates or forbids a repeated speaker).
            ctx: the chat's selector node (its `state` belongs to the session; a run that
                fails leaves it as it was before the run).
        """


class RoundRobin(Selector):
    """Each participant in turn; the position carries over to the session's next run."""

    async def choose(
        self,
        transcript: list[ChatMessage],
        participants: list[AgentMetadata],
        ctx: NodeContext,
    ) -> str:
        """The participant after the last one chosen in this session."""
        state = ctx.state
        position: Any = state.get("position", 0)
        index = position % len(participants) if isinstance(position, int) else 0
        state["position"] = (index + 1) % len(participants)
        return participants[index].id


class FunctionSelector(Selector):
    """The speaker a function of the transcript and the participants names.

    Raises:
        TypeError: when `fn` is not callable.
    """

    def __init__(self, fn: SelectorFn) -> None:
        if not callable(fn):
            raise TypeError(
                f"a selector function is fn(transcript, participants) -> id, got {fn!r}"
            )
        self._fn = fn

    async def choose(
        self,
        transcript: list[ChatMessage],
        participants: list[AgentMetadata],
        ctx: NodeContext,
    ) -> Choice:
        """Call the function (awaiting it when it is async)."""
        chosen: Any = self._fn(transcript, participants)
        if inspect.isawaitable(chosen):
            chosen = await chosen
        return chosen


class SpeakerChoice(BaseModel):
    """The structured answer of an `llm_selector` call."""

    model_config = ConfigDict(frozen=True)

    type: Literal["speaker_choice"] = "speaker_choice"
    """The tag."""
    reason: str = ""
    """Why this participant speaks next."""
    speaker: str
    """The id of the participant who speaks next."""
    finish: bool = False
    """True to end the chat instead (only asked for with `allow_finish`)."""
    final_message: str = ""
    """The chat's final message when it ends."""


class LlmSelector(Selector):
    """One structured-output model call choosing among the participants by description.

    The model sees the transcript from the selector's own seat: every member's message as a
    user message naming its author, tool calls and results summarised in it, then the
    question; the request carries a strict JSON-schema response format and no tools. An
    answer that is not JSON (a JSON object inside prose or a fence is read) or names no
    candidate gets a correction and is asked again, up to `max_attempts` calls; every call
    counts as a model call of the run's budget. With one candidate left, the model is not
    asked.

    Args:
        provider: the model.
        instructions: the system message (a default describes the task).
        max_attempts: model calls per choice before giving up.
        allow_finish: let the model end the chat with a final message (`finish` and
            `final_message` in its answer).

    Raises:
        ValueError: when `max_attempts` is below 1.
    """

    def __init__(
        self,
        provider: LlmProvider,
        *,
        instructions: str | None = None,
        max_attempts: int = 3,
        allow_finish: bool = False,
    ) -> None:
        if not isinstance(provider, LlmProvider):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f"llm_selector needs an LlmProvider (say OpenAIProvider(client, model)), got "
                f"{provider!r}"
            )
        if max_attempts < 1:
            raise ValueError(f"llm_selector: max_attempts must be at least 1, not {max_attempts}")
        self._provider = provider
        self._instructions = instructions or DEFAULT_INSTRUCTIONS
        self._attempts = max_attempts
        self._finish = allow_finish

    async def choose(
        self,
        transcript: list[ChatMessage],
        participants: list[AgentMetadata],
        ctx: NodeContext,
    ) -> Choice:
        """Ask the model, as an agent of the chat's selector node (its usage streams there)."""
        if len(participants) == 1 and not self._finish:
            return participants[0].id
        agent = _ChoiceAgent(
            ctx.node_id,
            self._provider,
            self._instructions,
            participants,
            attempts=self._attempts,
            allow_finish=self._finish,
        )
        response = await ctx.invoke_agent(agent, transcript)
        choice = response.value
        assert isinstance(choice, SpeakerChoice)
        return EndChat(choice.final_message) if choice.finish else choice.speaker


def round_robin() -> Selector:
    """Each participant in turn, continuing across the session's runs.

    Example:
        >>> isinstance(round_robin(), RoundRobin)
        True
    """
    return RoundRobin()


def llm_selector(
    provider: LlmProvider,
    *,
    instructions: str | None = None,
    max_attempts: int = 3,
    allow_finish: bool = False,
) -> Selector:
    """A selector asking `provider` who speaks next, by the participants' descriptions
    (with `allow_finish`, it may end the chat with a final message instead).

    Example:
        >>> from raf.testing import ScriptedProvider, text
        >>> isinstance(llm_selector(ScriptedProvider([text("{}")])), LlmSelector)
        True
    """
    return LlmSelector(
        provider, instructions=instructions, max_attempts=max_attempts, allow_finish=allow_finish
    )


class _ChoiceAgent(BaseAgent):
    """The model call behind `LlmSelector`, run as an agent so its stream and budget count."""

    kind: ClassVar[str] = "selector"

    def __init__(
        self,
        id: str,
        provider: LlmProvider,
        instructions: str,
        participants: list[AgentMetadata],
        *,
        attempts: int,
        allow_finish: bool,
    ) -> None:
        super().__init__(id)
        self._provider = provider
        self._ids = [p.id for p in participants]
        roster = "\n".join(f"- {p.id}: {p.description or p.name}" for p in participants)
        self._system = ChatMessage.system(f"{instructions}\n\nParticipants:\n{roster}")
        shape = '{"reason": "<why, briefly>", "speaker": "<one of: ' + ", ".join(self._ids) + '>"'
        if allow_finish:
            shape += (
                ', "finish": <true to end the chat now>, "final_message": "<the chat\'s '
                'closing message when finish is true>"'
            )
        self._ask = ChatMessage.user(f"Who speaks next? Answer with JSON: {shape}}}")
        self._format = _response_format(self._ids, allow_finish=allow_finish)
        self._attempts = attempts

    async def invoke(self, messages: list[ChatMessage], ctx: RunContext) -> AgentResponse:
        """Ask until the model names a participant, or the attempts run out."""
        # From the selector's seat: the members' messages are attributed user messages.
        request = [*seen_by(self.id, messages, system=(self._system,)), self._ask]
        usage = Usage()
        problem = ""
        for _ in range(self._attempts):
            ctx.charge_round()
            telemetry = ctx.turn.telemetry
            call = self._call(request, ctx)
            if telemetry is not None:
                call = telemetry.chat(self._provider, ctx.path, ctx.session, request, call)
            text, used = await call
            ctx.charge_tokens(used.total_tokens)
            usage = usage + used
            choice, problem = self._parse(text)
            if choice is not None:
                return AgentResponse(messages=[], usage=usage, value=choice)
            request = [
                *request,
                ChatMessage.assistant(text, author=self.id),
                ChatMessage.user(f"{problem} Answer again with JSON naming one participant."),
            ]
        raise SchemaValidationError(
            f"the speaker selector (model {self._provider.model!r}) named no participant in "
            f"{self._attempts} attempts; last problem: {problem} Use a model that follows "
            "JSON schemas, raise max_attempts, or describe the participants better",
            path=ctx.path,
        )

    async def _call(self, request: list[ChatMessage], ctx: RunContext) -> tuple[str, Usage]:
        path = ctx.path
        text = ""
        reported: Usage | None = None
        async with self._provider.stream(request, response_format=self._format) as events:
            async for event in events:
                check_event(event, self._provider.model, path)
                if isinstance(event, TextChunk):
                    await ctx.emit(ReasoningDelta(text=event.text, path=path))
                elif isinstance(event, UsageReport):
                    item = Usage(
                        input_tokens=event.input_tokens,
                        output_tokens=event.output_tokens,
                        path=path,
                    )
                    reported = item if reported is None else reported + item
                    await ctx.emit(item)
                elif isinstance(event, Completion):
                    text = event.text
                    if reported is None:
                        reported = Usage(
                            input_tokens=event.input_tokens,
                            output_tokens=event.output_tokens,
                            path=path,
                        )
                        if reported.total_tokens:
                            await ctx.emit(reported)
        return text, reported or Usage(path=path)

    def _parse(self, text: str) -> tuple[SpeakerChoice | None, str]:
        """The choice, or None and what is wrong with the answer."""
        choice = _read_choice(text)
        if choice is None:
            return None, f"Your answer {text[:200]!r} is not the JSON object asked for."
        if choice.finish:
            return choice, ""
        if choice.speaker not in self._ids:
            return None, (
                f"{choice.speaker!r} is not a participant; the participants are "
                f"{', '.join(self._ids)}."
            )
        return choice, ""


def _read_choice(text: str) -> SpeakerChoice | None:
    """The first JSON object in `text` that is a `SpeakerChoice` (bare, fenced or in prose)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            data, _ = decoder.raw_decode(text, start)
            return SpeakerChoice.model_validate(data)
        except (ValueError, ValidationError):
            start = text.find("{", start + 1)
    return None


def _response_format(ids: Sequence[str], *, allow_finish: bool) -> dict[str, Any]:
    """A strict JSON-schema response format whose `speaker` is one of `ids`."""
    properties: dict[str, Any] = {
        "reason": {"type": "string"},
        "speaker": {"type": "string", "enum": list(ids)},
    }
    if allow_finish:
        properties["finish"] = {"type": "boolean"}
        properties["final_message"] = {"type": "string"}
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "SpeakerChoice",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": properties,
                "required": list(properties),
                "additionalProperties": False,
            },
        },
    }
