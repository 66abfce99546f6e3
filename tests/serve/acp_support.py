"""`raf acp` driven by the ACP SDK's own client over stdio: the recording client, the servers,
and the asyncio loop the SDK runs on.

The SDK runs on asyncio only, and so does `raf acp`. A test whose subject is the process (its
start, its exit, a store two processes share) starts its own and drives it on an asyncio loop
of its own (`on_asyncio`). The others only need a session on a server of their target: they
share one `raf acp TARGET` process per module (`SharedServers`), each opening a new session on
its connection.

Each `raf acp` process is forked from a fork server that made its imports already
(`acp_command`, `tests.forkserver`): started fresh, one costs ~1.1 CPU-s (0.8 of it the SDK's
import), forked a few ms. It is still a process of its own on the pipes the SDK's client
spawned it with, and it ends as the `raf` script would (`python -m raf.cli` runs the script's
entry, `raf.cli.main:entry`). tests/serve/test_serve_command.py checks the installed script.
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallUpdate,
)
from anyio.from_thread import BlockingPortal, start_blocking_portal

from tests.cli.support import ROOT, TIMEOUT, offline_env
from tests.forkserver import ForkServers, command

PRELOAD = (
    "raf.cli.main",
    "raf.serve.acp.server",
    "raf.stores.sqlite",
    "raf.tools.journal",
    "tests.cli.targets",
    "anyio._core._sockets",
    "anyio.streams.memory",
    "anyio.streams.stapled",
    "email.parser",
    "queue",
)
"""What the fork server of `raf acp` imports: what the command imports before it serves, and
what it imports lazily once serving (the SQLite store, the tool journal, anyio's streams).
None of it starts a thread or an event loop, which would make forking unsafe."""


@pytest.fixture(scope="session")
def acp_command(forkservers: ForkServers) -> list[str]:
    """The argv of `raf acp` (add its arguments), forked from the worker's fork server."""
    return [*command(forkservers.get(*PRELOAD), "raf.cli"), "acp"]


def run_acp(acp: list[str], *args: str, sent: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """`raf acp ARGS...` (`acp` from `acp_command`) run to the end offline, with `sent` on
    its stdin."""
    return subprocess.run(
        [*acp, *args],
        input=sent,
        capture_output=True,
        cwd=ROOT,
        env=offline_env(),
        timeout=TIMEOUT,
        check=False,
    )


@dataclass
class RecordingClient:
    """An ACP client that records session updates and answers permission requests."""

    choose: str | None = "approve"
    """The option to pick by name, or None to dismiss the question."""
    updates: list[Any] = field(default_factory=lambda: list[Any]())
    asked: list[tuple[ToolCallUpdate, list[PermissionOption]]] = field(
        default_factory=lambda: list[tuple[ToolCallUpdate, list[PermissionOption]]]()
    )
    tool_running: anyio.Event | None = None
    """Set when a tool call runs; made on the SDK's loop by the scenario that waits on it."""

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        running = isinstance(update, ToolCallProgress) and update.status == "in_progress"
        if running and self.tool_running is not None:
            self.tool_running.set()

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        self.asked.append((tool_call, options))
        chosen = [o for o in options if o.name == self.choose]
        if not chosen:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen[0].option_id)
        )

    def text(self) -> str:
        return "".join(u.content.text for u in self.updates if isinstance(u, AgentMessageChunk))


async def prompt(conn: ClientSideConnection, session_id: str, text: str) -> str:
    response = await conn.prompt(session_id=session_id, prompt=[text_block(text)])
    return response.stop_reason


async def cancel_once_running(
    conn: ClientSideConnection,
    session_id: str,
    text: str,
    running: anyio.Event,
    then: Callable[[], object] = lambda: None,
) -> tuple[str, bool]:
    """Prompt `text` on the session, cancel it once `running` is set, then call `then`: the
    prompt's stop reason, and whether it still ran when the cancel was sent."""
    reasons: list[str] = []
    still_running = False
    async with anyio.create_task_group() as group:

        async def ask() -> None:
            reasons.append(await prompt(conn, session_id, text))

        group.start_soon(ask)
        await running.wait()
        await conn.cancel(session_id=session_id)
        still_running = not reasons
        then()
    return reasons[0], still_running


def on_asyncio(scenario: Callable[[], Awaitable[None]]) -> None:
    """Run `scenario`, bounded in time, on an asyncio loop of its own (the SDK's loop)."""

    async def bounded() -> None:
        with anyio.fail_after(TIMEOUT):
            await scenario()

    anyio.run(bounded, backend="asyncio")


@asynccontextmanager
async def kept(
    acp: list[str], target: str, client: RecordingClient, store: Path
) -> AsyncIterator[ClientSideConnection]:
    """`raf acp TARGET --store STORE` (`acp` from `acp_command`), initialized, with `client`
    connected."""
    async with spawn_agent_process(
        client,
        *acp,
        f"tests.cli.targets:{target}",
        "--store",
        str(store),
        env=offline_env(),
        cwd=ROOT,
    ) as (conn, _process):
        info = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        capabilities = info.agent_capabilities
        assert capabilities is not None and capabilities.load_session
        assert capabilities.session_capabilities is not None
        assert capabilities.session_capabilities.list is not None
        yield conn


@dataclass
class _Sessions:
    """The client of a shared connection: each session's updates and questions go to the
    `RecordingClient` of the test that opened it."""

    current: RecordingClient = field(default_factory=RecordingClient)
    """The client of the test running: it also gets the sessions its scenario opens itself."""
    clients: dict[str, RecordingClient] = field(
        default_factory=lambda: dict[str, RecordingClient]()
    )

    def _of(self, session_id: str) -> RecordingClient:
        return self.clients.setdefault(session_id, self.current)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        await self._of(session_id).session_update(session_id, update, **kwargs)

    async def request_permission(
        self, session_id: str, *args: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        return await self._of(session_id).request_permission(session_id, *args, **kwargs)


@asynccontextmanager
async def _serving(
    acp: list[str], target: str, sessions: _Sessions
) -> AsyncIterator[ClientSideConnection]:
    """`raf acp TARGET` (`acp` from `acp_command`) with `sessions` connected and initialized."""
    async with spawn_agent_process(
        sessions, *acp, f"tests.cli.targets:{target}", env=offline_env(), cwd=ROOT
    ) as (conn, _process):
        with anyio.fail_after(TIMEOUT):
            info = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        assert info.agent_info is not None and info.agent_info.name == "raf"
        yield conn


class SharedServers:
    """One `raf acp TARGET` process per target, started at its first use and kept until the
    module's tests end, all driven on one asyncio loop in a thread of its own.

    Each `run` opens a new session, whose updates and questions go to that test's client: a
    test sees nothing of the others. A target's agent is built once per process, so a target
    whose scripted model plays its script once (`slow`, `tools_and_thoughts`) serves one
    test of a module."""

    def __init__(self, portal: BlockingPortal, stack: ExitStack, acp: list[str]) -> None:
        self._portal = portal
        self._stack = stack
        self._acp = acp
        self._servers: dict[str, tuple[ClientSideConnection, _Sessions]] = {}

    def _server(self, target: str) -> tuple[ClientSideConnection, _Sessions]:
        if target not in self._servers:
            sessions = _Sessions()
            serving = self._portal.wrap_async_context_manager(_serving(self._acp, target, sessions))
            self._servers[target] = (self._stack.enter_context(serving), sessions)
        return self._servers[target]

    def run(
        self,
        target: str,
        client: RecordingClient,
        scenario: Callable[[ClientSideConnection, str], Awaitable[None]],
    ) -> None:
        """Run `scenario`, bounded in time, on a new session of `target`'s server, with
        `client` receiving the session's updates and questions."""
        conn, sessions = self._server(target)

        async def bounded() -> None:
            with anyio.fail_after(TIMEOUT):
                sessions.current = client
                session = await conn.new_session(cwd=str(ROOT))
                sessions.clients[session.session_id] = client
                await scenario(conn, session.session_id)

        self._portal.call(bounded)

    def one_prompt(self, target: str, client: RecordingClient, text: str) -> str:
        """Prompt a new session of `target` once; the stop reason."""
        reasons: list[str] = []

        async def scenario(conn: ClientSideConnection, session_id: str) -> None:
            reasons.append(await prompt(conn, session_id, text))

        self.run(target, client, scenario)
        return reasons[0]


@pytest.fixture(scope="module")
def acp_servers(acp_command: list[str]) -> Iterator[SharedServers]:
    """The module's shared `raf acp` servers (see `SharedServers`)."""
    with start_blocking_portal(backend="asyncio") as portal, ExitStack() as stack:
        yield SharedServers(portal, stack, acp_command)
