"""The handlers of `raf run`, `raf tree`, `raf graph`, `raf demo`, `raf serve` and `raf acp`.

Each takes the parsed arguments and a console and returns the exit status; a mistake in the
arguments raises `SystemExit` with a one-line message (status 2, printed by `raf.cli.main`).
"""

from __future__ import annotations

import argparse
import json
from functools import partial
from pathlib import Path

import anyio
from rich.console import Console
from rich.tree import Tree

from raf.agent import IAgent
from raf.cli.interrupt import EXIT_INTERRUPTED, until_interrupted
from raf.cli.run import RunRequest, load_session, run_and_answer
from raf.cli.runs import durable_serving
from raf.cli.targets import as_agent, load_target
from raf.registry import AgentTree, tree_of


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    """`raf run MODULE:ATTR PROMPT [--session FILE] [--json]`."""
    request = RunRequest(
        target=args.target,
        prompt=args.prompt,
        session_file=Path(args.session) if args.session is not None else None,
        as_json=args.json,
    )
    session = load_session(request.session_file)
    agent = as_agent(load_target(request.target))
    return anyio.run(until_interrupted, partial(run_and_answer, agent, request, session, console))


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
        raise SystemExit(
            f"{args.target} is a {type(target).__name__}, not a workflow; `raf graph` draws a "
            "Workflow or a workflow's agent"
        )
    print(render())
    return 0


def cmd_demo(args: argparse.Namespace, console: Console) -> int:
    """`raf demo [PROMPT]`."""
    from raf.cli.demo import run_demo

    prompt: str = args.prompt

    async def body() -> int:
        return await run_demo(console, prompt)

    return anyio.run(until_interrupted, body)


def cmd_serve(args: argparse.Namespace, console: Console) -> int:
    """`raf serve MODULE:ATTR`: serve the agent over AG-UI (HTTP), with its web page."""
    try:
        from raf.serve import serve
    except ImportError as exc:
        raise SystemExit(
            f"`raf serve` needs the server extra ({exc.name} is missing): pip install 'raf[server]'"
        ) from None
    agent = as_agent(load_target(args.target))
    where = f"http://{args.host}:{args.port}/" if args.port else "a free port (see below)"
    console.print(f"[dim]serving {agent.id!r} over AG-UI, the web page at {where}; Ctrl-C stops[/]")
    try:
        anyio.run(
            durable_serving(  # `--dbos DSN`: the agent runs durably
                agent,
                args.dbos,
                partial(
                    serve,
                    host=args.host,
                    port=args.port,
                    token=args.token,
                    allowed_hosts=args.allow_host,
                    allowed_origins=args.allow_origin,
                ),
            )
        )
    except KeyboardInterrupt:  # uvicorn shut down cleanly first
        return EXIT_INTERRUPTED
    return 0


def cmd_acp(args: argparse.Namespace, console: Console) -> int:
    """`raf acp MODULE:ATTR`: serve the agent to an ACP client over stdio."""
    try:
        from raf.serve.acp.server import serve_stdio
    except ImportError as exc:
        raise SystemExit(
            f"`raf acp` needs the ACP extra ({exc.name} is missing): pip install 'raf[acp]'"
        ) from None

    async def serve_agent(agent: IAgent) -> None:
        if args.store is None:
            return await serve_stdio(agent)
        from raf.stores import SqliteCheckpointStore

        async with SqliteCheckpointStore(args.store) as store:
            await serve_stdio(agent, store)

    async def body() -> int:
        # `--dbos DSN`: the agent runs durably
        await durable_serving(as_agent(load_target(args.target)), args.dbos, serve_agent)()
        return 0

    return anyio.run(until_interrupted, body, backend="asyncio")


def _print_tree(tree: AgentTree, console: Console) -> None:
    def add(node: Tree, sub: AgentTree) -> None:
        branch = node.add(f"[bold]{sub.id}[/] [dim]({sub.kind})[/] {sub.description}")
        for child in sub.children:
            add(branch, child)

    root = Tree(f"[bold]{tree.id}[/] [dim]({tree.kind})[/] {tree.description}")
    for child in tree.children:
        add(root, child)
    console.print(root)
