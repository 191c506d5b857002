"""The policies' update rules, one behaviour per test, on hand-made observations."""

from __future__ import annotations

import pytest

from loadguard.errors import PolicyError
from loadguard.observation import Action, Observation, Zone
from loadguard.policies import build_policy, parse_params
from loadguard.policies.aimd import AimdPolicy
from loadguard.policies.fixed import FixedPolicy
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
        ("tally", {"budget": "1.5"}, "budget"),
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
