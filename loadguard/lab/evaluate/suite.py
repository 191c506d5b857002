r"""The plant suite: every plant × policy in the simulator, against the oracle.

For each plant (``loadguard.lab.simulate.plants``):

1. **λ*, measured**: for every capacity phase's variant, fixed rates
   :math:`f\,λ^*_{nom}` (f = 0.5 … 1.1) run for the run's duration with no controller;
   each point's achieved rate (samples *sent* per second in [120 s, D]), p95 and error
   rate over the samples sent in that span give λ* by ``lambda_star_from_sweep``
   (interpolated at the p95 crossing). An unbounded sweep (no failing point) keeps its
   last passing rate.
2. **the frontier**: the oracle -- rate :math:`f\,λ^*(t)` from the measured λ*(t),
   switched exactly when a phase starts (pushed one actuation lag ahead), held through an
   outage -- for the same f; each run's (violation share, steady efficiency) is a
   frontier point.
3. **the goal at the budget B** (``SuiteConfig.violation_budget``): F(B), the best
   frontier efficiency whose violation share is ≤ B, fixes the goal's efficiency floor
   and reach (``suite_metrics.Goal``);
4. **policies**: each policy from 5 req/s through the simulated control loop
   (``loadguard.lab.simulate.run.simulate``, the sidecar's own ``Window``, ``SloSpec`` with
   ``violation_budget = B``, and guard rails), judged by ``suite_metrics.compute``
   against the same λ*(t) and by ``suite_metrics.misses`` against the goal: per seed, and
   per policy over the seeds run (``PlantResult.policy_misses``).

Quick (CI): one seed, 600 s runs, only the default policy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from loadguard.lab.evaluate.lambda_star import LambdaStar, SweepPoint, lambda_star_from_sweep
from loadguard.lab.evaluate.suite_metrics import (
    STEADY_FROM_S,
    Capacity,
    Goal,
    RunData,
    SuiteMetrics,
    compute,
    elapsed_ms,
    frontier_at,
    frontier_gap,
    misses,
    t90_exempt,
)
from loadguard.lab.simulate.plant import Plant
from loadguard.lab.simulate.plants import SuitePlant
from loadguard.lab.simulate.run import simulate
from loadguard.lab.simulate.scenario import Scenario
from loadguard.policies import DEFAULT_POLICY, build_policy
from loadguard.slo import DEFAULT_VIOLATION_BUDGET

FRACTIONS: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.925, 0.95, 0.975, 1.0, 1.05, 1.1)
ALL_POLICIES: tuple[str, ...] = ("tally", "threezone", "aimd")
SWEEP_SEED = 1000
#: Fractions of the nominal λ* tried when the sweep has not failed by 1.1.
EXTEND: tuple[float, ...] = (1.25, 1.5, 2.0)


@dataclass(frozen=True)
class SuiteConfig:
    duration_s: float = 600.0
    seeds: tuple[int, ...] = (1, 2, 3)
    policies: tuple[str, ...] = ALL_POLICIES
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    fractions: tuple[float, ...] = FRACTIONS
    #: B: the share of windows the user accepts over the SLO; the policies run with it
    #: (``SloSpec.violation_budget``) and the goal is relative to it.
    violation_budget: float = DEFAULT_VIOLATION_BUDGET

    @classmethod
    def quick(cls, **overrides: Any) -> SuiteConfig:
        base: dict[str, Any] = {
            "duration_s": 600.0,
            "seeds": (1,),
            "policies": (DEFAULT_POLICY,),
        }
        base.update(overrides)
        return cls(**base)


@dataclass(frozen=True)
class FrontierPoint:
    fraction: float
    metrics: SuiteMetrics


@dataclass(frozen=True)
class PolicyResult:
    policy: str
    seed: int
    metrics: SuiteMetrics
    misses: tuple[str, ...]  # this seed's alone
    rates: tuple[tuple[float, float], ...]  # (t, commanded)


@dataclass(frozen=True)
class PlantResult:
    plant: SuitePlant
    sweeps: tuple[Sweep, ...]
    capacity: Capacity
    frontier: tuple[FrontierPoint, ...]
    runs: tuple[PolicyResult, ...]
    goal: Goal

    def policy_misses(self, policy: str) -> list[str]:
        """The goal items ``policy`` misses over the seeds run (means where the goal says)."""
        return misses([r.metrics for r in self.runs if r.policy == policy], self.goal)

    def frontier_xy(self) -> list[tuple[float, float]]:
        return [
            (p.metrics.violations, p.metrics.steady_efficiency)
            for p in self.frontier
            if p.metrics.violations is not None and p.metrics.steady_efficiency is not None
        ]


def _drive_fixed(scenario: Scenario, schedule: Sequence[tuple[float, float]]) -> RunData:
    """Run the plant open-loop: rate ``schedule[i][1]`` in force from ``schedule[i][0]``."""
    start = dataclasses.replace(scenario, start_rate=schedule[0][1])
    plant = Plant(start)
    for at, rate in schedule[1:]:
        plant.push(at - start.lag_s, rate)
    ticks: list[tuple[float, float]] = []
    n = round(start.duration_s / start.tick_s)
    t0 = 0.0
    for k in range(1, n + 1):
        t1 = k * start.tick_s
        plant.advance(t0, t1)
        ticks.append((t1, plant.rate_at(t1)))
        t0 = t1
    sent, end, ok = plant.samples()
    return RunData(sent, end, ok, start.duration_s, tuple(ticks))


def sweep_point(data: RunData, offered: float) -> SweepPoint:
    """One fixed rate's figures over the samples sent in [120 s, D]."""
    span = (data.sent >= STEADY_FROM_S) & (data.sent < data.duration_s)
    n = int(np.count_nonzero(span))
    el = elapsed_ms(data)[span]
    p95 = float(np.percentile(el, 95.0)) if n else float("inf")
    err = 1.0 - float(np.count_nonzero(data.ok[span])) / n if n else 1.0
    return SweepPoint(offered, n / (data.duration_s - STEADY_FROM_S), p95, err, n)


@dataclass(frozen=True)
class Sweep:
    """One variant's fixed-rate runs and the λ* they give."""

    nominal: float
    lam: LambdaStar
    points: tuple[SweepPoint, ...]
    runs: tuple[tuple[float, RunData], ...]  # (offered rate, run)


def measure_lambda_star(plant: SuitePlant, variant: Scenario, cfg: SuiteConfig) -> Sweep:
    """λ* of one variant from fixed rates f × nominal (see the module doc). While no
    point fails, the sweep goes on at ``EXTEND`` × nominal (a generator-bound plant
    never fails: its λ* is the largest rate it achieved)."""
    nominal = plant.nominal_lambda_star(variant)
    run = dataclasses.replace(variant, duration_s=cfg.duration_s, seed=SWEEP_SEED)
    points: list[SweepPoint] = []
    runs: list[tuple[float, RunData]] = []
    for f in (*cfg.fractions, *EXTEND):
        if f in EXTEND and lambda_star_from_sweep(points, plant.p95_ms, 0.01).bounded:
            break
        data = _drive_fixed(run, [(0.0, f * nominal)])
        points.append(sweep_point(data, f * nominal))
        runs.append((f * nominal, data))
    lam = lambda_star_from_sweep(points, plant.p95_ms, 0.01)
    return Sweep(nominal, lam, tuple(points), tuple(runs))


def _capacity(plant: SuitePlant, measured: Sequence[float | None]) -> Capacity:
    steps = [
        (ph.at_s, 0.0 if lam is None else lam)
        for ph, lam in zip(plant.phases(), measured, strict=True)
    ]
    return Capacity(tuple(steps))


def oracle_schedule(plant: SuitePlant, capacity: Capacity, f: float) -> list[tuple[float, float]]:
    """f × λ*(t), switched when a phase starts; an outage (λ* = 0) keeps the rate."""
    schedule: list[tuple[float, float]] = []
    for at, lam in capacity.steps:
        if lam > 0:
            schedule.append((at, f * lam))
    return schedule


def evaluate_plant(
    plant: SuitePlant,
    cfg: SuiteConfig,
    progress: Callable[[str], None] | None = None,
) -> PlantResult:
    say = progress or (lambda _msg: None)
    sweeps: dict[Scenario, Sweep] = {}
    lams: list[float | None] = []
    for ph in plant.phases():
        if ph.variant is None:
            lams.append(None)
            continue
        if ph.variant not in sweeps:
            sweeps[ph.variant] = measure_lambda_star(plant, ph.variant, cfg)
        lams.append(sweeps[ph.variant].lam.rps)
    capacity = _capacity(plant, lams)
    say(f"plant {plant.number} {plant.key}: lambda* measured {capacity.steps}")
    frontier: list[FrontierPoint] = []
    if len(plant.phases()) == 1:
        # One phase: the sweep's own runs are the oracle's (fractions of the measured λ*).
        lam = capacity.steps[0][1]
        for offered, data in next(iter(sweeps.values())).runs:
            m = compute(data, capacity, plant.p95_ms, plant.events)
            frontier.append(FrontierPoint(offered / lam if lam else 0.0, m))
    else:
        base = dataclasses.replace(plant.scenario, duration_s=cfg.duration_s, seed=SWEEP_SEED)
        for f in cfg.fractions:
            data = _drive_fixed(base, oracle_schedule(plant, capacity, f))
            frontier.append(FrontierPoint(f, compute(data, capacity, plant.p95_ms, plant.events)))
    xy = [
        (p.metrics.violations, p.metrics.steady_efficiency)
        for p in frontier
        if p.metrics.violations is not None and p.metrics.steady_efficiency is not None
    ]
    budget = cfg.violation_budget
    goal = Goal(
        budget,
        frontier_at(xy, budget),
        has_events=bool(plant.events),
        has_cliff=plant.has_cliff,
        t90_exempt=t90_exempt(capacity),
    )
    f_b = "none" if goal.frontier is None else f"{goal.frontier:.3f}"
    say(f"  F({budget:.1%}) = {f_b}")
    runs: list[PolicyResult] = []
    for policy in cfg.policies:
        for seed in cfg.seeds:
            runs.append(_policy_run(plant, policy, seed, cfg, capacity, xy, goal))
            say(f"  {policy} seed {seed}: {runs[-1].misses or 'goal met'}")
    result = PlantResult(
        plant, tuple(sweeps.values()), capacity, tuple(frontier), tuple(runs), goal
    )
    for policy in cfg.policies:
        say(f"  {policy} over the seeds: {result.policy_misses(policy) or 'goal met'}")
    return result


def _policy_run(
    plant: SuitePlant,
    policy: str,
    seed: int,
    cfg: SuiteConfig,
    capacity: Capacity,
    xy: Sequence[tuple[float, float]],
    goal: Goal,
) -> PolicyResult:
    spec = dataclasses.replace(plant.spec(), violation_budget=cfg.violation_budget)
    scenario = plant.with_run(cfg.duration_s, seed)
    run = simulate(scenario, spec, build_policy(policy, spec, **cfg.params.get(policy, {})))
    assert run.plant is not None
    sent, end, ok = run.plant.samples()
    ticks = tuple((t.t_s, t.decision.new_rate) for t in run.ticks)
    data = RunData(sent, end, ok, cfg.duration_s, ticks)
    m = compute(data, capacity, plant.p95_ms, plant.events, reach=goal.reach)
    if m.violations is not None and m.steady_efficiency is not None:
        m = dataclasses.replace(m, frontier_gap=frontier_gap(xy, m.violations, m.steady_efficiency))
    return PolicyResult(policy, seed, m, tuple(misses([m], goal)), ticks)


def run_suite(
    plants: Sequence[SuitePlant],
    cfg: SuiteConfig,
    progress: Callable[[str], None] | None = None,
) -> list[PlantResult]:
    return [evaluate_plant(p, cfg, progress) for p in plants]
