"""The spans and metrics of one traced run, in the OpenTelemetry GenAI semantic conventions.

A run that `raf.tracing.active()` found traced carries a `Telemetry` in its `Turn`; the hooks
in the agent, the ReAct loop, the engine and the requests for humans hand it the work they
are about to await, and it awaits that work inside a span made current, so the spans of
nested agents, of concurrent branches (child tasks inherit the current span) and of nested
workflows nest as the agent tree does.

Spans (their names as the conventions write them):

    invoke_agent {name}      every agent run, root or nested (INTERNAL)
    invoke_workflow {id}     a workflow run directly, not as an agent
    superstep {workflow}     each superstep of the engine
    chat {model}             each model call of a ReAct loop (CLIENT)
    execute_tool {name}      each tool call
    request_info {node}      a request for a human, from its asking to its answer

Failures mark the span they came out of: status ERROR, `error.type` (the exception's class
name; `tool_error` for a tool's invalid call) and the exception as an event, with the agent
path (`raf.agent.path`) on every span. A cancelled span gets `raf.cancelled`, and no error.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Generator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
from opentelemetry import trace
from opentelemetry.trace import (
    Link,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
)

from raf._streaming import unwrap_group
from raf.providers.base import Completion
from raf.traced import Answer, R, Status_
from raf.traced import Stepping as Stepping
from raf.tracing.content import messages_json, output_json
from raf.tracing.settings import RUNNING
from raf.tracing.tool_spans import TOOL_SPAN, ToolSpan

if TYPE_CHECKING:
    from opentelemetry.metrics import Histogram, MeterProvider
    from opentelemetry.trace import Tracer, TracerProvider
    from opentelemetry.util.types import AttributeValue

    from raf._tool_data import ToolResult
    from raf.agent import IAgent
    from raf.messages import ChatMessage, ToolCallContent
    from raf.session import Session
    from raf.traced import ModelNamed
    from raf.updates import AgentPath, AgentResponse, Usage

__all__ = ["Instruments", "Stepping", "Telemetry"]

SESSION_KEY = "#trace"
"""The session key of what tracing keeps between runs: the last run's span (a run that
answers a waiting one, or resumes its checkpoint, links to it) and when open requests were
asked. Agent ids hold no `#`, so no agent's key can be this one."""

_KEPT_REQUESTS = 256
"""Asked requests remembered per session (the oldest are forgotten first)."""

TOKEN_BUCKETS = (
    1,
    4,
    16,
    64,
    256,
    1024,
    4096,
    16384,
    65536,
    262144,
    1048576,
    4194304,
    16777216,
    67108864,
)
"""The conventions' advised buckets of `gen_ai.client.token.usage`."""

DURATION_BUCKETS = (
    0.01,
    0.02,
    0.04,
    0.08,
    0.16,
    0.32,
    0.64,
    1.28,
    2.56,
    5.12,
    10.24,
    20.48,
    40.96,
    81.92,
)
"""The conventions' advised buckets of `gen_ai.client.operation.duration`, in seconds."""

Attributes = dict[str, "AttributeValue"]


class Instruments:
    """The tracer and the two histograms of a pair of providers (made once, shared by runs)."""

    __slots__ = ("duration", "tokens", "tracer")

    def __init__(
        self, tracer_provider: TracerProvider | None, meter_provider: MeterProvider | None
    ) -> None:
        from raf import __version__

        self.tracer: Tracer = (
            tracer_provider.get_tracer("raf", __version__)
            if tracer_provider is not None
            else trace.NoOpTracer()
        )
        self.tokens: Histogram | None = None
        self.duration: Histogram | None = None
        if meter_provider is not None:
            meter = meter_provider.get_meter("raf", __version__)
            self.tokens = meter.create_histogram(
                "gen_ai.client.token.usage",
                unit="{token}",
                description="Number of input and output tokens used.",
                explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
            )
            self.duration = meter.create_histogram(
                "gen_ai.client.operation.duration",
                unit="s",
                description="GenAI operation duration.",
                explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
            )


class Telemetry:
    """The spans and metrics of one traced run (see the module docstring): the core's
    `raf.traced.RunTelemetry` on OpenTelemetry.

    Made by `raf.tracing.active()` when a run starts; `capture` says whether message content
    is recorded.
    """

    __slots__ = ("_agents", "_instruments", "_providers", "_tracer", "capture")

    def __init__(self, instruments: Instruments, *, capture: bool) -> None:
        self._instruments = instruments
        self._tracer = instruments.tracer
        self.capture = capture
        """Record messages, tool arguments and tool results on spans."""
        self._agents: dict[object, Attributes] = {}
        self._providers: dict[object, Attributes] = {}

    # --- agents ---------------------------------------------------------------------------

    async def run(
        self,
        agent: IAgent,
        path: AgentPath,
        session: Session,
        messages: Sequence[ChatMessage],
        work: Awaitable[AgentResponse[Any]],
    ) -> AgentResponse[Any]:
        """Await `work`, the run of the root `agent`, in its `invoke_agent` span: a run
        that answers a waiting one links to it, and one that waits is kept for its answer."""
        kept = _kept(session)
        previous = _span_context(kept.get("run")) if kept.get("waiting") else None
        links = [Link(previous, {"raf.link": "resumes"})] if previous is not None else []
        token = RUNNING.set(self)
        try:
            return await self._agent(agent, path, session, messages, work, links=links, root=True)
        finally:
            RUNNING.reset(token)

    def agent(
        self,
        agent: IAgent,
        path: AgentPath,
        session: Session,
        messages: Sequence[ChatMessage],
        work: Awaitable[AgentResponse[Any]],
    ) -> Awaitable[AgentResponse[Any]]:
        """Await `work`, the run of the nested `agent` at `path`, in its `invoke_agent` span."""
        return self._agent(agent, path, session, messages, work)

    async def _agent(
        self,
        agent: IAgent,
        path: AgentPath,
        session: Session,
        messages: Sequence[ChatMessage],
        work: Awaitable[AgentResponse[Any]],
        *,
        links: Sequence[Link] = (),
        root: bool = False,
    ) -> AgentResponse[Any]:
        described = self._describe(agent)
        attributes: Attributes = {
            **described,
            "raf.agent.path": "/".join(path),
            "gen_ai.conversation.id": session.id,
        }
        name = f"invoke_agent {described['gen_ai.agent.name']}"
        with self._span(name, SpanKind.INTERNAL, attributes, links=links) as span:
            if root:
                _remember_run(session, span, waiting=False)
            if self.capture:
                span.set_attribute("gen_ai.input.messages", messages_json(messages))
            response = await work
            usage = response.usage
            span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
            span.set_attribute("raf.run.status", response.status)
            if response.status == "waiting":
                span.set_attribute("raf.requests.pending", [r.request_id for r in response.pending])
                if root:
                    _remember_run(session, span, waiting=True)
            if self.capture:
                span.set_attribute("gen_ai.output.messages", messages_json(response.messages))
        return response

    async def workflow(
        self, workflow_id: str, session: Session, *, resumed: bool, work: Awaitable[Status_]
    ) -> Status_:
        """Await `work`, a workflow run directly (not as an agent), in its `invoke_workflow`
        span; a run resumed from a checkpoint links to the run that saved it."""
        previous = _span_context(_kept(session).get("run")) if resumed else None
        links = [Link(previous, {"raf.link": "resumes"})] if previous is not None else []
        attributes: Attributes = {
            "gen_ai.operation.name": "invoke_workflow",
            "gen_ai.workflow.name": workflow_id,
            "raf.agent.path": workflow_id,
            "gen_ai.conversation.id": session.id,
        }
        token = RUNNING.set(self)
        try:
            return await self._workflow(workflow_id, session, attributes, links, work)
        finally:
            RUNNING.reset(token)

    async def _workflow(
        self,
        workflow_id: str,
        session: Session,
        attributes: Attributes,
        links: Sequence[Link],
        work: Awaitable[Status_],
    ) -> Status_:
        with self._span(
            f"invoke_workflow {workflow_id}", SpanKind.INTERNAL, attributes, links=links
        ) as span:
            _remember_run(session, span, waiting=False)
            status = await work
            span.set_attribute("raf.run.status", status)
            if status == "failed":
                span.set_status(Status(StatusCode.ERROR, "a node failed"))
            _remember_run(session, span, waiting=status == "waiting")
        return status

    def _describe(self, agent: IAgent) -> Attributes:
        """The agent's own attributes, read once per run (its metadata may be costly)."""
        found: Attributes | None = self._agents.get(agent)
        if found is None:
            metadata = agent.metadata
            found = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.id": metadata.id,
                "gen_ai.agent.name": metadata.name,
                "raf.agent.kind": metadata.kind,
            }
            if metadata.description:
                found["gen_ai.agent.description"] = metadata.description
            self._agents[agent] = found
        return found

    # --- model and tool calls -------------------------------------------------------------

    async def chat(
        self,
        provider: ModelNamed,
        path: AgentPath | None,
        session: Session | None,
        messages: Sequence[ChatMessage],
        work: Awaitable[tuple[Answer, Usage]],
    ) -> tuple[Answer, Usage]:
        """Await `work`, one model call, in its `chat` span, and record its metrics (a call
        made outside an agent's loop, a pattern's, has no path or session of its own: its
        parent span tells where it was made)."""
        described = self._provider(provider)
        model = provider.model
        attributes: Attributes = dict(described)
        if path is not None:
            attributes["raf.agent.path"] = "/".join(path)
        if session is not None:
            attributes["gen_ai.conversation.id"] = session.id
        measured: Attributes = dict(described)
        del measured["gen_ai.request.stream"]
        started = time.perf_counter()
        try:
            with self._span(f"chat {model}", SpanKind.CLIENT, attributes) as span:
                if self.capture:
                    span.set_attribute("gen_ai.input.messages", messages_json(messages))
                answer, usage = await work
                completion = answer if isinstance(answer, Completion) else Completion()
                if completion.model:
                    span.set_attribute("gen_ai.response.model", completion.model)
                    measured["gen_ai.response.model"] = completion.model
                if completion.response_id:
                    span.set_attribute("gen_ai.response.id", completion.response_id)
                if completion.finish_reason:
                    span.set_attribute("gen_ai.response.finish_reasons", [completion.finish_reason])
                span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
                span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
                if self.capture:
                    if not isinstance(answer, Completion):
                        completion.text = str(answer)
                    span.set_attribute("gen_ai.output.messages", _answer_json(completion))
        except BaseException as exc:
            error = unwrap_group(exc)
            if isinstance(error, Exception):
                measured["error.type"] = type(error).__qualname__
                self._measure(measured, started, None)
            raise
        self._measure(measured, started, usage)
        return answer, usage

    def _provider(self, provider: ModelNamed) -> Attributes:
        """The provider's attributes, read once per run."""
        found: Attributes | None = self._providers.get(provider)
        if found is None:
            base_url = getattr(provider, "base_url", None)
            name = "openai" if isinstance(base_url, str) else "_OTHER"
            found = {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": name,
                "gen_ai.system": name,
                "gen_ai.request.model": provider.model,
                "gen_ai.request.stream": True,
            }
            if isinstance(base_url, str):
                found.update(_server(base_url))
            self._providers[provider] = found
        return found

    def _measure(self, attributes: Attributes, started: float, usage: Usage | None) -> None:
        instruments = self._instruments
        if instruments.duration is not None:
            instruments.duration.record(time.perf_counter() - started, attributes)
        if instruments.tokens is not None and usage is not None:
            instruments.tokens.record(
                usage.input_tokens, {**attributes, "gen_ai.token.type": "input"}
            )
            instruments.tokens.record(
                usage.output_tokens, {**attributes, "gen_ai.token.type": "output"}
            )

    async def tool(
        self, call: ToolCallContent, path: AgentPath, work: Awaitable[ToolResult]
    ) -> ToolResult:
        """Await `work`, one tool call, in its `execute_tool` span."""
        attributes: Attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.call_id,
            "gen_ai.tool.type": "function",
            "raf.agent.path": "/".join(path),
        }
        with self._span(f"execute_tool {call.name}", SpanKind.INTERNAL, attributes) as span:
            if self.capture:
                span.set_attribute("gen_ai.tool.call.arguments", call.arguments)
            current = ToolSpan(span)
            token = TOOL_SPAN.set(current)
            try:
                result = await work
            finally:
                TOOL_SPAN.reset(token)
            if result.is_error:
                if not current.typed:
                    span.set_attribute("error.type", "tool_error")
                span.set_status(Status(StatusCode.ERROR, _short(result.text)))
            if self.capture:
                span.set_attribute("gen_ai.tool.call.result", result.text)
        return result

    # --- the engine -----------------------------------------------------------------------

    async def superstep(
        self,
        run: Stepping,
        workflow_id: str,
        index: int,
        nodes: Sequence[str],
        work: Awaitable[R],
        *,
        resumed: bool = False,
    ) -> R:
        """Await `work`, superstep `index` of a workflow run, in its `superstep` span."""
        attributes: Attributes = {
            "raf.workflow.id": workflow_id,
            "raf.superstep.index": index,
            "raf.superstep.nodes": list(nodes),
            "raf.agent.path": "/".join(run.scope),
        }
        if resumed:
            attributes["raf.superstep.resumed"] = True
        with self._span(f"superstep {workflow_id}", SpanKind.INTERNAL, attributes) as span:
            status = await work
            failure = run.failure
            if status == "failed" and failure is not None:
                node_id, error = failure
                span.set_attribute("error.type", type(error).__qualname__)
                span.set_attribute("raf.node.id", node_id)
                span.record_exception(error)
                span.set_status(Status(StatusCode.ERROR, f"node {node_id!r}: {_describe(error)}"))
        return status

    def asked(self, session: Session, request_id: str, node_id: str, scope: AgentPath) -> None:
        """A node asked a human `request_id`: note when, and by which span (the wait's span
        is made when the answer comes, maybe in another run or process)."""
        span = trace.get_current_span()
        span.add_event("raf.request_info", {"raf.request.id": request_id, "raf.node.id": node_id})
        kept = _kept(session)
        asked: dict[str, Any] = dict(kept.get("asked") or {})
        if request_id in asked:
            return
        context = span.get_span_context()
        asked[request_id] = [time.time_ns(), *_ids(context)]
        while len(asked) > _KEPT_REQUESTS:
            del asked[next(iter(asked))]
        session.set(SESSION_KEY, {**kept, "asked": asked})

    def answered(self, session: Session, request_id: str, node_id: str, scope: AgentPath) -> None:
        """The answer to `request_id` reached its node: a `request_info` span from the asking
        to now (the waiting time), linked to the span that asked."""
        kept = _kept(session)
        asked: dict[str, Any] = dict(kept.get("asked") or {})
        entry = asked.pop(request_id, None)
        if not isinstance(entry, list) or len(entry) != 3:  # pyright: ignore[reportUnknownArgumentType]
            return
        session.set(SESSION_KEY, {**kept, "asked": asked})
        at, trace_id, span_id = entry  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(at, int):
            return
        asker = _span_context([trace_id, span_id])  # pyright: ignore[reportUnknownArgumentType]
        now = time.time_ns()
        span = self._tracer.start_span(
            f"request_info {node_id}",
            kind=SpanKind.INTERNAL,
            attributes={
                "raf.request.id": request_id,
                "raf.node.id": node_id,
                "raf.agent.path": "/".join(scope),
                "raf.request.wait_seconds": max(0, now - at) / 1e9,
            },
            links=[Link(asker, {"raf.link": "asked"})] if asker is not None else (),
            start_time=min(at, now),
        )
        span.end(end_time=now)

    # --- spans ----------------------------------------------------------------------------

    @contextmanager
    def _span(
        self,
        name: str,
        kind: SpanKind,
        attributes: Attributes,
        *,
        links: Sequence[Link] = (),
    ) -> Generator[Span]:
        """A span, current in the block, ended after it; a failure marks it."""
        span = self._tracer.start_span(
            name,
            kind=kind,
            attributes=attributes,
            links=links,
            record_exception=False,
            set_status_on_exception=False,
        )
        try:
            with trace.use_span(
                span, end_on_exit=False, record_exception=False, set_status_on_exception=False
            ):
                yield span
        except BaseException as exc:
            _failed(span, exc)
            raise
        finally:
            span.end()


def _failed(span: Span, exc: BaseException) -> None:
    error = unwrap_group(exc)
    if isinstance(error, Exception):
        span.set_attribute("error.type", type(error).__qualname__)
        span.record_exception(error)
        span.set_status(Status(StatusCode.ERROR, _describe(error)))
    elif isinstance(error, anyio.get_cancelled_exc_class()):
        span.set_attribute("raf.cancelled", True)


def _describe(error: BaseException) -> str:
    return _short(f"{type(error).__name__}: {error}")


def _short(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _answer_json(completion: Completion) -> str:
    from raf.react.loop import assistant_message

    return output_json(assistant_message(completion, None), completion.finish_reason)


def _server(base_url: str) -> Attributes:
    """`server.address` and `server.port` of a base URL."""
    try:
        parts = urlsplit(base_url)
        port = parts.port
    except ValueError:
        return {}
    if not parts.hostname:
        return {}
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    return {"server.address": parts.hostname, "server.port": port}


def _kept(session: Session) -> Mapping[str, Any]:
    kept: object = session.get(SESSION_KEY)
    return kept if isinstance(kept, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def _remember_run(session: Session, span: Span, *, waiting: bool) -> None:
    """Keep `span` as the session's last run (one that waits is linked by its answer)."""
    context = span.get_span_context()
    if not context.is_valid:
        return
    session.set(SESSION_KEY, {**_kept(session), "run": _ids(context), "waiting": waiting})


def _ids(context: SpanContext) -> list[str]:
    return [f"{context.trace_id:032x}", f"{context.span_id:016x}"]


def _span_context(ids: object) -> SpanContext | None:
    """The span context `_ids` wrote, or None when `ids` is not what it writes."""
    if not isinstance(ids, list) or len(ids) != 2:  # pyright: ignore[reportUnknownArgumentType]
        return None
    trace_id, span_id = ids  # pyright: ignore[reportUnknownVariableType]
    try:
        context = SpanContext(
            int(str(trace_id), 16),  # pyright: ignore[reportUnknownArgumentType]
            int(str(span_id), 16),  # pyright: ignore[reportUnknownArgumentType]
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
    except ValueError:
        return None
    return context if context.is_valid else None
