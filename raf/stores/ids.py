"""Sortable unique ids: a 48-bit millisecond timestamp and 80 random bits, in Crockford base32.

The layout is the ULID one (26 characters, time first), so ids sort by creation time as plain
strings; within one process every id is strictly greater than the one before, even within the
same millisecond or when the wall clock steps back.

Example:
    >>> first, second = new_id(), new_id()
    >>> len(first), first < second
    (26, True)
"""

from __future__ import annotations

import secrets
import threading
import time

__all__ = ["new_id"]

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_RANDOM_BITS = 80
_LENGTH = 26


class _MonotonicSource:
    """Hands out strictly increasing 128-bit values: time in the high bits, randomness below."""

    def __init__(self) -> None:
        # Ids are made from worker threads too (stores run their I/O there).
        self._lock = threading.Lock()
        self._last = 0

    def next(self) -> int:
        millis = time.time_ns() // 1_000_000
        candidate = (millis << _RANDOM_BITS) | secrets.randbits(_RANDOM_BITS)
        with self._lock:
            # Same millisecond, or the clock stepped back: count up from the last id instead.
            value = max(candidate, self._last + 1)
            self._last = value
        return value


# Process-wide on purpose: ids must increase across every caller in the process.
_source = _MonotonicSource()


def new_id() -> str:
    """A new 26-character id, greater than every id made before it in this process.

    Example:
        >>> ids = [new_id() for _ in range(1000)]
        >>> ids == sorted(ids) and len(set(ids)) == 1000
        True
    """
    value = _source.next()
    chars = [""] * _LENGTH
    for index in range(_LENGTH - 1, -1, -1):
        chars[index] = _ALPHABET[value & 31]
        value >>= 5
    return "".join(chars)
