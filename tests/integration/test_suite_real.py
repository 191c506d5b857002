"""The plant suite on real JMeter (``loadguard evaluate --suite --real``), one plant end to end.

Plant 1 (M/M/8, 50 ms, p95 <= 250 ms) served by a real ``loadguard target`` process, the
default policy through ``loadguard run`` on real JMeter 5.6.3 with the Elastic Timer from
5 req/s for 60 s, judged by the simulator suite's own ``suite_metrics.compute``. λ* is
given (the plant's Erlang C figure) so the test skips the sweep, which
``test_evaluate_quick`` already runs for real; about 90 s.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from loadguard.jmeter.home import JMeterHome
from loadguard.lab.evaluate.real_plants import RealPlant, select_real
from loadguard.lab.evaluate.real_suite import RealSuiteConfig, evaluate_real_plant
from loadguard.lab.simulate.plants import BY_KEY
from loadguard.policies import DEFAULT_POLICY

pytestmark = [pytest.mark.jmeter, pytest.mark.slow]


def _violation_share(jtl: Path, plant: RealPlant) -> float:
    """Share of the windows (30, 40], (40, 50], (50, 60] s of completion time after the
    first sample's start whose p95 exceeds the plant's SLO."""
    with jtl.open(newline="") as fh:
        rows = [(int(r["timeStamp"]), int(r["elapsed"])) for r in csv.DictReader(fh)]
    t0 = min(ts for ts, _el in rows)
    windows: dict[int, list[int]] = {3: [], 4: [], 5: []}
    for ts, el in rows:
        k = (ts + el - t0 - 1) // 10_000  # (10k, 10(k+1)] s
        if k in windows:
            windows[k].append(el)
    assert all(len(v) >= 5 for v in windows.values()), {k: len(v) for k, v in windows.items()}
    bad = sum(float(np.percentile(v, 95.0)) > plant.p95_ms for v in windows.values())
    return bad / len(windows)


def test_mm8_default_policy_60s_on_real_jmeter_is_judged_like_the_simulator(
    tmp_path: Path, jmeter_home: JMeterHome
) -> None:
    (plant,) = select_real(["mm8"])
    sim = BY_KEY["mm8"]
    lam = sim.nominal_lambda_star(sim.healthy())
    cfg = RealSuiteConfig(out_dir=tmp_path, duration_s=60.0, lambda_stars=(lam,))
    said: list[str] = []
    result = evaluate_real_plant(plant, cfg, jmeter_home, progress=said.append)

    assert result.not_run is None and result.steps == ((0.0, lam),)
    (run,) = result.runs
    m = run.metrics
    assert run.policy == DEFAULT_POLICY and run.covered, said
    # JMeter's first sample comes after the target is ready, within its start-up.
    assert 0.0 < run.offset_s < 30.0
    # Windows (30, 40], (40, 50], (50, 60] are judged, each with real samples.
    assert m.windows == 3
    # Judged like the simulator: the share of those windows whose p95 (linear) is over
    # the SLO, recomputed here from the JTL with the csv module.
    assert m.violations == pytest.approx(_violation_share(run.run_dir / "results.jtl", plant))
    assert m.errors is not None and math.isfinite(m.errors) and m.errors < 0.05
    # The controller climbed from 5 req/s: the rate in force rose well above it, and
    # JMeter delivered it (the successful rate over the whole minute).
    ticks = run.rates
    assert ticks[0][1] <= 10.0 and max(r for _t, r in ticks) >= 0.4 * lam
    assert m.ok_rps > 15.0
    # Too short for a steady state (it starts at 120 s): reported empty, not invented.
    assert m.steady_efficiency is None and "efficiency" in run.misses
    assert (run.run_dir / "results.jtl").stat().st_size > 10_000
    assert (run.run_dir / "decisions.csv").exists()
