"""Random DAGs of fan-outs and fan-ins give what a plain recursive evaluation gives."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raf.engine import NodeContext, Workflow, WorkflowBuilder
from raf.session import Session
from raf.stores import MemoryCheckpointStore
from tests.engine.support import Calls

pytestmark = pytest.mark.anyio


@dataclass(frozen=True)
class Dag:
    parents: tuple[tuple[int, ...], ...]
    """Parents of each node (node 0 is the start and has none)."""
    weights: tuple[int, ...]
    """What each node adds to the sum of its inputs."""
    styles: tuple[str, ...]
    """How each node's single-parent children are wired: edges, fan_out or fan_in."""

    def children(self, node: int) -> list[int]:
        return [c for c, ps in enumerate(self.parents) if node in ps]

    def value(self, x: int) -> dict[int, int]:
        @cache
        def val(i: int) -> int:
            inputs = x if i == 0 else sum(val(p) for p in self.parents[i])
            return self.weights[i] + inputs

        return {i: val(i) for i in range(len(self.parents)) if not self.children(i)}

    def depth(self, i: int) -> int:
        return 0 if i == 0 else 1 + max(self.depth(p) for p in self.parents[i])


@st.composite
def dags(draw: st.DrawFn) -> Dag:
    size = draw(st.integers(1, 9))
    parents: list[tuple[int, ...]] = [()]
    for i in range(1, size):
        chosen = draw(st.sets(st.integers(0, i - 1), min_size=1, max_size=min(3, i)))
        parents.append(tuple(sorted(chosen)))
    weights = tuple(draw(st.lists(st.integers(-5, 20), min_size=size, max_size=size)))
    styles = tuple(
        draw(
            st.lists(st.sampled_from(["edges", "fan_out", "fan_in"]), min_size=size, max_size=size)
        )
    )
    return Dag(tuple(parents), weights, styles)


def build(dag: Dag, calls: Calls) -> Workflow:
    def node(i: int) -> Any:
        async def compute(message: Any, ctx: NodeContext) -> None:
            total = dag.weights[i] + (sum(message) if isinstance(message, list) else message)
            if dag.children(i):
                await ctx.send(total)
            else:
                await ctx.yield_output((i, total))

        return calls.node(f"n{i}", compute)

    builder = WorkflowBuilder("dag")
    for i in range(len(dag.parents)):
        builder.add_executor(node(i))
    for i in range(len(dag.parents)):
        single = [c for c in dag.children(i) if len(dag.parents[c]) == 1]
        if dag.styles[i] == "fan_out" and single:
            builder.add_fan_out(f"n{i}", [f"n{c}" for c in single])
        else:
            for c in single:
                if dag.styles[i] == "fan_in":
                    builder.add_fan_in([f"n{i}"], f"n{c}")
                else:
                    builder.add_edge(f"n{i}", f"n{c}")
    for c, ps in enumerate(dag.parents):
        if len(ps) > 1:
            builder.add_fan_in([f"n{p}" for p in ps], f"n{c}")
    return builder.set_start("n0").build()


@given(dag=dags(), x=st.integers(-50, 50))
async def test_outputs_match_a_recursive_evaluation(dag: Dag, x: int) -> None:
    calls = Calls()
    result = await build(dag, calls).run(x)
    assert result.status == "completed"
    assert dict(result.outputs) == dag.value(x)
    assert len(result.outputs) == len(dag.value(x))
    assert calls.count == {f"n{i}": 1 for i in range(len(dag.parents))}


@given(dag=dags(), x=st.integers(-50, 50), pick=st.integers(0, 20))
async def test_resuming_from_any_checkpoint_gives_the_same_outputs(
    dag: Dag, x: int, pick: int
) -> None:
    store = MemoryCheckpointStore()
    first = await build(dag, Calls()).run(x, Session(id="s", store=store))
    ids = await store.list("s")
    superstep = pick % len(ids)
    calls = Calls()
    resumed = await build(dag, calls).resume(ids[superstep], store)
    assert dict(resumed.outputs) == dict(first.outputs) == dag.value(x)
    ran_after = {f"n{i}": 1 for i in range(len(dag.parents)) if dag.depth(i) > superstep}
    assert calls.count == ran_after
