"""`OpenAIProvider`: an `LlmProvider` on the `openai` client's streaming chat completions.

The client is injected and stays the caller's: build one with `create_client` (or any
`openai.AsyncOpenAI`), and close it on the event loop that made it.

Example:
    >>> async def main() -> None:
    ...     async with create_client(base_url="http://localhost:8000/v1", api_key="k") as client:
    ...         provider = OpenAIProvider(client, "my-model", temperature=0.2)
    ...         async with provider.stream([ChatMessage.user("hi")]) as events:
    ...             async for event in events:
    ...                 print(event)
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, cast

import anyio
import openai
from openai.types.chat import (
    ChatCompletionToolUnionParam,
    completion_create_params,
)

from raf.errors import ProviderError
from raf.messages import ChatMessage
from raf.providers._chat_format import to_chat_completions
from raf.providers._event_stream import EventStream
from raf.providers._failures import Failure, call_failed, classify, describe
from raf.providers._schema_fallback import (
    JSON_OBJECT,
    REFUSAL_STATUSES,
    in_json_mode,
    is_json_schema,
    refused,
)
from raf.providers._sse import SseReader
from raf.providers.base import ProviderEvent
from raf.providers.retry import RetryPolicy
from raf.tools.definition import ToolDefinition

__all__ = ["OpenAIProvider", "create_client"]

_log = logging.getLogger("raf")

_RESERVED = frozenset(
    {"model", "messages", "stream", "stream_options", "tools", "response_format", "timeout"}
)


LOCAL_API_KEY = "not-needed"
"""The key `create_client` sends to a server at a base URL when no key is set: local
OpenAI-compatible servers (llama.cpp, vLLM, Ollama, LM Studio) want some key, and any will do."""


def create_client(base_url: str | None = None, api_key: str | None = None) -> openai.AsyncOpenAI:
    """An `openai.AsyncOpenAI` client for `OpenAIProvider`, with the client's own retries off.

    raf retries with its `RetryPolicy`, so the client gets `max_retries=0`. Unset arguments
    come from `OPENAI_BASE_URL` and `OPENAI_API_KEY`. With a base URL and no key (a local
    server), the placeholder `LOCAL_API_KEY` is sent. The caller owns the client: close it
    (`async with client:` or `await client.close()`) on the event loop that made it.

    Raises:
        ValueError: with neither a key nor a base URL, saying which to set.

    Example:
        >>> async def main() -> None:
        ...     async with create_client("http://127.0.0.1:8000/v1", "key") as client:
        ...         ...
    """
    base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
    if api_key is None:
        if base_url is None:
            raise ValueError(
                "create_client() has no API key and no base URL: set OPENAI_API_KEY (or pass "
                "api_key=...) for the OpenAI API, or set OPENAI_BASE_URL (or pass base_url=...) "
                "for a local OpenAI-compatible server, which needs no key"
            )
        api_key = LOCAL_API_KEY
    return openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0)


def _check_client(client: object, model: object) -> None:
    """Fail at construction, saying what to pass, rather than with an `AttributeError` inside
    the first call."""
    if isinstance(client, str):
        raise TypeError(
            f"OpenAIProvider: client must be an openai.AsyncOpenAI, not the str {client!r}; "
            f"pass OpenAIProvider(create_client({client!r}), {model!r}) (raf.create_client "
            "builds one for a base URL)"
        )
    chat = getattr(client, "chat", None)
    if not hasattr(getattr(chat, "completions", None), "create") or not hasattr(client, "base_url"):
        raise TypeError(
            "OpenAIProvider: client must be an openai.AsyncOpenAI (with .chat.completions and "
            f".base_url), got {type(client).__name__}; pass raf.create_client(base_url, api_key)"
        )
    if not isinstance(model, str) or not model:
        raise TypeError(
            f"OpenAIProvider: model must be a model name (a non-empty str), got {model!r}; "
            'pass OpenAIProvider(client, "gpt-4o-mini")'
        )


class OpenAIProvider:
    """An `LlmProvider` calling `client.chat.completions.create(stream=True)`.

    Transient failures (HTTP 408, 429 and 5xx, connection errors, timeouts) before the first
    event is yielded are retried per `retry`, honouring `Retry-After`, and logged on the `raf`
    logger; other failures, and any failure once output streamed, raise `ProviderError` with
    the cause as `__cause__`. A server that refuses a `json_schema` response format is asked
    again in JSON mode (`json_object`, the schema written into the system message), and is
    asked that way from then on.

    Args:
        client: the client to call; not closed by the provider.
        model: the model name sent with every call.
        retry: the retry policy (`RetryPolicy()` by default).
        timeout: seconds per call to get the first chunk, and between chunks; the client's
            own timeout when None.
        **defaults: more `chat.completions.create` arguments sent with every call
            (`temperature=0`, `extra_body={...}`).

    Example:
        >>> async def main() -> str:
        ...     async with create_client("http://127.0.0.1:8000/v1", "key") as client:
        ...         provider = OpenAIProvider(client, "gpt-4o-mini", retry=RetryPolicy(max_attempts=2))
        ...         return provider.model
        >>> import anyio
        >>> anyio.run(main)
        'gpt-4o-mini'
    """

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        model: str,
        *,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        **defaults: Any,
    ) -> None:
        _check_client(client, model)
        reserved = sorted(_RESERVED & defaults.keys())
        if reserved:
            raise TypeError(
                f"OpenAIProvider sets {', '.join(map(repr, reserved))} itself; "
                "pass the model as the second argument, the timeout as timeout=, "
                "and tools and response_format to stream()"
            )
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self._client = client
        self._model = model
        self._retry = retry or RetryPolicy()
        self._timeout = timeout
        self._defaults = dict(defaults)
        self._json_schema_refused = False

    @property
    def model(self) -> str:
        """The model name."""
        return self._model

    @property
    def base_url(self) -> str:
        """The client's base URL (telemetry names the server from it)."""
        return str(self._client.base_url)

    @property
    def retry(self) -> RetryPolicy:
        """The retry policy."""
        return self._retry

    @asynccontextmanager
    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolDefinition] = (),
        response_format: dict[str, Any] | None = None,
    ) -> AsyncGenerator[AsyncIterator[ProviderEvent]]:
        """Stream one model call; see `LlmProvider.stream`.

        Raises:
            ProviderError: the call failed after retries, or the stream broke.
        """
        if self._json_schema_refused and is_json_schema(response_format):
            assert response_format is not None
            messages, response_format = in_json_mode(messages, response_format), JSON_OBJECT
        open_once = partial(self._attempt, messages, tools, response_format)
        try:
            reader, attempts = await self._connect(open_once)
        except ProviderError as exc:
            if not is_json_schema(response_format) or exc.status not in REFUSAL_STATUSES:
                raise
            assert response_format is not None
            _log.warning(
                "model %r refused response_format json_schema (%s); asking in JSON mode",
                self._model,
                exc,
            )
            open_once = partial(
                self._attempt, in_json_mode(messages, response_format), tools, JSON_OBJECT
            )
            try:
                reader, attempts = await self._connect(open_once)
            except ProviderError as second:
                if second.status not in REFUSAL_STATUSES:
                    raise
                raise refused(self._model, str(self._client.base_url), second) from second
            self._json_schema_refused = True
        events = EventStream(self._model, reader, attempts, partial(self._connect, open_once))
        try:
            yield events
        finally:
            with anyio.CancelScope(shield=True):
                await events.aclose()

    async def _connect(
        self,
        open_once: Callable[[], Awaitable[SseReader]],
        attempts: int = 0,
        failure: Failure | None = None,
    ) -> tuple[SseReader, int]:
        """Open the call, retrying transient failures; `failure` is the last attempt's, if any.

        Returns the open reader and the number of attempts made so far.
        """
        while True:
            if failure is not None:
                if not failure.transient or attempts >= self._retry.max_attempts:
                    base_url = str(self._client.base_url)
                    raise call_failed(self._model, failure, attempts, base_url) from failure.error
                wait = self._retry.delay(attempts, retry_after=failure.retry_after)
                _log.warning(
                    "model %r: attempt %d of %d failed (%s); retrying in %.2f s",
                    self._model,
                    attempts,
                    self._retry.max_attempts,
                    describe(failure),
                    wait,
                )
                await anyio.sleep(wait)
            attempts += 1
            try:
                return await open_once(), attempts
            except Exception as exc:
                failure = classify(exc)
                if failure is None:
                    raise

    async def _attempt(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition],
        response_format: dict[str, Any] | None,
    ) -> SseReader:
        reader: SseReader | None = None
        try:
            with anyio.fail_after(self._timeout):
                stream = await self._client.chat.completions.create(
                    model=self._model,
                    messages=to_chat_completions(messages),
                    stream=True,
                    stream_options={"include_usage": True},
                    tools=(
                        cast(list[ChatCompletionToolUnionParam], [t.to_openai() for t in tools])
                        if tools
                        else openai.omit
                    ),
                    response_format=(
                        cast(completion_create_params.ResponseFormat, response_format)
                        if response_format is not None
                        else openai.omit
                    ),
                    timeout=self._timeout if self._timeout is not None else openai.not_given,
                    **self._defaults,
                )
                # The body is read here rather than through the client's own chunk iterator,
                # whose nested async generators are never closed (trio warns about each).
                reader = SseReader(stream.response)
                await reader.peek()
        except BaseException:
            if reader is not None:
                with anyio.CancelScope(shield=True):
                    await reader.aclose()
            raise
        return reader
