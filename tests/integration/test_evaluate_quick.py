"""The evaluation harness's --quick mode, end to end (its CI smoke test).

``loadguard evaluate --quick`` runs for real: a one-point λ* sweep, then FFA and TSTCTG on
the real jmeter-plugins and LoadGuard's default policy, 20 s each, every run on a fresh demo
target (M/M/8, 50 ms: capacity 160 req/s, far below the baselines' 800 req/s). It must
write runs.csv, the PNGs and the Markdown report, and the figures must show what the
set-up implies: the open-loop baselines saturate the target and hold most of their
800 req/s back, LoadGuard does not. Takes about 2.5 minutes.

It runs once per session, by the installed wheel outside the checkout
(tests/installed_wheel.py), and test_wheel.py checks the same run: the figures here hold
for the code as a user installs it, and CI pays for one quick evaluation, not two.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from loadguard.lab.evaluate.schemes import BY_NAME
from loadguard.policies import DEFAULT_POLICY
from tests.installed_wheel import QuickEvaluation

pytestmark = pytest.mark.jmeter


@pytest.fixture(scope="module")
def quick_run(quick_evaluation: QuickEvaluation) -> Path:
    """The session's one quick evaluation (tests/conftest.py), which test_wheel.py also
    checks: run by the installed wheel, outside the checkout, so what is asserted here
    holds for the code as a user installs it."""
    return quick_evaluation.out


def runs(out: Path) -> dict[str, dict[str, str]]:
    with (out / "evaluation" / "runs.csv").open() as fh:
        return {row["scheme"]: row for row in csv.DictReader(fh)}


def test_quick_runs_three_schemes_once_each_over_the_whole_span(quick_run: Path) -> None:
    rows = runs(quick_run)
    assert sorted(rows) == sorted(["FFA", "TSTCTG", DEFAULT_POLICY])
    for row in rows.values():
        assert row["covered"] == "yes"
        assert float(row["duration_s"]) == 20.0
        assert int(row["windows"]) == 2


def test_baselines_ran_on_the_real_plugins(quick_run: Path) -> None:
    ffa_log = (quick_run / "runs" / "FFA-1" / "jmeter.log").read_text()
    tst_log = (quick_run / "runs" / "TSTCTG-1" / "jmeter.log").read_text()
    assert "c.b.j.t.a.ArrivalsThreadGroup" in ffa_log  # casutg's arrivals group
    assert "k.a.j.t.VariableThroughputTimer" in tst_log  # tst's shaping timer
    assert "k.a.j.t.f.TSTFeedback" in tst_log  # __tstFeedback driving the CTG


@pytest.mark.parametrize("scheme", ["FFA", "TSTCTG"])
def test_open_loop_baselines_saturate_the_target_and_hold_load_back(
    quick_run: Path, scheme: str
) -> None:
    row = runs(quick_run)[scheme]
    assert float(row["offered_rps"]) == pytest.approx(800.0)
    # capacity is 160 req/s: most of the 800/s never leaves JMeter
    assert float(row["held_back_share"]) > 0.5
    assert float(row["p95_ms"]) > 250.0
    assert 200 < int(row["max_threads"]) <= 1002


def _completed_within(jtl: Path, duration_s: float) -> tuple[list[int], int]:
    """Elapsed ms of the samples completed in (t0, t0 + duration], t0 the first start, and
    how many failed: read with the csv module, not loadguard's readers."""
    with jtl.open(newline="") as fh:
        rows = [(int(r["timeStamp"]), int(r["elapsed"]), r["success"]) for r in csv.DictReader(fh)]
    t0 = min(ts for ts, _el, _ok in rows)
    done = [(el, ok) for ts, el, ok in rows if t0 < ts + el <= t0 + duration_s * 1000]
    return [el for el, _ok in done], sum(ok != "true" for _el, ok in done)


def test_loadguard_run_is_judged_by_the_same_windows_and_holds_the_slo(quick_run: Path) -> None:
    row = runs(quick_run)[DEFAULT_POLICY]
    # The SLO is p95 <= 250 ms and errors <= 1 %: no judged window broke it, and the run's
    # own p95 and error rate, recomputed from its JTL, are within it and as reported.
    assert int(row["windows"]) == 2 and int(row["windows_violating_p95"]) == 0
    assert float(row["violation_share_p95"]) == 0.0
    elapsed, failed = _completed_within(
        quick_run / "runs" / f"{DEFAULT_POLICY}-1" / "results.jtl", float(row["duration_s"])
    )
    p95 = float(np.quantile(np.asarray(elapsed, dtype=np.float64), 0.95))
    assert p95 <= 250.0
    assert float(row["p95_ms"]) == pytest.approx(p95)
    assert float(row["error_rate"]) == pytest.approx(failed / len(elapsed))
    assert float(row["error_rate"]) <= 0.01
    assert float(row["held_back_share"]) < 0.2
    assert int(row["increase"]) + int(row["hold"]) + int(row["decrease"]) > 0
    assert (quick_run / "runs" / f"{DEFAULT_POLICY}-1" / "decisions.csv").is_file()


def test_sweep_measured_a_point_and_a_lambda_star(quick_run: Path) -> None:
    sweep = json.loads((quick_run / "sweep.json").read_text())
    (point,) = sweep["points"]
    assert point["offered_rps"] == 140.0
    assert 50.0 < point["achieved_rps"] <= 150.0
    assert sweep["analytic"] == pytest.approx(144.4, abs=0.5)


def test_report_and_plots_are_written(quick_run: Path) -> None:
    doc = (quick_run / "evaluation.md").read_text()
    assert "QUICK smoke run" in doc
    for name in ("| FFA |", "| TSTCTG |", f"| {BY_NAME[DEFAULT_POLICY].label} |"):
        assert name in doc
    for png in ("overview", "FFA", "TSTCTG", DEFAULT_POLICY):
        data = (quick_run / "evaluation" / f"{png}.png").read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
