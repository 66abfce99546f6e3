"""Serve any `IAgent` to ACP (Agent Client Protocol) editors over stdio.

`raf acp MODULE:ATTR` runs `serve_stdio(agent)`: each ACP session is a raf `Session` (its id is the
ACP session id), each prompt a run on it, streamed as session updates (the mapping table is in
`raf.serve.acp.updates`). `session/cancel` cancels the run, and the prompt ends with stop reason
`cancelled`. A run that ends waiting for a human asks through the client's permission request
when the request offers choices, resuming the run with the chosen one in the same turn; else it
asks in a message, and the next prompt answers (see `raf.serve.acp.questions`). A failed run
answers the prompt with a JSON-RPC error naming the error and its agent path.

The SDK (`agent-client-protocol`) runs on asyncio, so the server does too.

Example:
    >>> import raf
    >>> server = AcpServer(raf.FunctionAgent("echo", lambda m: m[-1].text))
    >>> server.agent.id
    'echo'
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import anyio
from acp import PROTOCOL_VERSION, RequestError, run_agent, start_tool_call, update_tool_call
from acp.interfaces import Agent, Client
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    AudioContentBlock,
    ClientCapabilities,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    SessionCapabilities,
    SessionListCapabilities,
    StopReason,
    TextContentBlock,
    TextResourceContents,
    Usage,
)
from pydantic import BaseModel, TypeAdapter

from raf.agent import IAgent
from raf.errors import AgentError, SessionBusy
from raf.messages import ChatMessage
from raf.serve.acp.lines import MAX_LINE_BYTES, check_lines
from raf.serve.acp.questions import as_message, choices_of, permission_options, question_of
from raf.serve.acp.sessions import AcpSessions
from raf.serve.acp.updates import SessionUpdate, TurnUpdates, path_meta
from raf.serve.store_failures import STORE_FAILED, log_failure, store_failed
from raf.serve.threads import ThreadStore
from raf.session import Session
from raf.stores import MemoryCheckpointStore
from raf.updates import AgentResponse, RequestInfoUpdate

PromptBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)
"""A content block of an ACP prompt."""


@dataclass
class _Turn:
    """A prompt running on a session."""

    scope: anyio.CancelScope | None = None
    cancelled: bool = False


class AcpServer:
    """The ACP agent side of an `IAgent`: sessions, prompts, cancellation and questions.

    Args:
        agent: the agent every session runs.
        store: where sessions are kept (any store of `raf.stores`), so an editor can list
            and load them after the server restarts; in memory, for the process's life,
            when omitted.
    """

    def __init__(self, agent: IAgent, store: ThreadStore | None = None) -> None:
        if not isinstance(cast(object, agent), IAgent):
            raise TypeError(f"AcpServer serves an IAgent, got {type(agent).__name__}")
        if store is not None and not isinstance(store, ThreadStore):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                "store must be a checkpoint store with an event log (a store of raf.stores), "
                f"not {type(store).__name__}"
            )
        self.agent = agent
        self._client: Client | None = None
        self._kept = AcpSessions(MemoryCheckpointStore() if store is None else store)
        self._turns: dict[str, _Turn] = {}

    def on_connect(self, conn: Client) -> None:
        """Keep the connection to the client (called by the SDK)."""
        self._client = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        """Agree on the protocol version and say what this agent can do."""
        import raf

        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                # session/resume and session/close are still unstable in the SDK: not offered.
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            agent_info=Implementation(
                name="raf", title=self.agent.metadata.name or self.agent.id, version=raf.__version__
            ),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        """Open a session: a fresh raf `Session` with the same id, kept in the store."""
        with self._store_failing("could not create a session", "then open the session again"):
            session_id = await self._kept.create(cwd)
        return NewSessionResponse(session_id=session_id)

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        """Reopen a kept session, sending its conversation back as message chunks."""
        await self._known(session_id)
        doing = f"could not load session {session_id!r}"
        with self._store_failing(doing, "then load it again"):
            chunks = await self._kept.replay(session_id, self.agent.id)
        for chunk in chunks:
            await self._send(session_id, chunk)
        return LoadSessionResponse()

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        """The kept sessions (in `cwd`, when given), most recently used first."""
        with self._store_failing("could not list the sessions", "then list them again"):
            return ListSessionsResponse(sessions=await self._kept.list(cwd))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """Cancel the session's running turn, if any."""
        state = self._turns.get(session_id)
        if state is not None:
            state.cancelled = True
            if state.scope is not None:
                state.scope.cancel()

    async def _known(self, session_id: str) -> None:
        with self._store_failing(f"could not open session {session_id!r}", "then try again"):
            facts = await self._kept.facts(session_id)
        if facts is None:
            raise RequestError.invalid_params(
                {"sessionId": session_id, "details": "no such session; call session/list"}
            )

    async def prompt(
        self, session_id: str, prompt: list[PromptBlock], **kwargs: Any
    ) -> PromptResponse:
        """Run the agent on the prompt, streaming the run as session updates."""
        if session_id in self._turns:
            raise RequestError.invalid_request(
                {"sessionId": session_id, "details": "a prompt is already running on it"}
            )
        text = _prompt_text(prompt)
        if not text.strip():
            raise RequestError.invalid_params(
                {"prompt": "the prompt has no text: send a text block (or a text resource)"}
            )
        # Only running turns are kept in memory; sessions are in the store.
        state = self._turns[session_id] = _Turn()
        try:
            await self._known(session_id)
            return await self._prompt(session_id, text, state)
        finally:
            del self._turns[session_id]

    async def _prompt(self, session_id: str, text: str, state: _Turn) -> PromptResponse:
        if state.cancelled:  # cancelled before it started
            return PromptResponse(stop_reason="cancelled")
        stop: StopReason = "cancelled"
        usage: Usage | None = None
        updates = TurnUpdates()
        opened = False
        raised: BaseException | None = None
        with anyio.CancelScope() as scope:
            state.scope = scope
            try:
                async with self._kept.hold(session_id, text) as thread:
                    opened = True
                    try:
                        stop, usage = await self._turn(session_id, thread.session, text, updates)
                    except BaseException as exc:
                        raised = exc
                        raise
            except SessionBusy as exc:
                raise RequestError.invalid_request(
                    {"sessionId": session_id, "details": f"{exc}: another editor runs it"}
                ) from exc
            except Exception as exc:
                if exc is raised:  # the turn's own failure: the session was saved
                    raise
                # The store failed to open the session, or to save it after the turn (the
                # turn's own error, if any, is the store's error's context in the log).
                doing = f"could not {'save' if opened else 'open'} session {session_id!r}"
                then = "then send the prompt again" + (": this turn is not kept" if opened else "")
                raise self._store_error(doing, then, exc) from exc
            finally:
                state.scope = None
        if scope.cancelled_caught or state.cancelled:
            await self._close(session_id, updates)
            return PromptResponse(stop_reason="cancelled", usage=usage)
        return PromptResponse(stop_reason=stop, usage=usage)

    @contextmanager
    def _store_failing(self, doing: str, then: str) -> Generator[None]:
        """Turn a failure of the store in the block into the request's JSON-RPC error."""
        try:
            yield
        except RequestError:
            raise
        except Exception as exc:
            raise self._store_error(doing, then, exc) from exc

    def _store_error(self, doing: str, then: str, error: Exception) -> RequestError:
        """The JSON-RPC error of a request whose store failed (logged with its traceback)."""
        said = f"{store_failed(self._kept.store, doing, error)}, {then}"
        log_failure(f"ACP agent {self.agent.id!r}: {said}", error)
        return RequestError(-32603, said, {"error": type(error).__name__, "code": STORE_FAILED})

    async def _close(self, session_id: str, updates: TurnUpdates) -> None:
        """End what the turn left running (it failed or was cancelled)."""
        for update in [*updates.rest(), *updates.closed()]:
            await self._send(session_id, update)

    async def _turn(
        self, session_id: str, session: Session, text: str, updates: TurnUpdates
    ) -> tuple[StopReason, Usage]:
        messages: str | list[ChatMessage] = text
        later: str | None = None  # the prompt, when it comes after a question asked again
        asked = _asking(session)
        if asked:
            # A question the user dismissed (or cancelled) is still open: the prompt answers
            # it only by naming a choice; else it is asked again, and the prompt runs after.
            answers: list[ChatMessage] = []
            for request in asked:
                choices = choices_of(request.payload) or []
                named = [c for c in choices if c.strip().lower() == text.strip().lower()]
                answer = named[0] if named and later is None else None
                if answer is not None:
                    _set_asking(session, request, asking=False)
                else:
                    later = text
                    answer = await self._ask(session_id, session, request)
                    if answer is None:
                        await self._send(session_id, updates.say(_still_open(request)))
                        return "cancelled", Usage(input_tokens=0, output_tokens=0, total_tokens=0)
                answers.append(ChatMessage.tool_result(request.request_id, json.dumps(answer)))
            messages = answers
        input_tokens = output_tokens = 0
        while True:
            response = await self._run(session_id, session, messages, updates)
            input_tokens += response.usage.input_tokens
            output_tokens += response.usage.output_tokens
            usage = Usage(
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                total_tokens=input_tokens + output_tokens,
            )
            if response.status == "completed":
                for chunk in updates.unsaid(response.messages):
                    await self._send(session_id, chunk)
                value = response.value
                if value is not None:
                    await self._send(session_id, updates.say(_value_block(value)))
                if later is not None:  # the prompt that came while the question was open
                    messages, later = later, None
                    continue
                return "end_turn", usage
            askable = [r for r in response.pending if choices_of(r.payload) is not None]
            if not askable:  # free-text questions: the next prompt answers them
                for request in response.pending:
                    await self._send(session_id, updates.say(as_message(request)))
                return "end_turn", usage
            answers = []
            for request in askable:
                answer = await self._ask(session_id, session, request)
                if answer is None:  # the user dismissed the question: the turn ends there
                    return "cancelled", usage
                answers.append(ChatMessage.tool_result(request.request_id, json.dumps(answer)))
            messages = answers

    async def _run(
        self,
        session_id: str,
        session: Session,
        messages: str | list[ChatMessage],
        updates: TurnUpdates,
    ) -> AgentResponse:
        run = self.agent.run(messages, session=session)
        try:
            async with run as stream:
                async for update in stream:
                    for acp_update in updates.map(update):
                        await self._send(session_id, acp_update)
            for chunk in updates.rest():
                await self._send(session_id, chunk)
        except AgentError as exc:
            await self._close(session_id, updates)
            raise RequestError(
                -32603,
                f"{type(exc).__name__}: {exc}",
                {"error": type(exc).__name__, "path": list(exc.path)},
            ) from exc
        assert run.response is not None  # the stream ended without raising
        return run.response

    async def _ask(
        self, session_id: str, session: Session, request: RequestInfoUpdate
    ) -> str | None:
        """Ask a request that offers choices by a permission request: the chosen choice, or
        None when the user dismissed it. Until it is answered the session keeps it as asked,
        so the next prompt asks it again rather than answering it (a cancel included)."""
        _set_asking(session, request, asking=True)
        options = permission_options(choices_of(request.payload) or [])
        client = self._connected()
        key = f"request:{request.request_id}"
        title = question_of(request)
        meta = path_meta(request.path)
        start = start_tool_call(
            key, title, kind="think", status="pending", raw_input=request.payload
        )
        await self._send(session_id, start.model_copy(update={"field_meta": meta}))
        asked = update_tool_call(key, title=title, status="pending", raw_input=request.payload)
        reply = await client.request_permission(
            session_id=session_id, tool_call=asked, options=options
        )
        outcome = reply.outcome
        if not isinstance(outcome, AllowedOutcome):
            await self._send(session_id, update_tool_call(key, status="failed"))
            return None
        chosen = [o.name for o in options if o.option_id == outcome.option_id]
        if not chosen:
            raise RequestError.invalid_params(
                {"optionId": outcome.option_id, "details": f"not an option of {key!r}"}
            )
        answer = chosen[0]
        _set_asking(session, request, asking=False)
        await self._send(session_id, update_tool_call(key, status="completed", raw_output=answer))
        return answer

    async def _send(self, session_id: str, update: SessionUpdate) -> None:
        await self._connected().session_update(session_id=session_id, update=update)

    def _connected(self) -> Client:
        if self._client is None:
            raise RuntimeError("the ACP server is not connected to a client")
        return self._client


async def serve_stdio(agent: IAgent, store: ThreadStore | None = None) -> None:
    """Serve `agent` over this process's stdin and stdout until the client closes stdin.

    Sessions go to `store` when given (see `AcpServer`). The protocol owns stdout: whatever
    else the agent's code prints goes to stderr instead.
    """
    server = AcpServer(agent, store)
    # The SDK names the streams from the client's side: it reads the client's output.
    output_stream, input_stream = await _protocol_streams()
    # Lines that are not a JSON object are answered here; the SDK reads the others.
    checked = type(output_stream)(limit=MAX_LINE_BYTES + 1)  # lines are bounded already
    async with anyio.create_task_group() as group:
        group.start_soon(check_lines, output_stream, checked, input_stream)
        # The SDK calls only the methods an agent defines, and answers the others with
        # "method not found"; `AcpServer` defines those it supports.
        await run_agent(cast(Agent, server), input_stream, checked)
        group.cancel_scope.cancel()


async def _protocol_streams() -> Any:
    from acp import stdio_streams

    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    stdout, sys.stdout = sys.stdout, cast(Any, protocol)
    try:
        return await stdio_streams(limit=MAX_LINE_BYTES + 1)
    finally:
        sys.stdout = stdout


def _prompt_text(blocks: list[PromptBlock]) -> str:
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"[{block.name}]({block.uri})")
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                parts.append(f'<resource uri="{resource.uri}">\n{resource.text}\n</resource>')
    return "\n".join(parts)


ASKING_KEY = "#acp-asking"
"""The session key of the questions asked by a permission request and not answered yet."""

_REQUESTS = TypeAdapter(list[RequestInfoUpdate])


def _asking(session: Session) -> list[RequestInfoUpdate]:
    return session.get_as(ASKING_KEY, _REQUESTS) or []


def _set_asking(session: Session, request: RequestInfoUpdate, *, asking: bool) -> None:
    kept = [r for r in _asking(session) if r.request_id != request.request_id]
    if asking:
        kept.append(request)
    if kept:
        session.set(ASKING_KEY, kept)
    else:
        session.pop(ASKING_KEY)


def _still_open(request: RequestInfoUpdate) -> str:
    choices = ", ".join(choices_of(request.payload) or [])
    return (
        f"**{question_of(request)}** is still open, so the prompt was not sent: answer it "
        f"(one of: {choices}), then send the prompt again."
    )


def _value_block(value: Any) -> str:
    if isinstance(value, BaseModel):
        rendered = value.model_dump_json(indent=2)
    else:
        rendered = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return f"```json\n{rendered}\n```"
