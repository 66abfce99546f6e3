"""Ballots and vote results, and how a voter's response becomes a ballot.

Example:
    >>> from raf.messages import ChatMessage
    >>> from raf.updates import AgentResponse
    >>> reply = AgentResponse(messages=[ChatMessage.assistant(" tea ", author="a")])
    >>> read_ballot(reply, Ballot)
    (Ballot(choice='tea', confidence=1.0, rationale=''), None)
"""

from __future__ import annotations

from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny, ValidationError, field_validator

from raf._defaults import new_dict
from raf.adapters.structured import validate_json
from raf.tools.arguments import describe_validation_error
from raf.updates import AgentResponse

__all__ = ["Ballot", "VoteResult", "check_ballot_schema", "read_ballot"]


class Ballot(BaseModel):
    """One voter's ballot: the choice, how sure it is, and why.

    A custom ballot schema's instances are the ballots; a `Ballot` keeps any other field it
    is given (`ballot.model_extra`).

    Example:
        >>> Ballot(choice="tea", confidence=0.8, rationale="warmer").choice
        'tea'
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    choice: str
    """What the voter votes for."""
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    """How sure the voter is, from 0 to 1."""
    rationale: str = ""
    """Why."""


class VoteResult(BaseModel):
    """The value of a vote: the winner, the tally and every voter's ballot.

    Example:
        >>> VoteResult(winner="tea", tally={"tea": 2.0}, ballots={}).decided_early
        False
    """

    model_config = ConfigDict(frozen=True)

    type: Literal["vote_result"] = "vote_result"
    winner: str | None
    """The winning choice, or None (no majority, no unanimity, no valid ballot)."""
    tally: dict[str, float]
    """Summed ballot weight per choice."""
    ballots: dict[str, SerializeAsAny[BaseModel] | None]
    """Every voter's ballot, an instance of the ballot schema, in participant order; None for
    one that abstained, was cancelled, failed or gave an invalid ballot. (Brought back from
    JSON without the schema, a ballot is a `Ballot` that keeps every other field.)"""
    decided_early: bool = False
    """The outcome was fixed before every voter answered, and the rest were cancelled."""
    errors: dict[str, str] = Field(default_factory=new_dict)
    """Why each voter without a ballot has none (and a judge's failure, by its id)."""

    @field_validator("ballots", mode="before")
    @classmethod
    def _read_ballots(cls, ballots: Any) -> Any:
        if not isinstance(ballots, dict):
            return ballots
        return {
            voter: Ballot.model_validate(b) if isinstance(b, dict) else b
            for voter, b in cast(dict[str, Any], ballots).items()
        }


def check_ballot_schema(schema: Any) -> type[BaseModel]:
    """`schema`, after checking it is a pydantic model with a `choice: str` field.

    Raises:
        TypeError: saying what to pass instead.
    """
    if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
        raise TypeError(
            f"with_ballot() takes a pydantic model class with a `choice: str` field, got {schema!r}"
        )
    field = schema.model_fields.get("choice")
    if field is None or field.annotation is not str:
        raise TypeError(
            f"ballot schema {schema.__name__} needs a field `choice: str` (what the voter "
            "votes for)"
        )
    return schema


def read_ballot(
    response: AgentResponse, schema: type[BaseModel]
) -> tuple[BaseModel | None, str | None]:
    """The ballot in a voter's response, or None and the reason there is none.

    Tried in order: the response's `value` validated against `schema`; its last message with
    text parsed as JSON of `schema`; for the default `Ballot` only, that text, stripped, as the
    `choice` with confidence 1.0.
    """
    problems: list[str] = []
    value = response.value
    if value is not None:
        if isinstance(value, BaseModel):
            value = value.model_dump()
        try:
            return schema.model_validate(value), None
        except ValidationError as exc:
            problems.append(
                f"its value is not a {schema.__name__}: {describe_validation_error(exc)}"
            )
    text = next((m.text for m in reversed(response.messages) if m.text.strip()), "")
    if text and schema is Ballot and "{" not in text and not text.lstrip().startswith("```"):
        return Ballot(choice=text.strip()), None  # no JSON object in it: the text is the choice
    if text:
        try:
            return validate_json(text, schema), None
        except ValidationError as exc:
            if schema is Ballot and not text.lstrip().startswith(("{", "```")):
                return Ballot(choice=text.strip()), None
            problems.append(
                f"its answer is not JSON of {schema.__name__}: {describe_validation_error(exc)}"
            )
    elif value is None:
        problems.append("it answered nothing")
    return None, "; ".join(problems)
