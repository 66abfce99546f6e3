"""End to end: spans exported with the OTLP/HTTP exporter to a receiver on loopback."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from raf import ReactAgent, SequentialBuilder
from raf.testing import ScriptedProvider, text, tool_calls
from raf.tools import tool
from raf.tracing import instrument

pytestmark = pytest.mark.anyio


class _Receiver(BaseHTTPRequestHandler):
    """Accepts `POST /v1/traces` (protobuf), keeping every decoded request on the server."""

    server: _Server

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.server.received.append((self.path, self.headers["Content-Type"], request))
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    received: list[tuple[str, str, ExportTraceServiceRequest]]


@contextmanager
def otlp_receiver() -> Iterator[_Server]:
    """A small OTLP/HTTP trace receiver on a free loopback port, for the block."""
    server = _Server(("127.0.0.1", 0), _Receiver)
    server.received = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_spans_reach_an_otlp_receiver_over_http() -> None:
    calc = ReactAgent(
        "calc",
        ScriptedProvider([tool_calls(("add", {"a": 1, "b": 2})), text("3")]),
        "Add.",
        tools=[add],
    )
    flow = SequentialBuilder(id="flow").add_agent(calc).build().as_agent()
    with otlp_receiver() as server:
        port = server.server_address[1]
        exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces", timeout=10)
        provider = TracerProvider(resource=Resource.create({"service.name": "raf-test"}))
        provider.add_span_processor(BatchSpanProcessor(exporter))
        with instrument(tracer_provider=provider):
            await flow.run("1 + 2?")
        provider.shutdown()  # flushes the batch
    paths = {(path, kind) for path, kind, _ in server.received}
    assert paths == {("/v1/traces", "application/x-protobuf")}
    spans = [
        span
        for _, _, request in server.received
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    (resource,) = {
        attribute.value.string_value
        for _, _, request in server.received
        for r in request.resource_spans
        for attribute in r.resource.attributes
        if attribute.key == "service.name"
    }
    assert resource == "raf-test"
    names = sorted(span.name for span in spans)
    assert names == [
        "chat scripted",
        "chat scripted",
        "execute_tool add",
        "invoke_agent calc",
        "invoke_agent flow",
        "superstep flow",
    ]
    by_id = {span.span_id: span for span in spans}
    tool_span = next(s for s in spans if s.name == "execute_tool add")
    agent_span = by_id[tool_span.parent_span_id]
    assert agent_span.name == "invoke_agent calc"
    attributes = {a.key: a.value.string_value for a in tool_span.attributes}
    assert attributes["gen_ai.tool.name"] == "add"
    assert attributes["raf.agent.path"] == "flow/calc"
    assert len({span.trace_id for span in spans}) == 1
