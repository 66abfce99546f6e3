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

from raf._describe import describe
from raf.agent import IAgent
from raf.engine.edges import (
    Condition,
    Direct,
    Edge,
    FanIn,
    FanOut,
    Route,
    Switch,
    condition_label,
)
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
    A source routes to each target once: a call adding a second route to a target raises
    `GraphValidationError` (so no message is delivered twice).

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
        if not isinstance(id, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f"WorkflowBuilder takes the workflow's id, a string, not {id!r}: write "
                "WorkflowBuilder('review').add_executor(node).set_start(node)"
            )
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
        """Send `source`'s messages to `target` (only those where `condition(message)` holds).

        Raises:
            TypeError: `condition` is not callable.
            GraphValidationError: `source` already routes to `target`.
        """
        if condition is not None and not callable(condition):
            raise TypeError(
                f"add_edge({self._id_of(source)!r}, {self._id_of(target)!r}): condition must "
                f"be a function condition(message) -> bool, got {_show(condition)}"
            )
        src, dst = self._node(source), self._node(target)
        self._route((src,), Direct(dst, condition))
        if condition is None:
            self._edges.append(Edge(src, dst, "direct"))
        else:
            self._edges.append(Edge(src, dst, "conditional", condition_label(condition)))
        return self

    def add_fan_out(self, source: NodeRef, targets: Sequence[NodeRef]) -> Self:
        """Send every message of `source` to all `targets`."""
        call = f"add_fan_out({self._id_of(source)!r}, targets)"
        src = self._node(source)
        dsts = self._nodes(targets, call, "targets")
        self._route((src,), FanOut(dsts))
        self._edges.extend(Edge(src, dst, "fan_out", "fan-out") for dst in dsts)
        return self

    def add_fan_in(self, sources: Sequence[NodeRef], target: NodeRef) -> Self:
        """Run `target` once with the list of the `sources`' messages, after all of them sent.

        The list holds each source's messages in source order (each source's in send order);
        the buffer then starts over, so a loop can fan in again.
        """
        call = f"add_fan_in(sources, {self._id_of(target)!r})"
        srcs = self._nodes(sources, call, "sources")
        dst = self._node(target)
        fan_in = FanIn(len(self._fan_ins), srcs, dst)
        self._route(srcs, fan_in)
        self._fan_ins.append(fan_in)
        self._edges.extend(Edge(src, dst, "fan_in", "fan-in") for src in srcs)
        return self

    def add_switch(
        self,
        source: NodeRef,
        cases: Sequence[tuple[Condition, NodeRef]],
        default: NodeRef | None = None,
    ) -> Self:
        """Send each message of `source` to the first case whose condition holds, else `default`.

        Without a default, a message no case takes is dropped. Several cases (and the default)
        may share a target: each message still goes to one of them.

        Raises:
            TypeError: a case is not a `(condition, target)` pair with a callable condition.
            GraphValidationError: no cases, or `source` already routes to one of the targets.
        """
        name = self._id_of(source)
        _check_cases(name, cases)
        src = self._node(source)
        resolved = tuple((condition, self._node(target)) for condition, target in cases)
        fallback = self._node(default) if default is not None else None
        self._route((src,), Switch(resolved, fallback))
        for index, (condition, dst) in enumerate(resolved):
            self._edges.append(
                Edge(src, dst, "case", f"case {index}: {condition_label(condition)}")
            )
        if fallback is not None:
            self._edges.append(Edge(src, fallback, "default", "default"))
        return self

    def set_start(self, node: NodeRef) -> Self:
        """Make `node` the start: it receives the run's input."""
        self._start = self._node(node)
        return self

    def set_max_supersteps(self, n: int) -> Self:
        """Bound the run to `n` supersteps (needed when the graph has a cycle).

        Raises:
            TypeError: `n` is not an int.
            GraphValidationError: `n` is below 1.
        """
        if isinstance(n, bool) or not isinstance(n, int):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f"workflow {self._id!r}: set_max_supersteps(n) takes an int, got {_show(n)}"
            )
        if n < 1:
            raise GraphValidationError(
                f"workflow {self._id!r}: max supersteps must be at least 1, got {n}"
            )
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

    def _id_of(self, ref: NodeRef) -> str:
        """The node id `ref` names, without adding it to the graph."""
        if isinstance(ref, str):
            return ref
        if isinstance(ref, Executor):
            return ref.id
        what = f"workflow {self._id!r}: a node is a node id, an Executor or an IAgent"
        mistake = agent_mistake(ref)
        if mistake is not None:
            raise TypeError(f"{what}, {mistake}")
        if isinstance(ref, IAgent):  # pyright: ignore[reportUnnecessaryIsInstance]
            return self._node_of(ref) or ref.id
        raise TypeError(f"{what}, got {_show(ref)}")

    def _node(self, ref: NodeRef) -> str:
        """The node id `ref` names, adding its executor (or agent) to the graph."""
        node_id = self._id_of(ref)  # a TypeError for anything but an id, Executor or IAgent
        if isinstance(ref, Executor):
            self._register(ref)
        elif not isinstance(ref, str) and self._node_of(ref) is None:
            self._register(AgentExecutor(ref))
        return node_id

    def _node_of(self, agent: IAgent) -> str | None:
        for executor in self._executors.values():
            if executor.as_agent() is agent:
                return executor.id
        return None

    def _nodes(self, refs: Sequence[NodeRef], call: str, what: str) -> tuple[str, ...]:
        if isinstance(refs, str | Executor | IAgent) or not isinstance(refs, Sequence):  # pyright: ignore[reportUnnecessaryIsInstance]
            single = isinstance(refs, str | Executor | IAgent)  # pyright: ignore[reportUnnecessaryIsInstance]
            hint = "; for one node, pass a list of it: [node]" if single else ""
            raise TypeError(f"{call}: {what} must be a list of nodes, got {_show(refs)}{hint}")
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

    def _route(self, sources: tuple[str, ...], route: Route) -> None:
        """Add `route` to each of `sources`, refusing a second route to one of its targets."""
        for source in sources:
            for target in dict.fromkeys(route.targets()):
                for earlier in self._routes.get(source, ()):
                    if target in earlier.targets():
                        raise _duplicate_route(self._id, source, target, earlier, route)
        for source in sources:
            self._routes.setdefault(source, []).append(route)


def agent_mistake(value: object) -> str | None:
    """What to pass instead, when `value` is a class or a `Workflow` given for an agent.

    Example:
        >>> from raf.function_agent import FunctionAgent
        >>> agent_mistake(FunctionAgent)
        "got the class FunctionAgent; pass an instance, e.g. FunctionAgent('my_id', ...)"
        >>> agent_mistake(FunctionAgent("a", lambda m: "A")) is None
        True
    """
    if isinstance(value, Workflow):
        return f"got the Workflow {value.id!r}; pass workflow.as_agent()"
    if isinstance(value, type):
        return (
            f"got the class {value.__name__}; pass an instance, e.g. {value.__name__}('my_id', ...)"
        )
    return None


def _check_cases(source: str, cases: Sequence[tuple[Condition, NodeRef]]) -> None:
    if isinstance(cases, str) or not isinstance(cases, Sequence):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(
            f"add_switch({source!r}): cases must be a list of (condition, target) pairs, "
            f"got {_show(cases)}"
        )
    if not cases:
        raise GraphValidationError(
            f"add_switch from {source!r} needs at least one (condition, target) case",
            ids=(source,),
        )
    for index, case in enumerate(cases):
        if not isinstance(case, tuple | list) or len(case) != 2:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f"add_switch({source!r}): case {index} must be a (condition, target) pair, "
                f"got {_show(case)}"
            )
        if not callable(case[0]):
            raise TypeError(
                f"add_switch({source!r}): the condition of case {index} must be a function "
                f"condition(message) -> bool, got {_show(case[0])}"
            )


def _duplicate_route(
    workflow_id: str, source: str, target: str, earlier: Route, route: Route
) -> GraphValidationError:
    conditional = [r for r in (earlier, route) if isinstance(r, Direct) and r.condition]
    if len(conditional) == 2:
        return GraphValidationError(
            f"workflow {workflow_id!r} already has a conditional edge {source!r} -> "
            f"{target!r} ({earlier.declared_by()}); a second one ({route.declared_by()}) "
            "would deliver a message twice when both conditions hold. Use one add_edge "
            "whose condition combines them (lambda m: first(m) or second(m)), or add_switch "
            "to take only the first that holds",
            ids=(source, target),
        )
    return GraphValidationError(
        f"workflow {workflow_id!r} already routes {source!r} -> {target!r} "
        f"({earlier.declared_by()}); a second route ({route.declared_by()}) would deliver "
        "messages to it twice. Keep one route per source and target (one add_switch may "
        "list a target under several cases)",
        ids=(source, target),
    )


def _show(value: object) -> str:
    if isinstance(value, Executor | IAgent) and not isinstance(value, type):
        return f"the {type(value).__name__} {value.id!r}"
    return describe(value)
