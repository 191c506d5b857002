"""Plant features of the controller's suite: cliff, hang outage, generator threads, warm-up,
the shop mix, and the suite's plants themselves."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from loadguard.errors import SimulationError, UsageError
from loadguard.lab.simulate.fcfs import FcfsQueue, Metastable
from loadguard.lab.simulate.features import Outage, Warmup
from loadguard.lab.simulate.plant import Plant
from loadguard.lab.simulate.plants import PLANTS, select
from loadguard.lab.simulate.scenario import Scenario, ShopService
from loadguard.lab.target.model import build_model


def _arr(values: list[float]) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)


def test_metastable_queue_slows_service_once_the_backlog_reaches_the_threshold() -> None:
    q = FcfsQueue(1, 100, metastable=Metastable(enter_waiting=2, factor=4.0))
    served = q.offer_full(_arr([0.0, 0.1, 0.2, 0.3]), _arr([1.0, 1.0, 1.0, 1.0]))
    # The fourth arrival finds 2 waiting: from it on, service takes 4x as long.
    np.testing.assert_allclose(served.end, [1.0, 2.0, 3.0, 7.0])
    assert q.slow


def test_metastable_queue_stays_slow_until_an_arrival_finds_the_queue_drained() -> None:
    q = FcfsQueue(1, 100, metastable=Metastable(enter_waiting=2, factor=4.0))
    q.offer_full(_arr([0.0, 0.1, 0.2, 0.3]), _arr([1.0, 1.0, 1.0, 1.0]))
    # At 2.5 s one request still waits (below the threshold, not drained): still slow.
    # At 12 s none waits: fast again.
    late = q.offer_full(_arr([2.5, 12.0]), _arr([1.0, 1.0]))
    np.testing.assert_allclose(late.end, [11.0, 13.0])
    assert not q.slow


def test_metastable_rejects_exit_not_below_enter() -> None:
    with pytest.raises(SimulationError):
        Metastable(enter_waiting=2, factor=2.0, exit_waiting=2)


def test_pause_makes_requests_arriving_in_the_outage_hang_until_it_ends() -> None:
    q = FcfsQueue(2, 100)
    q.pause(1.0, 3.0)
    served = q.offer_full(_arr([1.5, 2.0, 4.0]), _arr([0.5, 0.5, 0.5]))
    np.testing.assert_allclose(served.start, [3.0, 3.0, 4.0])
    np.testing.assert_allclose(served.end, [3.5, 3.5, 4.5])


def test_generator_threads_delay_sends_until_a_thread_frees() -> None:
    q = FcfsQueue(4, 100, generator_threads=1)
    served = q.offer_full(_arr([0.0, 0.1, 0.2]), _arr([1.0, 1.0, 1.0]))
    np.testing.assert_allclose(served.sent, [0.0, 1.0])
    np.testing.assert_allclose(served.end, [1.0, 2.0])


def test_arrivals_scheduled_while_every_thread_waited_are_not_sent() -> None:
    # the Elastic Timer restarts a schedule that fell behind: no burst after a hang
    q = FcfsQueue(4, 100, generator_threads=1)
    served = q.offer_full(_arr([0.0, 0.1, 0.5, 0.9]), _arr([1.0, 0.1, 0.1, 0.1]))
    assert served.kept is not None
    assert served.kept.tolist() == [True, True, False, False]
    later = q.offer_full(_arr([1.05, 1.5]), _arr([0.1, 0.1]))
    np.testing.assert_allclose(later.sent, [1.1, 1.5])


def test_a_release_late_by_less_than_the_interval_keeps_the_schedule() -> None:
    q = FcfsQueue(4, 100, generator_threads=1)
    served = q.offer_full(_arr([0.0, 0.1, 0.2, 0.3]), _arr([0.11, 0.1, 0.1, 0.1]))
    np.testing.assert_allclose(served.sent, [0.0, 0.11, 0.21, 0.31])


def test_a_hang_is_not_followed_by_a_burst_of_the_arrivals_it_held_up() -> None:
    sc = Scenario(
        servers=8, start_rate=100.0, duration_s=60.0, generator_threads=400,
        queue=1_000_000, outages=(Outage(20.0, 20.0),),
    )  # fmt: skip
    plant = Plant(sc)
    plant.advance(0.0, 60.0)
    sent, _end, _ok = plant.samples()
    after = np.count_nonzero((sent >= 41.0) & (sent < 51.0))
    assert after == pytest.approx(1000, rel=0.1)  # the rate in force, not a catch-up


def test_offer_without_features_sends_at_the_arrival() -> None:
    served = FcfsQueue(1, 10).offer_full(_arr([0.0, 0.5]), _arr([1.0, 1.0]))
    np.testing.assert_allclose(served.sent, [0.0, 0.5])
    np.testing.assert_allclose(served.start, [0.0, 1.0])


def test_warmup_multiplier_decays_linearly_to_one() -> None:
    w = Warmup(3.0, 90.0)
    np.testing.assert_allclose(w.multiplier(_arr([0.0, 45.0, 90.0, 200.0])), [3.0, 2.0, 1.0, 1.0])


def test_warmup_plant_serves_slower_at_the_start() -> None:
    sc = Scenario(servers=8, start_rate=20.0, duration_s=200.0, warmup=Warmup(3.0, 90.0))
    plant = Plant(sc)
    plant.advance(0.0, 200.0)
    sent, end, _ok = plant.samples()
    early = (end - sent)[sent < 20.0].mean()
    late = (end - sent)[sent > 120.0].mean()
    assert early > 2.0 * late


def test_outage_plant_requests_sent_in_the_outage_complete_after_it() -> None:
    sc = Scenario(start_rate=50.0, duration_s=60.0, queue=10_000, outages=(Outage(20.0, 10.0),))
    plant = Plant(sc)
    for k in range(60):
        plant.advance(float(k), float(k + 1))
    sent, end, _ok = plant.samples()
    inside = (sent >= 20.0) & (sent < 30.0)
    assert inside.any()
    assert (end[inside] >= 30.0).all()


def test_thread_bound_caps_the_plant_throughput_by_littles_law() -> None:
    # 2 threads, 50 ms service: at most ~40 req/s whatever the commanded rate.
    sc = Scenario(servers=8, start_rate=200.0, duration_s=30.0, generator_threads=2)
    plant = Plant(sc)
    plant.advance(0.0, 30.0)
    sent, _end, _ok = plant.samples()
    assert len(sent) / 30.0 < 50.0


def test_shop_service_has_the_shop_models_mix_mean() -> None:
    shop = ShopService(0.050)
    model = build_model("shop", workers=8, queue=100, service_s=0.050)
    draws = shop.sample(np.random.default_rng(1), 200_000)
    assert draws.mean() == pytest.approx(model.mean_service_s, rel=0.02)


def test_suite_has_plants_one_to_nine() -> None:
    assert [p.number for p in PLANTS] == list(range(1, 10))


def test_select_takes_keys_and_numbers() -> None:
    assert [p.key for p in select(["1,cliff", "9"])] == ["mm8", "cliff", "large"]


def test_select_rejects_an_unknown_plant() -> None:
    with pytest.raises(UsageError, match="unknown plant"):
        select(["nope"])


def test_halving_plant_has_the_half_capacity_phase() -> None:
    plant = next(p for p in PLANTS if p.key == "halves")
    phases = plant.phases()
    assert [ph.at_s for ph in phases] == [0.0, 120.0]
    assert phases[1].variant is not None and phases[1].variant.servers == 4


def test_plant_scenarios_accept_a_run_length_and_seed() -> None:
    for plant in PLANTS:
        sc = plant.with_run(60.0, 7)
        assert (sc.duration_s, sc.seed, sc.start_rate) == (60.0, 7, 5.0)
        assert dataclasses.replace(sc) == sc
