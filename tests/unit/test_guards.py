"""Guard rails: one behaviour each, plus properties of every guarded policy."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loadguard.observation import Action, Observation, Zone
from loadguard.policies import POLICIES, build_policy
from loadguard.policies.base import Decision, decide
from loadguard.policies.guards import (
    AutoStop,
    Bounds,
    Exposure,
    GeneratorLimited,
    Guard,
    NoDataHold,
    NoRiseInBreach,
    Settling,
    StaleHold,
    StepLimit,
)
from loadguard.rate import RateChange
from loadguard.slo import SloSpec
from loadguard.stats import LabelStats, WindowStats


def obs(
    zone: Zone = Zone.SAFE,
    wall_ms: int = 100_000,
    commanded: float = 100.0,
    achieved: float | None = None,
    staleness_ms: int | None = 100,
    pressure: float | None = None,
    max_ms: float = 200.0,
    mean_ms: float = 50.0,
    change: RateChange | None = None,
) -> Observation:
    if pressure is None:
        pressure = {Zone.SAFE: 0.5, Zone.NEAR: 0.9, Zone.BREACH: 1.5, Zone.NO_DATA: None}[zone]
    rps = commanded if achieved is None else achieved
    count = 5 if zone is Zone.NO_DATA else int(rps * 10)
    p95 = None if pressure is None else pressure * 250
    overall = LabelStats(count, rps, rps, 0.0, mean_ms, 40.0, p95, p95, p95, max_ms)
    newest = None if staleness_ms is None else wall_ms - staleness_ms
    stats = WindowStats(wall_ms, 10_000, overall, {}, 0, newest)
    return Observation(
        wall_ms, stats, zone, (), (), staleness_ms, commanded, pressure, rate_change=change
    )


@dataclass
class Wants:
    """A stand-in policy that always wants ``factor`` x the rate, and counts its calls."""

    factor: float
    name: str = "wants"
    calls: int = 0

    def decide(self, o: Observation) -> Decision:
        self.calls += 1
        rate = o.commanded_rps
        return decide(o, rate, rate * self.factor, "inner")


@pytest.mark.parametrize(
    ("factor", "rate", "new_rate", "reason"),
    [
        (10.0, 100.0, 500.0, "clamp_max"),
        (0.01, 100.0, 2.0, "clamp_min"),
        (1.5, 100.0, 150.0, "inner"),
    ],
)
def test_clamps_at_bounds(factor: float, rate: float, new_rate: float, reason: str) -> None:
    d = Bounds(Wants(factor), 2.0, 500.0).decide(obs(commanded=rate))
    assert (d.new_rate, d.reason) == (new_rate, reason)


@pytest.mark.parametrize(("factor", "new_rate"), [(3.0, 200.0), (0.1, 50.0), (1.2, 120.0)])
def test_step_limit_per_tick(factor: float, new_rate: float) -> None:
    d = StepLimit(Wants(factor), 2.0, 0.5).decide(obs())
    assert d.new_rate == pytest.approx(new_rate)


def test_hold_on_no_data_without_asking_the_policy() -> None:
    inner = Wants(2.0)
    d = NoDataHold(inner).decide(obs(Zone.NO_DATA))
    assert (d.action, d.reason, inner.calls) == (Action.HOLD, "no_data", 0)


#: The rate in force as its owner records a change pushed at t = 10 s (rise / cut).
ROSE = RateChange(10_000, rose=True, serial=1)
FELL = RateChange(10_000, rose=False, serial=1)


def test_no_decision_while_settling() -> None:
    guard = Settling(Wants(1.5), settle_ms=12_000)
    d = guard.decide(obs(wall_ms=11_000, change=ROSE, commanded=150.0))
    assert (d.action, d.reason) == (Action.HOLD, "settling")
    # Settled at 10 s + 12 s + the window's max elapsed (200 ms).
    assert guard.decide(obs(wall_ms=22_100, change=ROSE, commanded=150.0)).reason == "settling"
    assert guard.decide(obs(wall_ms=22_200, change=ROSE, commanded=150.0)).reason == "inner"


def test_start_rate_is_judged_at_once() -> None:
    guard = Settling(Wants(1.5), settle_ms=12_000)
    assert guard.decide(obs(wall_ms=1_000, change=None)).reason == "inner"


def test_settling_counts_from_the_recorded_change_not_from_the_rate_in_force() -> None:
    guard = Settling(Wants(1.5), settle_ms=12_000)
    guard.decide(obs(wall_ms=10_000))
    # A different rate in force with no change recorded (a failed push) is no change.
    assert guard.decide(obs(wall_ms=11_000, commanded=150.0)).reason == "inner"
    later = RateChange(30_000, rose=True, serial=2)
    assert guard.decide(obs(wall_ms=31_000, change=later, commanded=150.0)).reason == "settling"


def test_breach_after_increase_is_judged_while_settling() -> None:
    guard = Settling(Wants(0.5), settle_ms=12_000)
    d = guard.decide(obs(Zone.BREACH, wall_ms=12_000, change=ROSE, commanded=150.0))
    assert d.action is Action.DECREASE
    assert d.detail["settling"] == "breach_after_increase"


def test_near_after_increase_is_judged_only_when_asked() -> None:
    for early, reason in ((True, "inner"), (False, "settling")):
        guard = Settling(Wants(0.8), settle_ms=12_000, early_near=early)
        assert (
            guard.decide(obs(Zone.NEAR, wall_ms=12_000, change=ROSE, commanded=150.0)).reason
            == reason
        )


def test_early_judging_never_raises_the_rate() -> None:
    guard = Settling(Wants(2.0), settle_ms=12_000, early_near=True)
    d = guard.decide(obs(Zone.NEAR, wall_ms=12_000, change=ROSE, commanded=150.0))
    assert (d.action, d.reason) == (Action.HOLD, "settling")


def test_breach_after_decrease_waits_for_the_old_samples_to_leave() -> None:
    guard = Settling(Wants(0.5), settle_ms=12_000)
    d = guard.decide(obs(Zone.BREACH, wall_ms=13_000, pressure=1.6, change=FELL, commanded=50.0))
    assert d.reason == "settling"


def test_escalating_breach_after_decrease_is_judged() -> None:
    guard = Settling(Wants(0.5), settle_ms=12_000, escalation=2.0)
    guard.decide(obs(Zone.BREACH, wall_ms=10_000, pressure=1.2))  # the cut's trigger
    d = guard.decide(obs(Zone.BREACH, wall_ms=13_000, pressure=3.0, change=FELL, commanded=80.0))
    assert d.detail["settling"] == "breach_escalating"


def test_draining_backlog_holds_after_settling() -> None:
    guard = Settling(Wants(0.5), settle_ms=12_000, drain_tolerance=0.1)
    late = obs(Zone.BREACH, wall_ms=23_000, commanded=50.0, achieved=70.0, change=FELL)
    d = guard.decide(late)
    assert d.reason == "settling"
    assert d.detail["draining_rps"] == pytest.approx(20.0)


@pytest.mark.parametrize(
    ("staleness", "rate", "action", "new_rate"),
    [
        (5_000, 100.0, Action.INCREASE, 200.0),  # fresh: the policy decides
        (25_000, 100.0, Action.HOLD, 100.0),  # stale: hold
        (45_000, 100.0, Action.DECREASE, 1.0),  # still stale: to the floor
        (45_000, 1.0, Action.HOLD, 1.0),  # at the floor: stay
    ],
)
def test_stale_hold_then_floor(
    staleness: int, rate: float, action: Action, new_rate: float
) -> None:
    guard = StaleHold(Wants(2.0), stale_ms=20_000, floor_after_ms=20_000, floor_rate=1.0)
    d = guard.decide(obs(staleness_ms=staleness, commanded=rate))
    assert (d.action, d.new_rate) == (action, new_rate)
    if action is not Action.INCREASE:
        assert d.reason == "stale"


def test_no_sample_ever_counts_as_stale_after_the_startup_grace() -> None:
    guard = StaleHold(Wants(2.0), stale_ms=20_000, floor_after_ms=20_000, floor_rate=1.0)
    guard.decide(obs(Zone.NO_DATA, wall_ms=0, staleness_ms=None, commanded=5.0))
    starting = guard.decide(obs(Zone.NO_DATA, wall_ms=30_000, staleness_ms=None, commanded=5.0))
    assert starting.reason != "stale"  # JMeter may still be starting
    late = guard.decide(
        obs(Zone.NO_DATA, wall_ms=30_000 + 30_000, staleness_ms=None, commanded=5.0)
    )
    assert late.reason == "stale"


def test_generator_limited_holds_and_says_how_many_threads() -> None:
    guard = GeneratorLimited(Wants(1.5), ratio=0.8, headroom=1.2)
    guard.decide(obs(wall_ms=0))
    d = guard.decide(obs(wall_ms=20_000, achieved=50.0, mean_ms=500.0))
    assert (d.action, d.reason) == (Action.HOLD, "generator_limited")
    assert d.detail["threads_needed"] == 60.0  # 1.2 x 100/s x 0.5 s


def test_generator_limited_lets_a_decrease_through() -> None:
    guard = GeneratorLimited(Wants(0.5))
    guard.decide(obs(wall_ms=0))
    assert guard.decide(obs(wall_ms=20_000, achieved=50.0)).action is Action.DECREASE


def test_no_rise_in_breach_holds_a_rise_while_the_window_is_over_the_slo() -> None:
    d = NoRiseInBreach(Wants(1.5)).decide(obs(Zone.BREACH))
    assert (d.action, d.reason, d.detail["inner_reason"]) == (Action.HOLD, "breach_hold", "inner")


def test_no_rise_in_breach_lets_a_cut_and_a_rise_out_of_a_breach_through() -> None:
    assert NoRiseInBreach(Wants(0.5)).decide(obs(Zone.BREACH)).action is Action.DECREASE
    assert NoRiseInBreach(Wants(1.5)).decide(obs(Zone.SAFE)).action is Action.INCREASE


def test_auto_stop_after_n_breach_windows() -> None:
    guard = AutoStop(Wants(0.9), windows=2, window_ms=10_000)
    actions = [guard.decide(obs(Zone.BREACH, wall_ms=t * 1000)).action for t in range(0, 21, 5)]
    assert actions[-1] is Action.STOP
    assert Action.STOP not in actions[:-1]


def test_auto_stop_count_resets_on_a_good_window() -> None:
    guard = AutoStop(Wants(0.9), windows=2, window_ms=10_000)
    guard.decide(obs(Zone.BREACH, wall_ms=0))
    guard.decide(obs(Zone.SAFE, wall_ms=15_000))
    assert guard.decide(obs(Zone.BREACH, wall_ms=20_000)).action is not Action.STOP


def test_auto_stop_thin_windows_that_still_breach_do_not_end_the_breach() -> None:
    guard = AutoStop(Wants(0.9), windows=2, window_ms=10_000, sparse_zone=lambda o: Zone.BREACH)
    guard.decide(obs(Zone.BREACH, wall_ms=0))
    assert guard.decide(obs(Zone.NO_DATA, wall_ms=10_000, commanded=1.0)).action is not Action.STOP
    assert guard.decide(obs(Zone.NO_DATA, wall_ms=20_000, commanded=1.0)).action is Action.STOP


def test_auto_stop_thin_windows_that_meet_the_slo_end_the_breach() -> None:
    guard = AutoStop(Wants(0.9), windows=2, window_ms=10_000, sparse_zone=lambda o: Zone.SAFE)
    guard.decide(obs(Zone.BREACH, wall_ms=0))
    guard.decide(obs(Zone.NO_DATA, wall_ms=10_000, commanded=1.0))
    assert guard.decide(obs(Zone.BREACH, wall_ms=20_000, commanded=1.0)).action is not Action.STOP


def test_auto_stop_fires_at_the_floor_under_total_errors() -> None:
    """100 % errors: the rate is cut to the floor, where a window holds fewer than
    min_samples samples (NO_DATA); they still all fail, so the test is stopped."""
    spec = SloSpec.from_options(p95="250ms", error_rate="1%")
    policy = build_policy("tally", spec, auto_stop=3)
    rate, actions = 50.0, []
    for k in range(40):
        now = 100_000 + 2_000 * k
        count = max(1, round(rate * 10)) if k < 5 else 5  # the floor: 0.5 req/s
        overall = LabelStats(count, count / 10, 0.0, 1.0, 20.0, 20.0, 20.0, 20.0, 20.0, 30.0)
        stats = WindowStats(now, 10_000, overall, {}, 0, now - 100)
        d = policy.decide(spec.evaluate(stats, now, rate))
        actions.append(d.action)
        if d.action is Action.STOP:
            break
        rate = d.new_rate
    assert actions[-1] is Action.STOP
    assert Zone.NO_DATA is spec.evaluate(stats, now, rate).zone
    assert len(actions) == 16  # 3 windows of 10 s after the first breach at tick 0


def test_exposure_flags_a_decrease_that_hides_queueing() -> None:
    d = Exposure(Wants(0.5)).decide(obs(commanded=100.0, achieved=60.0))
    assert d.detail["offered_rps"] == 100.0
    assert d.detail["achieved_rps"] == 60.0
    assert d.detail["hidden_queueing"] == "true"


SPEC = SloSpec.from_options(p95="250ms", min_rate="2", max_rate="400")
ZONES = st.sampled_from(list(Zone))


def _observations() -> st.SearchStrategy[list[tuple[Zone, float, float, int]]]:
    return st.lists(
        st.tuples(
            ZONES,
            st.floats(0.05, 20.0),  # pressure
            st.floats(0.0, 2.0),  # achieved / commanded
            st.integers(0, 5_000),  # ms since the previous tick
        ),
        min_size=1,
        max_size=60,
    )


def _drive(
    name: str, steps: list[tuple[Zone, float, float, int]], start: float
) -> list[tuple[Zone, Decision]]:
    policy = build_policy(name, SPEC, settle_ms=3_000, auto_stop=None)
    rate, now, out = start, 0, []
    for zone, pressure, ratio, gap in steps:
        now += gap
        o = obs(zone, wall_ms=now, commanded=rate, achieved=rate * ratio, pressure=pressure)
        d = policy.decide(o)
        out.append((zone, d))
        rate = d.new_rate
    return out


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(sorted(POLICIES)), steps=_observations(), start=st.floats(0.1, 1000.0))
def test_rate_always_within_bounds(
    name: str, steps: list[tuple[Zone, float, float, int]], start: float
) -> None:
    for _zone, d in _drive(name, steps, start):
        assert SPEC.min_rate <= d.new_rate <= SPEC.max_rate


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(sorted(POLICIES)), steps=_observations(), start=st.floats(2.0, 400.0))
def test_breach_and_no_data_never_increase(
    name: str, steps: list[tuple[Zone, float, float, int]], start: float
) -> None:
    for zone, d in _drive(name, steps, start):
        if zone in (Zone.BREACH, Zone.NO_DATA):
            assert d.new_rate <= d.old_rate
            assert d.action is not Action.INCREASE


def test_every_guard_shares_the_guard_base() -> None:
    """``build_policy`` wraps the policy in ``Guard``s only; each holds ``inner`` and
    answers under the innermost policy's name."""
    spec = SloSpec.from_mapping({"p95": "250ms"})
    guarded = build_policy("threezone", spec, auto_stop=3)  # judged on windows: Settling too
    layers = []
    policy = guarded
    while isinstance(policy, Guard):
        assert policy.name == "threezone"
        layers.append(type(policy).__name__)
        policy = policy.inner
    assert policy.name == "threezone" and not isinstance(policy, Guard)
    assert layers == [
        "Exposure", "Bounds", "AutoStop", "StaleHold", "NoDataHold", "Settling",
        "GeneratorLimited", "NoRiseInBreach", "StepLimit",
    ]  # fmt: skip
    with pytest.raises(TypeError):
        Guard(policy)  # type: ignore[abstract]
