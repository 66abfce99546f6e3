"""`VoteBuilder`: the same question to every voter at once; their ballots decide.

Two nodes: `poll` runs every voter at once, each in its own cancel scope, and stops waiting
(cancelling the rest) as soon as the outcome can no longer change; `count` applies the
policy (asking the judge when it must) and answers with a `VoteResult` and one message whose
text is the winner.

Example:
    >>> import anyio
    >>> from raf import FunctionAgent, majority
    >>> vote = VoteBuilder(id="lunch")
    >>> for voter, choice in (("a", "soup"), ("b", "salad"), ("c", "soup")):
    ...     vote = vote.add_agent(FunctionAgent(voter, lambda m, c=choice: c))
    >>> response = anyio.run(vote.with_policy(majority()).build().as_agent().run("lunch?").collect)
    >>> response.text, response.value.tally
    ('soup', {'soup': 2.0, 'salad': 1.0})
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Self, cast

import anyio
from pydantic import BaseModel, Field

from raf._defaults import new_dict
from raf.agent import IAgent, check_agent_id
from raf.builders._participants import check_agent, check_participants, free_id
from raf.builders.vote.ballot import Ballot, VoteResult, check_ballot_schema, read_ballot
from raf.builders.vote.judging import ask_judge
from raf.builders.vote.policy import VotePolicy, count, plurality, settled
from raf.engine.builder import WorkflowBuilder
from raf.engine.context import NodeContext, Suspended
from raf.engine.executors import Executor, conversation_of
from raf.engine.workflow import Workflow
from raf.errors import BudgetExceeded, QuorumNotReached, RunTimeout
from raf.messages import ChatMessage
from raf.updates import AgentResponse, MessageCompleted, TextDelta

__all__ = ["VoteBuilder"]

DEFAULT_ID = "workflow_vote_source"
POLL = "poll"
COUNT = "count"

_log = logging.getLogger("raf")
_FAILED = "failed:"
"""How a voter whose run raised is said to have no ballot in `VoteResult.errors`."""


class VoteBuilder:
    """Builds a vote: every voter gets the same question at once and answers with a ballot.

    A voter's ballot is its response `value` validated against the ballot schema; failing
    that, its last message parsed as JSON of the schema; failing that (default `Ballot` only)
    its stripped text as the `choice`. A voter without a valid ballot abstains. The value of
    the run is a `VoteResult`; its one message, authored by the vote's id, is the winner.

    Args:
        id: the workflow id (`workflow_vote_source` by default).
    """

    def __init__(self, id: str | None = None) -> None:
        self._id = check_agent_id(id) if id is not None else DEFAULT_ID
        self._agents: list[IAgent] = []
        self._schema: type[BaseModel] = Ballot
        self._policy = plurality()
        self._quorum: int | None = None

    def add_agent(self, agent: IAgent) -> Self:
        """Add a voter.

        Raises:
            TypeError: `agent` is not an agent instance (an id, a class, a `Workflow`).
        """
        self._agents.append(check_agent("VoteBuilder", self._id, agent))
        return self

    def with_ballot(self, schema: type[BaseModel]) -> Self:
        """Ballots follow `schema`, a pydantic model with a `choice: str` field (`Ballot` by
        default).

        Raises:
            TypeError: when `schema` is not such a model.
        """
        self._schema = check_ballot_schema(schema)
        return self

    def with_policy(self, policy: VotePolicy) -> Self:
        """Decide by `policy`: `majority()`, `plurality()` (the default), `unanimous()`,
        `weighted({...})` or `judge(agent)`.

        Raises:
            TypeError: when `policy` is not one of those.
        """
        if not isinstance(policy, VotePolicy):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f"with_policy() takes majority(), plurality(), unanimous(), weighted({{...}}) "
                f"or judge(agent), got {policy!r}"
            )
        self._policy = policy
        return self

    def with_quorum(self, k: int) -> Self:
        """Fewer than `k` valid ballots raises `QuorumNotReached`.

        Raises:
            ValueError: when `k` is not a positive int.
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"with_quorum(k) takes a positive int, got {k!r}")
        self._quorum = k
        return self

    def build(self) -> Workflow:
        """Check the voters and compile the poll and the count onto the graph engine.

        Raises:
            GraphValidationError: no voters, two with the same id (the judge included), a
                quorum larger than the voters, or weights for unknown voters.
        """
        policy = self._policy
        everyone = [*self._agents, *([policy.judge] if policy.judge is not None else [])]
        check_participants("VoteBuilder", self._id, everyone)
        voters = list(self._agents)
        if not voters:
            check_participants("VoteBuilder", self._id, voters)
        ids = [v.id for v in voters]
        _check_policy(self._id, policy, ids, self._quorum)
        taken = [a.id for a in everyone]
        poll = Poll(free_id(POLL, taken), voters, self._schema, policy, self._quorum)
        tally = Count(free_id(COUNT, taken), self._id, ids, policy, self._quorum, self._schema)
        builder = WorkflowBuilder(self._id).add_executor(poll).add_executor(tally)
        builder.add_edge(poll, tally)
        return builder.set_start(poll).build(check_structure=False).with_kind("vote")


class Poll(Executor):
    """Asks every voter at once and collects the ballots, stopping once they are decisive.

    A voter that waits for a human makes the poll wait, unless the outcome is settled without
    it; the ballots already in are kept in the session, so on resume only the waiting voters
    run again.
    """

    kind = "vote"

    def __init__(
        self,
        id: str,
        voters: Sequence[IAgent],
        schema: type[BaseModel],
        policy: VotePolicy,
        quorum: int | None,
    ) -> None:
        super().__init__(id)
        self._voters = tuple(voters)
        self._order = [v.id for v in voters]
        self.rules = _Rules(self._order, schema, policy, quorum or 0)

    def agents(self) -> Sequence[IAgent]:
        """The voters."""
        return self._voters

    async def handle(self, message: Any, ctx: NodeContext) -> dict[str, Any]:
        """Run the voters still without a ballot, then send the ballots to the count."""
        question = conversation_of(message, self.id)
        mark = _digest(question)
        kept = ctx.state.get("poll")
        progress = None if kept is None else _Progress.model_validate(kept)
        if progress is None or progress.question != mark:
            progress = _Progress(question=mark)
        schema = self.rules.schema
        ballots = {v: _read(schema, b) for v, b in progress.ballots.items()}
        errors = progress.errors
        round_ = _Round(self.rules, question, ballots, errors)
        await round_.run(ctx, [v for v in self._voters if v.id not in ballots])
        if round_.waits:
            # Kept for the resume, which runs only the voters that wait.
            progress.ballots = {v: _dump(b) for v, b in ballots.items()}
            ctx.state["poll"] = progress.model_dump(mode="json")
            raise BaseExceptionGroup("voters wait for a human", round_.waits)
        ctx.state.pop("poll", None)
        for voter in self._order:
            if voter not in ballots:
                ballots[voter] = None
                errors.setdefault(voter, "cancelled: the outcome was already decided")
        result = _PollResult(
            question=question,
            ballots={v: _dump(ballots[v]) for v in self._order},
            errors={v: errors[v] for v in self._order if v in errors},
            decided_early=round_.decided_early,
        ).model_dump(mode="json")
        await ctx.send(result)
        return result


class _Progress(BaseModel):
    """The ballots of a poll that waits for a human, kept in the session."""

    question: str
    """A digest of the question, so a different question starts afresh."""
    ballots: dict[str, dict[str, Any] | None] = Field(default_factory=new_dict)
    """The ballots in, as JSON of the ballot schema."""
    errors: dict[str, str] = Field(default_factory=new_dict)


class _PollResult(BaseModel):
    """What the poll sends the count (as JSON)."""

    question: list[ChatMessage]
    ballots: dict[str, dict[str, Any] | None]
    """As JSON of the ballot schema."""
    errors: dict[str, str]
    decided_early: bool


@dataclass(frozen=True, slots=True)
class _Rules:
    """What decides a poll: the voters' order, the ballot schema, the policy, the quorum."""

    order: list[str]
    schema: type[BaseModel]
    policy: VotePolicy
    quorum: int


class _Round:
    """One poll's voters in flight: their ballots so far and the cancel scope of each."""

    def __init__(
        self,
        rules: _Rules,
        question: list[ChatMessage],
        ballots: dict[str, BaseModel | None],
        errors: dict[str, str],
    ) -> None:
        self.rules = rules
        self.question = question
        self.ballots = ballots
        self.errors = errors
        self.scopes: dict[str, anyio.CancelScope] = {}
        self.waiting: set[str] = set()
        self.waits: list[Suspended] = []
        self.decided_early = False

    async def run(self, ctx: NodeContext, voters: list[IAgent]) -> None:
        if not voters or self._decided([v.id for v in voters]):
            return
        # Each voter starts after the one before it has begun, so calls are named in order.
        turns = [anyio.Event() for _ in voters]
        turns[0].set()
        try:
            async with anyio.create_task_group() as group:
                for index, voter in enumerate(voters):
                    scope = anyio.CancelScope()
                    self.scopes[voter.id] = scope
                    following = turns[index + 1] if index + 1 < len(voters) else None
                    group.start_soon(self._vote, ctx, voter, scope, turns[index], following)
        except BaseExceptionGroup as group:
            # Voters that crossed the run's budget or deadline at once: one error, the first.
            limits, _ = group.split((BudgetExceeded, RunTimeout))
            if limits is None:
                raise
            raise _first_leaf(limits) from None
        if self.waits and self._decided(sorted(self.waiting)):
            # Settled without the voters that wait: they are left out, and nothing waits.
            self.decided_early = True
            self.waits.clear()
            for voter in self.waiting:
                self.ballots[voter] = None
                self.errors[voter] = "cancelled: the outcome was decided without it"

    async def _vote(
        self,
        ctx: NodeContext,
        voter: IAgent,
        scope: anyio.CancelScope,
        turn: anyio.Event,
        following: anyio.Event | None,
    ) -> None:
        with scope:
            try:
                await turn.wait()
            finally:
                # Set just before the call: the next voter cannot start before this one has.
                if following is not None:
                    following.set()
            try:
                response = await ctx.invoke_agent(voter, self.question)
            except Suspended as wait:
                self.waiting.add(voter.id)
                self.waits.append(wait)
            except (BudgetExceeded, RunTimeout):
                raise
            except Exception as exc:
                if type(exc).__module__.startswith("dbos"):
                    raise  # a durable run's own error (a replay that went another way): fails
                _log.warning("voter %r failed; it abstains", voter.id, exc_info=exc)
                self.ballots[voter.id] = None
                self.errors[voter.id] = f"{_FAILED} {type(exc).__name__}: {exc}"
            else:
                ballot, problem = read_ballot(response, self.rules.schema)
                self.ballots[voter.id] = ballot
                if problem is not None:
                    self.errors[voter.id] = f"invalid ballot: {problem}"
        if scope.cancelled_caught:
            return
        outstanding = [
            v for v in self.scopes if v not in self.ballots and not self.scopes[v].cancel_called
        ]
        if outstanding and self._decided(outstanding):
            self.decided_early = True
            for other in outstanding:
                if other not in self.waiting:
                    self.scopes[other].cancel()

    def _decided(self, outstanding: list[str]) -> bool:
        rules = self.rules
        valid = sum(1 for b in self.ballots.values() if b is not None)
        if valid < rules.quorum:
            return False
        choices = {v: _choice(b) for v, b in self.ballots.items()}
        return settled(rules.policy, choices, outstanding, rules.order)


class Count(Executor):
    """Applies the policy to the ballots (asking the judge when it must) and answers."""

    kind = "vote"

    def __init__(
        self,
        id: str,
        vote_id: str,
        order: list[str],
        policy: VotePolicy,
        quorum: int | None,
        schema: type[BaseModel],
    ) -> None:
        super().__init__(id)
        self._schema = schema
        self._vote_id = vote_id
        self._order = order
        self._policy = policy
        self._quorum = quorum

    def as_agent(self) -> IAgent | None:
        """The judge, when the policy has one."""
        return self._policy.judge

    def models(self) -> Sequence[type[BaseModel]]:
        """The vote's value, which checkpoints bring back as itself."""
        return (VoteResult, Ballot, self._schema)

    async def handle(self, message: Any, ctx: NodeContext) -> AgentResponse:
        """Tally, check the quorum, and yield the `VoteResult` with the winner's message."""
        poll = _PollResult.model_validate(message)
        ballots = {v: _read(self._schema, b) for v, b in poll.ballots.items()}
        errors = dict(poll.errors)
        valid = sum(1 for b in ballots.values() if b is not None)
        if self._quorum is not None and valid < self._quorum:
            reasons = "; ".join(f"{v}: {e}" for v, e in errors.items()) or "none given"
            raise QuorumNotReached(
                f"vote {self._vote_id!r} got {valid} valid ballot(s) of {len(ballots)}, fewer "
                f"than its quorum of {self._quorum} (why the others have none: {reasons}); "
                "lower with_quorum(), or give the voters a ballot schema they can fill"
            )
        failed = {v: e for v, e in errors.items() if e.startswith(_FAILED)}
        if failed and len(failed) == len(ballots):
            # A model outage is not a disagreement: nobody voted.
            reasons = "; ".join(f"{v}: {e}" for v, e in failed.items())
            raise QuorumNotReached(
                f"vote {self._vote_id!r}: every voter failed, so nobody voted ({reasons}); "
                "fix what they failed on and run the vote again"
            )
        if failed:
            _log.warning(
                "vote %r: %d of %d voters failed and did not vote: %s",
                self._vote_id,
                len(failed),
                len(ballots),
                "; ".join(f"{v}: {e}" for v, e in failed.items()),
            )
        choices = {v: _choice(b) for v, b in ballots.items()}
        outcome = count(self._policy, choices, self._order)
        winner = outcome.winner
        judge = self._policy.judge
        if outcome.needs_judge and judge is not None:
            in_play = list(outcome.tally)
            winner = await ask_judge(ctx, judge, self._vote_id, poll.question, ballots, in_play)
        result = VoteResult(
            winner=winner,
            tally=outcome.tally,
            ballots=ballots,
            decided_early=poll.decided_early,
            errors=errors,
        )
        text = winner if winner is not None else f"no winner: {outcome.reason}"
        if winner is None and failed:
            text += f" ({len(failed)} of {len(ballots)} voters failed)"
        message = ChatMessage.assistant(text, author=self._vote_id)
        # Streamed on the vote's own path, like any agent's answer.
        await ctx.emit(TextDelta(text=text))
        await ctx.emit(MessageCompleted(message=message))
        response = AgentResponse(messages=[message], value=result)
        await ctx.yield_output(response)
        return response


def _read(schema: type[BaseModel], ballot: dict[str, Any] | None) -> BaseModel | None:
    return None if ballot is None else schema.model_validate(ballot)


def _dump(ballot: BaseModel | None) -> dict[str, Any] | None:
    return None if ballot is None else ballot.model_dump(mode="json")


def _choice(ballot: BaseModel | None) -> str | None:
    # A ballot schema has a `choice: str` field (checked by `with_ballot`).
    return None if ballot is None else cast(str, ballot.__dict__["choice"])


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first: BaseException = group.exceptions[0]
    while isinstance(first, BaseExceptionGroup):
        first = cast("BaseExceptionGroup[BaseException]", first).exceptions[0]
    return first


def _check_policy(vote_id: str, policy: VotePolicy, ids: list[str], quorum: int | None) -> None:
    from raf.errors import GraphValidationError

    unknown = sorted(set(policy.weights) - set(ids))
    if unknown:
        raise GraphValidationError(
            f"VoteBuilder {vote_id!r}: weighted() names voters that are not in the vote: "
            f"{', '.join(repr(u) for u in unknown)} (voters: {ids})",
            ids=tuple(unknown),
        )
    if quorum is not None and quorum > len(ids):
        raise GraphValidationError(
            f"VoteBuilder {vote_id!r}: a quorum of {quorum} can never be reached by "
            f"{len(ids)} voter(s); lower with_quorum() or add voters"
        )


def _digest(messages: list[ChatMessage]) -> str:
    data = json.dumps([m.model_dump(mode="json") for m in messages], sort_keys=True)
    return hashlib.sha256(data.encode()).hexdigest()[:16]
