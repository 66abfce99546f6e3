"""Every builder's `add_agent` refuses what is not an agent instance, saying what to pass."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from raf.builders import ConcurrentBuilder, SequentialBuilder
from raf.function_agent import FunctionAgent

BUILDERS: list[Callable[[], Any]] = [
    lambda: SequentialBuilder(id="team"),
    lambda: ConcurrentBuilder(id="team"),
]


def one_step() -> Any:
    return SequentialBuilder(id="inner").add_agent(FunctionAgent("a", lambda m: "A")).build()


@pytest.mark.parametrize("make", BUILDERS)
@pytest.mark.parametrize(
    ("given", "told"),
    [
        (
            FunctionAgent,
            "takes an agent, got the class FunctionAgent; pass an instance, "
            "e.g. FunctionAgent('my_id', ...)",
        ),
        (
            "writer",
            "takes an agent, got the str 'writer'; pass the agent itself, not its id",
        ),
        (
            42,
            "takes an IAgent (a ReactAgent, a FunctionAgent, a workflow's .as_agent() or any "
            "object with IAgent's methods), got the int 42",
        ),
    ],
)
def test_add_agent_names_the_builder_and_what_to_pass(
    make: Callable[[], Any], given: object, told: str
) -> None:
    builder = make()
    with pytest.raises(TypeError) as raised:
        builder.add_agent(given)
    assert str(raised.value) == f"{type(builder).__name__} 'team': add_agent(agent) {told}"


@pytest.mark.parametrize("make", BUILDERS)
def test_a_workflow_is_told_to_become_an_agent(make: Callable[[], Any]) -> None:
    with pytest.raises(TypeError, match=r"got the Workflow 'inner'; pass workflow\.as_agent\(\)$"):
        make().add_agent(one_step())


@pytest.mark.parametrize("make", BUILDERS)
def test_the_workflows_agent_is_taken(make: Callable[[], Any]) -> None:
    assert make().add_agent(one_step().as_agent()).build().id == "team"
