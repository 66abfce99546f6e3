"""`raf run`, `raf tree` and `raf graph`."""

from __future__ import annotations

import argparse
import json

import anyio
from rich.console import Console
from rich.tree import Tree

from raf.cli.live_tree import stream_live
from raf.cli.targets import as_agent, load_target
from raf.registry import AgentTree, tree_of


def _print_tree(tree: AgentTree, console: Console) -> None:
    def add(node: Tree, sub: AgentTree) -> None:
        branch = node.add(f"[bold]{sub.id}[/] [dim]({sub.kind})[/] {sub.description}")
        for child in sub.children:
            add(branch, child)

    root = Tree(f"[bold]{tree.id}[/] [dim]({tree.kind})[/] {tree.description}")
    for child in tree.children:
        add(root, child)
    console.print(root)


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    """`raf run MODULE:ATTR PROMPT`."""
    agent = as_agent(load_target(args.target))
    response = anyio.run(stream_live, agent, args.prompt, console)
    if response is not None and response.value is not None:
        console.print(f"[bold]value:[/] {response.value!r}")
    return 0


def cmd_tree(args: argparse.Namespace, console: Console) -> int:
    """`raf tree MODULE:ATTR [--json]`."""
    tree = tree_of(as_agent(load_target(args.target)))
    if args.json:
        print(json.dumps(tree.model_dump(), indent=2))
    else:
        _print_tree(tree, console)
    return 0


def cmd_graph(args: argparse.Namespace, console: Console) -> int:
    """`raf graph MODULE:ATTR --format mermaid|dot`."""
    target = load_target(args.target)
    workflow = getattr(target, "workflow", target)
    render = getattr(workflow, "to_mermaid" if args.format == "mermaid" else "to_dot", None)
    if render is None:
        raise SystemExit(f"{type(target).__name__} is not a workflow; `raf graph` needs one")
    print(render())
    return 0
