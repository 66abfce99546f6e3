"""`new_id`: ULID layout, time first, strictly increasing."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from raf.stores import new_id

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _millis(value: str) -> int:
    number = 0
    for char in value[:10]:
        number = number * 32 + _CROCKFORD.index(char)
    return number


def test_an_id_is_26_crockford_characters_with_the_time_first() -> None:
    before = time.time_ns() // 1_000_000
    value = new_id()
    after = time.time_ns() // 1_000_000
    assert len(value) == 26
    assert set(value) <= set(_CROCKFORD)
    assert value[0] <= "7"  # 128 bits in 130: the top two are zero
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
