"""The rate in force (``loadguard.rate.RateInForce``): one behaviour each."""

from __future__ import annotations

import math

import pytest

from loadguard.errors import PolicyError
from loadguard.rate import RateChange, RateInForce, same_rate


def test_the_start_rate_is_not_a_change() -> None:
    rate = RateInForce()
    rate.start(5.0, confirmed=True)
    assert (rate.value, rate.confirmed, rate.change) == (5.0, True, None)


def test_an_acknowledged_new_rate_is_a_change() -> None:
    rate = RateInForce(5.0, confirmed=True)
    assert rate.acknowledged(10.0, at_ms=7_000)
    assert rate.value == 10.0
    assert rate.change == RateChange(7_000, rose=True, serial=1)


def test_change_time_comes_from_the_observation() -> None:
    rate = RateInForce(5.0, confirmed=True)
    rate.acknowledged(10.0, at_ms=123_456)
    assert rate.change is not None and rate.change.at_ms == 123_456
    assert rate.change.since_ms(130_000) == 130_000 - 123_456


def test_a_cut_is_a_change_downward() -> None:
    rate = RateInForce(10.0, confirmed=True)
    rate.acknowledged(4.0, at_ms=1_000)
    assert rate.change is not None and not rate.change.rose


def test_a_failed_push_is_not_a_change() -> None:
    rate = RateInForce(5.0, confirmed=True)
    rate.push_failed()
    assert (rate.value, rate.change) == (5.0, None)


def test_a_failed_push_leaves_the_rate_unconfirmed() -> None:
    rate = RateInForce(5.0, confirmed=True)
    rate.push_failed()
    assert not rate.confirmed


def test_a_reasserted_rate_is_kept_unconfirmed_and_not_changed() -> None:
    rate = RateInForce(5.0, confirmed=True)
    rate.reassert()
    assert (rate.value, rate.confirmed, rate.change) == (5.0, False, None)
    assert rate.needs_push(5.0)


def test_an_unconfirmed_rate_is_pushed_even_unchanged() -> None:
    rate = RateInForce(5.0, confirmed=False)
    assert rate.needs_push(5.0)


def test_a_confirmed_rate_is_not_pushed_again() -> None:
    rate = RateInForce(5.0, confirmed=True)
    assert not rate.needs_push(5.0 * (1 + 1e-12))
    assert rate.needs_push(5.1)


def test_a_reassertion_confirms_without_a_change() -> None:
    rate = RateInForce(5.0, confirmed=False)
    assert not rate.acknowledged(5.0, at_ms=3_000)
    assert rate.confirmed and rate.change is None


def test_a_rate_within_the_tolerance_is_the_same_rate() -> None:
    rate = RateInForce(1500.0, confirmed=True)
    rate.acknowledged(1500.0 * (1 + 5e-10), at_ms=1_000)
    assert (rate.value, rate.change) == (1500.0, None)
    assert same_rate(1500.0, 1500.0 * (1 + 5e-10))


def test_each_change_gets_the_next_serial() -> None:
    rate = RateInForce(5.0, confirmed=True)
    rate.acknowledged(10.0, at_ms=1_000)
    rate.acknowledged(20.0, at_ms=1_000)  # the same ms: still told apart
    assert rate.change == RateChange(1_000, rose=True, serial=2)


def test_change_time_never_goes_back() -> None:
    rate = RateInForce(5.0, confirmed=True)
    rate.acknowledged(10.0, at_ms=9_000)
    rate.acknowledged(8.0, at_ms=4_000)  # a clock that stepped back
    assert rate.change == RateChange(9_000, rose=False, serial=2)


def test_start_forgets_the_last_change() -> None:
    rate = RateInForce(5.0, confirmed=True)
    rate.acknowledged(10.0, at_ms=1_000)
    rate.start(7.0, confirmed=False)
    assert (rate.value, rate.confirmed, rate.change) == (7.0, False, None)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -1.0])
def test_a_rate_that_is_not_a_finite_rate_is_refused(bad: float) -> None:
    rate = RateInForce(5.0, confirmed=True)
    with pytest.raises(PolicyError):
        rate.acknowledged(bad, at_ms=1_000)
    assert (rate.value, rate.change) == (5.0, None)
