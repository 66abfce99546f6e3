"""Pattern builders skip the networkx pass; these tests hold their shapes to it instead."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from raf.adapters.binding import AdapterBinding
from raf.builders import ConcurrentBuilder, SequentialBuilder
from raf.builders.roles import END, RoleWorkflowBuilder
from raf.engine import Workflow
from raf.engine.edges import FanIn
from raf.engine.validation import check_graph
from raf.function_agent import FunctionAgent


def _agents(count: int) -> list[FunctionAgent]:
    return [FunctionAgent(f"agent{i}", lambda ms: "x") for i in range(count)]


def _full_check(workflow: Workflow) -> None:
    fan_ins = {
        route.index: route
        for routes in workflow.routes.values()
        for route in routes
        if isinstance(route, FanIn)
    }
    check_graph(
        workflow.id,
        executors=workflow.executors,
        duplicates=(),
        edges=workflow.edges,
        fan_ins=list(fan_ins.values()),
        start=workflow.start_id,
        max_supersteps=workflow.max_supersteps,
    )


@given(st.integers(min_value=1, max_value=12))
def test_sequential_shapes_pass_the_full_check(count: int) -> None:
    builder = SequentialBuilder(id="s")
    for agent in _agents(count):
        builder.add_agent(agent)
    workflow = builder.build()
    _full_check(workflow)
    assert workflow.graph.number_of_edges() == count - 1


@given(st.integers(min_value=1, max_value=12))
def test_concurrent_shapes_pass_the_full_check(count: int) -> None:
    builder = ConcurrentBuilder(id="c")
    for agent in _agents(count):
        builder.add_agent(agent)
    workflow = builder.build()
    _full_check(workflow)
    assert workflow.graph.number_of_nodes() == count + 2


class _Note(BaseModel):
    text: str


def _adapter(prompt: str, schema: type[Any]) -> Any:
    async def role(thread: Any) -> _Note:
        return _Note(text=prompt)

    return role


@given(st.integers(min_value=1, max_value=8))
def test_role_workflow_shapes_pass_the_full_check(count: int) -> None:
    builder = RoleWorkflowBuilder("roles").with_moderator(lambda chain, topic: END)
    for index in range(count):
        builder.add_role(f"role{index}", "Note it.", _Note)
    workflow = builder.build(AdapterBinding(_adapter))
    _full_check(workflow)
    # start -> moderator, and moderator <-> each role
    assert workflow.graph.number_of_edges() == 1 + 2 * count


def test_building_patterns_does_not_load_networkx_until_the_graph_is_read() -> None:
    code = (
        "import sys\n"
        "from raf import FunctionAgent, SequentialBuilder, ConcurrentBuilder\n"
        "a, b = FunctionAgent('a', lambda m: 'A'), FunctionAgent('b', lambda m: 'B')\n"
        "inner = ConcurrentBuilder(id='c').add_agent(a).add_agent(b).build()\n"
        "outer = SequentialBuilder(id='s').add_agent(inner.as_agent()).build()\n"
        "print('networkx' in sys.modules)\n"
        "print(sorted(outer.graph.nodes), 'networkx' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["False", "['c'] True"]
