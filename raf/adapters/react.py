"""`create_react_adapter`: roles answered by the ReAct loop, finishing with `resolve`.

Example:
    >>> import anyio
    >>> from pydantic import BaseModel
    >>> from raf.adapters import ThreadContext
    >>> from raf.testing.script import resolve
    >>> from raf.testing.scripted_provider import ScriptedProvider
    >>> class Plan(BaseModel):
    ...     steps: list[str]
    >>> async def no_tools(name: str, arguments: str) -> str:
    ...     return ""
    >>> adapter = create_react_adapter(ScriptedProvider([resolve({"steps": ["go"]})]), [], no_tools)
    >>> anyio.run(adapter("Make a plan.", Plan), ThreadContext(thread_id="t"))
    Plan(steps=['go'])
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar, cast

from pydantic import BaseModel

from raf.adapters.role_context import role_context
from raf.adapters.thread import AdapterFn, RoleFn, ThreadContext, thread_messages
from raf.agent import default_options
from raf.errors import ToolError
from raf.messages import ToolCallContent
from raf.providers.base import LlmProvider
from raf.react.loop import OutputMode, ReactLoop
from raf.react.resolve import RESOLVE_TOOL_NAME, resolve_definition
from raf.run import RunContext, discard
from raf.session import Session
from raf.tools.arguments import json_object
from raf.tools.definition import ToolDefinition
from raf.tools.tool import DEFAULT_MAX_OUTPUT_CHARS, ToolResult, log_tool_failure, rendered

M = TypeVar("M", bound=BaseModel)


ToolHandler = Callable[[str, str], Awaitable[str]]
"""`handler(name, arguments_json) -> result text`: runs the adapter's tools."""


def create_react_adapter(
    provider: LlmProvider,
    tools: Sequence[ToolDefinition],
    tool_handler: ToolHandler,
    max_rounds: int = 10,
    *,
    output_mode: OutputMode = "tool",
    text_tool_calls: bool = False,
) -> AdapterFn:
    """An adapter whose roles run the ReAct loop and return the validated `resolve` value.

    The model sees `tools` plus `resolve` (parameters: the schema's JSON schema); every other
    call goes to `tool_handler(name, arguments_json)` once its arguments are a JSON object. A
    handler that raises becomes an error result for the model (and is logged on the `raf`
    logger). No extra model call is made to extract the output.

    With `output_mode="native"` there is no `resolve`: every call carries the schema as a
    strict JSON-schema response format and the text answer is validated (corrected when
    invalid). `text_tool_calls=True` takes a tool call written as JSON text as that call
    (see `ReactAgent`).

    Raises:
        ValueError: when a tool is named `resolve`, two tools share a name, or the output
            mode is unknown.
    """
    names = [d.name for d in tools]
    if RESOLVE_TOOL_NAME in names:
        raise ValueError(f"the tool name {RESOLVE_TOOL_NAME!r} is reserved for structured output")
    if len(set(names)) != len(names):
        raise ValueError(f"tool names must be unique, got {names}")
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be at least 1, not {max_rounds}")
    if output_mode not in ("tool", "native"):
        raise ValueError(f"output_mode must be 'tool' or 'native', not {output_mode!r}")
    definitions = tuple(tools)

    async def dispatch(call: ToolCallContent, ctx: RunContext) -> ToolResult:
        return await _handle(tool_handler, call)

    def adapter(prompt: str, schema: type[M], /) -> RoleFn[M]:
        loop = ReactLoop(
            provider=provider,
            instructions=prompt,
            tools=definitions
            if output_mode == "native"
            else (*definitions, resolve_definition(schema)),
            dispatch=dispatch,
            output_schema=schema,
            max_rounds=max_rounds,
            label=f"the {schema.__name__} role",
            output_mode=output_mode,
            text_tool_calls=text_tool_calls,
        )

        async def role(thread: ThreadContext) -> M:
            # Inside a role workflow the loop streams to the run, on the role's path.
            ctx = role_context() or RunContext((), Session(), default_options(), discard)
            response = await loop.run(thread_messages(thread), ctx)
            return cast(M, response.value)

        return role

    return adapter


async def _handle(handler: ToolHandler, call: ToolCallContent) -> ToolResult:
    arguments = call.arguments or "{}"
    parsed = json_object(call.name, arguments)
    if isinstance(parsed, str):
        return ToolResult(parsed, is_error=True)
    try:
        value = await handler(call.name, arguments)
    except ToolError as exc:  # a deliberate error result: its message is for the model as is
        return ToolResult(str(exc), is_error=True)
    except Exception as exc:
        log_tool_failure(call.name, exc)
        return ToolResult(f"tool {call.name!r} raised {type(exc).__name__}: {exc}", is_error=True)
    return rendered(call.name, value, DEFAULT_MAX_OUTPUT_CHARS)
