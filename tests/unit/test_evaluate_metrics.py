"""Evaluation harness, pure core: offered schedules, per-run metrics, λ* from a sweep."""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from loadguard.jtl.sample import SampleBatch
from loadguard.lab.evaluate.lambda_star import SweepPoint, lambda_star_from_sweep
from loadguard.lab.evaluate.offered import OfferedSchedule, schedule_from_decisions
from loadguard.lab.evaluate.run_metrics import run_metrics, steady_cutoff_s
from loadguard.slo import SloSpec

SPEC = SloSpec.from_options(p95="250ms", error_rate="1%")
T0 = 1_000_000_000_000  # an epoch-ms origin


def steady_run(
    seconds: int,
    rate: int,
    elapsed_of_second: dict[int, int] | None = None,
    fail: AbstractSet[int] = frozenset(),
) -> SampleBatch:
    """``rate`` samples per second starting at T0 + i/rate; elapsed 100 ms unless overridden."""
    n = seconds * rate
    start = T0 + (np.arange(n) * 1000) // rate
    sec = (start - T0) // 1000
    elapsed = np.array([(elapsed_of_second or {}).get(int(s), 100) for s in sec], np.int64)
    ok = np.array([int(s) not in fail for s in sec])
    return SampleBatch.of(start, elapsed, ok, ["r"] * n, all_threads=[7] * n)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [(0, 1000, 800.0), (0, 500, 400.0), (250, 250, 0.0), (10, 0, 0.0)],
)
def test_constant_schedule_counts_rate_times_span(a: int, b: int, expected: float) -> None:
    assert OfferedSchedule.constant(800.0).count(a, b) == pytest.approx(expected)


def test_piecewise_schedule_integrates_each_piece() -> None:
    sched = OfferedSchedule(5.0, np.array([1000, 3000], np.int64), np.array([10.0, 20.0]))
    # 1 s at 5/s + 2 s at 10/s + 1 s at 20/s
    assert sched.count(0, 4000) == pytest.approx(5 + 20 + 20)
    assert sched.rate_at(999) == 5.0
    assert sched.rate_at(1000) == 10.0


@given(
    st.lists(st.integers(0, 10_000), min_size=1, max_size=6, unique=True),
    st.integers(0, 12_000),
    st.integers(0, 12_000),
    st.integers(0, 12_000),
)
def test_offered_count_is_additive(changes: list[int], x: int, y: int, z: int) -> None:
    a, b, c = sorted((x, y, z))
    times = np.array(sorted(changes), np.int64)
    sched = OfferedSchedule(3.0, times, np.linspace(1.0, 50.0, len(times)))
    assert sched.count(a, b) + sched.count(b, c) == pytest.approx(sched.count(a, c))


def test_schedule_from_decisions_keeps_the_rate_in_force_when_a_push_failed(
    tmp_path: Path,
) -> None:
    log = tmp_path / "decisions.csv"
    log.write_text(
        "epoch_ms,old_rate,new_rate,applied\n1000,5,10,true\n2000,10,40,false\n3000,10,20,true\n"
    )
    sched = schedule_from_decisions(log, initial=5.0)
    assert [sched.rate_at(t) for t in (500, 1500, 2500, 3500)] == [5.0, 10.0, 10.0, 20.0]


def test_violation_share_counts_tumbling_windows_over_the_p95_slo() -> None:
    # 30 s at 20/s; second 12..19 is slow, so window 2 of 3 breaches p95.
    batch = steady_run(30, 20, {s: 400 for s in range(12, 20)})
    m, _ = run_metrics(batch, SPEC, OfferedSchedule.constant(20.0), 30.0, 15.0)
    assert (m.windows, m.windows_judged, m.windows_violating_p95) == (3, 3, 1)
    assert m.violation_share_p95 == pytest.approx(1 / 3)


def test_windows_with_too_few_samples_are_not_judged() -> None:
    batch = steady_run(30, 1)  # 10 samples per window < min_samples 20
    m, _ = run_metrics(batch, SPEC, OfferedSchedule.constant(1.0), 30.0, 15.0)
    assert m.windows_judged == 0
    assert m.violation_share_p95 is None


def test_samples_completing_after_the_run_are_left_out() -> None:
    batch = steady_run(40, 10)
    m, _ = run_metrics(batch, SPEC, OfferedSchedule.constant(10.0), 30.0, 15.0)
    # completions in (T0, T0 + 30 s]: starts 0 .. 29.9 s end 0.1 .. 30.0 s => 300 of 400
    assert m.samples == 300
    assert m.ok_rps == pytest.approx(300 / 30)


def test_error_windows_count_as_any_breach_but_not_p95() -> None:
    batch = steady_run(30, 20, fail={3})
    m, _ = run_metrics(batch, SPEC, OfferedSchedule.constant(20.0), 30.0, 15.0)
    assert m.violation_share_p95 == 0.0
    assert m.violation_share_any == pytest.approx(1 / 3)
    # the sample starting at 29.95 s completes at 30.05 s: 599 counted
    assert m.error_rate == pytest.approx(20 / 599)
    # window 1's successes are not "compliant" throughput; windows 2 and 3 hold 200 each
    assert m.compliant_ok_rps == pytest.approx(400 / 30)


def test_held_back_is_offered_minus_started() -> None:
    batch = steady_run(30, 20)
    m, _ = run_metrics(batch, SPEC, OfferedSchedule.constant(800.0), 30.0, 15.0)
    assert m.offered_rps == pytest.approx(800.0)
    assert m.started_rps == pytest.approx(20.0)
    assert m.held_back == pytest.approx(800 * 30 - 600)
    assert m.held_back_share == pytest.approx(1 - 600 / 24_000)
    assert m.max_threads == 7


def test_steady_throughput_counts_only_after_the_cutoff() -> None:
    batch = steady_run(30, 20, fail=set(range(0, 15)))
    m, _ = run_metrics(batch, SPEC, OfferedSchedule.constant(20.0), 30.0, 15.0)
    assert m.steady_ok_rps == pytest.approx(20.0, rel=0.01)
    assert m.ok_rps == pytest.approx(20.0 * 15 / 30, rel=0.01)


def test_series_has_one_point_per_step_with_tumbling_marks() -> None:
    batch = steady_run(30, 20)
    _, points = run_metrics(batch, SPEC, OfferedSchedule.constant(20.0), 30.0, 15.0)
    assert [p.t_s for p in points] == [
        10.0,
        12.0,
        14.0,
        16.0,
        18.0,
        20.0,
        22.0,
        24.0,
        26.0,
        28.0,
        30.0,
    ]
    assert [p.t_s for p in points if p.tumbling] == [10.0, 20.0, 30.0]
    assert all(p.offered_rps == pytest.approx(20.0) for p in points)


def test_every_series_point_counts_the_samples_of_its_own_window() -> None:
    # The tumbling tally walks a window to the run's end first; the series must not
    # meet that window's evictions (it plotted 0/s until the last window).
    batch = steady_run(30, 20)
    _, points = run_metrics(batch, SPEC, OfferedSchedule.constant(20.0), 30.0, 15.0)
    end = batch.end_ms - T0
    expected = [int(((end > p.t_s * 1000 - 10_000) & (end <= p.t_s * 1000)).sum()) for p in points]
    assert [p.count for p in points] == expected
    assert min(expected) >= 199


def test_empty_jtl_is_an_error() -> None:
    with pytest.raises(ValueError, match="no samples"):
        run_metrics(SampleBatch.empty(), SPEC, OfferedSchedule.constant(1.0), 30.0, 15.0)


@pytest.mark.parametrize(
    ("duration", "after", "expected"), [(180, 120, 120), (120, 120, 60), (20, 120, 10)]
)
def test_steady_cutoff_is_half_the_run_when_shorter(
    duration: float, after: float, expected: float
) -> None:
    assert steady_cutoff_s(duration, after) == expected


def point(achieved: float, p95: float, err: float = 0.0) -> SweepPoint:
    return SweepPoint(achieved, achieved, p95, err, 1000)


@pytest.mark.parametrize(
    ("points", "rps", "bounded"),
    [
        ([point(100, 150), point(140, 200), point(150, 300)], 140 + 10 * 0.5, True),
        ([point(150, 300), point(140, 200), point(100, 150)], 145.0, True),  # any order
        ([point(100, 150), point(140, 200)], 140.0, False),  # never failed: lower bound
        ([point(100, 300)], None, True),  # never passed
        ([point(100, 150), point(140, 200, err=0.05)], 100.0, True),  # errors only
        ([], None, False),
    ],
)
def test_lambda_star_interpolates_p95_to_the_slo(
    points: list[SweepPoint], rps: float | None, bounded: bool
) -> None:
    lam = lambda_star_from_sweep(points, 250.0, 0.01)
    assert (lam.rps, lam.bounded) == (pytest.approx(rps) if rps is not None else None, bounded)


def test_lambda_star_is_not_dragged_down_by_a_collapsed_overload_point() -> None:
    # Offered 24/s collapsed to 12.8 achieved: it is still the first failure above the
    # 12/s pass, and no interpolation towards a lower throughput is made.
    points = [
        SweepPoint(12.0, 12.0, 300.0, 0.0, 500),
        SweepPoint(24.0, 12.8, 9000.0, 0.0, 500),
        SweepPoint(36.0, 20.0, 15000.0, 0.0, 500),
        SweepPoint(6.0, 6.0, 200.0, 0.0, 500),
    ]
    lam = lambda_star_from_sweep(points, 500.0, 0.01)
    assert (lam.rps, lam.bounded) == (pytest.approx(12.0 + 0.8 * 200 / 8700), True)
    collapsed = [SweepPoint(20.0, 19.9, 300.0, 0.0, 500), SweepPoint(40.0, 15.0, 9e3, 0.0, 500)]
    assert lambda_star_from_sweep(collapsed, 500.0, 0.01).rps == pytest.approx(19.9)
