"""FcfsQueue: hand-worked cases, queueing theory, and properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loadguard.errors import SimulationError
from loadguard.lab.simulate.fcfs import FcfsQueue
from loadguard.lab.simulate.mmc import response_quantile


def _arr(values: list[float]) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)


@pytest.mark.parametrize(
    ("servers", "capacity", "arrivals", "services", "start", "end", "rejected"),
    [
        # One server: the second request waits for the first.
        (1, 10, [0.0, 0.1], [1.0, 1.0], [0.0, 1.0], [1.0, 2.0], [False, False]),
        # Two servers: both start at once.
        (2, 10, [0.0, 0.1], [1.0, 1.0], [0.0, 0.1], [1.0, 1.1], [False, False]),
        # Queue capacity 1: the third arrival finds one waiting and is rejected.
        (
            1,
            1,
            [0.0, 0.1, 0.2],
            [1.0, 1.0, 1.0],
            [0.0, 1.0, 0.2],
            [1.0, 2.0, 0.2],
            [False, False, True],
        ),
        # Loss system (capacity 0): a busy server rejects, a free one accepts.
        (1, 0, [0.0, 0.5, 1.5], [1.0, 1.0, 1.0], [0.0, 0.5, 1.5], [1.0, 0.5, 2.5], [0, 1, 0]),
        # A waiting request that has started by the next arrival no longer counts.
        (1, 1, [0.0, 0.1, 1.5], [1.0, 1.0, 1.0], [0.0, 1.0, 2.0], [1.0, 2.0, 3.0], [0, 0, 0]),
    ],
)
def test_hand_worked_schedules(
    servers: int,
    capacity: int,
    arrivals: list[float],
    services: list[float],
    start: list[float],
    end: list[float],
    rejected: list[bool],
) -> None:
    q = FcfsQueue(servers, capacity)
    s, e, r = q.offer(_arr(arrivals), _arr(services))
    np.testing.assert_allclose(s, start)
    np.testing.assert_allclose(e, end)
    assert r.tolist() == [bool(x) for x in rejected]


def test_incremental_offers_equal_one_offer() -> None:
    rng = np.random.default_rng(3)
    arrivals = np.cumsum(rng.exponential(1 / 150.0, 5000))
    services = rng.exponential(0.05, 5000)
    whole = FcfsQueue(8, 20).offer(arrivals, services)
    q = FcfsQueue(8, 20)
    parts = [q.offer(arrivals[i : i + 37], services[i : i + 37]) for i in range(0, 5000, 37)]
    for k in range(3):
        np.testing.assert_array_equal(whole[k], np.concatenate([p[k] for p in parts]))


def test_mmc_p95_matches_erlang_c() -> None:
    # M/M/8, 50 ms service, 130 req/s (rho = 0.81): simulated p95 within 5% of the analytic.
    rng = np.random.default_rng(11)
    n = 200_000
    arrivals = np.cumsum(rng.exponential(1 / 130.0, n))
    services = rng.exponential(0.05, n)
    _, end, rejected = FcfsQueue(8, 10_000).offer(arrivals, services)
    assert not rejected.any()
    p95 = float(np.quantile((end - arrivals)[n // 10 :], 0.95))
    assert p95 == pytest.approx(response_quantile(0.95, 130.0, 8, 0.05), rel=0.05)


def test_mm1k_blocking_matches_closed_form() -> None:
    # M/M/1/K with K = 1 + capacity in the system: P_block = (1-r) r^K / (1 - r^(K+1)).
    rng = np.random.default_rng(5)
    n = 200_000
    lam, mu, capacity = 9.0, 10.0, 4
    arrivals = np.cumsum(rng.exponential(1 / lam, n))
    services = rng.exponential(1 / mu, n)
    _, _, rejected = FcfsQueue(1, capacity).offer(arrivals, services)
    r, k = lam / mu, capacity + 1
    expected = (1 - r) * r**k / (1 - r ** (k + 1))
    assert rejected.mean() == pytest.approx(expected, rel=0.05)


def test_halving_servers_slows_later_requests() -> None:
    q = FcfsQueue(4, 100)
    q.offer(_arr([0.0, 0.0, 0.0, 0.0]), _arr([1.0, 2.0, 3.0, 4.0]))
    q.set_servers(2)
    # The servers freeing at 1 s and 2 s retire; the next ones free at 3 s and 4 s.
    s, _, _ = q.offer(_arr([0.5, 0.5]), _arr([1.0, 1.0]))
    assert s.tolist() == [3.0, 4.0]
    assert q.servers == 2


def test_adding_servers_serves_at_once() -> None:
    q = FcfsQueue(1, 100)
    q.offer(_arr([0.0]), _arr([10.0]))
    q.set_servers(2)
    s, _, _ = q.offer(_arr([1.0]), _arr([1.0]))
    assert s.tolist() == [1.0]


def test_waiting_and_busy_counts() -> None:
    q = FcfsQueue(1, 10)
    q.offer(_arr([0.0, 0.0, 0.0]), _arr([1.0, 1.0, 1.0]))
    assert (q.waiting_at(0.5), q.busy_at(0.5)) == (2, 1)
    assert q.waiting_at(1.5) == 1


@pytest.mark.parametrize(
    ("servers", "capacity", "message"),
    [(0, 1, "servers"), (1, -1, "queue capacity")],
)
def test_rejects_bad_construction(servers: int, capacity: int, message: str) -> None:
    with pytest.raises(SimulationError, match=message):
        FcfsQueue(servers, capacity)


def test_rejects_unsorted_arrivals_across_calls() -> None:
    q = FcfsQueue(1, 1)
    q.offer(_arr([1.0]), _arr([0.1]))
    with pytest.raises(SimulationError, match="sorted"):
        q.offer(_arr([0.5]), _arr([0.1]))


@settings(max_examples=200, deadline=None)
@given(
    servers=st.integers(1, 4),
    capacity=st.integers(0, 5),
    gaps=st.lists(st.floats(0.0, 2.0), min_size=1, max_size=60),
    data=st.data(),
)
def test_schedule_invariants(
    servers: int, capacity: int, gaps: list[float], data: st.DataObject
) -> None:
    services = _arr(
        data.draw(st.lists(st.floats(0.0, 3.0), min_size=len(gaps), max_size=len(gaps)))
    )
    arrivals = np.cumsum(_arr(gaps))
    start, end, rejected = FcfsQueue(servers, capacity).offer(arrivals, services)
    ok = ~rejected
    assert np.all(start >= arrivals)
    np.testing.assert_allclose(end[ok] - start[ok], services[ok], atol=1e-9)
    # FCFS: accepted requests start in arrival order.
    assert np.all(np.diff(start[ok]) >= 0)
    # Never more than `servers` in service at any start instant.
    for t in start[ok]:
        in_service = np.sum((start[ok] <= t) & (end[ok] > t) & (end[ok] > start[ok]))
        assert in_service <= servers
    # Never more than `capacity` waiting at any arrival.
    for t in arrivals:
        waiting = np.sum(ok & (arrivals < t) & (start > t))
        assert waiting <= capacity
