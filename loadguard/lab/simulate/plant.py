r"""The simulated plant: load generator + queueing target + JTL, advanced tick by tick.

Generator. The commanded rate is a step function: the start rate from t = 0, and a rate
pushed at :math:`t_p` from :math:`t_p + L` (actuation lag L). Over a span
:math:`[a, b)` of constant rate r,

* ``poisson``: :math:`N \sim \mathrm{Poisson}(r (b - a))` arrivals, uniform and sorted
  (memorylessness makes span-by-span generation exact);
* ``smooth``: the Elastic Timer's even pacing. A phase :math:`φ \in [0, 1)` carries the
  fraction of an arrival accrued so far; arrivals fall where
  :math:`φ + r (t - a)` crosses an integer, so a rate change never bunches or skips.

Target. Arrivals go through ``FcfsQueue`` with that span's service draws; a capacity change
at :math:`t_c` splits the tick so arrivals after :math:`t_c` see the new server count.

Plant features (``Scenario``): service draws are scaled by the warm-up multiplier m(a)
of their arrival time a; an outage's start splits the tick and pauses the servers
(``FcfsQueue.pause``); the metastable cliff and the generator threads live in the queue
(``FcfsQueue.offer_full``), and with threads a request's send time replaces its arrival.

JTL. A sample's row is ``timeStamp = sent``, ``elapsed = end - sent`` (ms, rounded),
``success = not rejected``. It reaches the reader at :math:`\lceil end / F \rceil F` for a
flush period F > 0 (JMeter's buffered writer), at ``end`` for F = 0. Samples are handed
out in completion order per tick, as the tailer would.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from loadguard.jtl.sample import SampleBatch
from loadguard.lab.simulate.fcfs import FcfsQueue
from loadguard.lab.simulate.scenario import Scenario
from loadguard.lab.simulate.steps import step_value

F64 = npt.NDArray[np.float64]
BOOL = npt.NDArray[np.bool_]

LABEL = "sim"


@dataclass
class _Pending:
    arrival: F64
    end: F64
    ok: BOOL


class Plant:
    """Generator + target + JTL for one scenario; ``advance`` one tick at a time."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.rng = np.random.default_rng(scenario.seed)
        self.queue = FcfsQueue(
            scenario.servers_at(0.0),
            scenario.queue,
            metastable=scenario.metastable,
            generator_threads=scenario.generator_threads,
        )
        # (effective_at_s, rate), ascending; the first is the start rate.
        self._schedule: list[tuple[float, float]] = [(0.0, scenario.start_rate)]
        self._phase = 0.0
        self._pending = _Pending(np.empty(0), np.empty(0), np.empty(0, np.bool_))
        self.arrival_log: list[F64] = []
        self.end_log: list[F64] = []
        self.ok_log: list[BOOL] = []

    def push(self, now_s: float, rate: float) -> None:
        """A rate pushed at ``now_s`` takes effect after the actuation lag."""
        self._schedule.append((now_s + self.scenario.lag_s, rate))

    def rate_at(self, t_s: float) -> float:
        return step_value(self._schedule, t_s)

    def _arrivals(self, a: float, b: float) -> F64:
        # Split [a, b) at every rate change that falls inside it.
        cuts = [a, *sorted(at for at, _ in self._schedule if a < at < b), b]
        parts: list[F64] = []
        for lo, hi in itertools.pairwise(cuts):
            rate = self.rate_at(lo)
            span = hi - lo
            if span <= 0:
                continue
            if self.scenario.arrivals == "poisson":
                n = int(self.rng.poisson(rate * span))
                parts.append(np.sort(self.rng.uniform(lo, hi, n)))
            else:
                total = self._phase + rate * span
                n = math.floor(total)
                ks = np.arange(1, n + 1, dtype=np.float64)
                parts.append(lo + (ks - self._phase) / rate)
                self._phase = total - n
        return np.concatenate(parts) if parts else np.empty(0)

    def advance(self, t0: float, t1: float) -> SampleBatch:
        """Simulate ``[t0, t1)`` and return the samples the JTL shows by ``t1``."""
        sc = self.scenario
        events = [c.at_s for c in sc.changes] + [o.at_s for o in sc.outages]
        cuts = [t0, *sorted(t for t in events if t0 < t < t1), t1]
        arrivals: list[F64] = []
        ends: list[F64] = []
        oks: list[BOOL] = []
        for lo, hi in itertools.pairwise(cuts):
            servers = sc.servers_at(lo)
            if servers != self.queue.servers:
                self.queue.set_servers(servers)
            for outage in sc.outages:
                if lo <= outage.at_s < hi:
                    self.queue.pause(outage.at_s, outage.end_s)
            arr = self._arrivals(lo, hi)
            service = sc.service.sample(self.rng, len(arr))
            if sc.warmup is not None:
                service = service * sc.warmup.multiplier(arr)
            served = self.queue.offer_full(arr, service)
            arrivals.append(served.sent)
            ends.append(served.end)
            oks.append(~served.rejected)
        arr = np.concatenate([self._pending.arrival, *arrivals])
        end = np.concatenate([self._pending.end, *ends])
        ok = np.concatenate([self._pending.ok, *oks])
        flush = self.scenario.flush_s
        visible_at = np.ceil(end / flush - 1e-9) * flush if flush > 0 else end
        shown = visible_at <= t1 + 1e-9
        hidden = ~shown
        self._pending = _Pending(arr[hidden], end[hidden], ok[hidden])
        arr, end, ok = arr[shown], end[shown], ok[shown]
        order = np.argsort(end, kind="stable")
        arr, end, ok = arr[order], end[order], ok[order]
        self.arrival_log.append(arr)
        self.end_log.append(end)
        self.ok_log.append(ok)
        start_ms = np.round(arr * 1000.0).astype(np.int64)
        elapsed_ms = np.round(end * 1000.0).astype(np.int64) - start_ms
        n = len(arr)
        labels = np.full(n, LABEL, dtype=object)
        threads = np.full(n, "", dtype=object)
        return SampleBatch(start_ms, elapsed_ms, ok, labels, threads, np.full(n, -1, np.int32))

    def samples(self) -> tuple[F64, F64, BOOL]:
        """Every sample shown so far: ``(arrival_s, end_s, ok)`` in show order."""
        return (
            np.concatenate(self.arrival_log) if self.arrival_log else np.empty(0),
            np.concatenate(self.end_log) if self.end_log else np.empty(0),
            np.concatenate(self.ok_log) if self.ok_log else np.empty(0, np.bool_),
        )
