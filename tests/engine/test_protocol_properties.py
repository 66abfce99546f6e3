"""Property: random trees that ask humans end as an uninterrupted run would, however answered.

Trees (depth up to 4) of sequential, concurrent and graph workflows, with requests at random
leaves, some behind an agent that is not raf's; the requests are answered in random order, by
text or typed results, and at a random turn through `Workflow.resume` on a fresh `Workflow`
object from the last checkpoint.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raf.agent import IAgent
from raf.builders import ConcurrentBuilder, SequentialBuilder
from raf.engine import FunctionExecutor, NodeContext, Workflow, WorkflowBuilder
from raf.function_agent import FunctionAgent
from raf.messages import ChatMessage
from raf.session import Session
from raf.stores import MemoryCheckpointStore
from raf.updates import AgentResponse, AgentUpdate, ExecutorInvoked, ExecutorInvoking
from tests.helpers import Foreign

pytestmark = pytest.mark.anyio

Spec = tuple[Any, ...]
"""("leaf",) | ("gate",) | ("seq", [Spec]) | ("conc", [Spec]) | ("foreign", Spec)"""

leaves = st.sampled_from([("leaf",), ("gate",)])
trees = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.tuples(st.just("seq"), st.lists(children, min_size=1, max_size=3)),
        st.tuples(st.just("conc"), st.lists(children, min_size=1, max_size=3)),
        st.tuples(st.just("foreign"), children),
    ),
    max_leaves=6,
)


def depth(spec: Spec) -> int:
    if spec[0] in ("leaf", "gate"):
        return 1
    if spec[0] == "foreign":
        return depth(spec[1])
    return 1 + max(depth(child) for child in spec[1])


@dataclass
class Built:
    """A tree built from a spec, numbering its agents in a fixed order."""

    auto: bool
    calls: Counter[str] = field(default_factory=lambda: Counter[str]())
    next_id: int = 0

    def fresh_id(self, kind: str) -> str:
        self.next_id += 1
        return f"{kind}{self.next_id}"

    def agent(self, spec: Spec) -> IAgent:
        kind = spec[0]
        if kind == "leaf":
            name = self.fresh_id("leaf")
            calls = self.calls

            def answer(messages: list[ChatMessage], name: str = name) -> str:
                calls[name] += 1
                return f"L:{name}"

            return FunctionAgent(name, answer)
        if kind == "gate":
            return self.gate(self.fresh_id("gate")).as_agent()
        if kind == "foreign":
            return Foreign(self.agent(spec[1]))
        return self.workflow(spec).as_agent()

    def gate(self, name: str) -> Workflow:
        auto = self.auto

        async def ask(message: Any, ctx: NodeContext) -> None:
            answer = f"ans-{name}" if auto else await ctx.request_info({"gate": name})
            await ctx.yield_output(ChatMessage.assistant(f"G:{name}:{answer}", author=name))

        return (
            WorkflowBuilder(name)
            .add_executor(FunctionExecutor("ask", ask))
            .set_start("ask")
            .build()
        )

    def workflow(self, spec: Spec) -> Workflow:
        kind = spec[0]
        if kind not in ("seq", "conc"):
            return self.workflow(("seq", [spec]))
        children = spec[1]
        name = self.fresh_id(kind)
        agents = [self.agent(child) for child in children]
        if kind == "seq":
            builder = SequentialBuilder(id=name)
            for agent in agents:
                builder.add_agent(agent)
            return builder.build()
        concurrent = ConcurrentBuilder(id=name)
        for agent in agents:
            concurrent.add_agent(agent)
        return concurrent.build()


async def run_turn(agent: IAgent, messages: Any, session: Session) -> AgentResponse:
    run = agent.run(messages, session)
    async with run as stream:
        updates: list[AgentUpdate] = [u async for u in stream]
    opened = Counter((u.path, u.executor_id) for u in updates if isinstance(u, ExecutorInvoking))
    closed = Counter((u.path, u.executor_id) for u in updates if isinstance(u, ExecutorInvoked))
    assert opened == closed, "every ExecutorInvoking is closed"
    streamed = [u.request_id for u in updates if u.type == "request_info"]
    assert len(streamed) == len(set(streamed)), "a request is streamed once per turn"
    assert run.response is not None
    return run.response


def texts(history: Sequence[ChatMessage], role: str) -> list[str]:
    return sorted(m.text for m in history if m.role == role)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(spec=trees.filter(lambda s: depth(s) <= 4), data=st.data())
def test_an_interrupted_tree_ends_as_the_uninterrupted_run(
    spec: Spec, data: st.DataObject, anyio_backend: str
) -> None:
    anyio.run(check, spec, data, backend=anyio_backend)


async def check(spec: Spec, data: st.DataObject) -> None:
    reference = Built(auto=True)
    reference_agent = reference.workflow(spec).as_agent()
    reference_session = Session()
    with anyio.fail_after(10):
        await reference_agent.run("go", reference_session).collect()
    expected = reference_session.get(f"{reference_agent.id}#history")

    built = Built(auto=False)
    workflow = built.workflow(spec)
    agent: IAgent = workflow.as_agent()
    store = MemoryCheckpointStore()
    session = Session(id="s", store=store)
    answers_given: list[str] = []
    seen_ids: set[str] = set()
    resumed = False
    with anyio.fail_after(20):
        response = await run_turn(agent, "go", session)
        pending: dict[str, str] = {r.request_id: r.payload["gate"] for r in response.pending}
        for _ in range(30):
            if not pending:
                break
            for request_id in pending:
                assert request_id.startswith(f"{agent.id}/") and request_id.endswith("/ask@0#0")
            seen_ids.update(pending)
            ids = list(pending)
            how = data.draw(st.sampled_from(["text", "typed", "resume"]), label="how")
            if how == "resume" and not resumed:
                resumed = True
                chosen = data.draw(st.lists(st.sampled_from(ids), min_size=1, unique=True))
                fresh = Built(auto=False)
                fresh.calls = built.calls  # one count across both objects of the tree
                again = fresh.workflow(spec)
                latest = await store.latest("s")
                assert latest is not None
                responses = {rid: f"ans-{pending[rid]}" for rid in chosen}
                answers_given += responses.values()
                result = await again.resume(latest, store, responses, session=session)
                assert result.status in ("waiting", "completed")
                pending = {r.request_id: r.payload["gate"] for r in result.requests}
                agent = again.as_agent()
                continue
            if how == "text" or how == "resume":
                first = ids[0]  # the oldest, in stream order
                message: Any = f"ans-{pending[first]}"
                answers_given.append(message)
            else:
                chosen = data.draw(st.permutations(ids).map(lambda p: p[: max(1, len(p) // 2)]))
                message = [
                    ChatMessage.tool_result(rid, json.dumps(f"ans-{pending[rid]}"))
                    for rid in chosen
                ]
                answers_given += [f"ans-{pending[rid]}" for rid in chosen]
            response = await run_turn(agent, message, session)
            pending = {r.request_id: r.payload["gate"] for r in response.pending}
        assert not pending, "every request was answered"

    history = session.get(f"{agent.id}#history")
    # The agents' messages are the uninterrupted run's; the answers are the user's turns.
    assert texts(history, "assistant") == texts(expected, "assistant")
    assert texts(history, "user") == sorted(["go", *answers_given])
    # No completed step ran twice.
    assert built.calls == reference.calls
    assert not [k for k in session.keys("") if k.endswith(("#pending", "#running", "#foreign"))]
    del seen_ids
