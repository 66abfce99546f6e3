"""Render a workflow graph as Mermaid or Graphviz DOT text.

Edge kinds stay visible: conditional edges and switch cases are dashed and labelled, fan-out
and fan-in edges are labelled `fan-out` / `fan-in`, and the start node is marked.

Example:
    >>> from raf.engine import FunctionExecutor, WorkflowBuilder
    >>> async def noop(message, ctx): ...
    >>> a, b = FunctionExecutor("a", noop), FunctionExecutor("b", noop)
    >>> print(to_mermaid(WorkflowBuilder("w").add_edge(a, b).set_start(a).build()))
    flowchart TD
        n0["a"]:::start
        n1["b"]
        n0 --> n1
        classDef start stroke-width:3px
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from raf.engine.workflow import Workflow

__all__ = ["to_dot", "to_mermaid"]

_DASHED = ("conditional", "case", "default")


def to_mermaid(workflow: Workflow) -> str:
    """The graph as a Mermaid `flowchart`."""
    names = {node: f"n{index}" for index, node in enumerate(workflow.executors)}
    lines = ["flowchart TD"]
    for node, executor in workflow.executors.items():
        label = node if executor.kind in ("function", "executor") else f"{node} ({executor.kind})"
        marker = ":::start" if node == workflow.start_id else ""
        lines.append(f'    {names[node]}["{_mermaid_text(label)}"]{marker}')
    for edge in workflow.edges:
        arrow = "-.->" if edge.kind in _DASHED else "-->"
        label = f"|{_mermaid_text(edge.label)}|" if edge.label else ""
        lines.append(f"    {names[edge.source]} {arrow}{label} {names[edge.target]}")
    lines.append("    classDef start stroke-width:3px")
    return "\n".join(lines)


def to_dot(workflow: Workflow) -> str:
    """The graph in Graphviz DOT."""
    lines = [f"digraph {_dot_id(workflow.id)} {{", "    rankdir=TB;", "    node [shape=box];"]
    for node, executor in workflow.executors.items():
        attrs = [f"label={_dot_id(f'{node} ({executor.kind})')}"]
        if node == workflow.start_id:
            attrs.append("peripheries=2")
        lines.append(f"    {_dot_id(node)} [{', '.join(attrs)}];")
    for edge in workflow.edges:
        attrs: list[str] = []
        if edge.label:
            attrs.append(f"label={_dot_id(edge.label)}")
        if edge.kind in _DASHED:
            attrs.append("style=dashed")
        elif edge.kind == "fan_in":
            attrs.append("arrowhead=invempty")
        elif edge.kind == "fan_out":
            attrs.append("arrowtail=dot, dir=both")
        suffix = f" [{', '.join(attrs)}]" if attrs else ""
        lines.append(f"    {_dot_id(edge.source)} -> {_dot_id(edge.target)}{suffix};")
    lines.append("}")
    return "\n".join(lines)


def _mermaid_text(text: str) -> str:
    return text.replace('"', "#quot;").replace("|", "#124;")


def _dot_id(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)
