"""The policies' update rules, one behaviour per test, on hand-made observations."""

from __future__ import annotations

import math

import pytest

from loadguard.errors import PolicyError
from loadguard.observation import Action, Observation, Zone
from loadguard.policies import build_policy, parse_params
from loadguard.policies.aimd import AimdPolicy
from loadguard.policies.fixed import FixedPolicy
from loadguard.policies.gradient import GradientPolicy
from loadguard.policies.search import SearchPolicy
from loadguard.policies.threezone import ThreeZonePolicy
from loadguard.rate import RateChange
from loadguard.slo import SloSpec
from loadguard.stats import LabelStats, WindowStats

SLO_MS = 250.0


def obs(
    zone: Zone,
    pressure: float | None = None,
    wall_ms: int = 100_000,
    rate: float = 100.0,
    count: int = 1000,
    change: RateChange | None = None,
) -> Observation:
    if pressure is None:
        pressure = {Zone.SAFE: 0.5, Zone.NEAR: 0.9, Zone.BREACH: 1.2, Zone.NO_DATA: None}[zone]
    p95 = None if pressure is None else pressure * SLO_MS
    overall = LabelStats(count, rate, rate, 0.0, 50.0, 40.0, p95, p95, p95, p95)
    stats = WindowStats(wall_ms, 10_000, overall, {}, 0, wall_ms - 5)
    return Observation(wall_ms, stats, zone, (), (), 5, rate, pressure, rate_change=change)


@pytest.mark.parametrize(
    ("zone", "action", "new_rate", "reason"),
    [
        (Zone.SAFE, Action.INCREASE, 110.0, "safe"),
        (Zone.NEAR, Action.HOLD, 100.0, "near"),
        (Zone.BREACH, Action.DECREASE, 80.0, "breach"),
        (Zone.NO_DATA, Action.HOLD, 100.0, "no_data"),
    ],
)
def test_threezone_defaults_are_the_papers_rule(
    zone: Zone, action: Action, new_rate: float, reason: str
) -> None:
    d = ThreeZonePolicy().decide(obs(zone))
    assert (d.action, d.new_rate, d.reason, d.zone) == (
        action,
        pytest.approx(new_rate),
        reason,
        zone,
    )


def test_threezone_multiplicative_step() -> None:
    d = ThreeZonePolicy(step=0.25, step_mode="mul").decide(obs(Zone.SAFE))
    assert d.new_rate == pytest.approx(125.0)


@pytest.mark.parametrize(
    ("zone", "hold_near", "new_rate"),
    [
        (Zone.SAFE, True, 105.0),
        (Zone.NEAR, True, 100.0),
        (Zone.NEAR, False, 105.0),
        (Zone.BREACH, True, 70.0),
    ],
)
def test_aimd_additive_increase_multiplicative_decrease(
    zone: Zone, hold_near: bool, new_rate: float
) -> None:
    d = AimdPolicy(hold_near=hold_near).decide(obs(zone))
    assert d.new_rate == pytest.approx(new_rate)


def test_gradient_ramps_geometrically_while_far_below_the_setpoint() -> None:
    p = GradientPolicy(ramp_factor=2.0)
    assert p.decide(obs(Zone.SAFE, 0.5, rate=10.0)).new_rate == pytest.approx(20.0)
    assert p.phase == "ramp"


def test_gradient_ramp_ignores_a_noisy_small_window() -> None:
    # 50 samples: a p95 above the setpoint is noise, not the knee.
    p = GradientPolicy(setpoint=0.7, ramp_min_samples=400)
    assert p.decide(obs(Zone.SAFE, 0.75, count=50, rate=5.0)).action is Action.INCREASE


def test_gradient_breach_in_ramp_bisects_toward_the_last_safe_rate() -> None:
    p = GradientPolicy()
    p.decide(obs(Zone.SAFE, 0.5, rate=80.0))
    d = p.decide(obs(Zone.BREACH, 1.5, rate=160.0))
    assert d.new_rate == pytest.approx(math.sqrt(80.0 * 160.0))
    assert p.phase == "track"


def test_gradient_first_window_of_errors_cuts_by_severity_not_ten_percent() -> None:
    # 100 % errors against a 1 % SLO: pressure 100, and no safe rate is known yet.
    p = GradientPolicy(max_down=0.5)
    d = p.decide(obs(Zone.BREACH, 100.0, rate=200.0))
    assert d.new_rate == pytest.approx(100.0)
    assert p.phase == "track"


def test_gradient_tracks_down_when_above_the_setpoint() -> None:
    p = GradientPolicy(setpoint=0.7, k_down=0.6, noise_down=0.0)
    p.phase = "track"
    d = p.decide(obs(Zone.NEAR, 0.84))
    assert d.action is Action.DECREASE
    assert d.new_rate == pytest.approx(100.0 * math.exp(0.6 * math.log(0.7 / 0.84)))


def test_gradient_holds_until_the_mean_error_is_clear_of_noise() -> None:
    p = GradientPolicy(setpoint=0.7, noise_up=0.15)
    p.phase = "track"
    # error ln(0.7/0.66) = 0.059: one window is not enough evidence to rise.
    assert p.decide(obs(Zone.SAFE, 0.66, wall_ms=100_000)).action is Action.HOLD
    actions = [
        p.decide(obs(Zone.SAFE, 0.66, wall_ms=100_000 + k * 1000)).action for k in range(1, 80)
    ]
    assert Action.INCREASE in actions


def test_gradient_averages_afresh_when_the_rate_in_force_changes() -> None:
    p = GradientPolicy(setpoint=0.7, noise_up=0.15)
    p.phase = "track"
    p.decide(obs(Zone.SAFE, 0.66, wall_ms=100_000))
    held = p.decide(obs(Zone.SAFE, 0.66, wall_ms=101_000))
    assert held.detail["windows"] == pytest.approx(1.1)  # one window + a tenth of one
    moved = RateChange(101_000, rose=True, serial=1)  # a guard's rate, as its owner saw it
    d = p.decide(obs(Zone.SAFE, 0.66, wall_ms=102_000, change=moved, rate=110.0))
    assert d.detail["windows"] == pytest.approx(1.0)


def test_gradient_breach_cut_grows_with_severity() -> None:
    mild = GradientPolicy(k_breach=0.7)
    mild.phase = "track"
    severe = GradientPolicy(k_breach=0.7)
    severe.phase = "track"
    assert mild.decide(obs(Zone.BREACH, 1.05)).new_rate == pytest.approx(90.0)
    assert severe.decide(obs(Zone.BREACH, 10.0)).new_rate == pytest.approx(50.0)


def test_gradient_does_not_rise_past_a_rate_that_ran_hot() -> None:
    p = GradientPolicy(noise_up=0.0, noise_down=0.0, hot_margin=0.03)
    p.phase = "track"
    p.decide(obs(Zone.NEAR, 0.85, wall_ms=100_000, rate=130.0))  # too hot at 130
    d = p.decide(obs(Zone.SAFE, 0.4, wall_ms=120_000, rate=120.0))
    assert d.new_rate == pytest.approx(130.0 * 0.97)


def _stall(rate: float, p95_ms: float = 20_000.0) -> Observation:
    """A BREACH window holding samples that waited 20 s: the target stopped answering."""
    return obs(Zone.BREACH, p95_ms / SLO_MS, rate=rate)


def test_gradient_climbs_straight_back_to_the_rate_before_a_stall() -> None:
    p = GradientPolicy(noise_up=0.0)
    p.phase = "track"
    assert p.decide(_stall(124.0)).new_rate == pytest.approx(62.0)
    d = p.decide(obs(Zone.SAFE, 0.5, wall_ms=130_000, rate=62.0))
    assert d.new_rate == pytest.approx(124.0)


def test_gradient_ordinary_breach_keeps_the_pi_climb() -> None:
    p = GradientPolicy(noise_up=0.0)
    p.phase = "track"
    p.decide(obs(Zone.BREACH, 10.0, rate=124.0))  # queueing (max 2.5 s), not a stall
    d = p.decide(obs(Zone.SAFE, 0.5, wall_ms=130_000, rate=62.0))
    assert d.new_rate <= 62.0 * 1.25 + 1e-9


def test_gradient_breach_on_the_way_back_from_a_stall_forgets_the_old_rate() -> None:
    p = GradientPolicy(noise_up=0.0)
    p.phase = "track"
    p.decide(_stall(400.0))
    p.decide(obs(Zone.SAFE, 0.5, wall_ms=130_000))  # climbing back: 100 -> 200
    p.decide(obs(Zone.BREACH, 1.2, wall_ms=150_000, rate=200.0))  # the capacity did fall
    d = p.decide(obs(Zone.SAFE, 0.5, wall_ms=170_000, rate=180.0))
    assert d.new_rate <= 180.0 * 1.25 + 1e-9


def test_gradient_adaptive_setpoint_sits_a_share_of_the_headroom_above_idle() -> None:
    p = GradientPolicy(setpoint=None, headroom_share=0.25, ramp_min_samples=100)
    assert p.target() == 0.7  # nothing measured yet
    p.decide(obs(Zone.SAFE, 0.2, count=500, rate=10.0))  # idle p95 at 20 % of the SLO
    assert p.idle_pressure == pytest.approx(0.2)
    assert p.target() == pytest.approx(0.2 + 0.25 * 0.8)


def test_gradient_setpoint_none_from_a_string_param() -> None:
    policy = build_policy("gradient", SloSpec.from_options(p95="250ms"), setpoint="none")
    inner = policy
    while hasattr(inner, "inner"):
        inner = inner.inner
    assert isinstance(inner, GradientPolicy)
    assert inner.setpoint is None


def test_search_ramps_then_bisects_then_holds_at_the_highest_safe_rate() -> None:
    p = SearchPolicy(windows=1, tolerance=0.05, ramp_factor=2.0)
    t = 0
    rate = 10.0
    capacity = 57.0  # compliant at or below
    for _ in range(40):
        zone = Zone.SAFE if rate <= capacity else Zone.BREACH
        t += 10_000
        rate = p.decide(obs(zone, wall_ms=t, rate=rate)).new_rate
    assert p.phase == "hold"
    assert p.max_compliant_rps is not None
    assert capacity / 1.06 <= p.max_compliant_rps <= capacity
    assert p.evidence_windows >= 1


def test_search_needs_n_compliant_windows_before_moving() -> None:
    p = SearchPolicy(windows=2)
    assert p.decide(obs(Zone.SAFE, wall_ms=10_000, rate=10.0)).reason == "observing"
    assert p.decide(obs(Zone.SAFE, wall_ms=15_000, rate=10.0)).reason == "observing"
    assert p.decide(obs(Zone.SAFE, wall_ms=20_000, rate=10.0)).new_rate == pytest.approx(20.0)


def test_search_judges_a_new_rate_in_force_afresh() -> None:
    p = SearchPolicy(windows=2)
    p.decide(obs(Zone.SAFE, wall_ms=10_000, rate=10.0))
    moved = RateChange(10_000, rose=False, serial=1)  # set by a guard, not by search
    assert p.decide(obs(Zone.SAFE, wall_ms=20_000, change=moved, rate=8.0)).reason == "observing"


def test_search_backs_off_when_capacity_falls_while_holding() -> None:
    p = SearchPolicy(windows=1)
    p.phase, p.lo, p.hi = "hold", 100.0, 105.0
    d = p.decide(obs(Zone.BREACH, wall_ms=10_000))
    assert d.action is Action.DECREASE
    assert p.lo is None


@pytest.mark.parametrize("zone", list(Zone))
def test_fixed_holds_whatever_the_zone(zone: Zone) -> None:
    d = FixedPolicy().decide(obs(zone, rate=42.0))
    assert (d.action, d.new_rate) == (Action.HOLD, 42.0)


def test_build_policy_converts_string_params() -> None:
    spec = SloSpec.from_options(p95="250ms")
    policy = build_policy("threezone", spec, **parse_params(["step=0.5", "step_mode=mul"]))
    d = policy.decide(obs(Zone.SAFE))
    assert d.new_rate == pytest.approx(150.0)


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("pid", {}, "unknown policy 'pid'"),
        ("threezone", {"steps": "1"}, "unknown parameter 'steps'"),
        ("threezone", {"step": "x"}, "expected float"),
        ("threezone", {"decrease_factor": "1.5"}, "decrease_factor"),
        ("gradient", {"setpoint": "1.2"}, "setpoint"),
    ],
)
def test_build_policy_rejects_bad_input(name: str, params: dict[str, str], message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        build_policy(name, SloSpec.from_options(p95="250ms"), **params)


def test_parse_params_needs_key_value() -> None:
    with pytest.raises(PolicyError, match="KEY=VALUE"):
        parse_params(["step"])


def test_same_rate_is_one_relative_tolerance_for_every_rate() -> None:
    from loadguard.policies.base import same_rate

    assert same_rate(1500.0, 1500.0 * (1 + 5e-10))
    assert not same_rate(1500.0, 1500.0 * (1 + 5e-9))
    assert same_rate(0.5, 0.5 + 1e-10)
    assert not same_rate(0.0, 1e-12)  # nothing in force yet: any rate is a change
