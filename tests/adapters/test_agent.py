from __future__ import annotations

import pytest
from pydantic import BaseModel

from raf.adapters import Step, ThreadContext, agent_to_adapter
from raf.adapters.agent import EXTRACT_INSTRUCTIONS
from raf.errors import SchemaValidationError
from raf.function_agent import FunctionAgent
from raf.messages import ChatMessage
from raf.react import ReactAgent
from raf.testing.script import resolve, text
from raf.testing.scripted_provider import ScriptedProvider

pytestmark = pytest.mark.anyio


class Estimate(BaseModel):
    days: int


THREAD = ThreadContext(
    thread_id="t",
    start=[ChatMessage.user("Plan the move.")],
    steps=[Step(role="planner", value={"rooms": 3})],
)


async def test_runs_the_agent_then_extracts_in_one_call() -> None:
    seen: list[list[ChatMessage]] = []

    def estimator(messages: list[ChatMessage]) -> str:
        seen.append(messages)
        return "Three rooms take about four days."

    extractor = ScriptedProvider([text('{"days": 4}')])
    role = agent_to_adapter(FunctionAgent("estimator", estimator), extractor)("Estimate.", Estimate)
    assert await role(THREAD) == Estimate(days=4)
    [messages] = seen
    assert messages[0] == ChatMessage.system("Estimate.")
    assert messages[1] == ChatMessage.user("Plan the move.")
    assert '[planner] {"rooms":3}' in messages[2].text
    assert extractor.calls == 1
    request = extractor.requests[0]
    assert request.messages[0] == ChatMessage.system(EXTRACT_INSTRUCTIONS)
    assert "[estimator]\nThree rooms take about four days." in request.messages[1].text
    assert request.response_format is not None
    assert request.response_format["json_schema"]["schema"] == Estimate.model_json_schema()


async def test_each_role_call_uses_a_fresh_session() -> None:
    provider = ScriptedProvider(lambda messages: text(f"{len(messages)} messages"))
    agent = ReactAgent("counter", provider, "Count.")
    extractor = ScriptedProvider([text('{"days": 1}'), text('{"days": 1}')])
    role = agent_to_adapter(agent, extractor)("Estimate.", Estimate)
    await role(THREAD)
    await role(THREAD)
    assert len(provider.requests[0].messages) == len(provider.requests[1].messages)


async def test_an_agent_value_of_the_schema_needs_no_extraction() -> None:
    agent = ReactAgent(
        "typed", ScriptedProvider([resolve({"days": 2})]), "Estimate.", output_schema=Estimate
    )
    extractor = ScriptedProvider([])
    role = agent_to_adapter(agent, extractor)("Estimate.", Estimate)
    assert await role(THREAD) == Estimate(days=2)
    assert extractor.calls == 0


async def test_extraction_that_does_not_match_raises() -> None:
    agent = FunctionAgent("vague", lambda messages: "a while")
    role = agent_to_adapter(agent, ScriptedProvider([text('{"days": "a while"}')]))(
        "Estimate.", Estimate
    )
    with pytest.raises(SchemaValidationError, match="Estimate"):
        await role(THREAD)
