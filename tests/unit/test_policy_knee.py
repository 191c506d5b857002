"""The knee policy's update rules, one behaviour per test, on hand-made observations."""

from __future__ import annotations

import math

import pytest

from loadguard.errors import PolicyError
from loadguard.observation import Action, Observation, Zone
from loadguard.policies import build_policy
from loadguard.policies.knee import KneePolicy
from loadguard.slo import SloSpec
from loadguard.stats import LabelStats, WindowStats

SLO_MS = 250.0


def obs(
    pressure: float,
    wall_ms: int = 100_000,
    offered: float = 100.0,
    achieved: float | None = None,
    count: int = 1000,
    max_ms: float | None = None,
) -> Observation:
    zone = Zone.BREACH if pressure > 1 else Zone.NEAR if pressure > 0.8 else Zone.SAFE
    p95 = pressure * SLO_MS
    rps = offered if achieved is None else achieved
    top = p95 if max_ms is None else max_ms
    overall = LabelStats(count, rps, rps, 0.0, 50.0, 40.0, p95, p95, p95, top)
    stats = WindowStats(wall_ms, 10_000, overall, {}, 0, wall_ms - 5)
    return Observation(wall_ms, stats, zone, (), (), 5, offered, pressure)


def ramped(idle: float = 0.4, rate: float = 100.0) -> KneePolicy:
    """A policy that has ramped at ``idle`` pressure and then met the knee at ``rate``."""
    p = KneePolicy(noise_up=0.0, noise_down=0.0)
    p.decide(obs(idle, offered=rate / 2))
    p.decide(obs(p.setpoint() * 1.05, wall_ms=110_000, offered=rate))
    assert p.phase == "track"
    return p


def test_knee_ramps_geometrically_while_the_pressure_is_flat() -> None:
    d = KneePolicy(ramp_factor=2.0).decide(obs(0.4, count=1000, offered=50.0))
    assert (d.action, d.new_rate) == (Action.INCREASE, 100.0)


def test_knee_setpoint_is_the_knee_ratio_above_the_idle_pressure() -> None:
    p = KneePolicy(knee_ratio=1.3, idle_samples=1000)
    assert p.setpoint() == 0.7  # nothing measured yet: the default
    p.decide(obs(0.4, count=1000, offered=50.0))
    assert p.idle_pressure == pytest.approx(0.4)
    assert p.setpoint() == pytest.approx(0.52)


def test_knee_setpoint_is_clipped_to_its_bounds() -> None:
    p = KneePolicy(knee_ratio=1.3, max_setpoint=0.85)
    p.decide(obs(0.68, count=1000, offered=50.0))  # flat (below the default 0.7): learned
    assert p.setpoint() == 0.85  # not 1.3 x 0.68


def test_knee_ramp_ends_without_a_cut_at_the_setpoint() -> None:
    p = KneePolicy(noise_up=0.0, noise_down=0.0)
    p.decide(obs(0.4, offered=50.0))
    d = p.decide(obs(0.52, wall_ms=110_000))
    assert p.phase == "track"
    assert d.new_rate == pytest.approx(100.0)


def test_knee_breach_after_a_rise_cuts_by_its_severity_and_sets_the_ceiling() -> None:
    p = KneePolicy()
    d = p.decide(obs(2.0))  # in the ramp: a rise just happened
    assert d.action is Action.DECREASE
    assert d.new_rate == pytest.approx(100.0 * math.exp(-0.7 * math.log(2.0)))
    assert p.ceiling == 100.0


def test_knee_holds_a_breach_while_an_older_backlog_drains() -> None:
    p = ramped()
    d = p.decide(obs(3.0, wall_ms=120_000, offered=80.0, achieved=120.0))
    assert (d.action, d.reason) == (Action.HOLD, "draining")


def test_knee_cuts_to_the_delivery_rate_when_a_queue_grows() -> None:
    p = ramped()
    d = p.decide(obs(1.2, wall_ms=120_000, offered=100.0, achieved=60.0))
    assert d.new_rate == pytest.approx(0.9 * 60.0)


def test_knee_breach_at_a_served_rate_is_evidence_for_the_mean_not_a_verdict() -> None:
    p = ramped()
    rate = 100.0
    d = p.decide(obs(0.4, wall_ms=120_000, offered=rate))  # well below: rises
    rate = d.new_rate
    p.decide(obs(p.setpoint(), wall_ms=130_000, offered=rate))
    p._ups = 0  # as after a hold: the next breach answers no rise
    d = p.decide(obs(1.05, wall_ms=131_000, offered=rate))
    assert d.reason == "breach"
    assert float(d.detail["windows"]) > 1.0  # averaged with the windows before it
    assert d.new_rate <= rate  # evidence, but a BREACH never raises the rate


def test_knee_does_not_rise_past_the_ceiling() -> None:
    p = ramped()
    p.noise_up, p.ceiling = 0.3, 110.0  # evidence clear of noise, not twice over
    d = p.decide(obs(0.3, wall_ms=120_000))
    assert d.action is Action.INCREASE
    assert d.new_rate == pytest.approx(110.0 * (1 - p.near_step))
    assert p.ceiling == 110.0


def test_knee_strong_evidence_of_headroom_lifts_the_ceiling() -> None:
    p = ramped()
    p.noise_up, p.ceiling = 0.05, 104.0
    p.decide(obs(0.3, wall_ms=120_000))
    assert p.ceiling == pytest.approx(104.0 * (1 + p.near_step))


def test_knee_a_stall_sets_no_ceiling() -> None:
    p = KneePolicy(window_ms=10_000, stall_windows=2.0)
    p.decide(obs(5.0, max_ms=25_000))
    assert p.ceiling is None


def test_knee_every_update_ends_in_the_step_clamp() -> None:
    p = ramped()
    d = p.decide(obs(0.05, wall_ms=120_000))
    assert d.new_rate <= 100.0 * p.max_up + 1e-9
    d = p.decide(obs(50.0, wall_ms=130_000, achieved=1.0))
    assert d.new_rate >= 100.0 * p.max_down - 1e-9


def test_knee_is_built_by_name_with_the_slo_window() -> None:
    policy = build_policy("knee", SloSpec.from_options(p95="250ms", window="20s"))
    inner = policy
    while hasattr(inner, "inner"):
        inner = inner.inner
    assert isinstance(inner, KneePolicy)
    assert inner.window_ms == 20_000


@pytest.mark.parametrize(
    "params", [{"knee_ratio": 1.0}, {"max_setpoint": 1.0}, {"delivery_share": 0.0}]
)
def test_knee_rejects_bad_parameters(params: dict[str, float]) -> None:
    with pytest.raises(PolicyError, match="knee"):
        KneePolicy(**params)  # type: ignore[arg-type]


def test_knee_flat_windows_well_below_the_last_hot_rate_move_the_idle_pressure() -> None:
    p = ramped(idle=0.4)  # the ramp met the knee at 100 req/s: 100 ran hot
    p.decide(obs(2.0, wall_ms=120_000, achieved=50.0))  # queue grows: cut
    before = p.idle_pressure
    assert before is not None
    p.decide(obs(0.3, wall_ms=140_000, offered=50.0))  # flat, at 0.5 x the hot rate
    after = p.idle_pressure
    assert after is not None and after < before


def test_knee_a_breach_long_after_a_rise_is_judged_by_flow_not_as_its_verdict() -> None:
    p = ramped()
    d = p.decide(obs(0.3, wall_ms=120_000))
    assert d.action is Action.INCREASE  # a rise at 120 s
    rate = d.new_rate
    late = 120_000 + round(p.rise_judged_windows * p.window_ms) + 1
    d = p.decide(obs(1.1, wall_ms=late, offered=rate, achieved=rate * 1.2))
    assert d.reason == "draining"
    assert p.ceiling is None


def test_knee_a_mild_breach_of_a_thin_window_in_the_ramp_is_no_verdict() -> None:
    p = KneePolicy(ramp_min_samples=200)
    d = p.decide(obs(1.2, offered=5.0, count=40))  # a cold first window
    assert (d.action, d.reason) == (Action.HOLD, "thin_breach")
    assert (p.phase, p.ceiling) == ("ramp", None)
    d = p.decide(obs(0.5, wall_ms=110_000, offered=5.0, count=100))
    assert (d.action, d.new_rate) == (Action.INCREASE, 10.0)  # the ramp goes on
