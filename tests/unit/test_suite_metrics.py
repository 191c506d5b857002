"""The plant suite's goal figures (loadguard.evaluate.suite_metrics), on hand-made runs."""

from __future__ import annotations

import numpy as np
import pytest

from loadguard.evaluate.suite_metrics import (
    Capacity,
    RunData,
    SuiteMetrics,
    compute,
    frontier_gap,
    misses,
    steady_spans,
)


def _run(
    latency_s: float, rate: float = 10.0, duration: float = 300.0, bad: tuple[int, ...] = ()
) -> RunData:
    """Evenly sent samples of a fixed latency; windows in ``bad`` take 10x longer."""
    sent = np.arange(0.0, duration, 1.0 / rate)
    lat = np.full(len(sent), latency_s)
    for k in bad:
        lat[(sent >= 10 * k) & (sent < 10 * k + 10)] = 10 * latency_s
    end = sent + lat
    ticks = tuple((float(t), rate) for t in range(1, int(duration) + 1))
    return RunData(sent, end, np.ones(len(sent), np.bool_), duration, ticks)


def test_steady_spans_leave_out_each_event_and_the_minute_after() -> None:
    assert steady_spans(600.0, [(150.0, 170.0)]) == [(120.0, 150.0), (230.0, 600.0)]


def test_capacity_integral_follows_the_steps() -> None:
    cap = Capacity(((0.0, 100.0), (120.0, 50.0)))
    assert cap.integral([(100.0, 140.0)]) == pytest.approx(20 * 100 + 20 * 50)


def test_windows_in_the_first_30_s_are_not_counted_as_violations() -> None:
    m = compute(_run(0.1, bad=(0, 1)), Capacity(((0.0, 10.0),)), p95_ms=500.0)
    assert m.violations == 0.0


def test_a_slow_window_after_30_s_counts_as_a_violation() -> None:
    m = compute(_run(0.1, bad=(10,)), Capacity(((0.0, 10.0),)), p95_ms=500.0)
    assert m.violations is not None and 0 < m.violations < 0.1


def test_steady_efficiency_is_successes_over_lambda_star() -> None:
    m = compute(_run(0.1), Capacity(((0.0, 20.0),)), p95_ms=500.0)
    assert m.steady_efficiency == pytest.approx(0.5, abs=0.01)


def test_time_to_90_is_the_first_tick_at_90_percent() -> None:
    m = compute(_run(0.1, rate=9.0), Capacity(((0.0, 10.0),)), p95_ms=500.0)
    assert m.time_to_90_s == 1.0


def test_consecutive_collapse_windows_count_as_one_collapse() -> None:
    m = compute(_run(0.1, bad=(10, 11, 20)), Capacity(((0.0, 10.0),)), p95_ms=150.0)
    assert m.collapses == 2


def test_recovery_waits_for_a_compliant_window_at_90_percent() -> None:
    data = _run(0.1, bad=(15,))
    m = compute(data, Capacity(((0.0, 10.0),)), p95_ms=500.0, events=((150.0, 150.0),))
    # Samples sent in [150, 160) take 1 s and end by 161: (161, 171] is the first clean
    # window (an earlier one holds more than 5 % slow samples).
    assert m.recovery_s == (21.0,)


def test_frontier_gap_compares_with_the_best_point_at_no_more_violations() -> None:
    points = [(0.0, 0.85), (0.04, 0.94), (0.3, 1.0)]
    assert frontier_gap(points, 0.05, 0.90) == pytest.approx(0.04)
    assert frontier_gap(points, 0.0, 0.90) == pytest.approx(-0.05)


def test_misses_names_each_criterion_missed() -> None:
    m = SuiteMetrics(0.1, 50, 0.0, 0.85, 90.0, (None,), 3, 1.0, frontier_gap=0.05)
    assert misses(m, has_events=True, has_cliff=True) == [
        "violations", "efficiency", "frontier", "t90", "recovery", "collapses",
    ]  # fmt: skip


def test_misses_is_empty_for_a_run_meeting_the_goal() -> None:
    m = SuiteMetrics(0.02, 50, 0.001, 0.93, 40.0, (30.0,), 1, 1.0, frontier_gap=0.01)
    assert misses(m, has_events=True, has_cliff=True) == []
