"""The tally policy: budget's search, then one Robbins-Monro step per window on the
violation indicator (loadguard/policies/tally.py)."""

from __future__ import annotations

import dataclasses
import itertools
import math
from types import SimpleNamespace

import pytest

from loadguard.lab.simulate.features import Warmup
from loadguard.lab.simulate.plants import BY_KEY, _mm8
from loadguard.lab.simulate.run import SimRun, simulate
from loadguard.observation import Zone
from loadguard.policies import build_policy
from loadguard.policies.budget import BudgetPolicy
from loadguard.policies.tally import STEP_RESOLUTIONS, TallyPolicy

B = 0.05


def _run(key: str, duration_s: float, seed: int) -> SimRun:
    plant = BY_KEY[key]
    spec = dataclasses.replace(plant.spec(), violation_budget=B)
    policy = build_policy("tally", spec, lag_ms=2000)
    return simulate(plant.with_run(duration_s, seed), spec, policy)


@pytest.fixture(scope="module")
def mm8() -> SimRun:
    return _run("mm8", 600.0, 1)


def _tracked(run: SimRun) -> list:
    return [t for t in run.ticks if t.decision.reason in ("tally_within", "tally_over")]


def test_the_tracker_takes_over_once_the_search_resolves(mm8: SimRun) -> None:
    reasons = [t.decision.reason for t in mm8.ticks]
    first = next(i for i, r in enumerate(reasons) if r in ("tally_within", "tally_over"))
    assert "resolved" in reasons[:first] or "tally_debt" in reasons[:first]
    assert len(_tracked(mm8)) >= 20


def test_a_clean_window_raises_by_b_steps_and_a_violating_one_cuts_by_1_minus_b(
    mm8: SimRun,
) -> None:
    tracked = _tracked(mm8)
    assert any(t.decision.reason == "tally_over" for t in tracked)
    for t in tracked:
        d = t.decision
        gamma = STEP_RESOLUTIONS / math.sqrt(d.old_rate * 10.0)
        assert float(d.detail["step"]) == pytest.approx(gamma, abs=1e-5)
        bad = 1.0 if d.reason == "tally_over" else 0.0
        assert d.new_rate == pytest.approx(d.old_rate * math.exp(gamma * (B - bad)), rel=1e-6)


def test_the_tracker_judges_one_window_per_window_length(mm8: SimRun) -> None:
    times = [t.t_s for t in _tracked(mm8)]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= 10.0


def test_the_weighted_violation_share_is_b_less_the_drift_over_the_steps(mm8: SimRun) -> None:
    # the Robbins-Monro identity, pathwise, over the windows the tracker judged in a row
    # (a delivery cut or a drain between them moves the rate outside the tracker)
    tracked = _tracked(mm8)
    run_ = [tracked[0]]
    for t in tracked[1:]:
        if t.decision.old_rate != pytest.approx(run_[-1].decision.new_rate, rel=1e-9):
            break
        run_.append(t)
    steps = [STEP_RESOLUTIONS / math.sqrt(t.decision.old_rate * 10.0) for t in run_]
    bad = [1.0 if t.decision.reason == "tally_over" else 0.0 for t in run_]
    drift = math.log(run_[-1].decision.new_rate / run_[0].decision.old_rate)
    weighted = sum(g * i for g, i in zip(steps, bad, strict=True)) / sum(steps)
    assert weighted == pytest.approx(B - drift / sum(steps), abs=1e-9)


def test_debt_from_the_search_cuts_by_the_steps_the_tracker_would_have_taken() -> None:
    policy = TallyPolicy(budget=B)
    policy.debt = 2.0 - 10 * B  # two violations in ten windows judged by the search
    gamma = STEP_RESOLUTIONS / math.sqrt(100.0 * 10.0)
    assert policy._settle(100.0) == pytest.approx(100.0 * math.exp(-gamma * 1.5))
    assert policy.debt == 0.0


def test_credit_from_the_search_is_kept_not_spent_on_a_rise() -> None:
    policy = TallyPolicy(budget=B)
    policy.debt = -0.5
    assert policy._settle(100.0) == 100.0
    assert policy.debt == -0.5


def test_a_stall_returns_to_the_tracker_rate_and_forgives_its_windows() -> None:
    policy = TallyPolicy(budget=B)
    policy.tracking, policy.track_rate, policy.stall_return = True, 120.0, 120.0
    policy.debt = 2.0
    assert policy._setpoint(None, 30.0) == 120.0  # type: ignore[arg-type]
    assert policy.debt == 0.0


def test_a_drain_returns_to_the_tracker_rate_less_its_debt() -> None:
    policy = TallyPolicy(budget=B)
    policy.tracking, policy.track_rate = True, 120.0
    policy.debt = 1.0
    gamma = STEP_RESOLUTIONS / math.sqrt(120.0 * 10.0)
    assert policy._setpoint(None, 30.0) == pytest.approx(120.0 * math.exp(-gamma))  # type: ignore[arg-type]


def test_a_drain_after_a_capacity_drop_returns_to_the_tracker_rate_without_its_debt() -> None:
    policy = TallyPolicy(budget=B)
    policy.tracking, policy.track_rate, policy.dropped = True, 60.0, True
    policy.debt = 1.0
    assert policy._setpoint(None, 30.0) == 60.0  # type: ignore[arg-type]
    assert policy.debt == 0.0 and not policy.dropped


def _window(timer_ms: int, zone: Zone) -> SimpleNamespace:
    return SimpleNamespace(timer_ms=timer_ms, zone=zone)


def test_the_windows_of_a_drain_after_a_capacity_drop_are_not_debt() -> None:
    policy = TallyPolicy(budget=B)
    policy.count_ms, policy.drain_until_ms = 0, 30_000
    policy.dropped = True
    for t in (0, 10_000, 20_000):
        policy._count(_window(t, Zone.BREACH), tracked=False)  # type: ignore[arg-type]
    assert policy.debt == 0.0
    policy.dropped = False  # a drain after the rate's own overshoot is charged
    policy._count(_window(30_000, Zone.BREACH), tracked=False)  # type: ignore[arg-type]
    assert policy.debt == pytest.approx(1.0 - B)


def _held_obs(end_ms: int, zone: Zone, epochs: list[tuple[float, int]]) -> SimpleNamespace:
    """A window ending at ``end_ms`` with the ledger's epochs (rate, from_ms); the last in
    force."""
    eps = tuple(SimpleNamespace(rate=r, from_ms=f) for r, f in epochs)
    view = SimpleNamespace(epochs=eps, current=lambda: eps[-1], watermark_ms=end_ms)
    return SimpleNamespace(
        timer_ms=end_ms, zone=zone, ledger=view, commanded_rps=eps[-1].rate, wall_ms=end_ms
    )


def test_the_search_keeps_a_window_only_once_all_it_completed_was_sent_at_the_rate() -> None:
    policy = TallyPolicy(budget=B)
    rise = [(50.0, 0), (100.0, 20_000)]
    policy._count(_held_obs(25_000, Zone.BREACH, rise), tracked=False)  # type: ignore[arg-type]
    policy._count(_held_obs(35_000, Zone.BREACH, rise), tracked=False)  # type: ignore[arg-type]
    assert policy.held == [(100.0, 35_000, True)]
    # after a cut the first window still queues behind what the higher rate sent
    policy = TallyPolicy(budget=B)
    cut = [(100.0, 0), (80.0, 20_000)]
    policy._count(_held_obs(35_000, Zone.BREACH, cut), tracked=False)  # type: ignore[arg-type]
    policy._count(_held_obs(45_000, Zone.SAFE, cut), tracked=False)  # type: ignore[arg-type]
    assert policy.held == [(80.0, 45_000, False)]


@pytest.mark.parametrize(
    ("budget", "violated", "judged", "over"),
    [(0.01, 1, 5, True), (0.01, 1, 6, False), (0.05, 1, 1, False), (0.05, 6, 43, True),
     (0.05, 5, 43, False)],
)  # fmt: skip
def test_a_search_rate_is_over_budget_once_its_own_windows_exclude_b(
    budget: float, violated: int, judged: int, over: bool
) -> None:
    policy = TallyPolicy(budget=budget)
    policy.held = [(120.0, 10_000 * (i + 1), i < violated) for i in range(judged)]
    policy.held.append((100.0, 10_000 * (judged + 1), True))  # another rate's: not counted
    obs = SimpleNamespace(commanded_rps=120.0)
    assert policy._windows_over(obs) == ((violated, judged) if over else None)  # type: ignore[arg-type]
    policy.since_ms = 10_000 * judged  # the evidence restarted: the older windows are stale
    assert policy._windows_over(obs) is None  # type: ignore[arg-type]


def test_a_search_rate_whose_first_window_violates_at_a_1_percent_budget_is_left() -> None:
    # the shop, seed 4: at 160 req/s the first whole window violated; the model's bound
    # (share_hi 0.54) could not yet tell, one violating window of one already excludes 1 %
    plant = BY_KEY["shop"]
    spec = dataclasses.replace(plant.spec(), violation_budget=0.01)
    run = simulate(plant.with_run(300.0, 4), spec, build_policy("tally", spec))
    shown = [t.decision for t in run.ticks if "windows_violated" in t.decision.detail]
    assert shown, "no rate left on its windows' count"
    d = shown[0]
    assert d.reason == "over_budget" and d.new_rate < d.old_rate
    assert float(d.detail["share_hi"]) > 0.01


@pytest.mark.parametrize(("delivered", "dropped"), [(60.0, True), (105.0, False)])
def test_a_delivery_cut_below_the_confirmed_floor_is_a_capacity_drop(
    monkeypatch: pytest.MonkeyPatch, delivered: float, dropped: bool
) -> None:
    # budget's cut itself is tested in test_counting; here only who is charged for it
    monkeypatch.setattr(BudgetPolicy, "_delivery_cut", lambda *a, **k: "cut")
    policy = TallyPolicy(budget=B)
    policy.floor, policy.floor_confirmed = 100.0, True
    view = SimpleNamespace(delivered_rps=delivered, part_ms=2500)
    assert policy._delivery_cut(None, view, 130.0, {}) == "cut"  # type: ignore[arg-type]
    assert policy.dropped is dropped


def test_a_capacity_drop_is_charged_to_the_plant_not_the_rate() -> None:
    # halves seed 1: capacity 145 -> 66 req/s at 120 s. The drain after the drop spends
    # three windows; charged as debt they cut the tracker's start by a quarter
    run = _run("halves", 300.0, 1)
    after = [t.decision for t in run.ticks if t.t_s > 120.0]
    assert any(d.reason == "delivery" for d in after)
    start = next(d for d in after if d.reason in ("tally_debt", "tally_within", "tally_over"))
    assert start.new_rate >= 0.75 * 66.3


def _warming(seed: int, duration_s: float) -> tuple[SimRun, float]:
    """M/M/8 whose service starts 2.5x slower and warms linearly over 400 s (a JIT that
    warms for minutes, as the real TeaStore's does); its warm lambda* at a p95 of 500 ms."""
    from loadguard.lab.simulate.features import Warmup
    from loadguard.lab.simulate.scenario import Scenario
    from loadguard.lab.target.distributions import ServiceDist
    from loadguard.slo import SloSpec

    sc = Scenario(
        servers=8, service=ServiceDist("exp", 0.050), queue=200,
        warmup=Warmup(2.5, 400.0), duration_s=duration_s, seed=seed,
    )  # fmt: skip
    spec = dataclasses.replace(
        SloSpec.from_options(p95="500ms", error_rate="1%"), violation_budget=B
    )
    run = simulate(sc, spec, build_policy("tally", spec, lag_ms=2000))
    return run, sc.lambda_star(sc.servers, 0.5)


def test_a_service_that_keeps_warming_lifts_the_tracker_and_the_search_resumes() -> None:
    run, warm = _warming(3, 600.0)
    reasons = [t.decision.reason for t in run.ticks]
    first = next(i for i, r in enumerate(reasons) if r in ("tally_within", "tally_over"))
    lifted = [i for i, r in enumerate(reasons) if r == "ceiling_lifted" and i > first]
    assert lifted, "the tracker never saw the plant get faster"
    after = [t.decision.new_rate for t in run.ticks[lifted[0] :]]
    # the tracker alone climbs by gamma*B (~0.4 %) a window: it held ~53 req/s
    assert max(after) > 0.9 * warm


def test_a_cold_collapse_s_ceiling_lifts_once_faster_than_below() -> None:
    # M/M/8 2x slower at the start, warm after 200 s, seed 1: the slow start's step to
    # 160 req/s collapsed the cold plant and the delivery cut set a ceiling of 83.6; the
    # references at the rates held under it were taken already warm, so only the slower
    # samples sent earlier at lower rates show the plant got faster (the search's own
    # test lifts it at 117 s; before it, the tracker's at 259 s; before that, none)
    plant = dataclasses.replace(BY_KEY["warmup"], scenario=_mm8(warmup=Warmup(2.0, 200.0)))
    spec = plant.spec()
    run = simulate(plant.with_run(600.0, 1), spec, build_policy("tally", spec))
    reasons = [t.decision.reason for t in run.ticks]
    cut = reasons.index("delivery")
    lifted = [t.t_s for t in run.ticks[cut:] if t.decision.reason == "ceiling_lifted"]
    assert lifted and lifted[0] < 250.0, "the run held under the cold plant's ceiling"
    late = [t.decision.new_rate for t in run.ticks if t.t_s > 300.0]
    # before the rule: 76 req/s on average after 300 s (the tracker's γB a window)
    assert sum(late) / len(late) > 0.9 * plant.nominal_lambda_star(plant.healthy())


def test_a_search_that_moves_under_a_cold_ceiling_lifts_it_over_the_rates_it_held() -> None:
    # the warmup plant, seed 5: the knee watcher's soft ceiling at 80 req/s (31 s, cold)
    # and the step back to 56.6; the search holds it for 43 s, its first window left out
    # after the cut, then 64.5, so no one rate holds two spans of two windows. Pooled
    # over both, the samples sent since are faster than the cold ones sent at lower
    # rates before (on the real TeaStore, run 28, the search moved 33 -> 39 -> 43 req/s
    # at a p95 of 47-53 ms under a cold collapse's ceiling of 46.8)
    run = _run("warmup", 120.0, 5)
    reasons = [t.decision.reason for t in run.ticks]
    assert "knee_watch" in reasons
    lift = reasons.index("ceiling_lifted", reasons.index("knee_watch"))
    assert run.ticks[lift].t_s < 100.0
    assert not any(r.startswith("tally_") for r in reasons[:lift])


def test_the_tracker_reads_the_search_s_last_spans_for_a_stale_ceiling() -> None:
    # M/M/8 2x slower at the start, warm after 200 s, seed 1: tracking starts at 153 s
    # under a ceiling set while the plant was slower. The tracker's own quarters start
    # a window after the hand-over, so two spans of them take 50 s at least; the
    # search's last spans, sent since its evidence began, show the change at once
    # (before: lifted at 213 s)
    plant = dataclasses.replace(BY_KEY["warmup"], scenario=_mm8(warmup=Warmup(2.0, 200.0)))
    spec = plant.spec()
    run = simulate(plant.with_run(250.0, 1), spec, build_policy("tally", spec))
    reasons = [t.decision.reason for t in run.ticks]
    first = next(i for i, r in enumerate(reasons) if r.startswith("tally_"))
    lift = reasons.index("ceiling_lifted", first)
    assert run.ticks[lift].t_s - run.ticks[first].t_s < 45.0


def test_a_plant_that_got_faster_before_its_ceiling_was_met_keeps_the_ceiling() -> None:
    # M/M/8 4x slower at the start, warm by 60 s, seed 1, from 7.1 req/s: the slow
    # start's step to 226 req/s at 68 s met the warm plant and its delivery cut set the
    # ceiling at what it delivered. The cold start's samples at 3.5 req/s (6-37 s) are
    # slower than any sent since, but the plant got faster before the ceiling was met:
    # comparing with them lifted it, and the probe past it cost 7 windows of debt
    plant = dataclasses.replace(BY_KEY["warmup"], scenario=_mm8(warmup=Warmup(4.0, 60.0)))
    spec = plant.spec()
    run = simulate(plant.with_run(200.0, 1, start_rate=5 * math.sqrt(2)), spec,
                   build_policy("tally", spec))  # fmt: skip
    reasons = [t.decision.reason for t in run.ticks]
    assert "delivery" in reasons
    assert "ceiling_lifted" not in reasons


def test_a_search_under_a_cold_ceiling_lifts_it_once_faster_than_a_lower_rate_was() -> None:
    # the warmup plant (3x slower at the start, warm after 90 s), seed 3: the slow
    # start's step to 113 req/s at 58 s was over budget cold, and the search held 80 req/s
    # under it; budget's reference at 80 was taken already warm, so the ceiling stood
    # until the tracker lifted it at 384 s. The slow start's samples at the lower rates,
    # all sent cold, show the plant got faster. (Since the cold start keeps the start
    # rate's doublings, the cold ceiling is a delivery cut's at 160 req/s, 78 s.)
    run = _run("warmup", 200.0, 3)
    reasons = [t.decision.reason for t in run.ticks]
    over = next(i for i, r in enumerate(reasons) if r in ("over_budget", "delivery"))
    lifted = [t.t_s for t in run.ticks[over:] if t.decision.reason == "ceiling_lifted"]
    assert lifted and lifted[0] < 150.0, "the search held under the cold plant's ceiling"
    assert not any(
        r in ("tally_within", "tally_over") for r in reasons[over : reasons.index("ceiling_lifted")]
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_stationary_plant_lifts_no_ceiling_in_the_search_either(seed: int) -> None:
    # a drain's tail after a cut is a short epoch whose median the queue still inflates:
    # compared alone it lifted mm8's ceiling at 199 s on seed 3 (the rule compares an
    # epoch alone only over a whole window or more)
    run = _run("mm8", 400.0, seed)
    assert "ceiling_lifted" not in [t.decision.reason for t in run.ticks]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_stationary_plant_does_not_lift_the_tracker(seed: int) -> None:
    # a quiet spell near the knee lasts a window or two; the tail must have fallen in
    # two spans of two windows (mm8 seed 2 lifted on one and paid two probes over budget)
    run = _run("mm8", 600.0, seed)
    reasons = [t.decision.reason for t in run.ticks]
    first = next(i for i, r in enumerate(reasons) if r in ("tally_within", "tally_over"))
    assert "ceiling_lifted" not in reasons[first:]


def test_a_confirmed_floor_shown_over_budget_forgives_the_debt_credit_kept() -> None:
    policy = TallyPolicy(budget=B)
    policy.debt = 2.0
    policy._capacity_fell()
    assert policy.debt == 0.0
    policy.debt = -0.5  # credit is the tracker's to keep
    policy._capacity_fell()
    assert policy.debt == -0.5


def test_the_windows_a_capacity_dip_cost_the_search_are_not_charged_to_the_tracker() -> None:
    # holdout plant 16, seed 1: two of eight servers gone from 80 to 200 s (lambda* 145
    # -> 105). At 130 s the search found 111 req/s probably over budget, below its
    # confirmed floor of 113: the fall seen. Its windows over the SLO in the dip cut the
    # tracker's start from 101 to 75 req/s (52 % of the restored lambda*); forgiven, only
    # those after the fall was seen are charged (101 -> 93)
    plant = BY_KEY["dip"]
    spec = dataclasses.replace(plant.spec(), violation_budget=B)
    run = simulate(plant.with_run(300.0, 1), spec, build_policy("tally", spec, lag_ms=2000))
    start = next(
        t.decision
        for t in run.ticks
        if t.decision.reason in ("tally_debt", "tally_within", "tally_over")
    )
    assert start.new_rate >= 0.9 * start.old_rate and start.new_rate > 90.0


def test_the_windows_of_a_slow_service_are_not_the_trackers_debt() -> None:
    # mm8 four times slower for its first 60 s, seed 6: the start rate is held through
    # verdicts that its lone requests are over 250 ms (the service's own tail). Charged
    # as debt, those windows cut the tracker's start from 128.8 to 109.9 req/s
    plant = BY_KEY["mm8"]
    cold = dataclasses.replace(plant.scenario, warmup=Warmup(4.0, 60.0), seed=6)
    run = simulate(dataclasses.replace(cold, duration_s=400.0), plant.spec(),
                   build_policy("tally", plant.spec()))  # fmt: skip
    reasons = [t.decision.reason for t in run.ticks]
    assert "slow_service" in reasons
    assert "tally_debt" not in reasons
