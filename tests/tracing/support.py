"""An OpenTelemetry SDK pipeline in memory, for the tracing tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from raf.tracing import instrument


@dataclass
class Recorded:
    """What a traced block recorded."""

    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader

    @property
    def spans(self) -> list[ReadableSpan]:
        """The finished spans, in start order."""
        return sorted(self.exporter.get_finished_spans(), key=lambda s: s.start_time or 0)

    def named(self, name: str) -> list[ReadableSpan]:
        """The finished spans called `name`, in start order."""
        return [s for s in self.spans if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        """The one finished span called `name`."""
        (span,) = self.named(name)
        return span

    def parent(self, span: ReadableSpan) -> ReadableSpan | None:
        """The recorded parent of `span`."""
        if span.parent is None:
            return None
        by_id = {s.context.span_id: s for s in self.spans if s.context is not None}
        return by_id.get(span.parent.span_id)

    def tree(self) -> list[str]:
        """Every span as `"  " * depth + name`, depth-first in start order."""
        spans = self.spans
        lines: list[str] = []

        def add(parent: int | None, depth: int) -> None:
            for span in spans:
                own = span.parent.span_id if span.parent is not None else None
                if own == parent:
                    lines.append("  " * depth + span.name)
                    assert span.context is not None
                    add(span.context.span_id, depth + 1)

        add(None, 0)
        return lines

    def points(self, metric: str) -> list[Any]:
        """The data points of `metric`."""
        data = self.reader.get_metrics_data()
        found: list[Any] = []
        if data is None:
            return found
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for m in scope.metrics:
                    if m.name == metric:
                        found.extend(m.data.data_points)
        return found


@contextmanager
def recording(*, capture_content: bool | None = None) -> Iterator[Recorded]:
    """Trace the runs of the block into memory."""
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    with instrument(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content=capture_content,
    ):
        yield Recorded(exporter, reader)
    tracer_provider.shutdown()
    meter_provider.shutdown()
