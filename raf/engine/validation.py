"""Build-time checks of a workflow graph, with networkx (imported here, lazily).

`check_graph` raises `GraphValidationError` naming the offending ids: a bad workflow id, bad
or duplicate node ids, one agent object under several nodes, no start node, unknown ids,
unreachable nodes, fan-in sources that cannot all be reached without the fan-in's target,
cycles without a superstep bound. It returns the `DiGraph`. (Duplicate routes and malformed
arguments are refused earlier, by the builder call that adds them.)

`check_ids` is the part without networkx: the pattern builders compile graphs whose shape is
right by construction, so they check only ids and never load networkx (about 220 ms and
14 MiB); their `workflow.graph` is drawn with `to_digraph` when first asked for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from raf.agent import IAgent, check_agent_id
from raf.engine.edges import Edge, FanIn
from raf.engine.executors import Executor
from raf.errors import GraphValidationError

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["check_graph", "check_ids", "require_start", "to_digraph"]

_ID_RULES = "ids are non-empty, without '/' or '#', and do not start with whitespace"


def check_graph(
    workflow_id: str,
    *,
    executors: Mapping[str, Executor],
    duplicates: Sequence[str],
    edges: Sequence[Edge],
    fan_ins: Sequence[FanIn],
    start: str | None,
    max_supersteps: int | None,
) -> nx.DiGraph[str]:
    """Validate the graph and return it as a networkx `DiGraph`.

    Raises:
        GraphValidationError: naming the problem and the offending ids.
    """
    nx = _networkx()

    check_ids(workflow_id, executors, duplicates)
    start = require_start(workflow_id, start)
    referenced = [start, *(node for e in edges for node in (e.source, e.target))]
    unknown = _unique(node for node in referenced if node not in executors)
    if unknown:
        raise GraphValidationError(
            f"workflow {workflow_id!r} refers to unknown node ids {unknown}; "
            "add them with add_executor() first",
            ids=unknown,
        )
    graph: Any = to_digraph(workflow_id, executors=executors, edges=edges, start=start)
    reached: set[str] = {start, *nx.descendants(graph, start)}
    unreachable = tuple(node for node in executors if node not in reached)
    if unreachable:
        raise GraphValidationError(
            f"workflow {workflow_id!r} has nodes that cannot be reached from start node "
            f"{start!r}: {list(unreachable)}; connect them or remove them",
            ids=unreachable,
        )
    for fan_in in fan_ins:
        _check_fan_in(workflow_id, graph, start, fan_in)
    if max_supersteps is None and not nx.is_directed_acyclic_graph(graph):
        cycle = _unique(source for source, _ in nx.find_cycle(graph, start))
        raise GraphValidationError(
            f"workflow {workflow_id!r} has a cycle through {list(cycle)} but no superstep "
            "bound; call set_max_supersteps(n) so the loop cannot run forever",
            ids=cycle,
        )
    return graph


def require_start(workflow_id: str, start: str | None) -> str:
    """`start`, or `GraphValidationError` when the workflow has none."""
    if start is None:
        raise GraphValidationError(
            f"workflow {workflow_id!r} has no start node; call set_start(id) "
            "(there is no implicit start)",
        )
    return start


def to_digraph(
    workflow_id: str, *, executors: Mapping[str, Executor], edges: Sequence[Edge], start: str
) -> nx.DiGraph[str]:
    """The graph as a networkx `DiGraph` (node attributes `kind`, `start`; edge `kind`, `label`)."""
    nx = _networkx()
    graph: Any = nx.DiGraph(name=workflow_id)
    for node_id, executor in executors.items():
        graph.add_node(node_id, kind=executor.kind, start=node_id == start)
    for edge in edges:
        if not graph.has_edge(edge.source, edge.target):
            graph.add_edge(edge.source, edge.target, kind=edge.kind, label=edge.label)
    return graph


def check_ids(
    workflow_id: str, executors: Mapping[str, Executor], duplicates: Sequence[str] = ()
) -> None:
    """Raise `GraphValidationError` for an unusable workflow id, unusable or duplicate node ids,
    agents with clashing ids, or one agent object under several node ids."""
    try:
        check_agent_id(workflow_id)
    except ValueError:
        raise GraphValidationError(
            f"workflow id {workflow_id!r} is not usable: {_ID_RULES} (it is the id of the "
            "workflow's agent and names its paths)",
            ids=(str(workflow_id),),
        ) from None
    bad: list[str] = []
    for node_id in executors:
        try:
            check_agent_id(node_id)
        except ValueError:
            bad.append(node_id)
    if bad:
        raise GraphValidationError(
            f"workflow {workflow_id!r} has unusable node ids {bad}: {_ID_RULES}",
            ids=tuple(bad),
        )
    if duplicates:
        ids = _unique(duplicates)
        raise GraphValidationError(
            f"workflow {workflow_id!r} has several different executors with ids {list(ids)}; "
            "give each node a unique id",
            ids=ids,
        )
    _check_agents(workflow_id, executors)


def _check_agents(workflow_id: str, executors: Mapping[str, Executor]) -> None:
    # An agent runs at its own path (parent path + agent id), whatever its node id: one agent
    # object under two nodes would share session keys and human request ids.
    nodes_of: dict[int, list[str]] = {}
    agents: dict[int, IAgent] = {}
    owners: dict[str, IAgent] = {}
    clashing: list[str] = []
    for node_id, executor in executors.items():
        agent = executor.as_agent()
        if agent is None:
            continue
        agents[id(agent)] = agent
        nodes_of.setdefault(id(agent), []).append(node_id)
        if owners.setdefault(agent.id, agent) is not agent:
            clashing.append(agent.id)
    for key, nodes in nodes_of.items():
        if len(nodes) > 1:
            agent_id = agents[key].id
            raise GraphValidationError(
                f"workflow {workflow_id!r} runs one agent object ({agent_id!r}) in nodes "
                f"{nodes}; it would run at the same path {agent_id!r} in each, sharing its "
                "session state and human request ids. Use a separate agent instance per node, "
                "each with its own id (for a workflow: build().as_agent(id=...))",
                ids=tuple(nodes),
            )
    if clashing:
        ids = _unique(clashing)
        raise GraphValidationError(
            f"workflow {workflow_id!r} runs different agents with the same id {list(ids)}; "
            "agent ids name paths in the stream, so they must be unique among siblings",
            ids=ids,
        )


def _check_fan_in(workflow_id: str, graph: Any, start: str, fan_in: FanIn) -> None:
    nx = _networkx()

    target = fan_in.target
    # Paths may start at the target when it is the start node, but never pass through it.
    roots = [start] if start != target else [n for n in graph.successors(start) if n != target]
    without_target: Any = graph.subgraph(n for n in graph.nodes if n != target)
    reached: set[str] = set(roots)
    for root in roots:
        reached.update(nx.descendants(without_target, root))
    blocked = tuple(src for src in fan_in.sources if src not in reached)
    if blocked:
        raise GraphValidationError(
            f"workflow {workflow_id!r}: fan-in into {target!r} waits for {list(blocked)}, "
            f"which cannot be reached from start node {start!r} without passing through "
            f"{target!r} itself, so it would never run",
            ids=(*blocked, target),
        )


def _networkx() -> Any:
    # Imported on first build, untyped: `import raf` stays fast.
    import networkx

    return networkx


def _unique(items: Any) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))
