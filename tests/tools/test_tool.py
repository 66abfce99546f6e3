from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from raf.agent import default_options
from raf.errors import ToolError
from raf.run import RunContext, discard
from raf.session import Session
from raf.tools import DEFAULT_MAX_OUTPUT_CHARS, Tool, ToolDefinition, ToolResult, tool

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


class Weather(BaseModel):
    city: str
    degrees: float


async def test_bare_decorator_reads_name_description_and_parameters() -> None:
    assert isinstance(add, Tool)
    assert add.name == "add"
    assert add.description == "Add two numbers."
    assert add.definition == ToolDefinition(
        name="add",
        description="Add two numbers.",
        parameters={
            "additionalProperties": False,
            "properties": {
                "a": {"description": "the first number.", "type": "integer"},
                "b": {"default": 1, "description": "the second number.", "type": "integer"},
            },
            "required": ["a"],
            "type": "object",
        },
    )
    assert add.max_output_chars == DEFAULT_MAX_OUTPUT_CHARS
    assert await add.call('{"a": 2, "b": 3}') == ToolResult("5")


async def test_decorator_with_options_overrides_name_and_description() -> None:
    @tool(name="weather_now", description="Current weather.")
    async def weather(city: str) -> Weather:
        """Ignored summary."""
        return Weather(city=city, degrees=21.5)

    assert (weather.name, weather.description) == ("weather_now", "Current weather.")
    assert weather.definition.to_openai()["function"]["name"] == "weather_now"
    result = await weather.call('{"city": "Oslo"}')
    assert result == ToolResult('{"city":"Oslo","degrees":21.5}')


def test_unusable_names_are_refused_at_definition() -> None:
    with pytest.raises(ToolError, match="not usable"):
        tool(lambda x: x)
    with pytest.raises(ToolError, match="not usable"):
        tool(name="has space")(add.fn)


async def test_sync_tools_run_in_a_worker_thread_and_async_tools_on_the_loop() -> None:
    seen: dict[str, int] = {}

    @tool
    def sync_probe() -> str:
        seen["sync"] = threading.get_ident()
        return "s"

    @tool
    async def async_probe() -> str:
        seen["async"] = threading.get_ident()
        return "a"

    assert await sync_probe.call("") == ToolResult("s")
    assert await async_probe.call("{}") == ToolResult("a")
    assert seen["async"] == threading.get_ident()
    assert seen["sync"] != threading.get_ident()


async def test_invalid_arguments_never_reach_the_function() -> None:
    calls: list[Any] = []

    @tool
    def book(city: str, nights: int) -> str:
        calls.append((city, nights))
        return "booked"

    result = await book.call('{"city": "Oslo", "nights": "many"}')
    assert result.is_error
    assert "invalid arguments for tool 'book'" in result.text
    assert "nights: Input should be a valid integer" in result.text
    missing = await book.call('{"nights": 2}')
    assert missing.is_error and "city: Field required" in missing.text
    malformed = await book.call('{"city": ')
    assert malformed.is_error and "Invalid JSON" in malformed.text
    not_object = await book.call("[1, 2]")
    assert not_object.is_error and "object" in not_object.text
    assert calls == []


async def test_a_raising_tool_becomes_an_error_result() -> None:
    @tool
    async def explode(reason: str) -> str:
        raise RuntimeError(f"boom: {reason}")

    result = await explode.call('{"reason": "test"}')
    assert result == ToolResult("tool 'explode' raised RuntimeError: boom: test", is_error=True)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain text", "plain text"),
        ({"a": [1, 2]}, '{"a":[1,2]}'),
        ([Weather(city="Rome", degrees=30)], '[{"city":"Rome","degrees":30.0}]'),
        (Weather(city="Rome", degrees=30), '{"city":"Rome","degrees":30.0}'),
        (42, "42"),
        (None, "None"),
    ],
)
async def test_results_are_rendered_as_text(value: Any, expected: str) -> None:
    @tool
    def produce() -> Any:
        return value

    assert await produce.call("{}") == ToolResult(expected)


async def test_oversize_output_is_truncated_with_a_note() -> None:
    @tool(max_output_chars=10)
    def long() -> str:
        return "x" * 25

    result = await long.call("{}")
    assert not result.is_error
    assert result.text.startswith("x" * 10 + "\n")
    assert "x" * 11 not in result.text
    assert "truncated: showing 10 of 25 characters" in result.text


async def test_a_run_context_parameter_receives_the_context() -> None:
    @tool
    def whoami(ctx: RunContext, loud: bool = False) -> str:
        """Say where the tool runs."""
        where = "/".join(ctx.path)
        return where.upper() if loud else where

    assert "ctx" not in whoami.definition.parameters["properties"]
    ctx = RunContext(("team", "writer"), Session(), default_options(), discard)
    assert await whoami.call('{"loud": true}', ctx) == ToolResult("TEAM/WRITER")
    without = await whoami.call("{}")
    assert without.is_error and "run context" in without.text


async def test_cancellation_of_a_running_tool_propagates() -> None:
    started = anyio.Event()
    cleaned = anyio.Event()

    @tool
    async def wait_forever() -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cleaned.set()
        return "never"

    returned: list[ToolResult] = []

    async def call() -> None:
        # Reached only if the call swallowed the cancellation and returned.
        returned.append(await wait_forever.call("{}"))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await started.wait()
            tg.cancel_scope.cancel()
    assert cleaned.is_set()
    assert returned == []


class _Unrenderable:
    def __str__(self) -> str:
        raise RuntimeError("no text for this")


async def test_a_value_without_text_becomes_an_error_result() -> None:
    @tool
    def odd() -> Any:
        """Return something that has no text."""
        return _Unrenderable()

    result = await odd.call("{}")
    assert result.is_error
    assert "'odd' returned a value of type _Unrenderable that cannot be rendered" in result.text
    assert "RuntimeError: no text for this" in result.text


async def test_an_exception_a_tool_raises_is_one_warning_line_and_a_debug_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @tool
    def explode() -> str:
        """Fail."""
        raise RuntimeError("kaboom")

    with caplog.at_level("DEBUG", logger="raf"):
        result = await explode.call("{}")
    assert result.is_error
    warning, debug = [r for r in caplog.records if r.name == "raf"]
    assert warning.levelname == "WARNING" and warning.exc_info is None
    assert warning.message == (
        "tool 'explode' raised RuntimeError: kaboom (handed to the model as an error result; "
        "its traceback is logged at DEBUG)"
    )
    assert debug.levelname == "DEBUG" and debug.exc_info is not None
    assert "kaboom" in str(debug.exc_info[1])


async def test_at_warning_level_a_tool_exception_shows_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @tool
    def explode() -> str:
        """Fail."""
        raise RuntimeError("kaboom")

    with caplog.at_level("WARNING", logger="raf"):
        await explode.call("{}")
    assert "Traceback" not in caplog.text and "raised RuntimeError: kaboom" in caplog.text


def test_an_unannotated_parameter_is_refused_at_decoration_by_name() -> None:
    def lookup(city, days: int = 1) -> str:  # type: ignore[no-untyped-def]
        """Look a city up."""
        return str(city)

    with pytest.raises(ToolError) as info:
        tool(lookup)
    assert str(info.value) == (
        "tool 'lookup': parameter 'city' has no type annotation, so the model cannot be told "
        "what to pass; annotate it (say `city: str`, or `: Any` to accept any JSON value)"
    )


def test_an_annotated_callable_object_and_an_any_parameter_are_accepted() -> None:
    class Lookup:
        __name__ = "lookup"

        def __call__(self, city: str, extra: Any = None) -> str:
            """Look a city up."""
            return city

    assert tool(Lookup()).definition.parameters["required"] == ["city"]


def test_a_tool_without_a_description_says_where_it_comes_from(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def ping() -> str:
        return "pong"

    with caplog.at_level("WARNING", logger="raf"):
        undescribed = tool(ping)
        tool(description="Answer pong.")(ping)
        add_again = tool(add.fn)
    assert undescribed.description == "" and add_again.description == "Add two numbers."
    [warning] = [r for r in caplog.records if r.name == "raf"]
    assert warning.levelname == "WARNING"
    assert warning.message == (
        "tool 'ping' has no description, so the model sees only its name and parameters: "
        "write a docstring (its first paragraph is the description, its Args: section "
        "describes the parameters) or pass @tool(description=...)"
    )
