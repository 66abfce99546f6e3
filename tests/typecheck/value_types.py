"""What a type checker infers for the value of an agent's response.

pyright checks this file (strict, see `[tool.pyright]` in pyproject.toml); it is never run.
Each `assert_type` fails the check when the inferred type differs, and each
`# pyright: ignore[...]` marks a line that must be an error: were it accepted, the ignore
would be unnecessary, which this file reports as an error too.
"""

# pyright: reportUnnecessaryTypeIgnoreComment=true

from __future__ import annotations

from typing import Any, assert_type

from pydantic import BaseModel

from raf import (
    AgentResponse,
    AgentRun,
    FunctionAgent,
    IAgent,
    LlmProvider,
    ReactAgent,
    SequentialBuilder,
    ThreadContext,
)
from raf.adapters import agent_to_adapter, create_llm_adapter, create_react_adapter
from raf.agent import BaseAgent


class Plan(BaseModel):
    steps: list[str]


class Sight(BaseModel):
    name: str


async def no_tools(name: str, arguments: str) -> str:
    return ""


async def an_output_schema_types_the_value(provider: LlmProvider) -> None:
    planner = ReactAgent("planner", provider, "Plan the trip.", output_schema=Plan)
    assert_type(planner, ReactAgent[Plan])
    run = planner.run("Oslo")
    assert_type(run, AgentRun[Plan])
    response = await run.collect()
    assert_type(response, AgentResponse[Plan])
    assert_type(response.value, Plan)
    assert_type(run.response, AgentResponse[Plan] | None)
    assert_type((await planner.run("x").collect()).value.steps, list[str])
    assert_type(await planner.run("x"), AgentResponse[Plan])
    assert_type((await planner.run("x")).value.steps, list[str])
    positional = ReactAgent("planner", provider, "Plan.", [], Plan, 3, "plans trips")
    assert_type(positional, ReactAgent[Plan])
    native = ReactAgent("planner", provider, "Plan.", output_schema=Plan, output_mode="native")
    assert_type(native, ReactAgent[Plan])


async def without_a_schema_the_value_is_none(provider: LlmProvider) -> None:
    chat = ReactAgent("chat", provider, "Be brief.")
    assert_type(chat, ReactAgent[None])
    assert_type((await chat.run("hi").collect()).value, None)
    assert_type(ReactAgent("chat", provider, "Be brief.", output_schema=None), ReactAgent[None])
    echo = FunctionAgent("echo", lambda messages: messages[-1].text)
    assert_type((await echo.run("hi").collect()).value, None)
    assert_type((await chat.run("hi")).value, None)
    wrong: Plan = (await chat.run("hi").collect()).value  # pyright: ignore[reportAssignmentType]
    also_wrong: Plan = (await chat.run("hi")).value  # pyright: ignore[reportAssignmentType]
    print(wrong, also_wrong)


def a_run_is_not_a_sync_context_manager(provider: LlmProvider) -> None:
    with ReactAgent("chat", provider, "Hi.").run("hi"):  # pyright: ignore[reportGeneralTypeIssues]
        pass


def a_schema_that_may_be_none_gives_either(
    provider: LlmProvider, schema: type[Plan] | None
) -> None:
    agent = ReactAgent("a", provider, "x", output_schema=schema)
    assert_type(agent, ReactAgent[Plan] | ReactAgent[None])


def an_output_schema_is_a_pydantic_model_class(p: LlmProvider) -> None:
    ReactAgent("a", p, "x", output_schema=dict)  # pyright: ignore[reportArgumentType, reportCallIssue]
    ReactAgent("a", p, "x", [], Plan(steps=[]))  # pyright: ignore[reportArgumentType, reportCallIssue]


def a_handoff_view_may_end_without_a_value(provider: LlmProvider) -> None:
    planner = ReactAgent("planner", provider, "Plan.", output_schema=Plan)
    assert_type(planner.with_exits([]), ReactAgent[Plan | None])


async def unparametrised_means_any(
    response: AgentResponse, run: AgentRun, agent: ReactAgent, base: BaseAgent, any_agent: IAgent
) -> None:
    assert_type(response.value, Any)
    assert_type(run, AgentRun[Any])
    assert_type(agent, ReactAgent[Any])
    assert_type(base.run("x"), AgentRun[Any])
    assert_type(any_agent.run("x"), AgentRun[Any])
    assert_type((await any_agent.run("x").collect()).value, Any)
    assert_type(await any_agent.run("x"), AgentResponse[Any])
    assert_type(AgentResponse(), AgentResponse[Any])
    assert_type(AgentResponse(value=Plan(steps=[])), AgentResponse[Plan])
    assert_type(AgentResponse[Plan].model_validate_json("{}").value, Plan)


def typed_agents_are_agents(provider: LlmProvider) -> None:
    planner = ReactAgent("planner", provider, "Plan.", output_schema=Plan)
    agents: list[IAgent] = [planner, ReactAgent("chat", provider, "Hi."), planner.with_exits([])]
    workflow = SequentialBuilder("team").add_agent(planner).add_agent(agents[1]).build()
    assert_type(workflow.as_agent().run("x"), AgentRun[Any])


def values_are_covariant(provider: LlmProvider) -> None:
    planner = ReactAgent("planner", provider, "Plan.", output_schema=Plan)
    models: list[ReactAgent[BaseModel]] = [planner, ReactAgent("s", provider, "x", [], Sight)]
    run: AgentRun[BaseModel] = planner.run("x")
    plans: AgentRun[Sight] = planner.run("x")  # pyright: ignore[reportAssignmentType]
    print(models, run, plans)


async def role_adapters_are_typed_by_their_schema(provider: LlmProvider) -> None:
    thread = ThreadContext(thread_id="t")
    react_role = create_react_adapter(provider, [], no_tools)("Plan.", Plan)
    assert_type(await react_role(thread), Plan)
    assert_type(await create_llm_adapter(provider)("Name a sight.", Sight)(thread), Sight)
    chat = ReactAgent("chat", provider, "Hi.")
    assert_type(await agent_to_adapter(chat, provider)("Plan.", Plan)(thread), Plan)
