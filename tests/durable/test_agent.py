"""`DurableAgent` in one process, on a SQLite system database: the same stream and response
as the wrapped agent's local run, human requests answered durably, steps named by place."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from dbos import DBOS
from dbos._error import DBOSUnexpectedStepError

import raf.durable.agent
import raf.durable.dbos
from raf import (
    Budget,
    ChatMessage,
    ConcurrentBuilder,
    FunctionAgent,
    ReactAgent,
    RunOptions,
    SequentialBuilder,
    Session,
)
from raf.durable import DurableAgent, answer
from raf.durable.nodes import NodeResult
from raf.engine import FunctionExecutor, NodeContext, WorkflowBuilder
from raf.errors import BudgetExceeded, DurableRunError, RunTimeout
from raf.messages import ToolResultContent
from raf.testing import ScriptedProvider, text, tool_calls
from raf.tools import ToolDefinition, tool
from raf.updates import AgentUpdate, MessageCompleted
from tests.strategies import Con, Leaf, Seq, build

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # DBOS is asyncio-only; the trio refusal has its own test


def team() -> Any:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    calc = ReactAgent(
        "calc",
        ScriptedProvider(
            [tool_calls(("add", {"a": 2, "b": 3}), ("add", {"a": 1, "b": 1})), text("5 and 2")]
        ),
        "Use tools.",
        tools=[add],
    )
    writer = ReactAgent("writer", ScriptedProvider([text("The sums are 5 and 2.")]), "Write.")
    return SequentialBuilder(id="team").add_agent(calc).add_agent(writer).build().as_agent()


def shape(updates: list[AgentUpdate]) -> list[tuple[str, tuple[str, ...], str]]:
    return [(u.type, u.path, getattr(u, "text", "")) for u in updates]


async def test_a_durable_run_streams_what_the_local_run_streams(dbos_sqlite: str) -> None:
    local_agent = team()
    async with local_agent.run("sums?") as stream:
        local = [u async for u in stream]
    durable = DurableAgent(team())
    DBOS.launch()
    async with durable.run("sums?") as stream:
        remote = [u async for u in stream]
    assert shape(remote) == shape(local)
    tokens = [
        t for kind, path, t in shape(remote) if (kind, path) == ("text_delta", ("team", "writer"))
    ]
    assert "".join(tokens) == "The sums are 5 and 2." and len(tokens) > 1


async def recorded(run_id: str) -> dict[str, list[str]]:
    """The raf steps of the run and of its node steps, by workflow id."""
    workflows = await DBOS.list_workflows_async(workflow_id_prefix=run_id, load_input=False)
    found: dict[str, list[str]] = {}
    for workflow in workflows:
        steps = await DBOS.list_workflow_steps_async(workflow.workflow_id)
        found[workflow.workflow_id] = [s["function_name"] for s in steps]
    return found


async def test_each_node_is_a_node_step_and_each_call_a_step_named_by_place_and_index(
    dbos_sqlite: str,
) -> None:
    durable = DurableAgent(team())
    DBOS.launch()
    session = Session(id="s1")
    response = await durable.run("sums?", session)
    assert response.text == "The sums are 5 and 2."
    steps = await recorded("team:s1:0")
    assert [s for s in steps["team:s1:0"] if s.startswith("raf.")] == ["raf.node:team"] * 2
    assert steps["team:s1:0/team/calc@0#0"] == [
        "raf.model:team/calc#0",
        "raf.tool:team/calc#1:add.started",
        "raf.tool:team/calc#1:add",
        "raf.tool:team/calc#2:add.started",
        "raf.tool:team/calc#2:add",
        "raf.model:team/calc#3",
        "DBOS.send",  # the result, to the run
    ]
    assert steps["team:s1:0/team/writer@1#0"] == ["raf.model:team/writer#0", "DBOS.send"]


def approval() -> Any:
    async def review(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        verdict = await ctx.request_info({"draft": conversation[-1].text})
        await ctx.send([*conversation, ChatMessage.user(f"Reviewer: {verdict}")])

    writer = FunctionAgent("writer", lambda m: "draft")
    publish = FunctionAgent("publish", lambda m: f"published after {m[-1].text}")
    return (
        WorkflowBuilder("flow")
        .add_edge(writer, FunctionExecutor("review", review))
        .add_edge("review", publish)
        .set_start("writer")
        .build()
        .as_agent()
    )


async def test_a_human_request_waits_in_the_workflow_and_the_next_run_answers(
    dbos_sqlite: str,
) -> None:
    durable = DurableAgent(approval())
    DBOS.launch()
    session = Session(id="h")
    async with durable.run("go", session) as stream:
        asked = [u async for u in stream]
    requests = [u for u in asked if u.type == "request_info"]
    assert [r.payload for r in requests] == [{"draft": "draft"}]
    status = await DBOS.get_workflow_status_async("flow:h:0")
    assert status is not None and status.status == "PENDING"  # waiting in recv
    response = await durable.run("yes", session)
    assert response.text == "published after Reviewer: yes"
    status = await DBOS.get_workflow_status_async("flow:h:0")
    assert status is not None and status.status == "SUCCESS"
    assert (await durable.run("again", session)).status == "waiting"  # a new run: a new id
    status = await DBOS.get_workflow_status_async("flow:h:1")
    assert status is not None and status.status == "PENDING"


async def test_any_process_can_answer_a_waiting_run_and_follow_it(dbos_sqlite: str) -> None:
    durable = DurableAgent(approval())
    DBOS.launch()
    first = await durable.run("go", Session(id="x"))
    assert first.status == "waiting"
    await answer("flow:x:0", "fine")  # what `raf runs answer` does, from anywhere
    followed = durable.attach("flow:x:0", offset=0)
    async with followed as stream:
        items = [u async for u in stream]
    assert [u.type for u in items if u.type == "request_info"] == ["request_info"]
    assert first.pending[0].request_id in {u.request_id for u in items if u.type == "request_info"}
    final = durable.attach("flow:x:0", offset=len(items) + 1)
    response = await final
    assert response.text == "published after Reviewer: fine"


async def test_leaving_the_stream_early_cancels_the_workflow(dbos_sqlite: str) -> None:
    durable = DurableAgent(approval())
    DBOS.launch()
    async with durable.run("go", Session(id="c")) as stream:
        async for _ in stream:
            break
    status = await DBOS.get_workflow_status_async("flow:c:0")
    assert status is not None and status.status == "CANCELLED"


async def test_a_failed_run_raises_naming_the_run_and_the_path(dbos_sqlite: str) -> None:
    def broken(messages: list[ChatMessage]) -> str:
        raise ValueError("no way")

    durable = DurableAgent(FunctionAgent("bad", broken))
    DBOS.launch()
    with pytest.raises(DurableRunError, match=r"'bad:f:0' failed with .*no way"):
        await durable.run("go", Session(id="f"))


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_trio_gets_a_clear_error(anyio_backend: str) -> None:
    durable = DurableAgent(FunctionAgent("echo", lambda m: m[-1].text))
    with pytest.raises(DurableRunError, match="need asyncio, and this one runs on trio"):
        await durable.run("hi")


def test_only_raf_agents_can_be_durable() -> None:
    class Foreign:
        id = "x"

    with pytest.raises(TypeError, match="runs raf agents"):
        DurableAgent(Foreign())  # type: ignore[arg-type]


def nested() -> Any:
    """`outer`: a ReAct agent, then the workflow agent `inner` (two agents fanned out)."""
    first = ReactAgent("first", ScriptedProvider([text("one")]), "Go.")
    left = ReactAgent("left", ScriptedProvider([text("left says hi")]), "Go.")
    right = ReactAgent("right", ScriptedProvider([text("right says hi")]), "Go.")
    inner = ConcurrentBuilder(id="inner").add_agent(left).add_agent(right).build().as_agent()
    return SequentialBuilder(id="outer").add_agent(first).add_agent(inner).build().as_agent()


async def test_nested_workflows_are_child_workflows_named_from_the_parent_and_the_path(
    dbos_sqlite: str,
) -> None:
    local = await nested().run("hi")
    durable = DurableAgent(nested(), poll_seconds=0.01)
    DBOS.launch()
    run = durable.run("hi", Session(id="n"))
    async with run as stream:
        items = [u async for u in stream]
    assert run.response is not None and run.response.text == local.text
    said = [u.message.text for u in items if isinstance(u, MessageCompleted)]
    assert sorted(said) == ["left says hi", "one", "right says hi"]  # live: as they came
    async with durable.attach("outer:n:0") as stream:
        recorded_items = [u async for u in stream]
    said = [u.message.text for u in recorded_items if isinstance(u, MessageCompleted)]
    assert said == ["one", "left says hi", "right says hi"]  # recorded: in node order
    steps = await recorded("outer:n:0")
    inner = "outer:n:0/outer/inner@1#0"  # the node step running the nested workflow agent
    children = sorted(k.removeprefix(inner + "/") for k in steps if k.startswith(inner + "/"))
    assert children == [
        "outer/inner/aggregator@2#0",
        "outer/inner/dispatcher@0#0",
        "outer/inner/left@1#0",
        "outer/inner/right@1#0",
    ]
    assert steps[f"{inner}/outer/inner/left@1#0"][0] == "raf.model:outer/inner/left#0"
    statuses = await DBOS.list_workflows_async(workflow_id_prefix=inner + "/")
    assert {w.parent_workflow_id for w in statuses} == {inner}


async def test_a_node_that_fails_in_its_node_step_fails_the_run_naming_it(
    dbos_sqlite: str,
) -> None:
    async def explode(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        raise ValueError("no way")

    agent = (
        WorkflowBuilder("boom")
        .add_edge(FunctionAgent("first", lambda m: "ok"), FunctionExecutor("explode", explode))
        .set_start("first")
        .build()
        .as_agent()
    )
    durable = DurableAgent(agent)
    DBOS.launch()
    with pytest.raises(DurableRunError, match=r"'boom:e:0' failed with .*ValueError: no way"):
        await durable.run("go", Session(id="e"))
    step = await DBOS.retrieve_workflow_async("boom:e:0/boom/explode@1#0")
    failed = NodeResult.model_validate_json(await step.get_result()).failed
    assert failed is not None and (failed.error, failed.path) == ("ValueError", ("boom",))


async def test_a_workflow_agent_a_node_does_not_declare_runs_inside_that_node_step(
    dbos_sqlite: str,
) -> None:
    """No worker finds `team` by path (`delegate` declares no agent): its nodes run one after
    another inside the node step of `delegate`, their calls steps of it."""
    inner = team()

    async def delegate(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        await ctx.yield_output(await ctx.invoke_agent(inner, conversation))

    agent = (
        WorkflowBuilder("outer")
        .add_executor(FunctionExecutor("delegate", delegate))
        .set_start("delegate")
        .build()
        .as_agent()
    )
    durable = DurableAgent(agent)
    DBOS.launch()
    response = await durable.run("sums?", Session(id="d"))
    assert response.text == "The sums are 5 and 2."
    steps = await recorded("outer:d:0")
    assert sorted(steps) == ["outer:d:0", "outer:d:0/outer/delegate@0#0"]
    calls = [s for s in steps["outer:d:0/outer/delegate@0#0"] if s.startswith("raf.model")]
    assert calls == [
        "raf.model:outer/delegate@0#0/team/calc#0",
        "raf.model:outer/delegate@0#0/team/calc#3",
        "raf.model:outer/delegate@0#0/team/writer#0",
    ]


async def test_a_branch_that_asks_a_human_waits_and_its_node_step_runs_again_answered(
    dbos_sqlite: str,
) -> None:
    async def split(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        await ctx.send(conversation)

    async def ask(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        verdict = await ctx.request_info({"question": "north or south?"})
        await ctx.send([ChatMessage.assistant(f"go {verdict}")])

    async def merge(reports: list[Any], ctx: NodeContext) -> None:
        await ctx.yield_output(ChatMessage.assistant(" | ".join(r[-1].text for r in reports)))

    counter = FunctionAgent("count", lambda m: f"{len(m)} messages")
    agent = (
        WorkflowBuilder("trip")
        .add_executor(FunctionExecutor("split", split))
        .add_fan_out("split", [FunctionExecutor("ask", ask), counter])
        .add_fan_in(["ask", "count"], FunctionExecutor("merge", merge))
        .set_start("split")
        .build()
        .as_agent()
    )
    durable = DurableAgent(agent, poll_seconds=0.01)
    DBOS.launch()
    session = Session(id="t")
    asked = await durable.run("plan a trip", session)
    assert asked.status == "waiting" and asked.pending[0].payload == {"question": "north or south?"}
    response = await durable.run("north", session)
    assert response.text == "go north | 1 messages"
    steps = await recorded("trip:t:0")
    assert "trip:t:0/trip/ask@1#0" in steps and "trip:t:0/trip/ask@1#1" in steps  # asked, answered
    assert "trip:t:0/trip/count@1#1" not in steps  # the completed branch did not run again


async def test_a_tree_of_nested_sequential_and_concurrent_workflows_ends_as_the_local_run(
    dbos_sqlite: str,
) -> None:
    """Node steps three levels deep, branches in one superstep writing the session side by
    side: the response and the session equal the local run's."""
    spec = Seq((Leaf(), Con((Leaf(), Seq((Leaf(), Leaf())), Con((Leaf(), Leaf())))), Leaf()))
    local_session = Session(id="x")
    local = await build(spec).run("hi", local_session)
    durable = DurableAgent(build(spec), poll_seconds=0.01)
    DBOS.launch()
    session = Session(id="x")
    response = await durable.run("hi", session)
    assert [m.text for m in response.messages] == [m.text for m in local.messages]
    state = json.loads(session.to_json())["state"]
    assert {k: v for k, v in state.items() if "#durable" not in k} == json.loads(
        local_session.to_json()
    )["state"]
    deepest = "seq0:x:0/seq0/con2@1#0/seq0/con2/con7@1#0/seq0/con2/con7/leaf8@1#0"
    assert deepest in await recorded("seq0:x:0")


async def test_a_nested_client_tool_call_answered_with_an_error_reaches_its_model_as_one(
    dbos_sqlite: str,
) -> None:
    shown: list[ChatMessage] = []

    def guide_turn(messages: list[ChatMessage]) -> Any:
        if messages[-1].role == "tool":
            shown.append(messages[-1])
            return text(f"failed: {messages[-1].contents[0].result}")  # pyright: ignore[reportAttributeAccessIssue]
        return tool_calls(("show_map", {"city": "Lisbon"}))

    guide = ReactAgent("guide", ScriptedProvider(guide_turn), "Show the city.")
    planner = ReactAgent("planner", ScriptedProvider(lambda m: text("Plan.")), "Plan.")
    inner = SequentialBuilder(id="plan").add_agent(planner).add_agent(guide).build().as_agent()
    tour = SequentialBuilder(id="tour").add_agent(inner).build().as_agent()
    options = RunOptions(client_tools=[ToolDefinition(name="show_map")])
    durable = DurableAgent(tour, poll_seconds=0.01)
    DBOS.launch()
    session = Session(id="t")
    asked = await durable.run("a tour", session, options)
    [request] = asked.pending
    failed = ChatMessage.tool_result(request.request_id, "the map is offline", is_error=True)
    response = await durable.run(failed, session, options)
    assert response.text == "failed: the map is offline"
    [result] = shown[-1].contents
    assert isinstance(result, ToolResultContent) and result.is_error


async def test_a_failing_branch_cancels_its_siblings_and_the_run_raises_its_error_type(
    dbos_sqlite: str,
) -> None:
    """One branch of a fan-out fails with a raf error while the other is still running: the
    other's node step is cancelled, and the reader gets the error as its own type."""
    release = anyio.Event()
    late = ReactAgent("late", ScriptedProvider([text("too late")]), "Report.")

    async def plan(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        await ctx.send(conversation)

    async def fail(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        raise BudgetExceeded("out of tokens", kind="tokens", limit=10, used=12)

    async def wait(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        await release.wait()
        await ctx.invoke_agent(late, conversation)

    agent = (
        WorkflowBuilder("split")
        .add_executor(FunctionExecutor("plan", plan))
        .add_fan_out("plan", [FunctionExecutor("fail", fail), FunctionExecutor("wait", wait)])
        .set_start("plan")
        .build()
        .as_agent()
    )
    durable = DurableAgent(agent, poll_seconds=0.01)
    DBOS.launch()
    try:
        with pytest.raises(BudgetExceeded, match="out of tokens") as raised:
            await durable.run("go", Session(id="c"))
        error = raised.value
        assert (error.kind, error.limit, error.used, error.path) == ("tokens", 10, 12, ("split",))
        assert error.__notes__ == ["in durable run 'split:c:0'"]
        status = await DBOS.get_workflow_status_async("split:c:0/split/wait@1#0")
        assert status is not None and status.status == "CANCELLED"
    finally:
        release.set()


async def test_the_budget_counts_what_every_node_step_spent(dbos_sqlite: str) -> None:
    """Two agents in sequence, one model call each, on a budget of one call: the second node
    step counts on from what the first spent and fails, as the local run does."""

    def pair() -> Any:
        first = ReactAgent("first", ScriptedProvider([text("one")]), "Say one.")
        second = ReactAgent("second", ScriptedProvider([text("two")]), "Say two.")
        return SequentialBuilder(id="pair").add_agent(first).add_agent(second).build().as_agent()

    options = RunOptions(budget=Budget(rounds=1))
    with pytest.raises(BudgetExceeded) as local:
        await pair().run("go", options=options)
    durable = DurableAgent(pair())
    DBOS.launch()
    with pytest.raises(BudgetExceeded) as recorded:
        await durable.run("go", Session(id="b"), options)
    assert (recorded.value.kind, recorded.value.used, recorded.value.path) == (
        local.value.kind,
        local.value.used,
        local.value.path,
    )


@pytest.mark.parametrize("where", ["run", "report"])
async def test_a_node_step_that_fails_with_a_dbos_error_fails_the_run_naming_it(
    dbos_sqlite: str, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A DBOS error escaping a node step (here the replay check's, raised while the node runs
    or while the step reports) reaches the parent, which fails the run rather than wait."""

    async def replayed_otherwise(*args: object) -> NodeResult:
        raise DBOSUnexpectedStepError("w", 3, "raf.model:boom/second#0", "raf.tool:x#0")

    if where == "run":
        monkeypatch.setattr(raf.durable.agent, "run_node_step", replayed_otherwise)
    else:
        monkeypatch.setattr(raf.durable.dbos.DbosSteps, "done", replayed_otherwise)
    agent = (
        WorkflowBuilder("boom")
        .add_edge(FunctionAgent("first", lambda m: "ok"), FunctionAgent("second", lambda m: "no"))
        .set_start("first")
        .build()
        .as_agent()
    )
    durable = DurableAgent(agent)
    DBOS.launch()
    with anyio.fail_after(30), pytest.raises(DurableRunError) as raised:
        await durable.run("go", Session(id="d"))
    message = str(raised.value)
    assert "node step 'boom:d:0/boom/first@0#0' (node 'first', superstep 0)" in message
    assert "DBOSUnexpectedStepError" in message
    status = await DBOS.get_workflow_status_async("boom:d:0/boom/first@0#0")
    assert status is not None and status.status == "ERROR"


async def test_a_run_that_takes_longer_than_its_timeout_fails_with_run_timeout(
    dbos_sqlite: str,
) -> None:
    """A tool that blocks past `timeout`: the durable run fails with `RunTimeout`, as a local
    run does, and its deadline is a recorded step of the run."""
    never = anyio.Event()

    @tool
    async def stall() -> str:
        """Stall."""
        await never.wait()
        return "done"

    agent = ReactAgent(
        "slow", ScriptedProvider([tool_calls(("stall", {})), text("late")]), "Go.", tools=[stall]
    )
    durable = DurableAgent(agent)
    DBOS.launch()
    with anyio.fail_after(10), pytest.raises(RunTimeout, match=r"within 0\.5s") as raised:
        await durable.run("go", Session(id="t"), RunOptions(timeout=0.5))
    assert raised.value.path == ("slow",)
    assert raised.value.__notes__ == ["in durable run 'slow:t:0'"]
    steps = await DBOS.list_workflow_steps_async("slow:t:0")
    assert steps[0]["function_name"] == "raf.deadline#0"
    handle: Any = await DBOS.retrieve_workflow_async("slow:t:0")
    with anyio.fail_after(10), pytest.raises(RunTimeout):
        await handle.get_result()  # the workflow itself ends with the error


async def test_a_timed_out_run_cancels_its_running_node_steps(dbos_sqlite: str) -> None:
    """A fan-out whose branches block past `timeout`: the run fails with `RunTimeout` and
    the branches' node steps are cancelled, whichever worker runs them."""
    never = anyio.Event()
    started: set[str] = set()

    async def plan(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        await ctx.send(conversation)

    async def wait(conversation: list[ChatMessage], ctx: NodeContext) -> None:
        started.add(ctx.node_id)
        await never.wait()

    agent = (
        WorkflowBuilder("split")
        .add_executor(FunctionExecutor("plan", plan))
        .add_fan_out("plan", [FunctionExecutor("a", wait), FunctionExecutor("b", wait)])
        .set_start("plan")
        .build()
        .as_agent()
    )
    durable = DurableAgent(agent, poll_seconds=0.01)
    DBOS.launch()
    # Long enough for both branches to start on a busy machine: a node step not yet enqueued
    # when the deadline passes has nothing to cancel.
    with anyio.fail_after(20), pytest.raises(RunTimeout, match=r"within 2\.0s"):
        await durable.run("go", Session(id="t"), RunOptions(timeout=2))
    assert started == {"a", "b"}
    for node in ("a", "b"):
        status = await DBOS.get_workflow_status_async(f"split:t:0/split/{node}@1#0")
        assert status is not None and status.status == "CANCELLED"


async def test_a_run_past_its_time_budget_fails_with_budget_exceeded(dbos_sqlite: str) -> None:
    """`Budget(seconds=...)` bounds a durable turn as a local one: `BudgetExceeded` of kind
    `seconds` when it is the lower limit."""
    never = anyio.Event()

    async def blocked(messages: list[ChatMessage]) -> str:
        await never.wait()
        return "late"

    durable = DurableAgent(FunctionAgent("slow", blocked))
    DBOS.launch()
    options = RunOptions(timeout=30, budget=Budget(seconds=0.5))
    with anyio.fail_after(10), pytest.raises(BudgetExceeded) as raised:
        await durable.run("go", Session(id="s"), options)
    assert (raised.value.kind, raised.value.limit, raised.value.path) == ("seconds", 0.5, ("slow",))
