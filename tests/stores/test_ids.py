"""`new_id`: ULID layout, time first, strictly increasing."""

from __future__ import annotations

import itertools
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raf.stores import new_id
from raf.stores.ids import MonotonicIds

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _millis(value: str) -> int:
    number = 0
    for char in value[:10]:
        number = number * 32 + _CROCKFORD.index(char)
    return number


def test_an_id_is_26_crockford_characters_with_the_time_first() -> None:
    # A generator of its own: the process-wide one may rightly run ahead of the clock, after an
    # `after` from a process whose clock is ahead (an earlier test's, in this process).
    before = time.time_ns() // 1_000_000
    value = MonotonicIds().new()
    after = time.time_ns() // 1_000_000
    for made in (value, new_id()):
        assert len(made) == 26
        assert set(made) <= set(_CROCKFORD)
        assert made[0] <= "7"  # 128 bits in 130: the top two are zero
    assert before <= _millis(value) <= after


def test_ids_strictly_increase_also_within_one_millisecond() -> None:
    ids = [new_id() for _ in range(5000)]
    assert all(a < b for a, b in itertools.pairwise(ids))
    assert any(_millis(a) == _millis(b) for a, b in itertools.pairwise(ids))


def test_ids_keep_increasing_when_the_clock_steps_back(monkeypatch: pytest.MonkeyPatch) -> None:
    first = new_id()
    an_hour_ago = time.time_ns() - 3600 * 10**9
    monkeypatch.setattr(time, "time_ns", lambda: an_hour_ago)
    later = [new_id() for _ in range(100)]
    assert first < later[0]
    assert later == sorted(later)
    assert len(set(later)) == 100


def test_ids_from_many_threads_are_unique_and_ordered_per_thread() -> None:
    per_thread: list[list[str]] = [[] for _ in range(4)]

    def make(into: list[str]) -> None:
        into.extend(new_id() for _ in range(2000))

    threads = [threading.Thread(target=make, args=(ids,)) for ids in per_thread]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    everything = [value for ids in per_thread for value in ids]
    assert len(set(everything)) == len(everything)
    assert all(ids == sorted(ids) for ids in per_thread)


class _SteppingClock:
    """A wall clock that jumps where it is told: forward, back, or not at all."""

    def __init__(self, steps: list[int]) -> None:
        self.now = 1_700_000_000_000
        self._steps = iter(steps)
        self._lock = threading.Lock()

    def __call__(self) -> int:
        with self._lock:
            self.now = max(0, self.now + next(self._steps, 0))
            return self.now


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=-5_000, max_value=5), min_size=1, max_size=300))
def test_ids_follow_write_order_whatever_the_clock_does(steps: list[int]) -> None:
    ids = MonotonicIds(clock=_SteppingClock(steps))
    made = [ids.new() for _ in steps]
    assert all(a < b for a, b in itertools.pairwise(made))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(min_value=-2_000, max_value=2), min_size=1, max_size=50))
def test_an_id_after_another_writer_s_sorts_after_it(steps: list[int]) -> None:
    ahead = MonotonicIds(clock=lambda: 1_700_000_600_000)  # a process whose clock is ahead
    behind = MonotonicIds(clock=_SteppingClock(steps))
    last = ahead.new()
    for number, _ in enumerate(steps):
        made = behind.new(after=last) if number % 2 else ahead.new(after=last)
        assert made > last
        last = made


def test_ids_of_many_threads_interleave_in_the_order_they_were_made() -> None:
    clock = _SteppingClock([(-3 if n % 7 == 0 else 0) for n in range(20_000)])
    ids = MonotonicIds(clock=clock)
    made: list[tuple[int, str]] = []
    order = threading.Lock()
    counter = itertools.count()

    def make() -> None:
        for _ in range(1_000):
            with order:  # one global order of calls, to compare the ids against
                made.append((next(counter), ids.new()))

    threads = [threading.Thread(target=make) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    values = [value for _, value in sorted(made)]
    assert values == sorted(values) and len(set(values)) == len(values) == 8_000


def test_an_id_that_is_not_of_the_layout_is_refused_as_a_floor() -> None:
    with pytest.raises(ValueError, match="26-character"):
        new_id(after="e1")
    with pytest.raises(ValueError, match="ahead of this process's clock"):
        new_id(after="7ZZZZZZZZZZZZZZZZZZZZZZZZZ")


def test_an_id_far_ahead_of_the_clock_is_refused_and_pins_nothing() -> None:
    clock = _SteppingClock([])
    ids = MonotonicIds(clock=clock)
    a_day_ahead = MonotonicIds(clock=lambda: clock.now + 86_400_000).new()
    assert ids.new(after=a_day_ahead) > a_day_ahead  # within the skew: followed
    follower = MonotonicIds(clock=clock)
    too_far = MonotonicIds(clock=lambda: clock.now + 86_400_001 + 1_000).new()
    with pytest.raises(ValueError, match=r"0\.0 days ahead|1\.0 days ahead"):
        follower.new(after=too_far)
    assert _millis(follower.new()) == clock.now  # the refused id did not carry it along
    with pytest.raises(ValueError, match="largest"):
        MonotonicIds(clock=lambda: (1 << 48) - 1).new(after="7ZZZZZZZZZZZZZZZZZZZZZZZZZ")
