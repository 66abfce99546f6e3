from __future__ import annotations

import pytest

from raf.errors import (
    AgentError,
    BudgetExceeded,
    GraphValidationError,
    HandoffLimitExceeded,
    MaxRoundsExceeded,
    ProviderError,
    QuorumNotReached,
    RunTimeout,
    SchemaValidationError,
    ToolError,
    WorkflowError,
    describe,
)


@pytest.mark.parametrize(
    "cls",
    [
        WorkflowError,
        MaxRoundsExceeded,
        SchemaValidationError,
        HandoffLimitExceeded,
        QuorumNotReached,
        BudgetExceeded,
        RunTimeout,
        ProviderError,
        ToolError,
    ],
)
def test_hierarchy(cls: type[Exception]) -> None:
    assert issubclass(cls, AgentError)


def test_graph_validation_error_is_a_value_error() -> None:
    error = GraphValidationError("duplicate id 'a'", ids=("a",))
    assert isinstance(error, ValueError) and error.ids == ("a",)


def test_message_names_the_path_once_set() -> None:
    error = MaxRoundsExceeded("out of rounds")
    assert str(error) == "out of rounds"
    error.with_path(("team", "writer"))
    error.with_path(("ignored",))
    assert error.path == ("team", "writer")
    assert str(error) == "out of rounds (at 'team/writer')"


def test_workflow_error_names_executor_and_cause() -> None:
    cause = KeyError("x")
    error = WorkflowError("step2", cause, path=("wf",))
    assert error.executor_id == "step2" and error.cause is cause
    assert "step2" in str(error) and "KeyError" in str(error)
    assert describe(error)["path"] == ["wf"]


def test_provider_error_carries_context() -> None:
    error = ProviderError("boom", model="m", status=503, attempts=4)
    assert (error.model, error.status, error.attempts) == ("m", 503, 4)


@pytest.mark.anyio
async def test_collect_raises_what_the_stream_raises_with_the_same_cause() -> None:
    from raf.builders import SequentialBuilder
    from raf.function_agent import FunctionAgent

    class Boom(Exception):
        pass

    def fail(messages: object) -> str:
        try:
            raise KeyError("the root cause")
        except KeyError as exc:
            raise Boom("it broke") from exc

    for agent in (
        FunctionAgent("leaf", fail),
        SequentialBuilder(id="seq").add_agent(FunctionAgent("leaf", fail)).build().as_agent(),
    ):
        with pytest.raises(Exception) as streamed:
            async with agent.run("go") as stream:
                async for _ in stream:
                    pass
        with pytest.raises(Exception) as collected:
            await agent.run("go").collect()
        assert type(collected.value) is type(streamed.value)
        assert type(collected.value.__cause__) is type(streamed.value.__cause__)
        assert collected.value.__cause__ is not None
        cause = collected.value.__cause__
        while cause.__cause__ is not None:
            cause = cause.__cause__
        assert isinstance(cause, KeyError)
