from __future__ import annotations

import pytest
from pydantic import BaseModel

from raf.adapters import ThreadContext, create_llm_adapter, response_format
from raf.errors import SchemaValidationError
from raf.messages import ChatMessage
from raf.testing.script import text
from raf.testing.scripted_provider import ScriptedProvider

pytestmark = pytest.mark.anyio


class Verdict(BaseModel):
    approved: bool
    reason: str


THREAD = ThreadContext(thread_id="t", start=[ChatMessage.user("Ship it?")])


async def test_one_call_with_a_json_schema_response_format() -> None:
    provider = ScriptedProvider([text('{"approved": true, "reason": "tests pass"}')])
    judge = create_llm_adapter(provider)("You review releases.", Verdict)
    assert await judge(THREAD) == Verdict(approved=True, reason="tests pass")
    assert provider.calls == 1
    request = provider.requests[0]
    assert request.messages == [
        ChatMessage.system("You review releases."),
        ChatMessage.user("Ship it?"),
    ]
    assert request.tools == []
    assert request.response_format == {
        "type": "json_schema",
        "json_schema": {"name": "Verdict", "schema": Verdict.model_json_schema(), "strict": False},
    }


async def test_fenced_json_is_accepted() -> None:
    provider = ScriptedProvider([text('```json\n{"approved": false, "reason": "no"}\n```')])
    judge = create_llm_adapter(provider)("Review.", Verdict)
    assert await judge(THREAD) == Verdict(approved=False, reason="no")


@pytest.mark.parametrize("answer", ['{"approved": "perhaps"}', "Sure, ship it!", ""])
async def test_invalid_output_raises_schema_validation_error(answer: str) -> None:
    judge = create_llm_adapter(ScriptedProvider([text(answer)]))("Review.", Verdict)
    with pytest.raises(SchemaValidationError, match="does not match Verdict") as info:
        await judge(THREAD)
    assert "'scripted'" in str(info.value)


def test_response_format_names_are_made_valid() -> None:
    Odd = type("Odd Name!", (BaseModel,), {"__annotations__": {"x": int}})
    assert response_format(Odd)["json_schema"]["name"] == "Odd_Name_"
