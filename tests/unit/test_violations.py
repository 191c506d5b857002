"""The violation share: its one definition (``loadguard.violations``) and its four users."""

from __future__ import annotations

import math

import numpy as np
import pytest

from loadguard.jtl.sample import SampleBatch
from loadguard.lab.evaluate.offered import OfferedSchedule
from loadguard.lab.evaluate.run_metrics import run_metrics
from loadguard.lab.evaluate.suite_metrics import violation_share, window_table
from loadguard.lab.simulate.summary import _violations
from loadguard.slo import SloSpec, Threshold
from loadguard.summary import RunAccumulator, SummaryBuilder
from loadguard.violations import ANY, ViolationTally, over_limits, share, tumbling_tally
from loadguard.window import Window
from tests.unit.test_decision_log import make_row

SPEC = SloSpec(limits=(Threshold("p95_ms", 250.0),), min_samples=5)


def test_the_share_of_no_judged_window_is_unknown() -> None:
    assert ViolationTally().share() is None and share(0, 0) is None


def test_windows_all_within_have_a_share_of_zero() -> None:
    tally = ViolationTally()
    for _ in range(4):
        tally.add(10, ())
    assert tally.share() == 0.0 and tally.share("p95_ms") == 0.0


def test_the_share_is_violating_windows_over_judged_windows() -> None:
    tally = ViolationTally()
    tally.add(10, {"p95_ms"})
    tally.add(10, {"p95_ms", "error_rate"})
    tally.add(10, {"error_rate"})
    tally.add(10, ())
    assert (tally.share("p95_ms"), tally.share("error_rate"), tally.share(ANY)) == (
        0.5,
        0.5,
        0.75,
    )


def test_a_window_with_too_few_samples_is_not_judged() -> None:
    tally = ViolationTally(min_samples=5)
    assert tally.add(4, {"p95_ms"}) is False
    tally.add(5, ())
    assert (tally.judged, tally.share()) == (1, 0.0)


def test_a_nan_or_missing_value_or_limit_is_no_violation() -> None:
    values = {"p95_ms": math.nan, "p99_ms": None, "mean_ms": 30.0, "error_rate": 0.5}
    limits = {"p95_ms": 1.0, "p99_ms": 1.0, "mean_ms": math.nan, "error_rate": 0.01}
    assert over_limits(values, limits) == {"error_rate"}


def test_a_tumbling_window_short_of_the_specs_min_samples_is_not_judged() -> None:
    window = Window(SPEC.window_ms, by_label=False)
    window.add(SampleBatch.of([0] * 4 + [10_000] * 5, [400] * 9, [True] * 9, ["a"] * 9))
    tally = tumbling_tally(SPEC, window, 0, 2)
    assert (tally.judged, tally.share("p95_ms")) == (1, 1.0)


# Windows of 10 s: one sample in the first (too few), none in the next two, then ten a
# window from 30 s on, slow (400 ms over a 250 ms p95) in windows 6 and 9: 2 of 7 judged.
SLOW = {6, 9}
JUDGED = range(3, 10)


def _batch() -> SampleBatch:
    start, elapsed = [0], [1]
    for k in JUDGED:
        for i in range(10):
            start.append(k * 10_000 + 1_000 + i * 100)
            elapsed.append(400 if k in SLOW else 100)
    return SampleBatch.of(start, elapsed, [True] * len(start), ["a"] * len(start))


def _summary_share() -> float:
    builder = SummaryBuilder(window_ms=10_000, slo={"p95_ms": 250.0})
    for k in range(1, 11):
        if k - 1 in JUDGED:
            p95 = 400.0 if k - 1 in SLOW else 100.0
            zone = "BREACH" if p95 > 250.0 else "SAFE"
            builder.add(make_row(k, epoch_ms=k * 10_000, p95_ms=p95, zone=zone, samples=10))
        else:
            builder.add(make_row(k, epoch_ms=k * 10_000, zone="NO_DATA", samples=0))
    return builder.build(RunAccumulator(), "jmeter_exited").violation_share["p95_ms"]


def test_the_four_users_agree_on_the_share_of_the_same_windows() -> None:
    batch = _batch()
    metrics, _ = run_metrics(batch, SPEC, OfferedSchedule.constant(7.0), 100.0, 50.0)
    simulated = _violations(SPEC, batch, 100.0)["violation_share_p95"]
    end_s = batch.end_ms.astype(np.float64) / 1000.0
    rows = window_table(batch.elapsed_ms.astype(np.float64), end_s, batch.success, 100.0)
    suite, judged = violation_share(rows, 250.0)
    shares = [metrics.violation_share_p95, simulated, suite, _summary_share()]
    assert judged == len(JUDGED)
    assert shares == pytest.approx([2 / 7] * 4, abs=1e-4)
