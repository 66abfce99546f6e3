"""Whether a run is traced, and where its spans and metrics go: decided once per run.

A run asks `active()` once, at its start. Without `instrument()` in effect, raf uses
OpenTelemetry's global providers, and only when the application has set one: when the
`opentelemetry` packages were never imported, no provider can have been set, and the check
costs two dictionary look-ups (nothing is imported, nothing is paid per token).
"""

from __future__ import annotations

import os
import sys
import weakref
from contextvars import ContextVar, Token
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

    from raf.tracing.telemetry import Instruments, Telemetry

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "RUNNING",
    "Instrumentation",
    "Instrumented",
    "active",
    "instrument",
]

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The environment variable that opts in to message content on spans (`true`), as
OpenTelemetry's GenAI instrumentations read it."""

_CONTENT_ON = frozenset({"true", "1", "yes", "span_only", "span_and_event"})

_NO_PROVIDERS = frozenset(
    {"ProxyTracerProvider", "NoOpTracerProvider", "_ProxyMeterProvider", "NoOpMeterProvider"}
)
"""The API's stand-ins, in effect until an application sets a provider of an SDK."""


@dataclass(frozen=True, slots=True)
class Instrumentation:
    """How raf traces the runs started where it is in effect (see `instrument`)."""

    tracer_provider: TracerProvider | None = None
    """Where spans go; OpenTelemetry's global tracer provider when None."""
    meter_provider: MeterProvider | None = None
    """Where metrics go; OpenTelemetry's global meter provider when None."""
    capture_content: bool | None = None
    """Record messages, tool arguments and tool results on spans; when None, as the
    `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` environment variable says (off
    unless it is `true`)."""
    enabled: bool = True
    """False: trace nothing, even with global providers set."""


_SETTINGS: ContextVar[Instrumentation | None] = ContextVar("raf_tracing", default=None)
"""The `Instrumentation` in effect; child tasks inherit it, as they inherit the current span."""

RUNNING: ContextVar[Telemetry | None] = ContextVar("raf_telemetry", default=None)
"""The telemetry of the traced run in progress, for model calls made without a `RunContext`
(a pattern's structured calls); set for the run's own tasks only."""


class Instrumented:
    """The handle `instrument()` returns: leaving its `with` block restores what was in effect."""

    __slots__ = ("_token", "settings")

    def __init__(self, settings: Instrumentation) -> None:
        self.settings = settings
        """The settings now in effect."""
        self._token: Token[Instrumentation | None] = _SETTINGS.set(settings)

    def __enter__(self) -> Instrumentation:
        return self.settings

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _SETTINGS.reset(self._token)


def instrument(
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    capture_content: bool | None = None,
    enabled: bool = True,
) -> Instrumented:
    """Trace the raf runs started from here on in this context (and the tasks it starts).

    Without it, raf traces through OpenTelemetry's global providers once the application
    has set them (`opentelemetry.trace.set_tracer_provider(...)`); `instrument` picks other
    providers, opts in to message content, or (`enabled=False`) turns raf's spans off. Called
    alone it stays in effect; as a context manager it holds for the block.

    Args:
        tracer_provider: where spans go (the global tracer provider when None).
        meter_provider: where metrics go (the global meter provider when None).
        capture_content: record messages, tool arguments and results on spans (the
            `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` variable when None).
        enabled: False to trace nothing.

    Example:
        >>> from raf.tracing import instrument
        >>> with instrument(capture_content=True) as settings:
        ...     settings.capture_content
        True
    """
    return Instrumented(
        Instrumentation(
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
            capture_content=capture_content,
            enabled=enabled,
        )
    )


def active() -> Telemetry | None:
    """The telemetry of a run starting now, or None when nothing would record it.

    Called once per run (the root of an agent tree, or a workflow run directly).
    """
    settings = _SETTINGS.get()
    if settings is None:
        modules = sys.modules
        if "opentelemetry.trace" not in modules and "opentelemetry.metrics" not in modules:
            return None  # no provider can have been set: the usual case, and the cheap one
        settings = Instrumentation()
    elif not settings.enabled:
        return None
    tracer_provider = settings.tracer_provider or _global_tracer_provider()
    meter_provider = settings.meter_provider or _global_meter_provider()
    if tracer_provider is None and meter_provider is None:
        return None
    from raf.tracing.telemetry import Telemetry

    capture = settings.capture_content
    if capture is None:
        capture = os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in _CONTENT_ON
    return Telemetry(_instruments(tracer_provider, meter_provider), capture=capture)


def _global_tracer_provider() -> TracerProvider | None:
    module = sys.modules.get("opentelemetry.trace")
    if module is None:
        return None
    provider: Any = module.get_tracer_provider()
    return None if type(provider).__name__ in _NO_PROVIDERS else provider


def _global_meter_provider() -> MeterProvider | None:
    module = sys.modules.get("opentelemetry.metrics")
    if module is None:
        return None
    provider: Any = module.get_meter_provider()
    return None if type(provider).__name__ in _NO_PROVIDERS else provider


# A cache, not state: the tracer and instruments of a pair of providers, made once (an SDK
# warns when an instrument is created twice), forgotten with the providers.
_MADE: weakref.WeakKeyDictionary[Any, dict[Any, Instruments]] = weakref.WeakKeyDictionary()


def _instruments(
    tracer_provider: TracerProvider | None, meter_provider: MeterProvider | None
) -> Instruments:
    from raf.tracing.telemetry import Instruments

    key: Any = tracer_provider if tracer_provider is not None else meter_provider
    inner: Any = meter_provider if tracer_provider is not None else None
    try:
        made = _MADE.setdefault(key, {})
    except TypeError:  # a provider that takes no weak reference: made afresh each run
        return Instruments(tracer_provider, meter_provider)
    found = made.get(inner)
    if found is None:
        found = made[inner] = Instruments(tracer_provider, meter_provider)
    return found
