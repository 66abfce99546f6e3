"""When a run is traced: `instrument()`, the global providers, and the cost of neither."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from opentelemetry.sdk.trace import TracerProvider

from raf import FunctionAgent
from raf.tracing import active, instrument
from tests.tracing.support import recording

pytestmark = pytest.mark.anyio


def test_no_provider_means_no_telemetry() -> None:
    # The API's stand-ins are in effect in the test process: nothing is traced.
    assert active() is None
    with instrument(capture_content=True):
        assert active() is None  # content alone records nothing without a provider


def test_instrument_holds_for_its_block_and_can_turn_tracing_off() -> None:
    provider = TracerProvider()
    with instrument(tracer_provider=provider) as settings:
        assert settings.tracer_provider is provider
        telemetry = active()
        assert telemetry is not None and telemetry.capture is False
        with instrument(enabled=False):
            assert active() is None
        assert active() is not None
    assert active() is None
    provider.shutdown()


async def test_a_run_inside_instrument_off_makes_no_span() -> None:
    agent = FunctionAgent("echo", lambda m: m[-1].text)
    with recording() as recorded:
        with instrument(enabled=False):
            await agent.run("hi")
        assert recorded.spans == []
        await agent.run("hi")
    assert [s.name for s in recorded.spans] == ["invoke_agent echo"]


def test_an_untraced_run_imports_nothing_of_opentelemetry() -> None:
    script = textwrap.dedent(
        """
        import sys, anyio
        from raf import ReactAgent, SequentialBuilder
        from raf.testing import ScriptedProvider, text
        a = ReactAgent("a", ScriptedProvider([text("x")]), "Say x.")
        b = ReactAgent("b", ScriptedProvider([text("y")]), "Say y.")
        flow = SequentialBuilder(id="s").add_agent(a).add_agent(b).build().as_agent()
        assert anyio.run(lambda: flow.run("go").collect()).text == "y"
        print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


def test_runs_with_the_same_providers_share_one_tracer_and_one_set_of_instruments() -> None:
    from opentelemetry.sdk.metrics import MeterProvider

    tracer_provider, meter_provider = TracerProvider(), MeterProvider()
    with instrument(tracer_provider=tracer_provider, meter_provider=meter_provider):
        first, second = active(), active()
    assert first is not None and second is not None and first is not second
    assert first._instruments is second._instruments  # pyright: ignore[reportPrivateUsage]
    with instrument(meter_provider=meter_provider):
        alone = active()
    assert alone is not None
    assert alone._instruments is not first._instruments  # pyright: ignore[reportPrivateUsage]
    tracer_provider.shutdown()
    meter_provider.shutdown()
