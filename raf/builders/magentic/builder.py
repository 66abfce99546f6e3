"""`MagenticBuilder`: Magentic-One, a manager that plans, delegates round by round and answers.

The graph is a star: the `orchestrator` node and one node per participant, with an edge each
way. The manager writes the task ledger in two calls (the facts, then the plan); each round
the orchestrator asks it for a progress ledger and sends the chosen participant the request,
the task ledger, the team's work and an instruction; the participant's answer comes back. The
ledgers, the team transcript and the round, stall and reset counters live in the session
(the orchestrator's `ctx.state`), so a second `run()` continues the task and a checkpoint
taken between rounds resumes exactly; a turn that failed is undone when the next one starts.

Example:
    >>> import anyio, json
    >>> from raf import FunctionAgent
    >>> from raf.testing import ScriptedProvider, text
    >>> def manager(messages):
    ...     prompt = messages[0].text
    ...     if "progress ledger" in prompt:
    ...         done = "TEAM TRANSCRIPT" in messages[-1].text
    ...         yes_no = lambda answer: {"reason": "-", "answer": answer}
    ...         return text(json.dumps({
    ...             "is_request_satisfied": yes_no(done), "is_in_loop": yes_no(False),
    ...             "is_progress_being_made": yes_no(True),
    ...             "next_speaker": {"reason": "-", "answer": "calc"},
    ...             "instruction": {"reason": "-", "answer": "add 2 and 2"}}))
    ...     if "final answer" in prompt:
    ...         return text("2 + 2 = 4")
    ...     return text("- calc adds")  # the task ledger: the facts, then the plan
    >>> calc = FunctionAgent("calc", lambda messages: "4")
    >>> team = MagenticBuilder(ScriptedProvider(manager), id="team").add_agent(calc).build()
    >>> anyio.run(team.as_agent().run("what is 2 + 2?").collect).text
    '2 + 2 = 4'
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, Self, cast

from pydantic import BaseModel, ConfigDict, Field

from raf._defaults import new_list
from raf.agent import IAgent, check_agent_id
from raf.builders._hub import Coordinator, Floor, MemberStep, compile_hub, floor
from raf.builders._participants import check_agent, check_participants, free_id
from raf.builders.magentic.ledger import ProgressLedger, Stall, TaskLedger
from raf.builders.magentic.manager import (
    MANAGER,
    Briefing,
    ManagerCall,
    facts_prompt,
    final_prompt,
    plan_prompt,
    progress_prompt,
    team_briefing,
)
from raf.builders.magentic.review import REVIEWS, review_payload, revision_in
from raf.engine.context import NodeContext
from raf.engine.executors import conversation_of
from raf.engine.workflow import Workflow
from raf.messages import ChatMessage, TextContent
from raf.providers.base import LlmProvider
from raf.updates import ReasoningDelta

__all__ = ["MagenticBuilder"]

DEFAULT_ID = "workflow_magentic_orchestrator"
ORCHESTRATOR = "orchestrator"
_STATE = "magentic"


class MagenticBuilder:
    """Builds a Magentic-One team: a manager model plans, picks a speaker each round, answers.

    Args:
        manager_provider: the model the manager's ledgers and final answer come from.
        id: the workflow id (`workflow_magentic_orchestrator` by default).

    Raises:
        TypeError: when `manager_provider` is not an `LlmProvider`.
    """

    def __init__(self, manager_provider: LlmProvider, id: str | None = None) -> None:
        if not isinstance(manager_provider, LlmProvider):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                "MagenticBuilder takes the manager's model as an LlmProvider (say "
                f"OpenAIProvider(client, 'gpt-4o')), got {manager_provider!r}"
            )
        self._provider = manager_provider
        self._id = check_agent_id(id) if id is not None else DEFAULT_ID
        self._agents: list[IAgent] = []
        self._limits = _Limits()
        self._review = False

    def add_agent(self, agent: IAgent) -> Self:
        """Add a participant; the manager sees its id and description."""
        self._agents.append(check_agent("MagenticBuilder", self._id, agent))
        return self

    def with_limits(self, max_rounds: int = 20, max_stalls: int = 3, max_resets: int = 2) -> Self:
        """Bound the team per `run()`.

        Args:
            max_rounds: participant turns; when they run out the manager answers with what
                it has, saying the limit was reached.
            max_stalls: rounds stalled (looping, or no progress) before the manager re-plans
                and resets the participants.
            max_resets: re-plans before the team gives up (again with the best answer so far).

        Raises:
            ValueError: a bound that is not an int in range.
        """
        for name, value, least in (
            ("max_rounds", max_rounds, 1),
            ("max_stalls", max_stalls, 1),
            ("max_resets", max_resets, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ValueError(f"with_limits({name}=...) takes an int >= {least}, got {value!r}")
        self._limits = _Limits(max_rounds=max_rounds, max_stalls=max_stalls, max_resets=max_resets)
        return self

    def with_plan_review(self) -> Self:
        """Ask a human to approve or edit the task ledger before the team starts and after
        each re-plan.

        Approvals are read as people write them ("approve", "Approved.", "yes", "LGTM",
        `{"approved": true}`, or the request's choice "approve"); any other answer is the
        human's revision, which the manager folds into the plan and which goes back to the
        human, until approved (after `REVIEWS` revisions the last one is taken)."""
        self._review = True
        return self

    def build(self) -> Workflow:
        """Check the participants and compile the star of nodes onto the graph engine.

        Raises:
            GraphValidationError: no participants, or two with the same id.
        """
        agents = check_participants("MagenticBuilder", self._id, self._agents)
        orchestrator = Orchestrator(
            free_id(ORCHESTRATOR, [a.id for a in agents]),
            self._id,
            self._provider,
            agents,
            self._limits,
            review=self._review,
        )
        members = [MemberStep(agent, coordinator=orchestrator.id) for agent in agents]
        # Each round is two supersteps (the orchestrator, then a participant).
        return compile_hub(
            self._id,
            orchestrator,
            members,
            kind="magentic",
            max_supersteps=2 * self._limits.max_rounds + 2,
        )


class _Limits(BaseModel):
    model_config = ConfigDict(frozen=True)

    max_rounds: int = 20
    max_stalls: int = 3
    max_resets: int = 2


class _Review(BaseModel):
    """A task ledger waiting for the human, and the message whose handling asked."""

    ledger: TaskLedger
    mark: str
    answered: int = 0
    """Reviews of this handling the human already answered (each with a revision)."""


class _State(BaseModel):
    """What the orchestrator keeps in the session (JSON), across rounds and runs."""

    ledger: TaskLedger | None = None
    request: list[ChatMessage] = Field(default_factory=new_list)
    """The conversation of the current run."""
    transcript: list[ChatMessage] = Field(default_factory=new_list)
    """Instructions and answers, across runs."""
    since: int = 0
    """Where the transcript starts for the participants and progress ledgers (the last reset)."""
    round: int = 0
    stalls: int = 0
    resets: int = 0
    speaker: str | None = None
    review: _Review | None = None


class Orchestrator(Coordinator):
    """Keeps the ledgers, picks each round's speaker, re-plans when stalled, and answers."""

    kind = "magentic"
    reports_as_responses = True

    def __init__(
        self,
        id: str,
        workflow_id: str,
        provider: LlmProvider,
        agents: list[IAgent],
        limits: _Limits,
        *,
        review: bool,
    ) -> None:
        super().__init__(id)
        self._workflow_id = workflow_id
        self._agents = {a.id: a for a in agents}
        self._team = [(a.id, a.metadata.description or a.metadata.name) for a in agents]
        self._limits = limits
        self._review = review
        manager = free_id(MANAGER, [id, *self._agents])
        self._manager = {
            what: ManagerCall(provider, what, id=manager, author=workflow_id)
            for what in ("facts", "plan", "final")
        }
        self._assessor = ManagerCall(
            provider, "progress", id=manager, author=workflow_id, speakers=list(self._agents)
        )

    async def open(self, message: Any, ctx: NodeContext) -> Any:
        """Take the run's input, and go on until someone must act."""
        state = _load(ctx)
        mark = _digest(conversation_of(message, self.id) if isinstance(message, list) else message)
        if not await self._resumed_review(ctx, state, mark):
            # A new turn; the hub undoes a failed one, whose transcript and ledger must not
            # brief this one.
            self.begin_turn(ctx)
            state = _load(ctx)
            await self._start_turn(ctx, state, conversation_of(message, self.id), mark)
        return await self._advance(ctx, state, mark)

    async def report(self, floor: Floor, ctx: NodeContext) -> Any:
        """Take a participant's answer, and go on until someone must act."""
        state = _load(ctx)
        said = floor.said_last
        mark = _digest(said)
        if not await self._resumed_review(ctx, state, mark):
            state.transcript.append(_answer_of(said, state.speaker or "?"))
            _save(ctx, state)
        return await self._advance(ctx, state, mark)

    async def _resumed_review(self, ctx: NodeContext, state: _State, mark: str) -> bool:
        """True when this handling asked a human about the ledger, and re-runs with the
        answer (which it then settles)."""
        if state.review is None or state.review.mark != mark:
            return False
        await self._settle_review(ctx, state)
        return True

    async def _start_turn(
        self, ctx: NodeContext, state: _State, request: list[ChatMessage], mark: str
    ) -> None:
        state.request = request
        state.round = state.stalls = state.resets = 0
        state.review = None
        why = "A new request came in: continue the task with it."
        ledger = await self._plan(ctx, state, state.ledger, why)
        await self._adopt(ctx, state, ledger, mark)

    async def _advance(self, ctx: NodeContext, state: _State, mark: str) -> Any:
        limits = self._limits
        while True:
            progress = await self._progress(ctx, state)
            if isinstance(progress, ProgressLedger) and progress.is_request_satisfied.answer:
                return await self._finish(ctx, state, None)
            stalled = not isinstance(progress, ProgressLedger) or progress.stalled
            state.stalls = state.stalls + 1 if stalled else max(0, state.stalls - 1)
            if state.stalls >= limits.max_stalls:
                if state.resets >= limits.max_resets:
                    return await self._finish(
                        ctx,
                        state,
                        f"it stalled {limits.max_stalls} times after {state.resets} re-plan(s), "
                        "and gave up",
                    )
                await self._replan(ctx, state, mark)
                continue
            if state.round >= limits.max_rounds:
                return await self._finish(
                    ctx, state, f"the limit of {limits.max_rounds} rounds was reached"
                )
            if isinstance(progress, ProgressLedger):
                return await self._delegate(ctx, state, progress)

    async def _progress(self, ctx: NodeContext, state: _State) -> ProgressLedger | Stall:
        assert state.ledger is not None
        briefing = self._briefing(state, state.transcript[state.since :])
        prompt = [ChatMessage.system(progress_prompt(briefing, state.ledger)), briefing.message()]
        response = await ctx.invoke_agent(self._assessor, prompt)
        progress = cast(ProgressLedger | Stall, response.value)
        await ctx.emit(ReasoningDelta(text=progress.render(state.round + 1)))
        return progress

    async def _delegate(self, ctx: NodeContext, state: _State, progress: ProgressLedger) -> None:
        speaker = progress.next_speaker.answer
        instruction = ChatMessage(
            role="user",
            contents=[TextContent(text=progress.instruction.answer)],
            author=self._workflow_id,
        )
        state.transcript.append(instruction)
        state.round += 1
        state.speaker = speaker
        _save(ctx, state)
        assert state.ledger is not None
        plan = team_briefing(self._briefing(state, ()), state.ledger, self._workflow_id)
        briefed = [*state.request, plan, *state.transcript[state.since :]]
        await self.give(floor(briefed, 0, []), speaker, ctx)

    async def _replan(self, ctx: NodeContext, state: _State, mark: str) -> None:
        """Reset the participants for this session and let the manager make a new plan."""
        state.resets += 1
        state.stalls = 0
        base = "/".join(ctx.run_context.path)
        for agent_id in self._agents:
            prefix = f"{base}/{agent_id}" if base else agent_id
            ctx.session.clear(prefix + "#")
            ctx.session.clear(prefix + "/")
        why = "The team stalled: it looped or made no progress. Its work so far is below."
        ledger = await self._plan(ctx, state, state.ledger, why)
        state.since = len(state.transcript)
        await self._adopt(ctx, state, ledger, mark)

    async def _plan(
        self, ctx: NodeContext, state: _State, ledger: TaskLedger | None, why: str
    ) -> TaskLedger:
        """The task ledger in two calls: the fact sheet, then the plan made from it."""
        briefing = self._briefing(state, state.transcript[state.since :])
        asked = briefing.message()
        prompt = [ChatMessage.system(facts_prompt(briefing, ledger, why)), asked]
        facts = cast(str, (await ctx.invoke_agent(self._manager["facts"], prompt)).value)
        prompt = [ChatMessage.system(plan_prompt(briefing, facts, ledger, why)), asked]
        plan = cast(str, (await ctx.invoke_agent(self._manager["plan"], prompt)).value)
        return TaskLedger(facts=facts, plan=plan)

    async def _adopt(self, ctx: NodeContext, state: _State, ledger: TaskLedger, mark: str) -> None:
        """Take `ledger` as the plan, after the human's review when there is one."""
        await ctx.emit(ReasoningDelta(text=ledger.render()))
        if not self._review:
            state.ledger = ledger
            _save(ctx, state)
            return
        state.review = _Review(ledger=ledger, mark=mark)
        _save(ctx, state)
        await self._settle_review(ctx, state)

    async def _settle_review(self, ctx: NodeContext, state: _State) -> None:
        """Ask the human until the ledger is approved (or `REVIEWS` revisions were made)."""
        review = state.review
        assert review is not None
        # Resuming re-runs this handling: the reviews answered before come back as they were.
        for _ in range(review.answered):
            await ctx.request_info(review_payload(review.ledger))
        while True:
            revision = revision_in(await ctx.request_info(review_payload(review.ledger)))
            if revision is None:
                break
            state.ledger = review.ledger
            why = f"A person reviewed this plan and asks for this revision:\n{revision}"
            ledger = await self._plan(ctx, state, review.ledger, why)
            await ctx.emit(ReasoningDelta(text=ledger.render()))
            review = _Review(ledger=ledger, mark=review.mark, answered=review.answered + 1)
            if review.answered >= REVIEWS:
                break
            state.review = review
            _save(ctx, state)
        state.ledger = review.ledger
        state.review = None
        _save(ctx, state)

    async def _finish(
        self, ctx: NodeContext, state: _State, stopped: str | None
    ) -> list[ChatMessage]:
        briefing = self._briefing(state, state.transcript)
        prompt = [
            ChatMessage.system(final_prompt(briefing, state.ledger, stopped)),
            briefing.message(),
        ]
        response = await ctx.invoke_agent(self._manager["final"], prompt)
        state.speaker = None
        _save(ctx, state)
        await self.finish(response.messages, ctx)
        return response.messages

    def _briefing(self, state: _State, transcript: Sequence[ChatMessage]) -> Briefing:
        return Briefing(team=self._team, request=state.request, transcript=transcript)


def _load(ctx: NodeContext) -> _State:
    kept = ctx.state.get(_STATE)
    return _State() if kept is None else _State.model_validate(kept)


def _save(ctx: NodeContext, state: _State) -> None:
    ctx.state[_STATE] = state.model_dump(mode="json")


def _answer_of(said: list[ChatMessage], speaker: str) -> ChatMessage:
    """The participant's last message with text (the team sees answers, not tool traffic)."""
    for message in reversed(said):
        if message.text:
            return message
    return ChatMessage.assistant("(no answer)", author=speaker)


def _digest(message: Any) -> str:
    """A handling's mark: what it was handed (a participant's messages, the run's input)."""
    if isinstance(message, list):
        data: Any = [m.model_dump(mode="json") for m in cast("list[ChatMessage]", message)]
    else:
        data = str(message)
    text = json.dumps(data, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
