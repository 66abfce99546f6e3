"""RetryPolicy: validation, exponential backoff with jitter, Retry-After."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from raf.providers.retry import (
    RetryPolicy,
    is_transient_status,
    parse_retry_after,
    retry_after_from_headers,
)


def test_defaults_match_the_contract() -> None:
    policy = RetryPolicy()
    assert (policy.max_attempts, policy.initial_delay, policy.max_delay, policy.jitter) == (
        4,
        0.5,
        8.0,
        True,
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_attempts": 0},
        {"initial_delay": -0.1},
        {"max_delay": -1.0},
        {"initial_delay": 2.0, "max_delay": 1.0},
        {"max_retry_after": -1.0},
    ],
)
def test_invalid_settings_are_rejected(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        RetryPolicy.model_validate(kwargs)


def test_an_unknown_setting_is_a_type_error_naming_the_closest() -> None:
    with pytest.raises(TypeError, match=r"^RetryPolicy\(\) got an unknown field 'max_atempts'; "):
        RetryPolicy(max_atempts=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"did you mean 'max_attempts'\?"):
        RetryPolicy.model_validate({"max_atempts": 3})


def test_policy_is_frozen() -> None:
    policy = RetryPolicy()
    with pytest.raises(ValidationError):
        policy.max_attempts = 10  # type: ignore[misc]


def test_backoff_doubles_up_to_the_cap() -> None:
    policy = RetryPolicy(initial_delay=0.5, max_delay=3.0, jitter=False)
    assert [policy.delay(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_backoff_of_huge_attempt_numbers_stays_capped() -> None:
    assert RetryPolicy(jitter=False).delay(10_000) == 8.0


def test_attempt_numbers_start_at_one() -> None:
    with pytest.raises(ValueError, match="attempt"):
        RetryPolicy().delay(0)


@given(
    attempt=st.integers(min_value=1, max_value=80),
    initial=st.floats(min_value=0.0, max_value=10.0),
    extra=st.floats(min_value=0.0, max_value=50.0),
    seed=st.integers(),
)
def test_jittered_delay_lies_between_half_and_all_of_the_backoff(
    attempt: int, initial: float, extra: float, seed: int
) -> None:
    policy = RetryPolicy(initial_delay=initial, max_delay=initial + extra)
    base = policy.backoff(attempt)
    delay = policy.delay(attempt, rng=random.Random(seed))
    assert base / 2 <= delay <= base <= policy.max_delay


def test_jitter_spreads_delays() -> None:
    policy = RetryPolicy(initial_delay=1.0)
    rng = random.Random(7)
    assert len({policy.delay(1, rng=rng) for _ in range(20)}) > 10


def test_retry_after_replaces_the_backoff() -> None:
    policy = RetryPolicy(initial_delay=4.0, max_delay=8.0)
    assert policy.delay(1, retry_after="0") == 0.0
    assert policy.delay(1, retry_after="1.5") == 1.5
    assert policy.delay(3, retry_after=2.0) == 2.0


def test_retry_after_is_capped() -> None:
    policy = RetryPolicy(max_retry_after=5.0)
    assert policy.delay(1, retry_after="3600") == 5.0


def test_unreadable_retry_after_falls_back_to_the_backoff() -> None:
    policy = RetryPolicy(initial_delay=1.0, jitter=False)
    assert policy.delay(1, retry_after="soon") == 1.0
    assert policy.delay(1, retry_after="-3") == 1.0


def test_retry_after_as_http_date() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(later, now=now) == 30.0
    earlier = format_datetime(now - timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(earlier, now=now) == 0.0


def test_retry_after_headers_prefer_milliseconds_and_ignore_case() -> None:
    assert retry_after_from_headers({"Retry-After-Ms": "250", "Retry-After": "9"}) == 0.25
    assert retry_after_from_headers({"RETRY-AFTER": "2"}) == 2.0
    assert retry_after_from_headers({"content-type": "application/json"}) is None


@pytest.mark.parametrize(
    ("status", "transient"),
    [(400, False), (401, False), (404, False), (408, True), (429, True), (500, True), (503, True)],
)
def test_transient_statuses(status: int, transient: bool) -> None:
    assert is_transient_status(status) is transient
