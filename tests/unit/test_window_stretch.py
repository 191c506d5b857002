"""The window stretched for low rates: ``Window(stretch_to=n, max_window_ms=M)``."""

from __future__ import annotations

import numpy as np
import pytest

from loadguard.jtl.sample import SampleBatch
from loadguard.window import Window


def _even(rate: float, until_ms: int, elapsed_ms: int = 100) -> SampleBatch:
    """Samples ending every 1/rate s up to ``until_ms``."""
    ends = np.arange(1000.0 / rate, until_ms + 1, 1000.0 / rate).astype(np.int64)
    n = len(ends)
    return SampleBatch(
        ends - elapsed_ms,
        np.full(n, elapsed_ms, np.int64),
        np.ones(n, np.bool_),
        np.full(n, "a", dtype=object),
        np.full(n, "", dtype=object),
        np.full(n, -1, np.int32),
    )


def test_a_thin_window_stretches_back_to_the_nth_newest_sample() -> None:
    w = Window(10_000, stretch_to=20, max_window_ms=60_000)
    w.add(_even(1.0, 60_000))  # 1 req/s: 10 samples per 10 s
    st = w.stats(60_000)
    assert st.overall.count == 20
    assert st.window_ms == 20_000
    assert st.overall.rps == pytest.approx(1.0, rel=0.01)


def test_a_full_window_does_not_stretch() -> None:
    w = Window(10_000, stretch_to=20, max_window_ms=60_000)
    w.add(_even(5.0, 60_000))
    st = w.stats(60_000)
    assert (st.overall.count, st.window_ms) == (50, 10_000)


def test_the_stretch_stops_at_the_longest_window() -> None:
    w = Window(10_000, stretch_to=20, max_window_ms=30_000)
    w.add(_even(0.25, 120_000))  # one sample every 4 s
    st = w.stats(120_000)
    assert st.window_ms == 30_000
    assert st.overall.count == 8


def test_without_stretch_a_thin_window_stays_thin() -> None:
    w = Window(10_000)
    w.add(_even(1.0, 60_000))
    assert w.stats(60_000).overall.count == 10


def test_stretch_needs_a_longest_window_at_least_the_window() -> None:
    with pytest.raises(ValueError):
        Window(10_000, stretch_to=20, max_window_ms=5_000)


def test_a_rate_below_min_samples_per_window_is_judged_again_in_the_loop() -> None:
    from loadguard.lab.simulate.run import simulate
    from loadguard.lab.simulate.scenario import Scenario
    from loadguard.lab.target.distributions import ServiceDist
    from loadguard.observation import Action
    from loadguard.policies import build_policy
    from loadguard.slo import SloSpec

    # 1 req/s: 10 samples per 10 s window, fewer than min_samples = 20. A fixed window
    # never judges it (HOLD no_data forever); the stretched one does, and the rate rises.
    spec = SloSpec.from_options(p95="1s")
    sc = Scenario(servers=1, service=ServiceDist("exp", 0.05), start_rate=1.0, duration_s=120.0)
    run = simulate(sc, spec, build_policy("tally", spec))
    assert any(t.decision.action is Action.INCREASE for t in run.ticks)


def test_settling_waits_longer_for_a_stretched_window() -> None:
    from loadguard.observation import Observation, Zone
    from loadguard.policies.fixed import FixedPolicy
    from loadguard.policies.guards import Settling
    from loadguard.rate import RateChange
    from loadguard.stats import LabelStats, WindowStats

    # The rate in force fell (2 -> 1 req/s) at the push after the first tick, at t = 0.
    cut = RateChange(0, rose=False, serial=1)

    def at(wall_ms: int, window_ms: int) -> Observation:
        overall = LabelStats(20, 1.0, 1.0, 0.0, 50.0, 40.0, 60.0, 60.0, 60.0, 60.0)
        stats = WindowStats(wall_ms, window_ms, overall, {}, 0, wall_ms)
        return Observation(wall_ms, stats, Zone.SAFE, (), (), 5, 1.0, 0.2, rate_change=cut)

    guard = Settling(FixedPolicy(), settle_ms=12_000, window_ms=10_000)
    # 13 s after the change: settled for a 10 s window, not for a 20 s one.
    assert guard.decide(at(13_000, 20_000)).reason == "settling"
    assert guard.decide(at(13_000, 10_000)).reason == "fixed"
