"""Participant checks and node naming shared by the builders."""

from __future__ import annotations

from collections.abc import Iterable

from raf._describe import describe
from raf.agent import IAgent
from raf.engine.builder import agent_mistake
from raf.errors import GraphValidationError


def check_agent(
    builder: str, workflow_id: str, agent: object, *, where: str = "add_agent(agent)"
) -> IAgent:
    """`agent`, after checking it is an agent instance that `add_agent` can take.

    Raises:
        TypeError: naming the builder and what to pass instead (an instance for a class,
            `.as_agent()` for a `Workflow`, the agent itself for an id).
    """
    call = f"{builder} {workflow_id!r}: {where}"
    mistake = agent_mistake(agent)
    if mistake is not None:
        raise TypeError(f"{call} takes an agent, {mistake}")
    if isinstance(agent, str):
        raise TypeError(
            f"{call} takes an agent, got the str {agent!r}; pass the agent itself, not its id"
        )
    if not isinstance(agent, IAgent):
        raise TypeError(
            f"{call} takes an IAgent (a ReactAgent, a FunctionAgent, a workflow's "
            f".as_agent() or any object with IAgent's methods), got {describe(agent)}"
        )
    return agent


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


def free_id(base: str, taken: Iterable[str]) -> str:
    """`base`, or `base_2`, `base_3`, … when a participant already has that id."""
    used = set(taken)
    candidate, n = base, 1
    while candidate in used:
        n += 1
        candidate = f"{base}_{n}"
    return candidate
