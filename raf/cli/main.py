"""The `raf` command's arguments and entry point.

    raf demo                                  a nested workflow on the scripted model
    raf run MODULE:ATTR "prompt"              stream a run as a live tree
    raf tree MODULE:ATTR [--json]             the agent tree
    raf graph MODULE:ATTR --format mermaid    a workflow's graph (mermaid or dot)

`ATTR` may be an `IAgent`, a `Workflow`, or a zero-argument factory of either; `MODULE` is a
dotted module name or a path to a `.py` file.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import cast

import anyio
from rich.console import Console
from rich.markup import escape

from raf.cli.commands import cmd_graph, cmd_run, cmd_tree
from raf.errors import AgentError


def _cmd_demo(args: argparse.Namespace, console: Console) -> int:
    from raf.cli.demo import run_demo

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
    run.set_defaults(handler=cmd_run)

    tree = commands.add_parser("tree", help="print the agent tree")
    tree.add_argument("target", help="MODULE:ATTR")
    tree.add_argument("--json", action="store_true", help="print the AgentTree as JSON")
    tree.set_defaults(handler=cmd_tree)

    graph = commands.add_parser("graph", help="render a workflow's graph")
    graph.add_argument("target", help="MODULE:ATTR")
    graph.add_argument("--format", choices=("mermaid", "dot"), default="mermaid")
    graph.set_defaults(handler=cmd_graph)
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
