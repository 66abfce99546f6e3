"""ReactAgent checks its arguments where they are given, and logs what it swallows."""

from __future__ import annotations

import logging

import pytest
from pydantic import BaseModel

from raf.providers.openai import OpenAIProvider, create_client
from raf.providers.retry import RetryPolicy
from raf.react import ReactAgent
from raf.testing import ScriptedOpenAIServer, ScriptedProvider, error, text, tool_calls
from raf.tools import tool


class Answer(BaseModel):
    city: str


@tool
def one_tool(city: str) -> str:
    """Look a city up."""
    return city


def _provider() -> ScriptedProvider:
    return ScriptedProvider([text("ok")])


@pytest.mark.parametrize(
    ("kwargs", "error_type", "message"),
    [
        (
            {"provider": "gpt-4o"},
            TypeError,
            "provider must be an LlmProvider, not the str 'gpt-4o'; for a model name pass "
            'OpenAIProvider(client, "gpt-4o")',
        ),
        ({"provider": object()}, TypeError, 'OpenAIProvider(client, "gpt-4o-mini")'),
        (
            {"instructions": 42},
            TypeError,
            "instructions must be a str (the system message), got int",
        ),
        (
            {"tools": one_tool},
            TypeError,
            "tools must be a sequence of tools; pass tools=[one_tool]",
        ),
        ({"tools": len}, TypeError, "pass tools=[len]"),
        ({"tools": "one_tool"}, TypeError, "tools must be a sequence (a list or tuple)"),
        ({"output_schema": dict}, TypeError, "output_schema must be a pydantic model class"),
        ({"output_schema": Answer(city="x")}, TypeError, "must be a pydantic model class"),
        ({"max_rounds": 0}, ValueError, "max_rounds must be an int of at least 1, not 0"),
        ({"output_mode": "json"}, ValueError, "output_mode must be 'tool' or 'native'"),
        ({"output_mode": "native"}, ValueError, "pass output_schema=YourModel too"),
    ],
)
def test_each_bad_argument_fails_at_the_call_saying_what_to_pass(
    kwargs: dict[str, object], error_type: type[Exception], message: str
) -> None:
    arguments: dict[str, object] = {"provider": _provider(), "instructions": "Be nice."}
    arguments.update(kwargs)
    with pytest.raises(error_type) as caught:
        ReactAgent("r", **arguments)  # type: ignore[arg-type]
    assert message in str(caught.value)
    assert "ReactAgent 'r'" in str(caught.value)


@pytest.mark.anyio
async def test_a_tool_that_raises_is_one_warning_line_with_its_traceback_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @tool
    def broken(city: str) -> str:
        """Always fails."""
        raise RuntimeError(f"no data for {city}")

    provider = ScriptedProvider([tool_calls(("broken", {"city": "Oslo"})), text("sorry")])
    agent = ReactAgent("r", provider, "Use tools.", tools=[broken])
    with caplog.at_level(logging.DEBUG, logger="raf"):
        assert (await agent.run("Oslo?").collect()).text == "sorry"
    records = [r for r in caplog.records if r.name == "raf" and "broken" in r.getMessage()]
    warning, debug = records
    assert warning.levelno == logging.WARNING and warning.exc_info is None
    assert "tool 'broken' raised RuntimeError: no data for Oslo" in warning.getMessage()
    assert debug.levelno == logging.DEBUG and debug.exc_info is not None
    assert "no data for Oslo" in str(debug.exc_info[1])
    assert "raise RuntimeError" in caplog.text  # the traceback itself, at DEBUG


@pytest.mark.anyio
async def test_provider_retries_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    fast = RetryPolicy(initial_delay=0.001, max_delay=0.001, jitter=False)
    async with (
        ScriptedOpenAIServer([error(503, "overloaded"), text("ok")]) as server,
        create_client(server.base_url, "test-key") as client,
    ):
        agent = ReactAgent("r", OpenAIProvider(client, "m", retry=fast), "Answer.")
        with caplog.at_level(logging.WARNING, logger="raf"):
            assert (await agent.run("hi").collect()).text == "ok"
    (record,) = [r for r in caplog.records if r.name == "raf"]
    assert record.getMessage().startswith("model 'm': attempt 1 of 4 failed (HTTP 503: overloaded)")
