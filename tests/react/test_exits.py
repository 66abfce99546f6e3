"""Exit tools: a call ends the ReAct loop after its round; the first of several wins."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from raf import ReactAgent, tool
from raf.react.exits import ExitTool
from raf.testing import ScriptedProvider, text, tool_calls
from raf.tools import ToolDefinition

pytestmark = pytest.mark.anyio

LEAVE = ExitTool(ToolDefinition(name="leave", description="Go."), "Left.")
STAY = ExitTool(ToolDefinition(name="stay"), "Stayed.")


@tool
def note(words: str) -> str:
    """Write a note.

    Args:
        words: the note.
    """
    return f"noted {words}"


async def test_an_exit_call_ends_the_loop_after_the_other_tools_of_its_round() -> None:
    model = ScriptedProvider(
        [tool_calls(("note", {"words": "hi"}, "n1"), ("leave", {}, "x1"), ("stay", {}, "x2"))]
    )
    agent = ReactAgent("a", model, "Do it.", tools=[note])
    view = agent.with_exits([LEAVE, STAY])
    response = await view.run("go").collect()
    results = [
        (c.call_id, c.result, c.is_error)
        for m in response.messages
        for c in m.contents
        if c.type == "tool_result"
    ]
    assert results[0] == ("n1", "noted hi", False)
    assert results[1] == ("x1", "Left.", False)
    assert results[2][0] == "x2" and results[2][2]
    assert "leave was called first" in results[2][1]
    assert model.calls == 1
    assert [d.name for d in model.requests[0].tools] == ["note", "leave", "stay"]


async def test_the_view_leaves_the_agent_as_it_was() -> None:
    model = ScriptedProvider([text("plain"), tool_calls(("leave", {})), text("after")])
    agent = ReactAgent("a", model, "Do it.")
    view = agent.with_exits([LEAVE])
    assert (view.id, view.tools, view.provider) == (agent.id, agent.tools, agent.provider)
    assert (await agent.run("go").collect()).text == "plain"
    assert model.requests[0].tools == []
    # Without the exit, a call to it is an unknown tool and the loop goes on.
    response = await agent.run("go").collect()
    assert response.text == "after"
    assert "unknown tool 'leave'" in response.messages[1].contents[0].result  # type: ignore[union-attr]


class Answer(BaseModel):
    city: str


def test_resolve_stays_last_and_names_must_be_free() -> None:
    agent = ReactAgent("a", ScriptedProvider([]), "x", tools=[note], output_schema=Answer)
    view = agent.with_exits([LEAVE])
    assert view.output_schema() == agent.output_schema()
    with pytest.raises(ValueError, match=r"already has tools named \['note'\]"):
        agent.with_exits([ExitTool(ToolDefinition(name="note"), "")])
    with pytest.raises(ValueError, match=r"\['leave'\]"):
        view.with_exits([LEAVE])
