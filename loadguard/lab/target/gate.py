"""The capacity gate: c workers and a wait queue of K, in wall-clock time.

Every request that reaches a shop endpoint is offered, at its arrival time, to the same
``FcfsQueue`` the simulator and the λ* estimate use. The queue answers at once with the
time the request's worker starts and ends (FCFS, c servers) or rejects it when K requests
are already waiting. The server then *sleeps* until that end time and answers -- so the
CPU stays free, and the served queue is, by construction, exactly the modelled G/G/c/K
(plus the HTTP stack's own overhead, measured in docs/demo-target.md).

Pure: time is a parameter (seconds on any monotonic clock); the server passes its loop
time. Degradation is applied on the first request at or after ``degrade_at_s``; so is the
model's outage (the workers are paused from its start to its end, ``FcfsQueue.pause``).
The warm-up multiplies each service draw by m(elapsed); the metastable cliff is the
queue's own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loadguard.lab.simulate.fcfs import FcfsQueue
from loadguard.lab.target.model import TargetModel


@dataclass(frozen=True, slots=True)
class Admission:
    """A request's fate: ``end_s`` to answer at, or ``rejected`` (503 at once)."""

    rejected: bool
    start_s: float
    end_s: float


@dataclass(frozen=True, slots=True)
class GateCounters:
    served: int
    rejected: int
    workers: int


class CapacityGate:
    """Schedules requests on ``model``'s c workers and K-deep queue."""

    def __init__(self, model: TargetModel, started_s: float, rng: np.random.Generator) -> None:
        self._model = model
        self._started_s = started_s
        self._rng = rng
        self._queue = FcfsQueue(model.workers, model.queue, metastable=model.metastable)
        self._paused = False
        self._served = 0
        self._rejected = 0

    @property
    def workers(self) -> int:
        return self._queue.servers

    def elapsed_s(self, now_s: float) -> float:
        return now_s - self._started_s

    def admit(self, endpoint: str, now_s: float) -> Admission:
        """Offer one request of ``endpoint`` arriving at ``now_s`` (non-decreasing)."""
        elapsed = now_s - self._started_s
        workers = self._model.workers_at(elapsed)
        if workers != self._queue.servers:
            self._queue.set_servers(workers)
        outage = self._model.outage
        if outage is not None and not self._paused and elapsed >= outage.at_s:
            self._paused = True
            self._queue.pause(self._started_s + outage.at_s, self._started_s + outage.end_s)
        service = self._model.service[endpoint].sample(self._rng, 1)
        if self._model.warmup is not None:
            service = service * self._model.warmup.multiplier(np.array([elapsed]))
        start, end, rejected = self._queue.offer(np.array([now_s]), service)
        if bool(rejected[0]):
            self._rejected += 1
            return Admission(True, now_s, now_s)
        self._served += 1
        return Admission(False, float(start[0]), float(end[0]))

    def counters(self) -> GateCounters:
        return GateCounters(self._served, self._rejected, self._queue.servers)
