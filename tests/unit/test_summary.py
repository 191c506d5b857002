"""Run summary: exact whole-run percentiles in O(1) memory, verdicts and max compliant rate."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loadguard.capacity import CapacityEstimate
from loadguard.jtl.sample import SampleBatch
from loadguard.summary import LatencyHistogram, RunAccumulator, SummaryBuilder, write_json_atomic
from tests.unit.test_decision_log import make_row

SLO = {"p95_ms": 250.0, "error_rate": 0.01}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 70_000), min_size=1, max_size=300), st.sampled_from([0.5, 0.95, 0.99])
)
def test_histogram_quantile_equals_numpy(values: list[int], q: float) -> None:
    h = LatencyHistogram()
    arr = np.asarray(values, np.int64)
    h.add(arr[: len(arr) // 2])
    h.add(arr[len(arr) // 2 :])
    assert h.quantile(q) == pytest.approx(float(np.quantile(arr, q)))
    assert h.mean() == pytest.approx(float(arr.mean()))


def test_run_accumulator_counts_ok_and_duration() -> None:
    run = RunAccumulator()
    run.add(SampleBatch.of([0, 1000], [10, 20], [True, False], ["a", "a"]))
    run.add(SampleBatch.of([9_990], [10], [True], ["b"]))
    assert run.hist.total == 3 and run.ok == 2
    assert run.duration_s == pytest.approx(10.0)


def _builder() -> SummaryBuilder:
    return SummaryBuilder(window_ms=10_000, slo=SLO)


def test_verdict_pass_when_final_windows_meet_the_slo() -> None:
    b = _builder()
    for t in range(1, 8):
        b.add(make_row(t, p95_ms=100.0, rps=50.0))
    found = CapacityEstimate("estimated", 60.0, (55.0, 65.0), "p95_ms", None)
    s = b.build(RunAccumulator(), "jmeter_exited", found)
    assert s.verdict == "PASS"


def test_verdict_fail_when_final_window_breaches() -> None:
    b = _builder()
    for t in range(1, 8):
        b.add(make_row(t, p95_ms=100.0))
    b.add(make_row(8, p95_ms=400.0, zone="BREACH", action="DECREASE"))
    assert b.build(RunAccumulator(), "x").verdict == "FAIL"


def test_min_capacity_reached_passes_despite_final_breach() -> None:
    b = SummaryBuilder(window_ms=10_000, slo=SLO, min_capacity=40.0)
    for t in range(1, 8):
        b.add(make_row(t, p95_ms=100.0, rps=50.0))
    b.add(make_row(8, p95_ms=400.0, zone="BREACH"))
    assert b.build(RunAccumulator(), "x").verdict == "PASS"


def test_no_evaluated_window_is_no_data() -> None:
    b = _builder()
    b.add(make_row(1, zone="NO_DATA", action="HOLD"))
    assert b.build(RunAccumulator(), "x").verdict == "NO_DATA"


def test_max_compliant_rate_needs_a_full_window_of_compliance() -> None:
    b = _builder()
    # ticks every 2 s; a lone fast compliant tick (t=1) must not count on its own.
    b.add(make_row(1, rps=500.0, p95_ms=100.0))
    b.add(make_row(2, rps=90.0, p95_ms=900.0, zone="BREACH"))
    for t in range(3, 10):
        b.add(make_row(t, rps=100.0 + t, p95_ms=120.0))
    s = b.build(RunAccumulator(), "x")
    assert s.max_compliant_rate is not None
    assert 100.0 < s.max_compliant_rate < 500.0
    ev = s.max_compliant_evidence
    assert ev is not None and ev.to_epoch_ms - ev.from_epoch_ms >= 10_000


def test_violation_share_uses_tumbling_windows() -> None:
    b = _builder()
    # 10 ticks 2 s apart = 20 s: tumbling windows at ticks 1 and 6 (and 11 not reached).
    for t in range(1, 11):
        p95 = 400.0 if t == 6 else 100.0
        b.add(make_row(t, p95_ms=p95, zone="BREACH" if t == 6 else "SAFE"))
    s = b.build(RunAccumulator(), "x")
    assert b.tumbling == 2
    assert s.violation_share_p95 == pytest.approx(0.5)


LOWER = CapacityEstimate(
    "lower_bound", 149.0, None, "p95_ms", "capacity above 149 req/s: the knee was not reached"
)


def _held_at_145(violated_at: float) -> SummaryBuilder:
    """Ticks 2 s apart at 145 req/s in force, one window over the SLO at ``violated_at``
    in the second half, compliant final windows."""
    b = _builder()
    for t in range(1, 21):
        rate = violated_at if t == 14 else 145.0
        over = t == 14
        b.add(
            make_row(
                t, old_rate=rate, new_rate=145.0 if over else rate, action="HOLD",
                p95_ms=300.0 if over else 120.0, zone="BREACH" if over else "SAFE",
            )
        )  # fmt: skip
    return b


def test_a_lower_bound_run_whose_windows_broke_at_the_held_rate_is_a_pass() -> None:
    s = _held_at_145(violated_at=149.0).build(RunAccumulator(), "x", LOWER)
    assert s.held_rate is not None and s.held_rate["rps"] == pytest.approx(145.0)
    assert s.verdict == "PASS"
    assert s.capacity is not None and s.capacity["status"] == "lower_bound"
    assert "windows over the SLO bounded the held rate" in s.capacity["note"]


def test_a_lower_bound_run_whose_windows_broke_only_below_the_held_rate_is_inconclusive() -> None:
    # a cold start's window over the SLO at a low rate says nothing of the knee
    s = _held_at_145(violated_at=20.0).build(RunAccumulator(), "x", LOWER)
    assert s.verdict == "INCONCLUSIVE"
    assert s.capacity is not None and s.capacity["note"] == LOWER.note


def _held_at_145_after_a_cut(reason: str) -> SummaryBuilder:
    """A cut from 160 to 145 req/s with no window over the SLO, then 145 held."""
    b = _builder()
    b.add(make_row(1, old_rate=160.0, new_rate=145.0, action="DECREASE", reason=reason))
    for t in range(2, 21):
        b.add(make_row(t, old_rate=145.0, new_rate=145.0, action="HOLD", p95_ms=120.0))
    return b


def test_a_lower_bound_run_the_policy_cut_above_its_held_rate_is_a_pass() -> None:
    s = _held_at_145_after_a_cut("knee_watch").build(RunAccumulator(), "x", LOWER)
    assert s.verdict == "PASS"
    assert s.capacity is not None and "backed off from 160 req/s" in s.capacity["note"]


@pytest.mark.parametrize("reason", ["clamp_max", "stale", "cold_start", "stall"])
def test_a_cut_that_is_no_verdict_on_the_rate_is_no_evidence_of_the_limit(reason: str) -> None:
    s = _held_at_145_after_a_cut(reason).build(RunAccumulator(), "x", LOWER)
    assert s.verdict == "INCONCLUSIVE"


def test_a_pass_whose_capacity_is_unknown_and_that_met_no_limit_is_inconclusive() -> None:
    unknown = CapacityEstimate("unknown", None, None, None, "no rate was held long enough")
    b = _builder()
    for t in range(1, 21):
        b.add(make_row(t, old_rate=5.0, new_rate=5.0, action="HOLD", p95_ms=120.0))
    s = b.build(RunAccumulator(), "x", unknown)
    assert s.verdict == "INCONCLUSIVE"
    assert s.capacity is not None and s.capacity["note"] == unknown.note


def test_a_pass_whose_capacity_is_unknown_but_that_met_its_limit_keeps_its_note() -> None:
    unknown = CapacityEstimate("unknown", None, None, None, "no rate was held long enough")
    s = _held_at_145(violated_at=149.0).build(RunAccumulator(), "x", unknown)
    assert s.verdict == "PASS"
    assert s.capacity is not None and s.capacity["note"] == unknown.note


def test_summary_json_is_written_atomically(tmp_path: Path) -> None:
    b = _builder()
    b.add(make_row(1))
    s = b.build(RunAccumulator(), "x")
    path = tmp_path / "summary.json"
    write_json_atomic(path, s.to_json())
    data = json.loads(path.read_text())
    for key in (
        "verdict",
        "max_compliant_rate",
        "violation_share_p95",
        "error_rate",
        "ok_rps",
        "actions",
    ):
        assert key in data
    assert list(tmp_path.iterdir()) == [path]


def test_failed_summary_write_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from loadguard.errors import DecisionLogError

    def disk_full(*_: object, **__: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(DecisionLogError, match="No space left"):
        write_json_atomic(tmp_path / "summary.json", {"verdict": "PASS"})
    assert list(tmp_path.iterdir()) == []
