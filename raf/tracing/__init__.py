"""OpenTelemetry traces and metrics of raf runs, in the GenAI semantic conventions.

`pip install 'raf[otel]'` brings `opentelemetry-api`; the application adds an SDK and an
exporter and sets its providers, as for any instrumented library. From then on every run
makes spans: `invoke_agent` per agent (root and nested), `chat` per model call,
`execute_tool` per tool call, one per superstep and one per answered request for a human,
nested as the agent tree is; and two histograms, `gen_ai.client.token.usage` and
`gen_ai.client.operation.duration`. Message content is recorded only when opted in.

Without a provider set nothing is recorded and (almost) nothing is paid: a run checks once,
at its start. `instrument()` picks providers other than the global ones, opts in to content,
or turns raf's spans off; see docs/tracing.md.

Example:
    >>> from raf.tracing import instrument
    >>> with instrument(enabled=False):
    ...     pass  # runs started here are not traced
"""

from raf.tracing.settings import CAPTURE_CONTENT_ENV as CAPTURE_CONTENT_ENV
from raf.tracing.settings import Instrumentation as Instrumentation
from raf.tracing.settings import Instrumented as Instrumented
from raf.tracing.settings import active as active
from raf.tracing.settings import instrument as instrument

__all__ = ["CAPTURE_CONTENT_ENV", "Instrumentation", "Instrumented", "active", "instrument"]
