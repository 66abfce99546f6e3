"""The handlers of `raf run`, `raf tree`, `raf graph`, `raf demo`, `raf serve` and `raf acp`.

Each takes the parsed arguments and a console and returns the exit status; a mistake in the
arguments raises `SystemExit` with a one-line message (status 2, printed by `raf.cli.main`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import closing
from functools import partial
from pathlib import Path

import anyio
from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from raf.agent import IAgent
from raf.cli.interrupt import EXIT_INTERRUPTED, until_interrupted
from raf.cli.run import RunRequest, checked_session_id, load_session, run_and_answer
from raf.cli.runs import durable_serving
from raf.cli.targets import as_agent, load_target
from raf.registry import AgentTree, tree_of

_EVERY_ADDRESS = frozenset({"", "0.0.0.0", "::"})


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    """`raf run MODULE:ATTR PROMPT [--session ID|FILE] [--store PATH] [--json]`."""
    if args.store is not None:
        if args.session is None:
            raise SystemExit("--store keeps sessions: name the one to run with --session ID")
        _check_store(args.store)
        checked_session_id(args.session)
    request = RunRequest(
        target=args.target,
        prompt=args.prompt,
        session_file=Path(args.session)
        if args.session is not None and args.store is None
        else None,
        as_json=args.json,
        store=args.store,
        session_id=args.session if args.store is not None else None,
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
    port: int = args.port
    if not 0 <= port <= 65535:
        raise SystemExit(f"port {port} is not a TCP port: pass 0..65535 (0 picks a free one)")
    limit: int | None = args.max_body_bytes
    if limit is not None and limit <= 0:
        raise SystemExit(f"--max-body-bytes {limit} is not a size: pass a positive number")
    try:
        from raf.serve import serve
    except ImportError as exc:
        raise SystemExit(
            f"`raf serve` needs the server extra ({exc.name} is missing): pip install 'raf[server]'"
        ) from None
    agent = as_agent(load_target(args.target))
    host: str = args.host
    everywhere = host in _EVERY_ADDRESS
    token = _serve_token(args.token, args.token_file)
    if everywhere and not token:
        print(
            f"raf serve: warning: serving every address without a token, anyone who reaches "
            f"port {port} can run {agent.id!r}; pass --token-file PATH (or set RAF_SERVE_TOKEN)",
            file=sys.stderr,
        )
    # A URL the host guard accepts: binding every address adds no name but the loopback ones.
    shown = "127.0.0.1" if everywhere else (f"[{host}]" if ":" in host else host)
    where = f"http://{shown}:{port}/" if port else "a free port (see below)"
    console.print(
        f"[dim]serving {escape(agent.id)!r} over AG-UI, the web page at {where}; Ctrl-C stops[/]",
        highlight=False,
    )
    if everywhere and not args.allow_host:
        console.print(
            "[dim]other machines reach it once you name the host they use: --allow-host NAME[/]"
        )
    limits = {} if limit is None else {"max_body_bytes": limit}
    try:
        anyio.run(
            durable_serving(  # `--dbos DSN`: the agent runs durably
                agent,
                args.dbos,
                partial(
                    serve,
                    host=host,
                    port=port,
                    token=token,
                    allowed_hosts=args.allow_host,
                    allowed_origins=args.allow_origin,
                    **limits,
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
    agent = as_agent(load_target(args.target))
    if args.store is not None:
        _check_store(args.store)

    async def serve_agent(agent: IAgent) -> None:
        if args.store is None:
            return await serve_stdio(agent)
        from raf.stores import SqliteCheckpointStore

        async with SqliteCheckpointStore(args.store) as store:
            await serve_stdio(agent, store)

    async def body() -> int:
        # `--dbos DSN`: the agent runs durably
        await durable_serving(agent, args.dbos, serve_agent)()
        return 0

    return anyio.run(until_interrupted, body, backend="asyncio")


def _serve_token(given: str | None, path: str | None) -> str:
    """The bearer token `raf serve` requires: `--token`, else the first line of
    `--token-file`, else `RAF_SERVE_TOKEN`, else `RAF_TOKEN` ("" for none).

    Raises:
        SystemExit: when both are given, or the file cannot be read or holds no token.
    """
    if given is not None and path is not None:
        raise SystemExit("pass --token or --token-file, not both")
    if given is not None:
        return given
    if path is None:
        return os.environ.get("RAF_SERVE_TOKEN") or os.environ.get("RAF_TOKEN", "")
    try:
        with open(path, encoding="utf-8") as file:
            token = file.readline().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise SystemExit(f"--token-file {path!r} cannot be read: {exc}") from None
    if not token:
        raise SystemExit(f"--token-file {path!r} holds no token on its first line")
    return token


def _check_store(path: str) -> None:
    """Fail in one line, before serving, when `path` cannot hold a SQLite store.

    Raises:
        SystemExit: saying what is wrong with the path.
    """
    import sqlite3

    where = Path(path)
    if where.is_dir():
        raise SystemExit(f"--store {path!r} is a directory: give a file path, say sessions.db")
    if not where.parent.is_dir():
        raise SystemExit(f"--store {path!r}: no directory {str(where.parent)!r}; create it first")
    if not where.exists():
        return  # the store makes it, with its tables (an empty file would not be its own)
    try:
        # Read-only: a check must not leave an empty file behind for the store to refuse.
        with closing(sqlite3.connect(f"{where.resolve().as_uri()}?mode=ro", uri=True)) as db:
            db.execute("PRAGMA schema_version").fetchone()
    except sqlite3.Error as exc:
        raise SystemExit(f"--store {path!r} cannot be used as a SQLite store: {exc}") from None


def _print_tree(tree: AgentTree, console: Console) -> None:
    def add(node: Tree, sub: AgentTree) -> None:
        branch = node.add(f"[bold]{sub.id}[/] [dim]({sub.kind})[/] {sub.description}")
        for child in sub.children:
            add(branch, child)

    root = Tree(f"[bold]{tree.id}[/] [dim]({tree.kind})[/] {tree.description}")
    for child in tree.children:
        add(root, child)
    console.print(root)
