"""Classifying failed model calls and turning them into `ProviderError`s that say what to do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import anyio
import httpx2
import openai

from raf.errors import ProviderError
from raf.providers.retry import is_transient_status, retry_after_from_headers

# Connection and timeout failures, raised by the client (wrapped) or while reading the body.
_TIMEOUT_ERRORS = (openai.APITimeoutError, httpx2.TimeoutException, TimeoutError)
_TRANSPORT_ERRORS = (
    *_TIMEOUT_ERRORS,
    openai.APIConnectionError,
    httpx2.TransportError,
    httpx2.DecodingError,
    anyio.EndOfStream,
    anyio.BrokenResourceError,
)


@dataclass(frozen=True, slots=True)
class Failure:
    """What went wrong with one attempt, and whether another attempt may help."""

    error: Exception
    status: int | None
    transient: bool
    retry_after: float | None = None


def classify(exc: Exception) -> Failure | None:
    """The failure an exception of a model call means, or None when it is not a call failure."""
    if isinstance(exc, openai.APIStatusError):
        return Failure(
            exc,
            exc.status_code,
            is_transient_status(exc.status_code),
            retry_after_from_headers(exc.response.headers),
        )
    if isinstance(exc, _TRANSPORT_ERRORS):
        return Failure(exc, None, transient=True)
    if isinstance(exc, UnicodeDecodeError):
        # The body is broken, not the connection: the server would send the same bytes again.
        return Failure(exc, None, transient=False)
    if isinstance(exc, openai.OpenAIError):
        return Failure(exc, getattr(exc, "status_code", None), transient=False)
    return None


def describe(failure: Failure) -> str:
    """A short account of a failed attempt: `HTTP 503: overloaded`, `a timeout: ...`."""
    what = f"HTTP {failure.status}" if failure.status is not None else _kind(failure.error)
    return f"{what}: {_detail(failure.error)}"


def call_failed(model: str, failure: Failure, attempts: int, base_url: str) -> ProviderError:
    """The error for a call that failed before any output, after `attempts` attempts."""
    status = failure.status
    what = f"HTTP {status}" if status is not None else _kind(failure.error)
    tries = f"{attempts} attempt" + ("" if attempts == 1 else "s")
    advice = _advice(status, failure.error, base_url)
    message = (
        f"model {model!r} failed with {what} after {tries}: {_detail(failure.error)}; {advice}"
    )
    return ProviderError(message, model=model, status=status, attempts=attempts)


def stream_broke(model: str, exc: Exception, attempts: int) -> ProviderError:
    """The error for a stream that failed after output had been streamed."""
    failure = classify(exc)
    status = failure.status if failure else None
    message = (
        f"the stream of model {model!r} broke after output began ({_kind(exc)}: {_detail(exc)}); "
        "not retried because part of the answer was already streamed"
    )
    return ProviderError(message, model=model, status=status, attempts=attempts)


def stream_error(model: str, chunk: dict[str, Any], attempts: int) -> ProviderError:
    """The error for a stream whose server sent an error object instead of a chunk."""
    error: object = chunk.get("error")
    detail: object = error
    if isinstance(error, dict):
        detail = cast(dict[str, Any], error).get("message", error)
    message = f"model {model!r} sent an error in its stream: {detail}; try again"
    return ProviderError(message, model=model, attempts=attempts)


def stream_cut(model: str, attempts: int, *, done: bool = False) -> ProviderError:
    """The error for a stream that ended without the model finishing its answer.

    `done`: the server did end the stream properly (`[DONE]`), only without a finish reason.
    """
    if done:
        message = (
            f"the server of model {model!r} ended its stream without a finish_reason, so raf "
            "cannot tell a whole answer from a cut one; check the server (a proxy that drops "
            "the last chunk, an old server version)"
        )
    else:
        message = (
            f"the stream of model {model!r} ended before the model finished (no finish_reason): "
            "the connection was probably cut; try again"
        )
    return ProviderError(message, model=model, attempts=attempts)


def _kind(exc: Exception) -> str:
    if isinstance(exc, _TIMEOUT_ERRORS):
        return "a timeout"
    if isinstance(exc, _TRANSPORT_ERRORS):
        return "a connection error"
    if isinstance(exc, UnicodeDecodeError):
        return "invalid UTF-8"
    return type(exc).__name__


def _detail(exc: Exception) -> str:
    if isinstance(exc, openai.APIError):
        body = exc.body
        if isinstance(body, dict):
            text = body.get("message")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            if isinstance(text, str) and text:
                return text
        return exc.message
    if isinstance(exc, UnicodeDecodeError):
        return f"the server sent bytes that are not UTF-8 ({exc})"
    return str(exc) or type(exc).__name__


def _advice(status: int | None, exc: Exception, base_url: str) -> str:
    if status is None:
        if isinstance(exc, UnicodeDecodeError):
            return f"check that {base_url} is an OpenAI-compatible endpoint"
        if isinstance(exc, _TIMEOUT_ERRORS):
            return "the endpoint did not answer in time; raise the provider's timeout"
        return f"could not reach {base_url}; check the base URL and the network"
    if status in (401, 403):
        return "check the API key and its permissions"
    if status == 404:
        return f"check the model name and the base URL ({base_url})"
    if status == 429:
        return "rate limited; lower concurrency or allow more attempts with RetryPolicy(max_attempts=...)"
    if status >= 500 or status == 408:
        return "the endpoint is failing; try later or allow more attempts with RetryPolicy(max_attempts=...)"
    return "the request was rejected; check the messages, tools and response_format"
