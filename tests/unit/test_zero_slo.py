"""A threshold of 0 (``--error-rate 0%``, ``--p95 0ms``) is a valid SLO: any non-zero
value breaches, 0 is safe, and every policy runs on it (simulated) without a crash."""

from __future__ import annotations

import math

import numpy as np
import pytest
from click.testing import CliRunner

from loadguard.cli import cli
from loadguard.jtl.sample import SampleBatch
from loadguard.lab.simulate.run import SimRun, simulate
from loadguard.lab.simulate.scenario import Scenario
from loadguard.lab.simulate.summary import summarize
from loadguard.observation import Zone
from loadguard.policies import POLICIES, build_policy
from loadguard.slo import ZERO_LIMIT_PRESSURE, SloSpec
from loadguard.window import Window

ADAPTIVE = sorted(set(POLICIES) - {"fixed"})
# Far below the knee (8 x 50 ms servers: lambda* ~ 144 req/s) and a queue that never
# overflows in 60 s: not one error.
CALM = Scenario(duration_s=60.0, start_rate=5.0, queue=100_000, seed=3)


def judge(spec: SloSpec, elapsed: list[int], ok: list[bool]) -> tuple[Zone, float | None]:
    n = len(elapsed)
    end = np.arange(1000, 1000 + 10 * n, 10, dtype=np.int64)
    window = Window(spec.window_ms)
    window.add(SampleBatch.of(end - np.array(elapsed), np.array(elapsed), np.array(ok), ["a"] * n))
    obs = spec.evaluate(window.stats(int(end[-1])), int(end[-1]), 10.0)
    return obs.zone, obs.pressure


def test_one_failed_sample_breaches_a_zero_error_rate() -> None:
    spec = SloSpec.from_options(error_rate="0%")
    assert judge(spec, [5] * 40, [True] * 40) == (Zone.SAFE, 0.0)
    assert judge(spec, [5] * 40, [True] * 39 + [False]) == (Zone.BREACH, ZERO_LIMIT_PRESSURE)


def test_any_elapsed_time_breaches_a_zero_ms_p95() -> None:
    spec = SloSpec.from_options(p95="0ms")
    assert judge(spec, [0] * 40, [True] * 40) == (Zone.SAFE, 0.0)
    assert judge(spec, [1] * 40, [True] * 40) == (Zone.BREACH, ZERO_LIMIT_PRESSURE)


def test_a_zero_threshold_pressure_is_finite_beside_other_slos() -> None:
    spec = SloSpec.from_options(p95="100ms", error_rate="0%")
    zone, pressure = judge(spec, [300] * 40, [True] * 39 + [False])
    assert zone is Zone.BREACH and pressure is not None and math.isfinite(pressure)
    assert pressure == ZERO_LIMIT_PRESSURE  # max(3.0, 10.0)


def _sim(policy: str, spec: SloSpec, scenario: Scenario = CALM) -> SimRun:
    return simulate(scenario, spec, build_policy(policy, spec))


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("slo", [{"error_rate": "0%"}, {"p95": "0ms"}, {"mean": "0ms"}])
def test_every_policy_runs_on_a_zero_threshold(policy: str, slo: dict[str, str]) -> None:
    spec = SloSpec.from_options(**slo)
    run = _sim(policy, spec)
    assert len(run.ticks) == 60
    rates = [t.decision.new_rate for t in run.ticks]
    assert all(math.isfinite(r) and spec.min_rate <= r <= spec.max_rate for r in rates)
    summary = summarize(run).to_json()  # the simulator's summary copes too
    assert summary["samples"] > 0


# The counting policies tell the service's own exceedance from a queue's (lone samples).
COUNTING = ["budget", "tally"]


@pytest.mark.parametrize("policy", sorted(set(ADAPTIVE) - set(COUNTING)))
def test_a_zero_ms_p95_drives_the_rate_to_the_floor(policy: str) -> None:
    # Every judged window breaches; with min_samples 1 every window is judged.
    spec = SloSpec.from_options(p95="0ms", min_samples="1", min_rate="1")
    run = _sim(policy, spec, Scenario(duration_s=180.0, start_rate=5.0, seed=3))
    assert not any(t.decision.action.value == "INCREASE" for t in run.ticks)
    assert run.ticks[-1].decision.new_rate == pytest.approx(1.0)


@pytest.mark.parametrize("policy", COUNTING)
def test_a_zero_ms_p95_is_the_services_own_exceedance(policy: str) -> None:
    # Every sample is over 0 ms, those sent with nothing of ours in flight too: no rate
    # meets the SLO, and a lower one changes nothing, so the rate neither rises nor falls
    spec = SloSpec.from_options(p95="0ms", min_samples="1", min_rate="1")
    run = _sim(policy, spec, Scenario(duration_s=180.0, start_rate=5.0, seed=3))
    assert {t.decision.new_rate for t in run.ticks} == {5.0}
    assert any(t.decision.reason == "slow_service" for t in run.ticks)


@pytest.mark.parametrize("policy", ADAPTIVE)
def test_a_zero_error_rate_without_errors_lets_the_rate_rise(policy: str) -> None:
    spec = SloSpec.from_options(error_rate="0%")
    run = _sim(policy, spec)
    assert all(t.decision.zone is not Zone.BREACH for t in run.ticks)
    assert run.ticks[-1].decision.new_rate > 2 * CALM.start_rate


@pytest.mark.parametrize("policy", ADAPTIVE)
def test_a_zero_error_rate_cuts_on_the_first_errors(policy: str) -> None:
    # A tiny queue overflows (errors) once the rate nears capacity: the policy cuts.
    scenario = Scenario(duration_s=120.0, start_rate=60.0, queue=2, seed=3)
    run = _sim(policy, SloSpec.from_options(error_rate="0%"), scenario)
    breaches = [t for t in run.ticks if t.decision.zone is Zone.BREACH]
    assert breaches
    decisions = [t.decision for t in breaches]
    assert all(d.new_rate <= d.old_rate for d in decisions)
    assert any(d.new_rate < d.old_rate for d in decisions)


@pytest.mark.parametrize("slo", [["--error-rate", "0%"], ["--p95", "0ms"]])
def test_simulate_cli_accepts_a_zero_threshold(slo: list[str]) -> None:
    result = CliRunner().invoke(cli, ["simulate", *slo, "--duration", "30s", "--json"])
    assert result.exit_code == 0, result.output
    assert '"final_rate"' in result.stdout


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_auto_stop_fires_on_a_zero_ms_p95_and_not_on_a_clean_zero_error_rate(
    policy: str,
) -> None:
    p95 = SloSpec.from_options(p95="0ms")
    stopped = simulate(CALM, p95, build_policy(policy, p95, auto_stop=3))
    assert stopped.stopped_at_s is not None
    assert stopped.ticks[-1].decision.reason == "auto_stop"
    errors = SloSpec.from_options(error_rate="0%")
    clean = simulate(CALM, errors, build_policy(policy, errors, auto_stop=3))
    assert clean.stopped_at_s is None and len(clean.ticks) == 60
