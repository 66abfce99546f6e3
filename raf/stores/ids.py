"""Sortable unique ids: a 48-bit millisecond timestamp and 80 random bits, in Crockford base32.

The layout is the ULID one (26 characters, time first), so ids sort by creation time as plain
strings; within one process every id is strictly greater than the one before, even within the
same millisecond or when the wall clock steps back. `new_id(after=...)` also makes an id greater
than one written elsewhere (another process, whose clock may be ahead), so the events of one
key sort in the order they were appended.

Example:
    >>> first, second = new_id(), new_id()
    >>> len(first), first < second, new_id(after=second) > second
    (26, True, True)
    >>> new_id(after="7ZZZZZZZZZ0000000000000000")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: id '7ZZZZZZZZZ0000000000000000' is ... days ahead of this process's clock, ...
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable

__all__ = ["MonotonicIds", "new_id"]

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_VALUES = {char: index for index, char in enumerate(_ALPHABET)}
_RANDOM_BITS = 80
_LENGTH = 26
_LARGEST = (1 << 128) - 1
MAX_SKEW_MS = 24 * 3600 * 1000
"""How far ahead of this process's clock another writer's id may be (a day: far beyond any
real clock skew); an id further ahead is refused rather than followed."""


def _wall_clock_millis() -> int:
    return time.time_ns() // 1_000_000


class MonotonicIds:
    """Hands out strictly increasing ids: time in the high bits, randomness below.

    Thread-safe (stores make ids on worker threads too). When the clock gives the same
    millisecond again, or one before the last id's, the next id is the last one plus one, so
    order never depends on the clock going forward. An `after` id ahead of the clock (another
    process's clock runs fast) carries this generator's later ids along with it until the
    clock catches up, as a hybrid logical clock does: every id stays greater than the last.
    An `after` more than `max_skew` ahead is refused: following it would pin every later id of
    the generator at that time (up to the largest id, after which none can be made).

    Args:
        clock: milliseconds since the epoch (the wall clock by default; tests pass a fake).
        max_skew: milliseconds an `after` id may be ahead of `clock` (a day by default).

    Example:
        >>> ids = MonotonicIds(clock=lambda: 1_000)
        >>> a, b = ids.new(), ids.new()
        >>> a < b and a[:10] == b[:10]
        True
    """

    __slots__ = ("_clock", "_last", "_lock", "_max_skew")

    def __init__(
        self, clock: Callable[[], int] = _wall_clock_millis, *, max_skew: int = MAX_SKEW_MS
    ) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._last = 0
        self._max_skew = max_skew

    def new(self, after: str | None = None) -> str:
        """A new id, greater than every id this generator made before and than `after`.

        Raises:
            ValueError: when `after` is not a 26-character id of this layout, or is further
                ahead of the clock than `max_skew`.
        """
        now = self._clock()
        floor = 0 if after is None else _decode(after)
        ahead = (floor >> _RANDOM_BITS) - now
        if ahead > self._max_skew:
            raise ValueError(
                f"id {after!r} is {ahead / 86_400_000:.1f} days ahead of this process's clock, "
                f"more than two clocks may differ ({self._max_skew} ms): it was not made by "
                "raf.stores.new_id on a clock that is right; fix the clock or the stored id"
            )
        candidate = (now << _RANDOM_BITS) | secrets.randbits(_RANDOM_BITS)
        with self._lock:
            # Same millisecond, the clock stepped back, or `after` is ahead of us: count up.
            value = max(candidate, self._last + 1, floor + 1)
            if value > _LARGEST:  # only a clock past the year 10889 gets here
                raise ValueError(f"no id sorts after {after!r}: it is the largest there is")
            self._last = value
        return _encode(value)


def _encode(value: int) -> str:
    chars = [""] * _LENGTH
    for index in range(_LENGTH - 1, -1, -1):
        chars[index] = _ALPHABET[value & 31]
        value >>= 5
    return "".join(chars)


def _decode(text: str) -> int:
    value = 0
    if len(text) != _LENGTH:
        raise ValueError(f"{text!r} is not a 26-character id; give an id from raf.stores.new_id()")
    for char in text.upper():
        digit = _VALUES.get(char)
        if digit is None:
            raise ValueError(f"{text!r} is not an id of Crockford base32 characters")
        value = value * 32 + digit
    return value


# Process-wide on purpose: ids must increase across every caller in the process.
_ids = MonotonicIds()


def new_id(after: str | None = None) -> str:
    """A new 26-character id, greater than every id made before it in this process (and than
    `after`, say the last event of a key that another process wrote).

    Example:
        >>> ids = [new_id() for _ in range(1000)]
        >>> ids == sorted(ids) and len(set(ids)) == 1000
        True
    """
    return _ids.new(after)
