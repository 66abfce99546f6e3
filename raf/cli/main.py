"""The `raf` command's arguments and entry point.

    raf demo                                   a nested workflow on the scripted model
    raf run MODULE:ATTR "prompt"               stream a run as a live tree, then its answer
        [--session ID|FILE] [--store PATH] [--json] [--trace]
    raf tree MODULE:ATTR [--json]              the agent tree
    raf graph MODULE:ATTR --format mermaid     a workflow's graph (mermaid or dot)
    raf serve MODULE:ATTR [--port 8000]        serve it over AG-UI (HTTP), with a web page
        [--host 127.0.0.1] [--token-file PATH] [--max-body-bytes N]
    raf acp MODULE:ATTR [--store PATH]         serve an agent to ACP editors over stdio

`ATTR` may be an `IAgent`, a `Workflow`, or a zero-argument factory of either; `MODULE` is a
dotted module name or a path to a `.py` file. Exit status: 0 done, 1 the run failed, 2 a mistake
in the command (said in one line; `raf` alone prints the help), 130 cancelled by Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn, cast

from rich.console import Console

from raf.cli.commands import cmd_acp, cmd_demo, cmd_graph, cmd_run, cmd_serve, cmd_tree
from raf.cli.interrupt import EXIT_INTERRUPTED, exit_now
from raf.cli.runs import add_dbos_option, add_runs_command
from raf.cli.trace import add_trace_flag

EXIT_MISTAKE = 2
"""The exit status of a mistake in the command (as argparse's own usage errors)."""

EXIT_BROKEN_PIPE = 141
"""The exit status when stdout's reader went away, as for a process that SIGPIPE ended."""

_TARGET_HELP = "MODULE:ATTR, an agent, a workflow or a zero-argument factory of either"

_DEMO_HELP = """\
Plan a weekend trip with a concurrent workflow of two sequential workflows of ReAct agents
with tools, drawn as a live tree, then print each agent's answer.

Offline (the default) a built-in scripted model answers: it plays the same steps for the
city the prompt names ("A weekend in Porto"), Lisbon when it names none.

Environment:
  OPENAI_BASE_URL  an OpenAI-compatible server (say http://127.0.0.1:8080/v1 for llama.cpp);
                   a local server needs no key. A real model answers the prompt itself.
  OPENAI_API_KEY   the key for the server, or for the OpenAI API when no base URL is set
  RAF_MODEL        the model name sent (default: gpt-4o-mini)"""


class _Version(argparse.Action):
    """`--version`, reading the installed version only when asked (the package metadata's
    lookup costs every other command ~30 ms of start-up)."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        import raf

        print(f"raf {raf.__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `raf` command."""
    parser = argparse.ArgumentParser(prog="raf", description="Compose agents into workflows.")
    parser.add_argument("--version", action=_Version, help="show raf's version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        help="run a nested workflow of ReAct agents on the scripted model or yours",
        description=_DEMO_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument(
        "prompt",
        nargs="?",
        default="Plan a weekend trip to Lisbon.",
        help="the trip to plan (default: %(default)r)",
    )
    demo.set_defaults(handler=cmd_demo)

    run = commands.add_parser("run", help="stream a run as a live tree, then print its answer")
    run.add_argument("target", metavar="MODULE:ATTR", help=_TARGET_HELP)
    run.add_argument("prompt", help="the user message (answers a waiting run's request)")
    run.add_argument(
        "--session",
        metavar="ID|FILE",
        help="the session to continue, or whose waiting run to answer: its id in --store, "
        "or (without --store) a JSON session file",
    )
    run.add_argument(
        "--store",
        metavar="PATH",
        help="a SQLite file that keeps the sessions (made when missing); any process "
        "continues a session of it by its id",
    )
    run.add_argument("--json", action="store_true", help="print the updates as JSON lines")
    run.set_defaults(handler=cmd_run)
    add_trace_flag(run)

    tree = commands.add_parser("tree", help="print the agent tree")
    tree.add_argument("target", metavar="MODULE:ATTR", help=_TARGET_HELP)
    tree.add_argument("--json", action="store_true", help="print the AgentTree as JSON")
    tree.set_defaults(handler=cmd_tree)

    graph = commands.add_parser("graph", help="render a workflow's graph")
    graph.add_argument("target", metavar="MODULE:ATTR", help=_TARGET_HELP)
    graph.add_argument("--format", choices=("mermaid", "dot"), default="mermaid")
    graph.set_defaults(handler=cmd_graph)

    serve = commands.add_parser("serve", help="serve an agent over AG-UI (HTTP), with a web page")
    serve.add_argument("target", metavar="MODULE:ATTR", help=_TARGET_HELP)
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback)")
    serve.add_argument("--port", type=int, default=8000, help="port (0: a free one)")
    serve.add_argument(
        "--token",
        help="bearer token the API requires (shown by ps to every local user: prefer "
        "--token-file or $RAF_SERVE_TOKEN)",
    )
    serve.add_argument(
        "--token-file",
        metavar="PATH",
        help="a file whose first line is the bearer token (default: $RAF_SERVE_TOKEN, then "
        "$RAF_TOKEN)",
    )
    serve.add_argument(
        "--max-body-bytes",
        type=int,
        metavar="N",
        help="the longest request body read; longer ones get 413 (default: 10 MiB)",
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        metavar="NAME",
        help="a host name the server is reached by (repeatable; default: loopback and --host)",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a web origin whose pages may call the API, say https://app.example.com (repeatable)",
    )
    add_dbos_option(serve)
    serve.set_defaults(handler=cmd_serve)

    acp = commands.add_parser("acp", help="serve an agent to ACP editors over stdio")
    acp.add_argument("target", metavar="MODULE:ATTR", help=_TARGET_HELP)
    acp.add_argument(
        "--store",
        metavar="PATH",
        help="a SQLite file to keep sessions in, so the editor can list and load them later "
        "(default: kept in memory while the server runs)",
    )
    add_dbos_option(acp)
    acp.set_defaults(handler=cmd_acp)
    add_runs_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `raf` command; return its exit status.

    `raf` alone prints the help to stderr and exits with status 2: a command is missing, which
    is a mistake in the command as argparse counts them (`raf --help` exits with 0).
    """
    parser = build_parser()
    if not (sys.argv[1:] if argv is None else argv):
        parser.print_help(sys.stderr)
        return EXIT_MISTAKE
    args = parser.parse_args(argv)
    # Piped, lines stay whole (a reader greps them); at a terminal, rich fits them to it.
    console = Console(soft_wrap=not sys.stdout.isatty())
    try:
        status = cast(int, args.handler(args, console))
    except SystemExit as exc:
        if not isinstance(exc.code, str):
            raise
        print(f"raf {args.command}: {exc.code}", file=sys.stderr)
        return EXIT_MISTAKE
    except KeyboardInterrupt:  # before or after the run, which handles its own
        status = EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader of stdout went away (`raf run ... --json | head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    if status == EXIT_INTERRUPTED:
        print(f"raf {args.command}: cancelled", file=sys.stderr)
    return status


def entry() -> NoReturn:
    """The `raf` script: exit with `main`'s status, never held by an abandoned thread."""
    exit_now(main())


if __name__ == "__main__":
    entry()
