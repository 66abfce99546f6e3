"""`WorkflowBuilder`: declare nodes and edges, then `build()` a validated `Workflow`.

Example:
    >>> from raf.engine import FunctionExecutor
    >>> async def hello(name, ctx):
    ...     await ctx.send(f"hello {name}")
    >>> async def show(text, ctx):
    ...     await ctx.yield_output(text)
    >>> greet, out = FunctionExecutor("greet", hello), FunctionExecutor("out", show)
    >>> workflow = WorkflowBuilder("hi").add_edge(greet, out).set_start(greet).build()
    >>> list(workflow.executors)
    ['greet', 'out']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self, TypeAlias

from raf.agent import IAgent
from raf.engine.edges import Condition, Direct, Edge, FanIn, FanOut, Route, Switch, condition_label
from raf.engine.executors import AgentExecutor, Executor
from raf.engine.validation import check_graph, check_ids, require_start
from raf.engine.workflow import Workflow
from raf.errors import GraphValidationError

__all__ = ["NodeRef", "WorkflowBuilder"]

NodeRef: TypeAlias = str | Executor | IAgent
"""A node given by id, by executor, or by agent (wrapped in an `AgentExecutor` once)."""


class WorkflowBuilder:
    """A mutable description of a workflow graph; `build()` validates it.

    Edges accept node ids, executors or agents; executors and agents named in an edge are
    added when they are not yet in the graph. There is no implicit start: call `set_start`.

    Args:
        id: the workflow id (the default id of its agent).

    Example:
        >>> from raf.function_agent import FunctionAgent
        >>> a = FunctionAgent("a", lambda m: "A")
        >>> b = FunctionAgent("b", lambda m: "B")
        >>> WorkflowBuilder("pair").add_edge(a, b).set_start(a).build().start_id
        'a'
    """

    def __init__(self, id: str) -> None:
        self._id = id
        self._executors: dict[str, Executor] = {}
        self._duplicates: list[str] = []
        self._edges: list[Edge] = []
        self._routes: dict[str, list[Route]] = {}
        self._fan_ins: list[FanIn] = []
        self._start: str | None = None
        self._max_supersteps: int | None = None

    def add_executor(self, executor: Executor | IAgent) -> Self:
        """Add a node: an `Executor`, or any `IAgent` (run by an `AgentExecutor`)."""
        self._node(executor)
        return self

    def add_edge(
        self, source: NodeRef, target: NodeRef, condition: Condition | None = None
    ) -> Self:
        """Send `source`'s messages to `target` (only those where `condition(message)` holds)."""
        src, dst = self._node(source), self._node(target)
        if condition is None:
            self._edges.append(Edge(src, dst, "direct"))
        else:
            self._edges.append(Edge(src, dst, "conditional", condition_label(condition)))
        self._route(src, Direct(dst, condition))
        return self

    def add_fan_out(self, source: NodeRef, targets: Sequence[NodeRef]) -> Self:
        """Send every message of `source` to all `targets`."""
        src = self._node(source)
        dsts = self._nodes(targets, "add_fan_out")
        self._edges.extend(Edge(src, dst, "fan_out", "fan-out") for dst in dsts)
        self._route(src, FanOut(dsts))
        return self

    def add_fan_in(self, sources: Sequence[NodeRef], target: NodeRef) -> Self:
        """Run `target` once with the list of the `sources`' messages, after all of them sent.

        The list holds each source's messages in source order (each source's in send order);
        the buffer then starts over, so a loop can fan in again.
        """
        srcs = self._nodes(sources, "add_fan_in")
        dst = self._node(target)
        fan_in = FanIn(len(self._fan_ins), srcs, dst)
        self._fan_ins.append(fan_in)
        self._edges.extend(Edge(src, dst, "fan_in", "fan-in") for src in srcs)
        for src in srcs:
            self._route(src, fan_in)
        return self

    def add_switch(
        self,
        source: NodeRef,
        cases: Sequence[tuple[Condition, NodeRef]],
        default: NodeRef | None = None,
    ) -> Self:
        """Send each message of `source` to the first case whose condition holds, else `default`.

        Without a default, a message no case takes is dropped.
        """
        src = self._node(source)
        if not cases:
            raise GraphValidationError(
                f"add_switch from {src!r} needs at least one (condition, target) case", ids=(src,)
            )
        resolved = tuple((condition, self._node(target)) for condition, target in cases)
        fallback = self._node(default) if default is not None else None
        for index, (condition, dst) in enumerate(resolved):
            self._edges.append(
                Edge(src, dst, "case", f"case {index}: {condition_label(condition)}")
            )
        if fallback is not None:
            self._edges.append(Edge(src, fallback, "default", "default"))
        self._route(src, Switch(resolved, fallback))
        return self

    def set_start(self, node: NodeRef) -> Self:
        """Make `node` the start: it receives the run's input."""
        self._start = self._node(node)
        return self

    def set_max_supersteps(self, n: int) -> Self:
        """Bound the run to `n` supersteps (needed when the graph has a cycle)."""
        if n < 1:
            raise GraphValidationError(f"max supersteps must be at least 1, got {n}")
        self._max_supersteps = n
        return self

    def build(self, *, check_structure: bool = True) -> Workflow:
        """Validate the graph and return the immutable `Workflow`.

        Args:
            check_structure: False skips the networkx pass (start, reachability, fan-in,
                cycles) and checks only ids; for graphs generated in a shape that is right
                by construction, as the pattern builders do. networkx then loads only when
                `workflow.graph` is first read.

        Raises:
            GraphValidationError: naming the problem and the offending ids (see
                `raf.engine.validation`).
        """
        graph = None
        if check_structure:
            graph = check_graph(
                self._id,
                executors=self._executors,
                duplicates=self._duplicates,
                edges=self._edges,
                fan_ins=self._fan_ins,
                start=self._start,
                max_supersteps=self._max_supersteps,
            )
        else:
            check_ids(self._id, self._executors, self._duplicates)
        start = require_start(self._id, self._start)
        return Workflow(
            self._id,
            start=start,
            executors=self._executors,
            edges=tuple(self._edges),
            routes={node: tuple(routes) for node, routes in self._routes.items()},
            max_supersteps=self._max_supersteps,
            graph=graph,
        )

    def _node(self, ref: NodeRef) -> str:
        if isinstance(ref, str):
            return ref
        if isinstance(ref, Executor):
            return self._register(ref)
        if isinstance(ref, IAgent):  # pyright: ignore[reportUnnecessaryIsInstance]
            for executor in self._executors.values():
                if executor.as_agent() is ref:
                    return executor.id
            return self._register(AgentExecutor(ref))
        raise TypeError(
            f"a workflow node is a node id, an Executor or an IAgent, got {type(ref).__name__}"
        )

    def _nodes(self, refs: Sequence[NodeRef], call: str) -> tuple[str, ...]:
        ids = tuple(self._node(ref) for ref in refs)
        if not ids:
            raise GraphValidationError(f"{call} needs at least one node")
        if len(set(ids)) != len(ids):
            repeated = tuple(dict.fromkeys(i for i in ids if ids.count(i) > 1))
            raise GraphValidationError(
                f"{call} lists {list(repeated)} more than once", ids=repeated
            )
        return ids

    def _register(self, executor: Executor) -> str:
        node_id = executor.id
        known = self._executors.get(node_id)
        if known is None:
            self._executors[node_id] = executor
        elif known is not executor:
            self._duplicates.append(node_id)
        return node_id

    def _route(self, source: str, route: Route) -> None:
        self._routes.setdefault(source, []).append(route)
