"""The simulator: plant behaviour, the summary contract, and the controller targets.

The target tests run the docs/controller.md scenario (M/M/8, 50 ms mean service, p95 <=
250 ms, Poisson arrivals, 2 s actuation lag, start at 5 req/s, 600 s; lambda* = 144.4 req/s)
with fixed seeds.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from loadguard.cli import cli
from loadguard.errors import SimulationError
from loadguard.lab.simulate.plant import Plant
from loadguard.lab.simulate.run import simulate
from loadguard.lab.simulate.scenario import CapacityChange, Scenario
from loadguard.lab.simulate.summary import summarize
from loadguard.lab.target.distributions import ServiceDist
from loadguard.policies import DEFAULT_POLICY, build_policy
from loadguard.slo import SloSpec

SPEC = SloSpec.from_options(p95="250ms")
HALVED = (CapacityChange(300.0, 0.5),)


def run(policy: str, seed: int, changes: tuple[CapacityChange, ...] = ()) -> dict[str, Any]:
    scenario = Scenario(seed=seed, changes=changes)
    return summarize(simulate(scenario, SPEC, build_policy(policy, SPEC))).to_json()


def test_pushed_rate_takes_effect_after_the_lag() -> None:
    plant = Plant(Scenario(start_rate=10.0, arrivals="smooth", lag_s=2.0, duration_s=20.0))
    plant.advance(0.0, 5.0)
    plant.push(5.0, 50.0)
    plant.advance(5.0, 10.0)
    arrival, _end, _ok = plant.samples()
    # 10/s until t = 7 s, then 50/s (samples completed by 10 s).
    assert np.count_nonzero((arrival >= 5.0) & (arrival < 7.0)) == 20
    assert np.count_nonzero((arrival >= 7.0) & (arrival < 9.5)) == 125


def test_smooth_arrivals_are_evenly_spaced() -> None:
    plant = Plant(Scenario(start_rate=20.0, arrivals="smooth", duration_s=10.0))
    plant.advance(0.0, 10.0)
    arrival, _, _ = plant.samples()
    assert np.allclose(np.diff(np.sort(arrival)), 0.05)


def test_poisson_arrivals_have_the_commanded_mean() -> None:
    plant = Plant(Scenario(start_rate=100.0, servers=50, duration_s=100.0, seed=4))
    for k in range(100):
        plant.advance(float(k), float(k + 1))
    arrival, _, _ = plant.samples()
    assert len(arrival) == pytest.approx(10_000, rel=0.03)


def test_jtl_rows_appear_at_the_next_flush() -> None:
    scenario = Scenario(
        start_rate=10.0,
        arrivals="smooth",
        flush_s=2.0,
        service=ServiceDist("const", 0.01),
        duration_s=10.0,
    )
    plant = Plant(scenario)
    assert len(plant.advance(0.0, 1.0)) == 0  # completed, not flushed yet
    batch = plant.advance(1.0, 2.0)
    assert len(batch) == 19  # arrivals at 0.1 .. 1.9 s, done by 1.91 s, flushed at 2 s
    assert (batch.end_ms <= 2000).all()


def test_overflow_is_an_error_answered_at_once() -> None:
    scenario = Scenario(servers=1, queue=0, start_rate=200.0, service=ServiceDist("const", 0.1))
    plant = Plant(scenario)
    batch = plant.advance(0.0, 5.0)
    failed = ~batch.success
    assert failed.any()
    assert (batch.elapsed_ms[failed] == 0).all()


def test_capacity_change_and_time_weighted_lambda_star() -> None:
    scenario = Scenario(changes=HALVED)
    assert (scenario.servers_at(299.0), scenario.servers_at(300.0)) == (8, 4)
    full, half = scenario.lambda_star(8, 0.25), scenario.lambda_star(4, 0.25)
    assert full == pytest.approx(144.4, abs=0.1)
    assert scenario.mean_lambda_star(0.25) == pytest.approx((full + half) / 2)


@pytest.mark.parametrize("text", ["300s", "300s:x", "300s:-1", "soon:0.5"])
def test_bad_capacity_change_is_rejected(text: str) -> None:
    with pytest.raises(SimulationError):
        CapacityChange.parse(text)


def test_same_seed_same_run() -> None:
    assert run("aimd", 3) == run("aimd", 3)


SUMMARY_KEYS = {
    "lambda_star",
    "ok_rps",
    "efficiency",
    "steady_efficiency",
    "violation_share_p95",
    "violation_share_error",
    "time_to_90pct_s",
    "recovery_s",
    "actions",
}


def test_simulate_json_contract() -> None:
    result = CliRunner().invoke(
        cli,
        [
            "simulate",
            "--policy",
            "tally",
            "--workers",
            "8",
            "--service",
            "50ms",
            "--service-dist",
            "exp",
            "--queue",
            "200",
            "--p95",
            "250ms",
            "--error-rate",
            "1%",
            "--initial-rate",
            "5",
            "--duration",
            "120s",
            "--capacity-change",
            "60s:0.5",
            "--actuation-lag",
            "2s",
            "--arrivals",
            "poisson",
            "--seed",
            "1",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) >= SUMMARY_KEYS
    assert set(data["actions"]) == {"INCREASE", "HOLD", "DECREASE", "STOP"}
    assert data["violation_share_error"] is not None
    assert data["recovery_s"] is not None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("--p95 250", "p95: missing unit"),
        ("--p95 250ms --service fast", "--service"),
        ("--p95 250ms --param nope=1", "unknown parameter 'nope'"),
        ("--p95 250ms --initial-rate 0", "--initial-rate"),
    ],
)
def test_simulate_bad_input_is_one_line_exit_2(args: str, message: str) -> None:
    result = CliRunner().invoke(cli, ["simulate", *args.split()])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_the_default_meets_the_goal_on_the_stationary_plant() -> None:
    # The goal at the budget B (docs/controller.md, "The plant suite"): the mean
    # violations over the seeds <= B + 2 points (one seed's 60 windows move by 1.7 points
    # a window), and in every seed 90 % of the frontier within 60 s; efficiency >= 85 %
    # where F(5 %) is ~91 %.
    runs = [run(DEFAULT_POLICY, seed) for seed in (1, 2, 3)]
    for s in runs:
        assert s["lambda_star"] == pytest.approx(144.4, abs=0.1)
        assert s["steady_efficiency"] >= 0.85
        assert s["time_to_90pct_s"] <= 60.0
    mean = sum(s["violation_share_p95"] for s in runs) / len(runs)
    assert mean <= SPEC.violation_budget + 0.02, [s["violation_share_p95"] for s in runs]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_default_recovers_within_a_minute_when_capacity_halves(seed: int) -> None:
    s = run(DEFAULT_POLICY, seed, HALVED)
    assert s["recovery_s"] is not None
    assert s["recovery_s"] <= 60.0


def test_the_default_violates_far_less_than_the_papers_rule() -> None:
    best, paper = run(DEFAULT_POLICY, 1), run("threezone", 1)
    assert paper["violation_share_p95"] >= 2 * best["violation_share_p95"]
    assert paper["violation_share_p95"] > 0.05
