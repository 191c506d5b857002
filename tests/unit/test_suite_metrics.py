"""The plant suite's goal figures (loadguard.lab.evaluate.suite_metrics), on hand-made runs."""

from __future__ import annotations

import numpy as np
import pytest

from loadguard.lab.evaluate.suite_metrics import (
    Capacity,
    Goal,
    RunData,
    SuiteMetrics,
    compute,
    frontier_at,
    frontier_gap,
    misses,
    steady_spans,
    t90_exempt,
    violation_share,
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


def test_time_to_reach_waits_for_the_reach_fraction_of_lambda_star() -> None:
    data = _run(0.1, rate=9.0)
    assert compute(data, Capacity(((0.0, 10.0),)), p95_ms=500.0, reach=0.95).time_to_90_s is None
    assert compute(data, Capacity(((0.0, 10.0),)), p95_ms=500.0, reach=0.9).time_to_90_s == 1.0


def test_violation_share_judges_windows_from_30_s_with_enough_samples() -> None:
    rows = [(0, 50, 900.0, 0.0), (3, 50, 900.0, 0.0), (4, 4, 900.0, 0.0), (5, 50, 100.0, 0.0)]
    assert violation_share(rows, 500.0) == (0.5, 2)


def test_frontier_at_budget_is_the_best_efficiency_within_the_budget() -> None:
    points = [(0.0, 0.80), (0.035, 0.91), (0.053, 0.94), (0.12, 0.97)]
    assert frontier_at(points, 0.05) == pytest.approx(0.91)
    assert frontier_at(points, 0.10) == pytest.approx(0.94)
    assert frontier_at([(0.02, 0.5)], 0.01) is None


def test_t90_is_exempt_where_a_window_holds_under_100_samples() -> None:
    assert t90_exempt(Capacity(((0.0, 3.4),)))
    assert not t90_exempt(Capacity(((0.0, 145.0),)))
    assert not t90_exempt(Capacity(((0.0, 145.0), (150.0, 0.0), (170.0, 145.0))))


def test_goal_figures_derive_from_the_budget_and_the_frontier() -> None:
    goal = Goal(0.01, 0.80)
    assert goal.max_violations == pytest.approx(0.03)
    assert goal.min_efficiency == pytest.approx(0.75)
    assert goal.reach == pytest.approx(0.72)


def _m(v: float, e: float, t90: float | None = 40.0, collapses: int = 0) -> SuiteMetrics:
    return SuiteMetrics(v, 57, 0.0, e, t90, (30.0,), collapses, 1.0)


def test_misses_judges_violations_and_efficiency_on_the_mean_over_seeds() -> None:
    goal = Goal(0.05, 0.92)
    # One seed at 9 % violations, the mean 6 %: within B + 2 points.
    assert misses([_m(0.09, 0.90), _m(0.03, 0.86), _m(0.06, 0.88)], goal) == []
    assert misses([_m(0.09, 0.85), _m(0.07, 0.86)], goal) == ["violations", "efficiency"]


def test_misses_judges_t90_recovery_collapses_and_errors_on_every_seed() -> None:
    goal = Goal(0.05, 0.92, has_events=True, has_cliff=True)
    bad = SuiteMetrics(0.02, 57, 0.01, 0.9, 90.0, (None,), 3, 1.0)
    assert misses([_m(0.02, 0.9), bad], goal) == ["t90", "recovery", "collapses", "errors"]


def test_misses_leaves_out_t90_where_the_plant_is_exempt() -> None:
    assert misses([_m(0.02, 0.9, t90=None)], Goal(0.05, 0.92, t90_exempt=True)) == []


def test_misses_judges_no_efficiency_where_no_fixed_rate_keeps_the_budget() -> None:
    assert misses([_m(0.02, 0.3)], Goal(0.01, None)) == []
    assert misses([_m(0.05, 0.3)], Goal(0.01, None)) == ["violations"]


def test_without_a_measured_frontier_the_efficiency_floor_is_90_percent() -> None:
    goal = Goal(0.05, None, measured_frontier=False)
    assert misses([_m(0.02, 0.89)], goal) == ["efficiency"]
    assert goal.reach == pytest.approx(0.9)
