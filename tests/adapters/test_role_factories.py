"""The tool role's default result, the LLM role's hooks, and `ThreadContext.bundle_hash`."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from raf.adapters import (
    RoleResult,
    Step,
    ThreadContext,
    create_llm_adapter,
    create_tool_role,
)
from raf.messages import ChatMessage
from raf.testing.script import text
from raf.testing.scripted_provider import ScriptedProvider

pytestmark = pytest.mark.anyio


class TestRun(BaseModel):
    __test__ = False

    passed: bool
    output: str = ""


THREAD = ThreadContext(thread_id="t", start=[ChatMessage.user("Run the tests.")])


async def test_a_tool_role_answers_with_what_its_function_returns() -> None:
    async def run(thread: ThreadContext) -> dict[str, Any]:
        return {"passed": True, "output": thread.thread_id}

    assert await create_tool_role(run)("Run.", TestRun)(THREAD) == TestRun(passed=True, output="t")
    result = RoleResult(content={"passed": True}, meta={"passed": True})
    assert await create_tool_role(lambda thread: result)("Run.", TestRun)(THREAD) is result


async def test_a_failing_tool_role_answers_with_its_default_result(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(thread: ThreadContext) -> TestRun:
        raise OSError("pytest is not installed")

    with caplog.at_level(logging.WARNING, logger="raf"):
        answer = await create_tool_role(broken, default_result={"passed": False})("Run.", TestRun)(
            THREAD
        )
    assert answer == TestRun(passed=False)
    assert "default_result" in caplog.text and "pytest is not installed" in caplog.text
    with pytest.raises(OSError, match="not installed"):
        await create_tool_role(broken)("Run.", TestRun)(THREAD)
    with pytest.raises(TypeError, match="fn\\(thread\\)"):
        create_tool_role("run the tests")  # type: ignore[arg-type]


async def test_an_llm_role_builds_its_user_message_and_parses_the_response() -> None:
    model = ScriptedProvider([text("PASS: 12 tests")])
    shown: list[str] = []

    def build(thread: ThreadContext) -> str:
        shown.append(thread.thread_id)
        return f"Judge the run of thread {thread.thread_id}."

    def parse(response: str, thread: ThreadContext) -> RoleResult:
        passed = response.startswith("PASS")
        return RoleResult(content={"passed": passed, "output": response}, meta={"passed": passed})

    judge = create_llm_adapter(model, build_user_message=build, parse_response=parse)
    result = await judge("You judge test runs.", TestRun)(THREAD)
    assert result == RoleResult(
        content={"passed": True, "output": "PASS: 12 tests"}, meta={"passed": True}
    )
    request = model.requests[0]
    assert [m.text for m in request.messages] == [
        "You judge test runs.",
        "Judge the run of thread t.",
    ]
    assert request.response_format is None  # the hook parses free text


async def test_an_llm_role_with_only_a_user_message_hook_still_validates_its_schema() -> None:
    model = ScriptedProvider([text('{"passed": false}')])
    messages = [ChatMessage.user("one"), ChatMessage.user("two")]
    role = create_llm_adapter(model, build_user_message=lambda thread: messages)("Judge.", TestRun)
    assert await role(THREAD) == TestRun(passed=False)
    assert [m.text for m in model.requests[0].messages][1:] == ["one", "two"]
    assert model.requests[0].response_format is not None


_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), _values), max_size=4), st.text(max_size=8))
def test_the_bundle_hash_depends_on_the_inputs_only(steps: list[Any], opening: str) -> None:
    def thread(thread_id: str) -> ThreadContext:
        return ThreadContext(
            thread_id=thread_id,
            start=[ChatMessage.user(opening)],
            steps=[Step(role=role, value=value) for role, value in steps],
        )

    first, second = thread("x"), thread("y")
    assert first.bundle_hash == second.bundle_hash  # ids and times are not inputs
    assert len(first.bundle_hash) == 64
    more = first.model_copy(update={"steps": [*first.steps, Step(role="a", value=0)]})
    assert more.bundle_hash != first.bundle_hash
