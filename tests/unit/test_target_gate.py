"""The capacity gate on a fake clock: FCFS over c workers, 503 past K, degradation."""

from __future__ import annotations

import numpy as np
import pytest

from loadguard.lab.target.distributions import ServiceDist
from loadguard.lab.target.gate import CapacityGate
from loadguard.lab.target.model import ENDPOINTS, TargetModel


def _model(workers: int, queue: int, service_s: float, **kw: float) -> TargetModel:
    dist = ServiceDist("const", service_s)
    return TargetModel(
        kind="mmc", workers=workers, queue=queue, service={n: dist for n in ENDPOINTS}, **kw
    )


def _gate(model: TargetModel) -> CapacityGate:
    return CapacityGate(model, started_s=100.0, rng=np.random.default_rng(0))


@pytest.mark.parametrize(
    ("workers", "queue", "arrivals", "expected"),
    [
        # c=1, K=2, 1 s service, five at once: one serves, two wait, two are rejected.
        (1, 2, [0, 0, 0, 0, 0], [1.0, 2.0, 3.0, None, None]),
        # c=2, K=0 (loss system): the third concurrent request is rejected.
        (2, 0, [0, 0, 0], [1.0, 1.0, None]),
        # Spaced arrivals never wait.
        (1, 0, [0, 1, 2], [1.0, 2.0, 3.0]),
        # The queue drains: at t=1.5 one request waits (started at 2), so one more fits.
        (1, 1, [0, 0, 0, 1.5, 1.5], [1.0, 2.0, None, 3.0, None]),
    ],
)
def test_requests_are_served_fcfs_or_rejected_past_the_queue(
    workers: int, queue: int, arrivals: list[float], expected: list[float | None]
) -> None:
    gate = _gate(_model(workers, queue, 1.0))
    got = []
    for t in arrivals:
        adm = gate.admit("home", 100.0 + t)
        got.append(None if adm.rejected else adm.end_s - 100.0)
    assert got == expected
    counters = gate.counters()
    assert counters.rejected == expected.count(None)
    assert counters.served == len(expected) - expected.count(None)


def test_degrade_halves_the_workers_at_its_time() -> None:
    gate = _gate(_model(2, 10, 1.0, degrade_at_s=10.0, degrade_factor=0.5))
    before = [gate.admit("home", 100.0 + 5.0).end_s for _ in range(2)]
    assert before == [106.0, 106.0]
    assert gate.workers == 2
    after = [gate.admit("home", 100.0 + 10.0).end_s for _ in range(2)]
    assert after == [111.0, 112.0]
    assert gate.workers == 1


def test_each_endpoint_draws_from_its_own_distribution() -> None:
    service = {n: ServiceDist("const", 0.01) for n in ENDPOINTS}
    service["category"] = ServiceDist("const", 0.5)
    model = TargetModel(kind="shop", workers=4, queue=0, service=service)
    gate = _gate(model)
    assert gate.admit("home", 100.0).end_s == pytest.approx(100.01)
    assert gate.admit("category", 100.0).end_s == pytest.approx(100.5)
