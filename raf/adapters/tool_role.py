"""`create_tool_role`: a role played by plain code (run the tests, call an API), not a model.

Example:
    >>> import anyio
    >>> from pydantic import BaseModel
    >>> from raf.adapters import ThreadContext
    >>> class Tests(BaseModel):
    ...     passed: bool
    >>> def run_tests(thread):
    ...     raise OSError("pytest is not installed")
    >>> tester = create_tool_role(run_tests, default_result=Tests(passed=False))
    >>> anyio.run(tester("Run the tests.", Tests), ThreadContext(thread_id="t"))
    Tests(passed=False)
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from raf.adapters.thread import ResultAdapterFn, RoleFn, RoleResult, ThreadContext, role_output

__all__ = ["create_tool_role"]

logger = logging.getLogger("raf")

M = TypeVar("M", bound=BaseModel)

ToolRoleFn = Callable[[ThreadContext], "Any | Awaitable[Any]"]
"""`fn(thread) -> output`: a schema instance, a `RoleResult`, or JSON data of the schema."""


def create_tool_role(fn: ToolRoleFn, *, default_result: Any = None) -> ResultAdapterFn:
    """An adapter whose roles call `fn(thread)` (sync or async) for their output.

    With `default_result` (a schema instance, a `RoleResult`, or JSON data of the schema),
    a call that raises answers with it instead of failing the step; the exception is logged
    on the `raf` logger with its traceback.

    Raises:
        TypeError: when `fn` is not callable.
    """
    if not callable(fn):
        raise TypeError(f"create_tool_role takes a function fn(thread) -> output, not {fn!r}")

    def adapter(prompt: str, schema: type[M], /) -> RoleFn[M | RoleResult]:
        async def role(thread: ThreadContext) -> M | RoleResult:
            try:
                output: Any = fn(thread)
                if inspect.isawaitable(output):
                    output = await output
            except Exception:
                if default_result is None:
                    raise
                logger.warning(
                    "tool role for %r failed on thread %r; answering with its default_result",
                    prompt,
                    thread.thread_id,
                    exc_info=True,
                )
                output = default_result
            return role_output(output, schema)

        return role

    return adapter
