"""`raf runs`: list, show, answer, resume and cancel durable runs (DBOS workflow management),
and the `--dbos DSN` option of `raf serve` and `raf acp`.

    raf runs list --dbos sqlite:///runs.sqlite
    raf runs show team:chat-1:0 --dbos postgresql://127.0.0.1/raf
    raf runs answer team:chat-1:0 "approve" --dbos ...
    raf runs resume team:chat-1:0 --dbos ...      # a dead worker's run, on a live worker
    raf runs cancel team:chat-1:0 --dbos ...
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

from rich.console import Console

from raf.agent import IAgent

__all__ = ["add_dbos_option", "add_runs_command", "durable_serving"]

_DSN_HELP = "the DBOS system database: sqlite:///FILE or postgresql://... (default: $RAF_DBOS)"


def add_dbos_option(parser: argparse.ArgumentParser) -> None:
    """Give a serving command `--dbos DSN`: run its agent durably."""
    parser.add_argument("--dbos", metavar="DSN", help=f"run the agent durably; {_DSN_HELP}")


def add_runs_command(commands: Any) -> None:
    """Add `raf runs` to the `raf` command's subparsers."""
    runs = commands.add_parser("runs", help="list, show, answer, resume or cancel durable runs")
    actions = runs.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="the durable runs, newest first")
    listing.add_argument("--status", help="only runs in this DBOS status (PENDING, SUCCESS...)")
    listing.add_argument("--limit", type=int, default=50)
    for name, text in (
        ("show", "a run's status, recorded steps and recorded items"),
        ("resume", "go on with a run whose worker died, on a live worker"),
        ("cancel", "stop a run"),
    ):
        action = actions.add_parser(name, help=text)
        action.add_argument("run_id")
    answer = actions.add_parser("answer", help="answer a run waiting for a human")
    answer.add_argument("run_id")
    answer.add_argument("text", help="the answer (plain text answers the oldest request)")
    for action in actions.choices.values():
        action.add_argument("--dbos", metavar="DSN", help=_DSN_HELP)
    runs.set_defaults(handler=cmd_runs)


def _dsn(args: argparse.Namespace) -> str:
    dsn = args.dbos or os.environ.get("RAF_DBOS")
    if not dsn:
        raise SystemExit("say where the runs are: --dbos sqlite:///runs.sqlite (or set RAF_DBOS)")
    return dsn


def cmd_runs(args: argparse.Namespace, console: Console) -> int:
    """`raf runs ACTION`: DBOS workflow management of raf's durable runs."""
    try:
        from dbos import DBOSClient
    except ImportError:
        raise SystemExit("`raf runs` needs the dbos extra: pip install 'raf[dbos]'") from None
    client = DBOSClient(system_database_url=_dsn(args))
    try:
        return _ACTIONS[args.action](client, args, console)
    finally:
        client.destroy()


def _list(client: Any, args: argparse.Namespace, console: Console) -> int:
    rows = client.list_workflows(
        name=None, status=args.status, limit=args.limit, sort_desc=True, load_input=False
    )
    for row in rows:
        if str(row.name).startswith("raf.run:"):
            print(f"{row.workflow_id}\t{row.status}\t{row.name.removeprefix('raf.run:')}")
    return 0


def _show(client: Any, args: argparse.Namespace, console: Console) -> int:
    from dbos import error

    from raf.durable.envelopes import STREAM, TurnEnvelope, envelope_adapter

    status = client.retrieve_workflow(args.run_id).get_status()
    print(f"{args.run_id}\t{status.status}\t{status.name}")
    _steps(client, args.run_id, "  ")
    nodes = client.list_workflows(
        workflow_id_prefix=f"{args.run_id}/", load_input=False, load_output=False
    )
    for node in nodes:
        print(f"  node step {node.workflow_id}\t{node.status}\t{node.executor_id}")
        _steps(client, node.workflow_id, "    ")
    waiting: list[Any] = []
    try:
        for text in client.read_stream(args.run_id, STREAM, timeout_seconds=0.2):
            item = envelope_adapter.validate_json(str(text))
            if isinstance(item, TurnEnvelope):
                waiting = list(item.response.pending)
            print(item.model_dump_json())
    except error.DBOSStreamTimeoutError:
        pass  # what is recorded so far
    if status.status == "PENDING" and waiting:
        for request in waiting:
            payload = json.dumps(request.payload)
            print(f"waiting: {request.request_id}: {payload}")
    return 0


def _steps(client: Any, workflow_id: str, indent: str) -> None:
    """Print the model and tool call steps workflow `workflow_id` recorded."""
    for step in client.list_workflow_steps(workflow_id):
        name = step["function_name"]
        if name.startswith(("raf.model:", "raf.tool:")):
            failed = " (failed)" if step.get("error") is not None else ""
            print(f"{indent}step {step['function_id']}: {name}{failed}")


def _answer(client: Any, args: argparse.Namespace, console: Console) -> int:
    from raf.durable.dbos import ANSWERS
    from raf.messages import ChatMessage, message_list_adapter

    text = message_list_adapter.dump_json([ChatMessage.user(args.text)]).decode()
    client.send(args.run_id, text, topic=ANSWERS)
    print(f"answered {args.run_id}")
    return 0


def _resume(client: Any, args: argparse.Namespace, console: Console) -> int:
    from raf.durable.manage import resume_run

    resume_run(client, args.run_id)
    print(f"resumed {args.run_id}: a live worker goes on with it")
    return 0


def _cancel(client: Any, args: argparse.Namespace, console: Console) -> int:
    from raf.durable.manage import cancel_run

    cancel_run(client, args.run_id)
    print(f"cancelled {args.run_id}")
    return 0


_ACTIONS: dict[str, Callable[[Any, argparse.Namespace, Console], int]] = {
    "list": _list,
    "show": _show,
    "answer": _answer,
    "resume": _resume,
    "cancel": _cancel,
}


def durable_serving(
    agent: IAgent, dsn: str | None, serve: Callable[[IAgent], Awaitable[None]]
) -> Callable[[], Awaitable[None]]:
    """What a serving command runs: `serve(agent)`, or with `dsn`, `serve` on the agent made
    durable, DBOS launched first on the running event loop (asyncio)."""
    if not dsn:
        return lambda: serve(agent)
    try:
        from dbos import DBOS

        from raf.durable import DurableAgent
    except ImportError:
        raise SystemExit("--dbos needs the dbos extra: pip install 'raf[dbos]'") from None
    config: Any = {"name": "raf", "system_database_url": dsn}
    if dsn.startswith("sqlite"):
        # Node steps report to their run through a table SQLite polls (1 s by default).
        config["notification_listener_polling_interval_sec"] = 0.05
    DBOS(config=config)
    durable = DurableAgent(agent)

    async def run() -> None:
        DBOS.launch()
        try:
            await serve(durable)
        finally:
            DBOS.destroy(destroy_registry=True)

    return run
