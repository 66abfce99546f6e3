"""`@tool`: turn a typed function into a `Tool` a model can call.

The JSON schema comes from the signature, parameter descriptions from the docstring's `Args:`
section, the description from its first paragraph. Arguments are validated before the call;
sync functions run in a worker thread, async ones on the event loop. Whatever goes wrong
becomes an error `ToolResult` the model can read and recover from.

Example:
    >>> import anyio
    >>> @tool
    ... def add(a: int, b: int) -> int:
    ...     '''Add two numbers.
    ...
    ...     Args:
    ...         a: the first number.
    ...         b: the second number.
    ...     '''
    ...     return a + b
    >>> add.definition.description
    'Add two numbers.'
    >>> anyio.run(add.call, '{"a": 1, "b": 2}')
    ToolResult(text='3', is_error=False)
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any, cast, overload

import anyio.to_thread
import pydantic_core
from pydantic import BaseModel, ValidationError

from raf._tool_data import ToolResult as ToolResult
from raf.errors import ToolError
from raf.run import RunContext
from raf.tools.arguments import ArgumentsSpec, arguments_spec, describe_validation_error
from raf.tools.cancellation import CallFlag, running_call
from raf.tools.definition import ToolDefinition
from raf.tools.docstring import parse_docstring
from raf.tracing.tool_spans import tool_failed

_logger = logging.getLogger("raf")

DEFAULT_MAX_OUTPUT_CHARS = 20_000
"""Tool output longer than this is cut, with a note saying so."""


class Tool:
    """A function a model can call by name with a JSON arguments object.

    Build one with `@tool`; `call()` validates, runs and renders.

    Attributes:
        fn: the wrapped function.
        max_output_chars: results longer than this are truncated with a note.
        idempotent: whether running a call twice has the effect of running it once; a
            recovered run (durable, or resumed from a checkpoint) finding a call of it that
            started and has no recorded end runs it again, where any other tool's call goes
            to a human (see docs/reliability.md and docs/scale-out.md).
    """

    __slots__ = ("_is_async", "_spec", "definition", "fn", "idempotent", "max_output_chars")

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
        idempotent: bool = False,
    ) -> None:
        tool_name = name or getattr(fn, "__name__", "")
        docs = parse_docstring(inspect.getdoc(fn))
        self.fn = fn
        self.max_output_chars = max_output_chars
        self.idempotent = idempotent
        self._spec: ArgumentsSpec = arguments_spec(fn, tool_name, docs.params)
        self._is_async = _is_async_callable(fn)
        try:
            self.definition = ToolDefinition(
                name=tool_name,
                description=docs.summary if description is None else description,
                parameters=self._spec.schema,
            )
        except ValidationError:
            raise ToolError(
                f"tool name {tool_name!r} is not usable: use 1 to 64 letters, digits, '_' or "
                "'-' (pass name=... to @tool)"
            ) from None
        _refuse_unannotated(fn, tool_name)
        if not self.definition.description:
            _logger.warning(
                "tool %r has no description, so the model sees only its name and parameters: "
                "write a docstring (its first paragraph is the description, its Args: section "
                "describes the parameters) or pass @tool(description=...)",
                tool_name,
            )

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r})"

    @property
    def name(self) -> str:
        """What the model calls it."""
        return self.definition.name

    @property
    def description(self) -> str:
        """What it does, for the model."""
        return self.definition.description

    async def call(self, arguments: str, ctx: RunContext | None = None) -> ToolResult:
        """Validate the JSON `arguments`, run the function, and render its result.

        Invalid arguments and exceptions raised by the function become error results;
        cancellation propagates. `ctx` fills a parameter annotated `RunContext`.
        """
        spec = self._spec
        try:
            validated = spec.model.model_validate_json(arguments or "{}")
        except ValidationError as exc:
            return ToolResult(
                f"invalid arguments for tool {self.name!r}: {describe_validation_error(exc)}. "
                "Call it again with a JSON object matching its parameters.",
                is_error=True,
            )
        keywords = spec.keywords(validated)
        if spec.context_param is not None:
            if ctx is None:
                return ToolResult(
                    f"tool {self.name!r} needs a run context; call it from an agent run",
                    is_error=True,
                )
            keywords[spec.context_param] = ctx
        try:
            if self._is_async:
                value = await self.fn(**keywords)
            else:
                value = await _in_thread(functools.partial(self.fn, **keywords))
                if inspect.isawaitable(value):
                    value = await value
        except Exception as exc:
            log_tool_failure(self.name, exc)
            if isinstance(exc, ToolError):  # a refusal written for the model: as it is
                return ToolResult(str(exc), is_error=True)
            return ToolResult(
                f"tool {self.name!r} raised {type(exc).__name__}: {exc}", is_error=True
            )
        return rendered(self.name, value, self.max_output_chars)


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    idempotent: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    idempotent: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a `Tool` of a typed sync or async function; use bare or with options.

    Args:
        fn: the function (when used as a bare decorator).
        name: the tool's name (the function's name by default).
        description: what it does (the docstring's first paragraph by default).
        max_output_chars: results longer than this are truncated with a note.
        idempotent: the call may safely run twice (a recovered run, durable or resumed from
            a checkpoint, finding it in doubt runs it again instead of asking a human).

    Every parameter needs a type annotation. A tool without a description (no docstring and
    no `description=`) is logged as a warning on the `raf` logger: the model would see only its
    name.

    Raises:
        ToolError: when the name or a parameter cannot be described to a model (a parameter
            without a type annotation included).

    Example:
        >>> @tool(name="lookup", description="Find a word.")
        ... async def find(word: str) -> str:
        ...     return word
        >>> find.name, find.definition.parameters["required"]
        ('lookup', ['word'])
    """
    make = functools.partial(
        Tool,
        name=name,
        description=description,
        max_output_chars=max_output_chars,
        idempotent=idempotent,
    )
    if fn is not None:
        return make(fn)

    def decorate(function: Callable[..., Any]) -> Tool:
        return make(function)

    return decorate


def log_tool_failure(name: str, exc: Exception) -> None:
    """Log a tool's exception that becomes an error result for the model, on the `raf` logger:
    one line at WARNING (the model got the error and goes on: nothing crashed), its traceback at
    DEBUG; a `ToolError` (a refusal the tool meant) at DEBUG only. A traced call's span
    records it too."""
    tool_failed(exc)
    if isinstance(exc, ToolError):
        _logger.debug("tool %r refused the call: %s", name, exc)
        return
    _logger.warning(
        "tool %r raised %s: %s (handed to the model as an error result; its traceback is "
        "logged at DEBUG)",
        name,
        type(exc).__name__,
        exc,
    )
    _logger.debug("traceback of tool %r", name, exc_info=exc)


def as_tool(item: Tool | Callable[..., Any]) -> Tool:
    """`item` itself when it is a `Tool`, else `tool(item)`."""
    return item if isinstance(item, Tool) else Tool(item)


def render_output(value: Any) -> str:
    """A tool's return value as text: str as is, models and containers as JSON, else str().

    Example:
        >>> render_output({"a": [1, 2]}), render_output(3.5)
        ('{"a":[1,2]}', '3.5')
    """
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if isinstance(value, dict | list | tuple):
        return pydantic_core.to_json(value, fallback=str).decode()
    return str(value)


def rendered(name: str, value: Any, limit: int) -> ToolResult:
    """The `ToolResult` for tool `name`'s return `value`; an error result if it has no text.

    Example:
        >>> rendered("add", 3, 100).text
        '3'
    """
    try:
        text = render_output(value)
    except Exception as exc:
        return ToolResult(
            f"tool {name!r} returned a value of type {type(value).__name__} that cannot be rendered as text "
            f"({type(exc).__name__}: {exc}); tools return str, JSON data or a pydantic model",
            is_error=True,
        )
    return ToolResult(truncate(text, limit))


def truncate(text: str, limit: int) -> str:
    """`text`, cut to `limit` characters with a note when it is longer.

    Example:
        >>> truncate("abcdef", 3)
        'abc\\n[output truncated: showing 3 of 6 characters]'
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[output truncated: showing {limit} of {len(text)} characters]"


async def _in_thread(call: Callable[[], Any]) -> Any:
    """`call()` in a worker thread, abandoned on cancellation with its `CallFlag` set, so its
    next `check_not_cancelled()` stops it before it writes."""
    flag = CallFlag()
    with running_call(flag):
        try:
            return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            flag.cancel()
            raise


def _refuse_unannotated(fn: Callable[..., Any], tool_name: str) -> None:
    """Raise when a parameter of `fn` has no type: the model would be told nothing about it
    and any JSON value would reach the function.

    Raises:
        ToolError: naming the first unannotated parameter.
    """
    for param in inspect.signature(fn).parameters.values():
        if param.annotation is inspect.Parameter.empty:
            raise ToolError(
                f"tool {tool_name!r}: parameter {param.name!r} has no type annotation, so the "
                f"model cannot be told what to pass; annotate it (say `{param.name}: str`, or "
                "`: Any` to accept any JSON value)"
            )


def _is_async_callable(fn: Callable[..., Any]) -> bool:
    while isinstance(fn, functools.partial):
        fn = cast(Callable[..., Any], fn.func)
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - callable objects
    return call is not None and inspect.iscoroutinefunction(call)
