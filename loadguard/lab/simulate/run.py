"""The simulated control loop: the sidecar's tick on a simulated clock.

Every tick of ``tick_s``: the plant advances, the JTL rows it shows go into the **same**
``Window`` the sidecar uses, ``SloSpec.evaluate`` judges the window, the guarded policy from
``build_policy`` decides, and a changed rate is pushed to the plant (effective after the
actuation lag). The rate in force is kept as the live loop keeps it, by one
``RateInForce`` that records every push (the plant acknowledges them all) and whose last
change every observation carries. Nothing here is simulator-specific except the row
source, the clock and the actuator.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loadguard.lab.simulate.plant import Plant
from loadguard.lab.simulate.scenario import Scenario
from loadguard.ledger import ExceedanceLedger, criteria_of
from loadguard.observation import Action
from loadguard.policies.base import Decision, Policy
from loadguard.rate import RateInForce
from loadguard.slo import SloSpec
from loadguard.window import STRETCH_WINDOWS, Window


@dataclass(frozen=True, slots=True)
class TickRecord:
    """One tick: time, the rate in force before the decision, and the decision."""

    t_s: float
    rate: float
    servers: int
    decision: Decision


@dataclass
class SimRun:
    scenario: Scenario
    spec: SloSpec
    policy_name: str
    ticks: list[TickRecord] = field(default_factory=list)
    plant: Plant | None = None
    stopped_at_s: float | None = None
    ledger: ExceedanceLedger | None = None


def simulate(scenario: Scenario, spec: SloSpec, policy: Policy) -> SimRun:
    """Drive ``policy`` against the scenario's plant for its whole duration (or a STOP)."""
    plant = Plant(scenario)
    window = Window(
        spec.window_ms,
        by_label=bool(spec.labels),
        stretch_to=spec.min_samples,
        max_window_ms=STRETCH_WINDOWS * spec.window_ms,
    )
    ledger = ExceedanceLedger(criteria_of(spec), spec.window_ms, round(scenario.lag_s * 1000))
    run = SimRun(scenario, spec, policy.name, plant=plant, ledger=ledger)
    rate = RateInForce(scenario.start_rate, confirmed=True)
    ledger.rate_in_force(scenario.start_rate, 0)
    n_ticks = round(scenario.duration_s / scenario.tick_s)
    t0 = 0.0
    for k in range(1, n_ticks + 1):
        t1 = k * scenario.tick_s
        batch = plant.advance(t0, t1)
        window.add(batch)
        ledger.add(batch)
        wall_ms = round(t1 * 1000.0)
        obs = spec.evaluate(
            window.stats(wall_ms), wall_ms, rate.value,
            rate_change=rate.change, ledger=ledger.view(wall_ms),
        )  # fmt: skip
        decision = policy.decide(obs)
        run.ticks.append(TickRecord(t1, rate.value, plant.queue.servers, decision))
        if decision.action is Action.STOP:
            run.stopped_at_s = t1
            break
        if rate.needs_push(decision.new_rate):
            rate.acknowledged(decision.new_rate, obs.timer_ms)
            plant.push(t1, decision.new_rate)
            ledger.rate_in_force(decision.new_rate, wall_ms)
        t0 = t1
    return run
