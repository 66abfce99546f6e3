"""The `raf` command: run, inspect and render agents and workflows.

    raf demo                                  a nested workflow on the scripted model
    raf run MODULE:ATTR "prompt"              stream a run as a live tree
    raf tree MODULE:ATTR [--json]             the agent tree
    raf graph MODULE:ATTR --format mermaid    a workflow's graph (mermaid or dot)
    raf serve MODULE:ATTR [--port 8000]       serve it over AG-UI, with a web page

`ATTR` may be an `IAgent`, a `Workflow`, or a zero-argument factory of either; `MODULE` is a
dotted module name or a path to a `.py` file.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import anyio
from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from raf.agent import IAgent
from raf.errors import AgentError
from raf.live_tree import stream_live
from raf.registry import AgentTree, tree_of


def load_target(spec: str) -> Any:
    """Import `MODULE:ATTR` and return the attribute, calling it when it is a factory.

    Raises:
        SystemExit: with a message saying what was wrong.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not attr:
        raise SystemExit(f"expected MODULE:ATTR, got {spec!r}")
    if module_name.endswith(".py"):
        path = Path(module_name)
        if not path.exists():
            raise SystemExit(f"no file {module_name!r}")
        # A private module name: the file's own (say `concurrent`) may shadow a standard one.
        name = f"_raf_target_{path.stem}"
        loader_spec = importlib.util.spec_from_file_location(name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise SystemExit(f"cannot import {module_name!r}")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[name] = module
        # Its neighbours import as they would when the file runs as a script.
        sys.path.insert(0, str(path.resolve().parent))
        loader_spec.loader.exec_module(module)
    else:
        sys.path.insert(0, str(Path.cwd()))
        module = importlib.import_module(module_name)
    try:
        target = getattr(module, attr)
    except AttributeError:
        raise SystemExit(f"module {module_name!r} has no attribute {attr!r}") from None
    if not isinstance(target, IAgent) and not hasattr(target, "as_agent") and callable(target):
        target = target()
    return target


def as_agent(target: Any) -> IAgent:
    """An `IAgent` from an agent or a workflow.

    Raises:
        SystemExit: when `target` is neither.
    """
    if isinstance(target, IAgent):
        return target
    if hasattr(target, "as_agent"):
        return cast(IAgent, target.as_agent())
    raise SystemExit(f"{type(target).__name__} is neither an IAgent nor a Workflow")


def _print_tree(tree: AgentTree, console: Console) -> None:
    def add(node: Tree, sub: AgentTree) -> None:
        branch = node.add(f"[bold]{sub.id}[/] [dim]({sub.kind})[/] {sub.description}")
        for child in sub.children:
            add(branch, child)

    root = Tree(f"[bold]{tree.id}[/] [dim]({tree.kind})[/] {tree.description}")
    for child in tree.children:
        add(root, child)
    console.print(root)


def _cmd_run(args: argparse.Namespace, console: Console) -> int:
    agent = as_agent(load_target(args.target))
    response = anyio.run(stream_live, agent, args.prompt, console)
    if response is not None and response.value is not None:
        console.print(f"[bold]value:[/] {response.value!r}")
    return 0


def _cmd_tree(args: argparse.Namespace, console: Console) -> int:
    tree = tree_of(as_agent(load_target(args.target)))
    if args.json:
        print(json.dumps(tree.model_dump(), indent=2))
    else:
        _print_tree(tree, console)
    return 0


def _cmd_graph(args: argparse.Namespace, console: Console) -> int:
    target = load_target(args.target)
    workflow = getattr(target, "workflow", target)
    render = getattr(workflow, "to_mermaid" if args.format == "mermaid" else "to_dot", None)
    if render is None:
        raise SystemExit(f"{type(target).__name__} is not a workflow; `raf graph` needs one")
    print(render())
    return 0


def _cmd_serve(args: argparse.Namespace, console: Console) -> int:
    try:
        from raf.serve import serve
    except ImportError as exc:
        raise SystemExit(
            f"raf serve needs the server extra ({exc.name} is missing): pip install 'raf[server]'"
        ) from None
    agent = as_agent(load_target(args.target))
    where = f"http://{args.host}:{args.port}/" if args.port else "a free port (see below)"
    console.print(f"[dim]serving {agent.id!r} over AG-UI, the web page at {where}; Ctrl-C stops[/]")
    try:
        anyio.run(lambda: serve(agent, host=args.host, port=args.port, token=args.token))
    except KeyboardInterrupt:
        console.print("[dim]stopped[/]")
        return 130
    return 0


def _cmd_demo(args: argparse.Namespace, console: Console) -> int:
    from raf.demo import run_demo

    return anyio.run(run_demo, console, args.prompt)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `raf` command."""
    parser = argparse.ArgumentParser(prog="raf", description="Compose agents into workflows.")
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="run a nested workflow on the scripted model")
    demo.add_argument("prompt", nargs="?", default="Plan a weekend trip to Lisbon.")
    demo.set_defaults(handler=_cmd_demo)

    run = commands.add_parser("run", help="stream a run as a live tree")
    run.add_argument("target", help="MODULE:ATTR")
    run.add_argument("prompt")
    run.set_defaults(handler=_cmd_run)

    tree = commands.add_parser("tree", help="print the agent tree")
    tree.add_argument("target", help="MODULE:ATTR")
    tree.add_argument("--json", action="store_true", help="print the AgentTree as JSON")
    tree.set_defaults(handler=_cmd_tree)

    graph = commands.add_parser("graph", help="render a workflow's graph")
    graph.add_argument("target", help="MODULE:ATTR")
    graph.add_argument("--format", choices=("mermaid", "dot"), default="mermaid")
    graph.set_defaults(handler=_cmd_graph)

    serve = commands.add_parser("serve", help="serve an agent over AG-UI (HTTP), with a web page")
    serve.add_argument("target", help="MODULE:ATTR")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback)")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--token", help="bearer token the API requires (default: $RAF_TOKEN)")
    serve.set_defaults(handler=_cmd_serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `raf` command."""
    args = build_parser().parse_args(argv)
    console = Console()
    try:
        return cast(int, args.handler(args, console))
    except AgentError as exc:
        # The message says what happened, where (the agent path) and what to do.
        console.print()
        console.print(f"[bold red]{type(exc).__name__}:[/] {escape(str(exc))}")
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
