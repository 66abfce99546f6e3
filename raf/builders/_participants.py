"""Participant checks shared by the builders."""

from __future__ import annotations

from collections.abc import Iterable

from raf.agent import IAgent
from raf.errors import GraphValidationError


def check_participants(builder: str, workflow_id: str, agents: Iterable[IAgent]) -> list[IAgent]:
    """The participants as a list, after checking they are agents with unique ids.

    Raises:
        GraphValidationError: naming the workflow and the offending ids.
    """
    participants = list(agents)
    if not participants:
        raise GraphValidationError(
            f"{builder} {workflow_id!r} has no participants; call add_agent() at least once"
        )
    seen: set[str] = set()
    duplicates: list[str] = []
    for agent in participants:
        if not isinstance(agent, IAgent):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise GraphValidationError(
                f"{builder} {workflow_id!r}: participant {agent!r} is not an IAgent"
            )
        if agent.id in seen:
            duplicates.append(agent.id)
        seen.add(agent.id)
    if duplicates:
        raise GraphValidationError(
            f"{builder} {workflow_id!r} has participants with the same id: "
            f"{', '.join(repr(d) for d in duplicates)}; sibling ids must be unique (pass id= to "
            "the nested builder, or give the agents distinct ids)",
            ids=tuple(duplicates),
        )
    return participants
