"""`RetryPolicy`: how often and how long to wait before retrying a failed model call.

Backoff doubles from `initial_delay` up to `max_delay`; with `jitter` each wait is drawn
between half and all of that backoff ("equal jitter"), so concurrent callers spread out but
still back off. A server's `Retry-After` hint wins over the backoff, capped at
`max_retry_after`.

Example:
    >>> policy = RetryPolicy(max_attempts=3, initial_delay=0.5, jitter=False)
    >>> [policy.delay(n) for n in (1, 2)]
    [0.5, 1.0]
    >>> policy.delay(1, retry_after="2")
    2.0
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from pydantic import Field, model_validator

from raf._options import Options

_TRANSIENT_STATUSES = frozenset({408, 429})


class RetryPolicy(Options):
    """Retries of transient model-call failures, with exponential backoff.

    Example:
        >>> RetryPolicy(max_attempts=1).max_attempts  # one attempt: never retry
        1
    """

    max_attempts: int = Field(default=4, ge=1, le=100)
    """Attempts in total, the first one included; 1 disables retries."""
    initial_delay: float = Field(default=0.5, ge=0.0, le=3600.0)
    """Backoff before the first retry, in seconds."""
    max_delay: float = Field(default=8.0, ge=0.0, le=3600.0)
    """Longest backoff between two attempts, in seconds."""
    jitter: bool = True
    """Randomize each backoff between half and all of its value."""
    max_retry_after: float = Field(default=60.0, ge=0.0, le=3600.0)
    """Longest wait a server's `Retry-After` hint may impose, in seconds."""

    @model_validator(mode="after")
    def _check_delays(self) -> RetryPolicy:
        if self.max_delay < self.initial_delay:
            raise ValueError(
                f"max_delay ({self.max_delay}) must not be below initial_delay "
                f"({self.initial_delay})"
            )
        return self

    def backoff(self, attempt: int) -> float:
        """The backoff before retrying after failed attempt `attempt` (1-based), without jitter.

        Example:
            >>> RetryPolicy(initial_delay=1.0, max_delay=5.0).backoff(4)
            5.0
        """
        if attempt < 1:
            raise ValueError(f"attempt must be 1 or more, got {attempt}")
        exponent = min(attempt - 1, 64)  # 2**64 seconds is already far past any max_delay
        return min(self.max_delay, self.initial_delay * 2.0**exponent)

    def delay(
        self,
        attempt: int,
        *,
        retry_after: str | float | None = None,
        rng: random.Random | None = None,
    ) -> float:
        """Seconds to wait after failed attempt `attempt` (1-based) before the next one.

        Args:
            attempt: how many attempts have failed so far.
            retry_after: the server's `Retry-After` value (seconds or an HTTP date), if any;
                it replaces the backoff, capped at `max_retry_after`.
            rng: the random source for jitter (the module's by default).

        Example:
            >>> RetryPolicy(jitter=False).delay(2)
            1.0
        """
        hint = parse_retry_after(retry_after) if isinstance(retry_after, str) else retry_after
        if hint is not None and math.isfinite(hint):
            return min(max(hint, 0.0), self.max_retry_after)
        base = self.backoff(attempt)
        if not self.jitter:
            return base
        draw = (rng or random).random()
        return base / 2 + draw * base / 2


def parse_retry_after(value: str, *, now: datetime | None = None) -> float | None:
    """Seconds a `Retry-After` header value asks to wait, or None when it cannot be read.

    The value is a number of seconds or an HTTP date; a date in the past gives 0.

    Example:
        >>> parse_retry_after("1.5")
        1.5
        >>> parse_retry_after("soon") is None
        True
    """
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def retry_after_from_headers(headers: Mapping[str, str]) -> float | None:
    """The wait a response's headers ask for: `retry-after-ms`, else `retry-after`.

    Example:
        >>> retry_after_from_headers({"retry-after-ms": "250"})
        0.25
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        parsed = parse_retry_after(millis)
        if parsed is not None:
            return parsed / 1000
    seconds = lowered.get("retry-after")
    return parse_retry_after(seconds) if seconds is not None else None


def is_transient_status(status: int) -> bool:
    """True for HTTP statuses worth retrying: request timeouts, rate limits, server errors.

    Example:
        >>> is_transient_status(429), is_transient_status(400)
        (True, False)
    """
    return status in _TRANSIENT_STATUSES or status >= 500
