"""Rounding and units for people (loadguard.human): every figure with its unit."""

from __future__ import annotations

import math

import pytest

from loadguard import human


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (178.146, "2 min 58 s"),
        (22.0, "22 s"),
        (4.0, "4 s"),
        (2.006, "2 s"),
        (9.46, "9.5 s"),
        (0.85, "850 ms"),
        (0.0, "0 s"),
        (59.6, "1 min"),
        (120.0, "2 min"),
        (3725.0, "1 h 02 min"),
        (7200.0, "2 h"),
    ],
)
def test_duration_reads_in_minutes_and_seconds(seconds: float, text: str) -> None:
    assert human.duration(seconds) == text


@pytest.mark.parametrize(
    ("rps", "text"),
    [
        (137.335, "137 req/s"),
        (152.5, "152 req/s"),  # round half to even, as Python rounds
        (1520.4, "1,520 req/s"),
        (12.7, "13 req/s"),
        (4.46, "4.5 req/s"),
        (5.0, "5 req/s"),
        (0.3849, "0.38 req/s"),
    ],
)
def test_rate_is_rounded_to_what_a_window_supports(rps: float, text: str) -> None:
    assert human.rate(rps) == text


@pytest.mark.parametrize(
    ("share", "text"),
    [
        (0.118, "12 %"),
        (0.97, "97 %"),
        (0.05, "5 %"),
        (0.0042, "0.42 %"),
        (0.0, "0 %"),
        (1.0, "100 %"),
        (0.9996, "99.96 %"),
        (0.00004, "0.004 %"),
    ],
)
def test_percent_never_rounds_a_share_onto_0_or_100(share: float, text: str) -> None:
    assert human.percent(share) == text


@pytest.mark.parametrize(
    ("ms", "text"),
    [(249.6, "250 ms"), (4.25, "4.2 ms"), (12_500.0, "12.5 s"), (1234.0, "1,234 ms")],
)
def test_latency_in_ms_then_seconds(ms: float, text: str) -> None:
    assert human.latency(ms) == text


def test_missing_figures_are_a_dash() -> None:
    for fn in (human.rate, human.duration, human.latency, human.percent, human.count):
        assert fn(None) == human.DASH
        assert fn(math.nan) == human.DASH
    assert human.rate_interval(146.0, 155.2) == "146–155 req/s"
    assert human.count(19856) == "19,856"
