"""`raf run --trace`: record the run's OpenTelemetry spans in memory and print their tree.

The spans are those `raf.tracing` makes for any traced run (`invoke_agent`, `superstep`,
`chat`, `execute_tool`, `request_info`), recorded by the OpenTelemetry SDK
(`pip install opentelemetry-sdk`) and printed after the run, each with its duration and what
matters most about it: tokens, finish reason, status, the error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from raf.tracing import instrument

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["add_trace_flag", "span_tree"]

Handler = Callable[[argparse.Namespace, Console], int]

_NEEDS_SDK = (
    "--trace records spans with the OpenTelemetry SDK, which is not installed: "
    "pip install opentelemetry-sdk"
)


def add_trace_flag(command: argparse.ArgumentParser) -> None:
    """Give `command` (`raf run`) a `--trace` flag that prints the run's span tree after it."""
    command.add_argument(
        "--trace",
        action="store_true",
        help="print the span tree of the run after it (needs opentelemetry-sdk)",
    )
    handler: Handler = command.get_default("handler")
    command.set_defaults(handler=partial(_traced, handler))


def _traced(handler: Handler, args: argparse.Namespace, console: Console) -> int:
    if not args.trace:
        return handler(args, console)
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:
        raise SystemExit(_NEEDS_SDK) from None
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        with instrument(tracer_provider=provider):
            return handler(args, console)
    finally:
        # Beside the updates of --json, the tree goes to stderr.
        out = Console(file=sys.stderr) if getattr(args, "json", False) else console
        out.print(span_tree(exporter.get_finished_spans()))
        provider.shutdown()


def span_tree(spans: Sequence[ReadableSpan]) -> Tree:
    """The spans as a tree, children in start order, each labelled with its duration and key
    attributes; spans whose parent was not recorded are roots."""
    ids = {span.context.span_id for span in spans if span.context is not None}
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        parent = span.parent.span_id if span.parent is not None else None
        children.setdefault(parent if parent in ids else None, []).append(span)
    root = Tree("[bold]trace[/]")

    def add(node: Tree, parent: int | None) -> None:
        for span in children.get(parent, []):
            branch = node.add(_label(span))
            if span.context is not None:
                add(branch, span.context.span_id)

    add(root, None)
    return root


def _label(span: ReadableSpan) -> str:
    attributes: dict[str, Any] = dict(span.attributes or {})
    parts = [f"[bold]{escape(span.name)}[/]"]
    if span.start_time is not None and span.end_time is not None:
        parts.append(f"[dim]{(span.end_time - span.start_time) / 1e6:.1f} ms[/]")
    if "gen_ai.usage.input_tokens" in attributes:
        tokens_in = attributes["gen_ai.usage.input_tokens"]
        tokens_out = attributes.get("gen_ai.usage.output_tokens", 0)
        parts.append(f"tokens {tokens_in} in, {tokens_out} out")
    reasons = attributes.get("gen_ai.response.finish_reasons")
    if reasons:
        parts.append(f"finish {escape(','.join(map(str, reasons)))}")
    if attributes.get("raf.run.status") == "waiting":
        parts.append("[yellow]waiting[/]")
    if "raf.request.wait_seconds" in attributes:
        parts.append(f"waited {float(attributes['raf.request.wait_seconds']):.1f} s")
    if attributes.get("raf.cancelled"):
        parts.append("[yellow]cancelled[/]")
    if "error.type" in attributes:
        parts.append(f"[red]✗ {escape(str(attributes['error.type']))}[/]")
    return "  ".join(parts)
