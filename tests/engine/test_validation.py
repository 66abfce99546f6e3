from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from raf.engine import AgentExecutor, FunctionExecutor, NodeContext, WorkflowBuilder
from raf.errors import GraphValidationError
from raf.function_agent import FunctionAgent
from raf.messages import ChatMessage
from raf.session import Session
from raf.stores import MemoryCheckpointStore
from tests.engine.support import Calls

pytestmark = pytest.mark.anyio


def test_no_start_is_an_error_there_is_no_implicit_start() -> None:
    calls = Calls()
    builder = WorkflowBuilder("w").add_edge(calls.forward("a"), calls.output("b"))
    with pytest.raises(GraphValidationError, match=r"no start node; call set_start") as info:
        builder.build()
    assert isinstance(info.value, ValueError)


def test_unknown_ids_are_named() -> None:
    calls = Calls()
    builder = WorkflowBuilder("w").add_executor(calls.forward("a")).set_start("a")
    builder.add_edge("a", "ghost").add_edge("phantom", "a")
    with pytest.raises(GraphValidationError, match="unknown node ids") as info:
        builder.build()
    assert info.value.ids == ("ghost", "phantom")
    assert "'ghost'" in str(info.value)


def test_an_unknown_start_is_named() -> None:
    calls = Calls()
    builder = WorkflowBuilder("w").add_executor(calls.forward("a")).set_start("nowhere")
    with pytest.raises(GraphValidationError) as info:
        builder.build()
    assert info.value.ids == ("nowhere",)


def test_duplicate_ids_are_named() -> None:
    calls = Calls()
    first, again = calls.forward("a"), calls.forward("a")
    builder = WorkflowBuilder("w").add_executor(first).add_executor(again).set_start(first)
    with pytest.raises(GraphValidationError, match="several different executors") as info:
        builder.build()
    assert info.value.ids == ("a",)


def test_adding_the_same_executor_twice_is_fine() -> None:
    calls = Calls()
    a = calls.forward("a")
    workflow = WorkflowBuilder("w").add_executor(a).add_executor(a).set_start(a).build()
    assert list(workflow.executors) == ["a"]


def test_unusable_ids_are_named() -> None:
    calls = Calls()
    builder = WorkflowBuilder("w").add_executor(calls.forward("a/b")).set_start("a/b")
    with pytest.raises(GraphValidationError, match="unusable node ids") as info:
        builder.build()
    assert info.value.ids == ("a/b",)


def test_different_agents_with_one_id_are_refused() -> None:
    one = FunctionAgent("same", lambda m: "1")
    two = FunctionAgent("same", lambda m: "2")
    builder = (
        WorkflowBuilder("w")
        .add_executor(AgentExecutor(one, id="first"))
        .add_edge("first", AgentExecutor(two, id="second"))
        .set_start("first")
    )
    with pytest.raises(GraphValidationError, match="same id") as info:
        builder.build()
    assert info.value.ids == ("same",)


def test_unreachable_nodes_are_named() -> None:
    calls = Calls()
    builder = (
        WorkflowBuilder("w")
        .add_edge(calls.forward("a"), calls.output("b"))
        .add_edge(calls.forward("island"), calls.output("reef"))
        .set_start("a")
    )
    with pytest.raises(GraphValidationError, match="cannot be reached") as info:
        builder.build()
    assert info.value.ids == ("island", "reef")


def test_fan_in_sources_reachable_only_through_the_target_are_named() -> None:
    calls = Calls()
    builder = (
        WorkflowBuilder("w")
        .add_edge(calls.forward("start"), calls.forward("a"))
        .add_fan_in(["a", calls.forward("late")], calls.forward("join"))
        .add_edge("join", "late")
        .set_start("start")
        .set_max_supersteps(10)
    )
    with pytest.raises(GraphValidationError, match="fan-in into 'join' waits for") as info:
        builder.build()
    assert info.value.ids == ("late", "join")


def test_a_fan_in_back_into_the_start_node_is_a_valid_loop() -> None:
    calls = Calls()
    builder = (
        WorkflowBuilder("w")
        .add_fan_out(calls.forward("start"), [calls.forward("a"), calls.forward("b")])
        .add_fan_in(["a", "b"], "start")
        .set_start("start")
        .set_max_supersteps(7)
    )
    assert builder.build().max_supersteps == 7


def test_a_cycle_needs_a_superstep_bound() -> None:
    calls = Calls()
    builder = (
        WorkflowBuilder("w")
        .add_edge(calls.forward("start"), calls.forward("write"))
        .add_edge("write", calls.forward("review"))
        .add_edge("review", "write")
        .set_start("start")
    )
    with pytest.raises(GraphValidationError, match="cycle through") as info:
        builder.build()
    assert set(info.value.ids) == {"write", "review"}
    assert "set_max_supersteps" in str(info.value)
    assert builder.set_max_supersteps(20).build().max_supersteps == 20


def test_a_self_loop_is_a_cycle() -> None:
    calls = Calls()
    builder = WorkflowBuilder("w").add_edge(calls.forward("a"), "a").set_start("a")
    with pytest.raises(GraphValidationError) as info:
        builder.build()
    assert info.value.ids == ("a",)


def test_graph_is_a_networkx_copy_with_edge_kinds() -> None:
    calls = Calls()
    workflow = (
        WorkflowBuilder("w")
        .add_edge(calls.forward("a"), calls.forward("b"), condition=lambda m: True)
        .add_fan_out("b", [calls.forward("c"), calls.forward("d")])
        .add_fan_in(["c", "d"], calls.output("e"))
        .set_start("a")
        .build()
    )
    graph = workflow.graph
    assert graph.edges["a", "b"]["kind"] == "conditional"
    assert graph.edges["b", "c"]["kind"] == "fan_out"
    assert graph.edges["d", "e"]["kind"] == "fan_in"
    assert graph.nodes["a"]["start"] is True
    graph.remove_node("a")
    assert "a" in workflow.graph


def test_importing_the_engine_does_not_import_networkx() -> None:
    code = "import sys, raf.engine; print('networkx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_build_without_the_structure_pass_still_checks_ids_and_start() -> None:
    calls = Calls()
    bad = WorkflowBuilder("w").add_executor(calls.forward("a/b")).set_start("a/b")
    with pytest.raises(GraphValidationError, match="unusable node ids"):
        bad.build(check_structure=False)
    no_start = WorkflowBuilder("w").add_executor(calls.forward("a"))
    with pytest.raises(GraphValidationError, match="no start node"):
        no_start.build(check_structure=False)


def test_build_without_the_structure_pass_leaves_the_shape_to_the_caller() -> None:
    calls = Calls()
    builder = WorkflowBuilder("w").add_executor(calls.output("a")).add_executor(calls.output("b"))
    builder.set_start("a")
    with pytest.raises(GraphValidationError, match="cannot be reached"):
        builder.build()
    workflow = builder.build(check_structure=False)
    assert sorted(workflow.graph.nodes) == ["a", "b"]


def reviewing(workflow_id: str) -> WorkflowBuilder:
    """A one-node workflow asking a human to review its input."""

    async def review(messages: list[ChatMessage], ctx: NodeContext) -> None:
        answer = await ctx.request_info({"q": messages[-1].text})
        await ctx.yield_output(ChatMessage.assistant(f"{messages[-1].text}:{answer}"))

    return (
        WorkflowBuilder(workflow_id)
        .add_executor(FunctionExecutor("review", review))
        .set_start("review")
    )


def split_to(*nodes: AgentExecutor) -> WorkflowBuilder:
    async def split(message: Any, ctx: NodeContext) -> None:
        await ctx.send(message)

    return (
        WorkflowBuilder("outer")
        .add_fan_out(FunctionExecutor("split", split), nodes)
        .set_start("split")
    )


@pytest.mark.parametrize("check_structure", [True, False])
def test_one_agent_object_under_several_node_ids_is_refused(check_structure: bool) -> None:
    inner = reviewing("inner").build().as_agent()
    builder = split_to(AgentExecutor(inner, id="x1"), AgentExecutor(inner, id="x2"))
    with pytest.raises(GraphValidationError, match="one agent object") as info:
        builder.build(check_structure=check_structure)
    assert info.value.ids == ("x1", "x2")
    message = str(info.value)
    assert "['x1', 'x2']" in message and "'inner'" in message
    assert "separate agent instance per node" in message


def test_the_same_agent_given_twice_by_object_stays_one_node() -> None:
    agent = FunctionAgent("echo", lambda m: "E")
    workflow = WorkflowBuilder("w").add_executor(agent).add_executor(agent).set_start(agent).build()
    assert list(workflow.executors) == ["echo"]


async def test_separate_agent_instances_keep_their_requests_apart() -> None:
    first = reviewing("inner").build().as_agent(id="x1")
    second = reviewing("inner").build().as_agent(id="x2")
    outer = split_to(AgentExecutor(first), AgentExecutor(second)).build()
    store = MemoryCheckpointStore()
    waiting = await outer.run([ChatMessage.user("hi")], Session(id="s", store=store))
    ids = [request.request_id for request in waiting.requests]
    assert ids == ["x1/review@0#0", "x2/review@0#0"]
    done = await outer.resume(
        waiting.checkpoint_id or "", store, responses={ids[0]: "one", ids[1]: "two"}
    )
    assert done.status == "completed"
    assert sorted(response.text for response in done.outputs) == ["hi:one", "hi:two"]


@pytest.mark.parametrize("workflow_id", ["x/y", "a#b", "", " lead"])
@pytest.mark.parametrize("check_structure", [True, False])
def test_an_unusable_workflow_id_fails_at_build(workflow_id: str, check_structure: bool) -> None:
    builder = WorkflowBuilder(workflow_id).add_executor(Calls().output("a")).set_start("a")
    with pytest.raises(GraphValidationError, match=r"workflow id .* is not usable") as info:
        builder.build(check_structure=check_structure)
    assert info.value.ids == (workflow_id,)
    assert repr(workflow_id) in str(info.value)


def test_a_workflow_builder_given_a_node_for_its_id_says_what_to_pass() -> None:
    async def ask(value: object, ctx: NodeContext) -> None:
        del value, ctx

    node = FunctionExecutor("ask", ask)
    with pytest.raises(TypeError, match=r"WorkflowBuilder takes the workflow's id, a string"):
        WorkflowBuilder(node)  # type: ignore[arg-type]
