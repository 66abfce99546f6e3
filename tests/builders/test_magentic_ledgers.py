"""Magentic ledgers as models write them: two task-ledger calls, malformed progress ledgers,
a finished request, plan-review answers, and a failed turn."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raf import FunctionAgent, MagenticBuilder, Session, WorkflowError
from raf.builders.magentic.review import revision_in
from raf.messages import ChatMessage
from raf.testing import ScriptedProvider, Turn, text
from tests.builders.magentic_script import Manager, kind_of, progress

pytestmark = pytest.mark.anyio


def echo(agent_id: str) -> FunctionAgent:
    return FunctionAgent(agent_id, lambda m: f"{agent_id} did: {m[-1].text}")


def team_of(manager: Any, *agents: FunctionAgent, **limits: int) -> Any:
    builder = MagenticBuilder(ScriptedProvider(manager), id="team")
    for agent in agents or (echo("a"),):
        builder.add_agent(agent)
    return builder.with_limits(**limits).build().as_agent()


async def test_the_task_ledger_is_facts_then_plan_and_the_plan_goes_with_each_instruction() -> None:
    seen: list[list[ChatMessage]] = []

    def worker(messages: list[ChatMessage]) -> str:
        seen.append(messages)
        return "done"

    manager = Manager([progress("a", "do the first step"), progress("a", "", done=True)])
    provider = ScriptedProvider(manager)
    team = MagenticBuilder(provider, id="team").add_agent(FunctionAgent("a", worker)).build()
    assert (await team.as_agent().run("plan a trip").collect()).text == "the final answer"
    assert manager.kinds(plans=True) == ["task", "plan", "progress", "progress", "final"]
    facts, plan = (manager.calls[0][1][0].text, manager.calls[1][1][0].text)
    assert "EDUCATED GUESSES" in facts and "no plan yet" in facts
    assert "facts 1" in plan and "bullet points" in plan
    # The first two calls are plain text; the progress ledger has its JSON schema.
    assert [r.response_format is None for r in provider.requests[:3]] == [True, True, False]
    for question in ("is_in_loop", "is_progress_being_made", "next_speaker", "instruction"):
        assert question in manager.prompts("progress")[0]
    [request] = seen
    shown = [m.text for m in request]
    assert shown[-1] == "do the first step"
    assert any("plan 1" in t and "facts 1" in t for t in shown[:-1])


@pytest.mark.parametrize("speaker", ["none", "", "somebody else"])
async def test_a_satisfied_request_finishes_whatever_next_speaker_says(speaker: str) -> None:
    finished = progress(speaker, "", done=True)
    manager = Manager([finished])
    assert (await team_of(manager).run("go").collect()).text == "the final answer"
    assert manager.kinds() == ["task", "progress", "final"]


async def test_a_satisfied_ledger_needs_nothing_else_and_the_peers_key_is_read() -> None:
    peers = progress("a", "do it")
    peers["instruction_or_question"] = peers.pop("instruction")
    manager = Manager([peers, {"is_request_satisfied": {"reason": "done", "answer": True}}])
    assert (await team_of(manager).run("go").collect()).text == "the final answer"
    assert manager.kinds() == ["task", "progress", "progress", "final"]
    assert "[a] a did: do it" in manager.prompts("final")[0]


async def test_a_speaker_outside_the_team_is_asked_again_then_counts_as_a_stall() -> None:
    manager = Manager([progress("nobody", "x"), progress("a", "x"), progress("a", "", done=True)])
    provider = ScriptedProvider(manager)
    team = MagenticBuilder(provider, id="team").add_agent(echo("a")).build().as_agent()
    assert (await team.run("go").collect()).text == "the final answer"
    enum = provider.requests[2].response_format["json_schema"]["schema"]  # type: ignore[index]
    assert enum["$defs"]["SpeakerChoice"]["properties"]["answer"]["enum"] == ["a"]
    assert "'nobody' is not on the team" in provider.requests[3].messages[-1].text

    manager.rounds = [progress("nobody", "x")] * 3 + [progress("a", "", done=True)]
    session = Session()
    async with team.run("go", session) as updates:
        reasoning = [u.text async for u in updates if u.type == "reasoning_delta"]
    assert any("counted as a stall" in r and "'nobody'" in r for r in reasoning)
    assert manager.kinds()[-2:] == ["progress", "final"]


GIVEN_TRUE = {"true", "false", "yes", "no", "on", "off", "t", "f", "y", "n", "1", "0"}
not_a_bool = st.one_of(
    st.none(),
    st.floats(allow_nan=False).filter(lambda f: f not in (0.0, 1.0)),
    st.text().filter(lambda t: t.strip().lower() not in GIVEN_TRUE),
    st.lists(st.booleans(), max_size=2),
)
not_a_str = st.one_of(st.none(), st.integers(), st.booleans(), st.lists(st.text(), max_size=2))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)


@st.composite
def malformed(draw: st.DrawFn) -> str:
    """A progress ledger a model might write that cannot be used: not JSON, other JSON, or a
    ledger with one entry of the wrong type."""
    kind = draw(st.sampled_from(["prose", "json", "wrong type"]))
    if kind == "prose":
        return draw(st.text(max_size=30).filter(lambda t: not t.strip().startswith(("{", "`"))))
    if kind == "json":
        return json.dumps(draw(json_values))
    ledger = progress("a", "x")
    entry = draw(st.sampled_from(sorted(ledger)))
    part = draw(st.sampled_from(["reason", "answer"]))
    is_bool = part == "answer" and entry.startswith("is_")
    ledger[entry][part] = draw(not_a_bool if is_bool else not_a_str)
    return json.dumps(ledger)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=25)
@given(bad=st.lists(malformed(), min_size=3, max_size=3))
def test_malformed_ledgers_are_corrected_then_count_as_a_stall(
    backend: str, bad: list[str]
) -> None:
    answers = iter([*bad, json.dumps(progress("a", "", done=True))])
    seen: list[list[ChatMessage]] = []

    def manager(messages: list[ChatMessage]) -> Turn:
        kind = kind_of(messages)
        if kind == "progress":
            seen.append(messages)
            return text(next(answers))
        return text("the final answer" if kind == "final" else "-")

    team = team_of(manager, max_stalls=2)

    async def run() -> Any:
        async with team.run("go") as updates:
            return [u async for u in updates]

    items = anyio.run(run, backend=backend)
    assert seen[1][-2].text == bad[0]
    assert all("cannot be used" in s[-1].text for s in seen[1:3])
    reasoning = [u.text for u in items if u.type == "reasoning_delta"]
    assert sum("counted as a stall" in r for r in reasoning) == 1
    final = [u for u in items if u.type == "message_completed" and u.path == ("team",)]
    assert [u.message.text for u in final] == ["the final answer"]


async def test_ledgers_that_stay_malformed_end_with_an_answer_that_says_the_team_gave_up() -> None:
    manager = Manager([lambda m: {"nope": 1}] * 12, answer="gave up")
    response = await team_of(manager, max_stalls=2, max_resets=1).run("go").collect()
    assert response.text == "gave up"
    assert "gave up" in manager.prompts("final")[0]
    assert manager.kinds().count("progress") == 12 and manager.kinds().count("update") == 1


@pytest.mark.parametrize(
    "answer",
    [
        "approve",
        "Approve.",
        "approved",
        "yes",
        "Yes!",
        "LGTM",
        "lgtm 👍",
        "ok, go ahead",
        "Looks good to me.",
        "👍",
        {"approved": True},
        {"choice": "approve"},
        {"decision": "approve"},
        '{"approved": true}',
        True,
    ],
)
def test_approvals_as_people_write_them(answer: Any) -> None:
    assert revision_in(answer) is None


@pytest.mark.parametrize(
    ("answer", "revision"),
    [
        ("No, ask b first.", "No, ask b first."),
        ("not good", "not good"),
        ({"revision": "use b"}, "use b"),
        ({"approved": False, "comments": "shorter"}, "shorter"),
        ({"choice": "revise"}, "The plan is not approved: make a better one."),
    ],
)
def test_any_other_answer_is_a_revision(answer: Any, revision: str) -> None:
    assert revision_in(answer) == revision


async def test_a_failed_turn_does_not_brief_the_next_one() -> None:
    fail = {"now": True}

    def flaky(messages: list[ChatMessage]) -> str:
        if fail["now"]:
            raise RuntimeError("the tool broke")
        return "fine"

    manager = Manager([progress("a", "the first turn's step")])
    team = team_of(manager, FunctionAgent("a", flaky))
    session = Session()
    with pytest.raises(WorkflowError, match="the tool broke"):
        await team.run("first", session).collect()
    fail["now"] = False
    manager.calls.clear()
    manager.rounds = [progress("a", "again"), progress("a", "", done=True)]
    assert (await team.run("second", session).collect()).text == "the final answer"
    # A fresh ledger (no rewrite of the failed turn's), and none of that turn's work.
    assert manager.kinds() == ["task", "progress", "progress", "final"]
    prompts = "\n".join(p for kind in ("task", "progress", "final") for p in manager.prompts(kind))
    assert "the first turn's step" not in prompts and "[user] first" not in prompts


def test_add_agent_checks_its_participant() -> None:
    builder = MagenticBuilder(ScriptedProvider([text("x")]), id="team")
    with pytest.raises(TypeError, match=r"MagenticBuilder 'team'.*pass the agent itself"):
        builder.add_agent("a")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"MagenticBuilder 'team'.*takes an agent"):
        builder.add_agent(FunctionAgent)  # type: ignore[arg-type]
