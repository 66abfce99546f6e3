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
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from raf.agent import AgentMetadata, BaseAgent
from raf.errors import SchemaValidationError
from raf.messages import ChatMessage
from raf.providers._checks import check_event
from raf.providers.base import Completion, LlmProvider, TextChunk, UsageReport
from raf.run import RunContext
from raf.updates import AgentResponse, ReasoningDelta, Usage

if TYPE_CHECKING:
    from raf.engine.context import NodeContext

__all__ = [
    "FunctionSelector",
    "LlmSelector",
    "RoundRobin",
    "Selector",
    "SelectorFn",
    "SpeakerChoice",
    "llm_selector",
    "round_robin",
]

SelectorFn = Callable[[list[ChatMessage], list[AgentMetadata]], str | Awaitable[str]]
"""`fn(transcript, participants) -> id` (sync or async): the id of the next speaker."""

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
    ) -> str:
        """The id of the next speaker.

        Args:
            transcript: the conversation so far.
            participants: the chat's members, in participant order.
            ctx: the chat's selector node (its `state` belongs to the session).
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
    ) -> str:
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


class LlmSelector(Selector):
    """One structured-output model call choosing among the participants by description.

    An answer that is not JSON or names no participant gets a correction and is asked again,
    up to `max_attempts` calls; every call counts as a model call of the run's budget.

    Args:
        provider: the model.
        instructions: the system message (a default describes the task).
        max_attempts: model calls per choice before giving up.

    Raises:
        ValueError: when `max_attempts` is below 1.
    """

    def __init__(
        self, provider: LlmProvider, *, instructions: str | None = None, max_attempts: int = 3
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

    async def choose(
        self,
        transcript: list[ChatMessage],
        participants: list[AgentMetadata],
        ctx: NodeContext,
    ) -> str:
        """Ask the model, as an agent of the chat's selector node (its usage streams there)."""
        agent = _ChoiceAgent(
            ctx.node_id, self._provider, self._instructions, participants, self._attempts
        )
        response = await ctx.invoke_agent(agent, transcript)
        assert isinstance(response.value, SpeakerChoice)
        return response.value.speaker


def round_robin() -> Selector:
    """Each participant in turn, continuing across the session's runs.

    Example:
        >>> isinstance(round_robin(), RoundRobin)
        True
    """
    return RoundRobin()


def llm_selector(
    provider: LlmProvider, *, instructions: str | None = None, max_attempts: int = 3
) -> Selector:
    """A selector asking `provider` who speaks next, by the participants' descriptions.

    Example:
        >>> from raf.testing import ScriptedProvider, text
        >>> isinstance(llm_selector(ScriptedProvider([text("{}")])), LlmSelector)
        True
    """
    return LlmSelector(provider, instructions=instructions, max_attempts=max_attempts)


class _ChoiceAgent(BaseAgent):
    """The model call behind `LlmSelector`, run as an agent so its stream and budget count."""

    kind: ClassVar[str] = "selector"

    def __init__(
        self,
        id: str,
        provider: LlmProvider,
        instructions: str,
        participants: list[AgentMetadata],
        attempts: int,
    ) -> None:
        super().__init__(id)
        self._provider = provider
        self._ids = [p.id for p in participants]
        roster = "\n".join(f"- {p.id}: {p.description or p.name}" for p in participants)
        self._system = ChatMessage.system(f"{instructions}\n\nParticipants:\n{roster}")
        self._ask = ChatMessage.user(
            "Who speaks next? Answer with JSON: "
            '{"reason": "<why, briefly>", "speaker": "<one of: ' + ", ".join(self._ids) + '>"}'
        )
        self._format = _response_format(self._ids)
        self._attempts = attempts

    async def invoke(self, messages: list[ChatMessage], ctx: RunContext) -> AgentResponse:
        """Ask until the model names a participant, or the attempts run out."""
        request = [self._system, *messages, self._ask]
        usage = Usage()
        problem = ""
        for _ in range(self._attempts):
            ctx.charge_round()
            text, used = await self._call(request, ctx)
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
        body = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```")
        try:
            data: Any = json.loads(body)
            choice = SpeakerChoice.model_validate(data)
        except (ValueError, ValidationError):
            return None, f"Your answer {text[:200]!r} is not the JSON object asked for."
        if choice.speaker not in self._ids:
            return None, (
                f"{choice.speaker!r} is not a participant; the participants are "
                f"{', '.join(self._ids)}."
            )
        return choice, ""


def _response_format(ids: Sequence[str]) -> dict[str, Any]:
    """A strict JSON-schema response format whose `speaker` is one of `ids`."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "SpeakerChoice",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {
                    "reason": {"type": "string"},
                    "speaker": {"type": "string", "enum": list(ids)},
                },
                "required": ["reason", "speaker"],
                "additionalProperties": False,
            },
        },
    }
