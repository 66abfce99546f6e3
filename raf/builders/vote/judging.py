"""The judge of a vote: shown the ballots, it answers with one of the choices in play.

An answer that is not one of them (after trimming, quotes, a final full stop and case) gets a
correction naming the choices, and the judge is asked again; after `JUDGE_ATTEMPTS` answers
the vote fails with an error naming the judge.

Example:
    >>> in_play("Pasta.", ["soup", "pasta"]), in_play("banana", ["soup", "pasta"])
    ('pasta', None)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from raf.agent import IAgent
from raf.builders.vote.ballot import Ballot, read_ballot
from raf.engine.context import NodeContext
from raf.errors import SchemaValidationError
from raf.messages import ChatMessage

__all__ = ["JUDGE_ATTEMPTS", "ask_judge", "in_play"]

JUDGE_ATTEMPTS = 3
"""Answers asked of a judge before a vote fails for want of a valid one."""


def in_play(answer: str, choices: Sequence[str]) -> str | None:
    """The choice `answer` names, or None when it names none of `choices`."""
    if answer in choices:
        return answer
    plain = answer.strip().rstrip(".!").strip().strip("\"'`*").strip().casefold()
    return next((c for c in choices if c.strip().casefold() == plain), None)


async def ask_judge(
    ctx: NodeContext,
    judge: IAgent,
    vote_id: str,
    question: list[ChatMessage],
    ballots: Mapping[str, BaseModel | None],
    choices: Sequence[str],
) -> str:
    """The judge's choice among `choices` (the choices in play).

    Raises:
        SchemaValidationError: the judge named none of them in `JUDGE_ATTEMPTS` answers.
    """
    lines: list[str] = []
    for voter, ballot in ballots.items():
        if ballot is None:
            continue
        line = f"- {voter}: {getattr(ballot, 'choice', '')}"
        confidence = getattr(ballot, "confidence", None)
        if isinstance(confidence, int | float):
            line += f" (confidence {confidence:g})"
        rationale = getattr(ballot, "rationale", "")
        lines.append(line + (f": {rationale}" if isinstance(rationale, str) and rationale else ""))
    options = ", ".join(repr(c) for c in choices)
    conversation = [
        *question,
        ChatMessage.user(
            "The voters did not agree. Their ballots:\n"
            + "\n".join(lines)
            + f"\nDecide: answer with the winning choice only, one of: {options}."
        ),
    ]
    answers: list[str] = []
    for _ in range(JUDGE_ATTEMPTS):
        response = await ctx.invoke_agent(judge, conversation)
        ballot, problem = read_ballot(response, Ballot)
        answer = "" if ballot is None else getattr(ballot, "choice", "")
        choice = in_play(answer, choices) if ballot is not None else None
        if choice is not None:
            return choice
        answers.append(repr(answer) if ballot is not None else f"no choice ({problem})")
        conversation += [
            *response.messages,
            ChatMessage.user(
                f"{answers[-1]} is not one of the choices in play; answer with exactly one "
                f"of: {options}."
            ),
        ]
    raise SchemaValidationError(
        f"vote {vote_id!r}: its judge {judge.id!r} named none of the choices in play "
        f"({options}) in {JUDGE_ATTEMPTS} answers (it answered {', '.join(answers)}); make "
        "the judge's instructions ask for one of the voters' choices"
    )
