"""`raf run MODULE:ATTR PROMPT`: stream a run, then print its answer.

The run streams as a live tree (or, with `--json`, as JSON lines, one update each); then the
answer follows: each answering agent's last message, and the structured value of an agent with an
output schema (instead of the text it may have been corrected away from) or of a graph. With
`--session ID --store PATH` the run is a turn of the session ID kept in the SQLite file PATH
(loaded by the run, saved once its turn finished), so the next `raf run`, in any process,
continues it or answers the requests a waiting run asked; `--session FILE` alone keeps the
session in a JSON file instead.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread
from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape

from raf.agent import IAgent
from raf.cli.live_tree import stream_live
from raf.errors import AgentError, ProviderError
from raf.messages import ChatMessage
from raf.session import Session
from raf.updates import AgentResponse, RequestInfoUpdate

EXIT_FAILED = 1
"""The exit status of a run that failed."""

EXIT_CONFIGURATION = 2
"""The exit status of a run that failed because of how it was set up: the model endpoint
cannot be reached, or refuses the key or the model (a mistake, like those in the command)."""

_CONFIGURATION_STATUSES = frozenset({401, 403, 404})


def report_failure(exc: AgentError) -> int:
    """Say on stderr, in one unwrapped line, why the run failed; its exit status."""
    errors = Console(stderr=True, soft_wrap=True)
    errors.print(f"[bold red]{type(exc).__name__}:[/] {escape(str(exc))}", highlight=False)
    return EXIT_CONFIGURATION if _is_configuration(exc) else EXIT_FAILED


def _is_configuration(exc: AgentError) -> bool:
    if not isinstance(exc, ProviderError):
        return False
    if exc.status in _CONFIGURATION_STATUSES:
        return True
    import openai

    return exc.status is None and isinstance(exc.__cause__, openai.APIConnectionError)


@dataclass(frozen=True, slots=True)
class RunRequest:
    """What `raf run` was asked to do."""

    target: str
    """The `MODULE:ATTR` the agent came from, for the hint on how to answer."""
    prompt: str
    """The user message."""
    session_file: Path | None
    """The JSON session file to continue and save, if any."""
    as_json: bool
    """Print the raw update stream as JSON lines instead of the live tree."""
    store: str | None = None
    """The SQLite file that keeps the sessions, if any."""
    session_id: str | None = None
    """The id of the session of `store` to continue."""


def checked_session_id(session_id: str) -> str:
    """`session_id`, when a store can keep a session under it.

    Raises:
        SystemExit: saying what is wrong with it.
    """
    try:
        return Session(session_id).id
    except (TypeError, ValueError) as exc:
        raise SystemExit(f"--session: {exc}") from None


def load_session(path: Path | None) -> Session | None:
    """The session saved in `path` (a new one when the file does not exist yet).

    Raises:
        SystemExit: when the file is not a session.
    """
    if path is None:
        return None
    if not path.exists():
        return Session()
    try:
        return Session.from_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise SystemExit(
            f"{str(path)!r} is not a raf session file ({exc}); pass a new file name to start one"
        ) from None


def save_session(session: Session, path: Path) -> None:
    """Write `session` to `path` atomically: a killed process leaves the old file whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(session.to_json())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


async def run_and_answer(
    agent: IAgent, request: RunRequest, session: Session | None, console: Console
) -> int:
    """Run `agent` as `request` says, save the session, print the answer; the exit status."""
    if request.store is not None and request.session_id is not None:
        from raf.stores import SqliteCheckpointStore

        # The session of the store: the run loads it, and saves it once the turn finished.
        async with SqliteCheckpointStore(request.store) as store:
            kept = Session(request.session_id, store)
            return await _run_and_answer(agent, request, kept, console)
    return await _run_and_answer(agent, request, session, console)


async def _run_and_answer(
    agent: IAgent, request: RunRequest, session: Session | None, console: Console
) -> int:
    try:
        response = await run_agent(agent, request, session, console)
    except AgentError as exc:
        # The message says what happened, where (the agent path) and what to do.
        if not request.as_json:
            console.print()
        return report_failure(exc)
    if session is not None and request.session_file is not None:
        # In a thread that Ctrl-C does not abandon: the file is written whole or not at all.
        await anyio.to_thread.run_sync(save_session, session, request.session_file)
    if not request.as_json:
        console.print()
        print_answer(agent, response, console)
    if response.status == "waiting":
        notes = Console(stderr=True) if request.as_json else console
        print_waiting(response.pending, request, notes)
    return 0


async def run_agent(
    agent: IAgent, request: RunRequest, session: Session | None, console: Console
) -> AgentResponse:
    """Run `agent` as `request` says; return the response."""
    if request.as_json:
        return await _stream_json(agent, request.prompt, session)
    console.print(f"[dim]running {escape(agent.id)} ({agent.metadata.kind}); Ctrl-C cancels[/]")
    return await stream_live(agent, request.prompt, console, session)


async def _stream_json(agent: IAgent, prompt: str, session: Session | None) -> AgentResponse:
    run = agent.run(prompt, session=session)
    async with run as stream:
        async for update in stream:
            sys.stdout.write(update.model_dump_json() + "\n")
            sys.stdout.flush()  # a reader sees each update as it happens
    assert run.response is not None  # the stream ended without raising
    return run.response


def print_answer(agent: IAgent, response: AgentResponse, console: Console) -> None:
    """Print the run's answer: each answering agent's last message, and the value.

    An agent with an output schema answers with its value alone: its text, if any, is what a
    correction turned it away from.
    """
    if response.value is not None and agent.metadata.output_schema is not None:
        console.print(_render_value(response.value), markup=False, highlight=False)
        return
    answers = _last_message_by_author(response.messages)
    for author, text in answers.items():
        if len(answers) > 1 and author:
            console.print(f"[bold]{escape(author)}[/]: {escape(text)}", highlight=False)
        else:
            console.print(text, markup=False, highlight=False)
    if response.value is not None:
        console.print(_render_value(response.value), markup=False, highlight=False)


def print_waiting(requests: list[RequestInfoUpdate], request: RunRequest, console: Console) -> None:
    """Say how to answer the requests a run waits on (and, with `--json`, what they ask).

    The live tree already shows the requests; the JSON stream has them too, but not for the
    person at the terminal, so `--json` says them again on stderr.
    """
    for asked in requests if request.as_json else ():
        console.print(
            f"[yellow]waiting for an answer to {escape(asked.request_id)}:[/] "
            f"{escape(_render_value(asked.payload, indent=None))}",
            highlight=False,
        )
    if request.store is not None and request.session_id is not None:
        kept = f"--session {request.session_id} --store {request.store}"
    elif request.session_file is not None:
        kept = f"--session {request.session_file}"
    else:
        console.print(
            "[yellow]the run waits; run it with --session ID --store PATH (or --session FILE) "
            "to keep it and answer later[/]"
        )
        return
    console.print(
        f'[yellow]answer with:[/] raf run {escape(request.target)} "YOUR ANSWER" {escape(kept)}',
        highlight=False,
    )


def _last_message_by_author(messages: list[ChatMessage]) -> dict[str, str]:
    answers: dict[str, str] = {}
    for message in messages:
        if message.role == "assistant" and message.text:
            author = message.author or ""
            answers.pop(author, None)  # keep the order of the last words
            answers[author] = message.text
    return answers


def _render_value(value: Any, indent: int | None = 2) -> str:
    if isinstance(value, BaseModel):
        return value.model_dump_json(indent=indent)
    try:
        return json.dumps(value, indent=indent, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)
